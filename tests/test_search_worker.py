"""hooks/search_worker.py against the search worker of the installed Material (the browser test is test_site's)."""

from __future__ import annotations

import shutil
from pathlib import Path

import material
import pytest
from mkdocs.exceptions import PluginError

from hooks import search_worker

WORKERS = Path(material.__file__).parent / "templates" / "assets" / "javascripts" / "workers"


def built_site(tmp_path: Path) -> Path:
    workers = tmp_path / "assets" / "javascripts" / "workers"
    workers.mkdir(parents=True)
    for worker in WORKERS.glob("search.*.min.js"):
        shutil.copy(worker, workers)
    return workers


def test_the_installed_worker_is_mended_once(tmp_path):
    workers = built_site(tmp_path)
    (worker,) = workers.glob("search.*.min.js")
    before = worker.read_text(encoding="utf-8")
    search_worker.on_post_build({"site_dir": str(tmp_path)})
    search_worker.on_post_build({"site_dir": str(tmp_path)})  # a dirty rebuild keeps the mended copy as it is
    after = worker.read_text(encoding="utf-8")
    assert before.count(search_worker.AMBIGUOUS) == 1 and search_worker.AMBIGUOUS not in after
    assert after == before.replace(search_worker.AMBIGUOUS, search_worker.MENDED)


def test_a_worker_without_the_known_code_fails_the_build(tmp_path):
    workers = built_site(tmp_path)
    for worker in workers.glob("search.*.min.js"):
        worker.write_text("/* a later lunr */", encoding="utf-8")
    with pytest.raises(PluginError, match="no longer holds lunr's TokenSet.toString"):
        search_worker.on_post_build({"site_dir": str(tmp_path)})
