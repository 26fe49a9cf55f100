"""Run many `mini-kubelet` command lines in one process, each printing exactly what it would print alone.

Upstream: none (a course tool). The site build uses it for the command output on its pages: one
interpreter for all of them instead of one each. Input on stdin, JSON; output on stdout, one JSON line a
command, in order, each printed as soon as its command has run (a page waits only for its own commands):

    in:  [["show", "examples/pods/web.yaml"], ["run", "examples/scenarios/pids.yaml"], ...]
    out: {"exit": 0, "stdout": "...", "stderr": "..."}
         {"exit": 0, ...}
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import sys

import yaml

from mini_kubelet import api
from mini_kubelet.cmd import main as program
from mini_kubelet.cmd.main import main


def run_one(argv: list[str]) -> dict:
    """One command line's exit status and output, as the `mini-kubelet` process would give them."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as done:  # argparse's usage errors and --help
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            if isinstance(done.code, str):
                print(done.code, file=sys.stderr)
    return {"exit": code or 0, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}


PARSE_ALONE = api.parse_yaml_documents


def parse_fast(text: str, source: str) -> list:
    """api.parse_yaml_documents read by libyaml where PyYAML has it; text it refuses is read again as the command
    alone reads it, so that a bad file gets the same one-line error."""
    try:
        docs = [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc is not None]
        api._check_size(docs, source)
        return docs
    except Exception:
        return PARSE_ALONE(text, source)


def parse_each_text_once() -> None:
    """Many of a batch's commands read the same files: parse each text once, and give every command its own copy."""
    parsed = functools.lru_cache(maxsize=None)(parse_fast if hasattr(yaml, "CSafeLoader") else PARSE_ALONE)
    api.parse_yaml_documents = lambda text, source: copy.deepcopy(parsed(text, source))


def build_the_parser_once() -> None:
    """Every command line is parsed by the same parser (parsing leaves it as it was): build it once, not once a command."""
    program.parser = functools.lru_cache(maxsize=None)(program.parser)


if __name__ == "__main__":
    parse_each_text_once()
    build_the_parser_once()
    for argv in json.load(sys.stdin):
        print(json.dumps(run_one(argv)), flush=True)
