"""Run the command line as `python -m mini_kubelet`."""

from mini_kubelet.cmd.main import command

raise SystemExit(command())
