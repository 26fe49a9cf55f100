"""Run the command line as `python -m mini_kubelet`."""

from mini_kubelet.cli import main

raise SystemExit(main())
