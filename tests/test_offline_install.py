"""The offline folder as learners use it: copied, installed from with no index, and a lab notebook worked in (test_offline.py
tells what the smaller list of this folder leaves out)."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import ROOT
from .test_offline import LAB, install_commands, offline_env, sh

pytestmark = [pytest.mark.teaching, pytest.mark.site]


def test_learners_install_from_the_folder_with_no_index_and_run_a_lab(kit, tmp_path):
    kit = shutil.copytree(kit, tmp_path / "offline")  # copied first, as INSTALL.md says: other tests read the folder
    # pip's byte-compiling of what it installs can never fail an install, and of the kubernetes client's thousands of
    # modules it takes most of the time: left out here, Python compiles what the lab imports.
    env = {**offline_env(tmp_path), "PIP_COMPILE": "false"}
    assert sh("python3 -m pip download --retries 0 --timeout 2 --no-deps six -d unused", tmp_path, env).returncode != 0
    *install, start = install_commands(kit, "Linux and macOS")
    assert start.startswith(".venv/bin/jupyter lab ")  # not in the smaller list: the notebook runs as a script below
    for command in install:
        assert "--no-index" in command or "pip" not in command
        result = sh(command, kit, env)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    # A learner writes Exercise 1 into the notebook (this course's solution) and runs every cell in order.
    labs = kit / "course" / "labs"
    solution = (ROOT / "labs" / "src" / f"{LAB}.py").read_text().split("# BEGIN SOLUTION\n", 1)[1]
    solution = solution.split("    # END SOLUTION", 1)[0]
    cells = ["".join(cell["source"]) for cell in json.loads((labs / f"{LAB}.ipynb").read_text())["cells"]
             if cell["cell_type"] == "code"]
    script = "\n\n".join(cells).replace('    raise NotImplementedError("Exercise 1: CPU in millicores")', solution.rstrip(), 1)
    assert solution.rstrip() in script
    (tmp_path / "lab.py").write_text(script)
    result = sh(f"{kit}/.venv/bin/python {tmp_path / 'lab.py'}", labs, env)
    assert "Exercise 1: CPU in millicores: all 10 cases passed." in result.stdout, result.stderr[-2000:]
    assert "Exercise 2: memory in bytes: not done yet" in result.stdout + result.stderr
    shown = sh(f"{kit}/.venv/bin/mini-kubelet show ../examples/pods/web.yaml", labs, env)
    assert shown.returncode == 0 and "memory    67108864 (64Mi)" in shown.stdout

    # The course's own `pip install -e .` too: its build backend (setuptools) comes from the folder.
    editable = sh(f"{kit}/.venv/bin/python -m pip install --no-index --find-links wheels --no-deps -e course", kit, env)
    assert editable.returncode == 0, editable.stderr[-2000:]
    where = sh(f"{kit}/.venv/bin/python -c 'import mini_kubelet; print(mini_kubelet.__file__)'", tmp_path, env)
    assert where.stdout.strip() == str(kit / "course" / "mini_kubelet" / "__init__.py")
