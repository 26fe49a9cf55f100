"""`mini-kubelet labs build`: write the learner notebooks in labs/ from the lab sources in labs/src/.

Upstream: none (a course tool)
"""

from __future__ import annotations

import argparse

from mini_kubelet.errors import UsageError
from mini_kubelet.labs import notebooks


def run(args: argparse.Namespace) -> int:
    """Write (or with --check, compare) every learner notebook; 1 if one is left out of date, 2 for a broken lab source."""
    try:
        return notebooks.build_all(args.labs_dir, force=args.force, check=args.check)
    except notebooks.LabBuildError as err:
        raise UsageError(str(err)) from None
