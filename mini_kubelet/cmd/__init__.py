"""The `mini-kubelet` command line and the reports its commands print: one module per command.

Upstream: cmd/kubelet/ (the kubelet's command, kept apart from the mechanism in pkg/kubelet/). Nothing
here is kubelet logic; each command reads files, calls the mechanism modules and prints what they decide.
"""
