"""Kernels for the site's lab runs, each forked from one process that has already imported what they all import.

Every lab still runs alone in a new kernel process of its own, started as the python3 kernel starts
(the same command line options, environment and folder), but a copy of one process that imported
ipykernel and mini_kubelet once: the six labs no longer pay for those imports six times. hooks/lab_pages.py
uses it; a learner's `make lab` and the tests start their kernels as usual.

    python -Xfrozen_modules=off forked_kernels.py serve SOCKET   the process the kernels are forked from
    python -S forked_kernels.py kernel SOCKET ARG...             the kernel command: asks for a kernel with
                                                                 those arguments, and lasts as long as it
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

# What every lab imports, and nothing that starts a thread on import (numpy) or fixes a setting the
# kernel makes (matplotlib's backend): a fork copies only the thread that forks.
PRELOAD = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger",
           "mini_kubelet.api", "mini_kubelet.labs")


def serve(path: str) -> None:
    """Fork a kernel for each request on the socket at `path`, until standard input closes."""
    import importlib.util

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each kernel is reaped as it ends
    with socket.socket(socket.AF_UNIX) as server:
        try:
            server.bind(path)
            server.listen()  # a kernel asked for while the imports run waits for them
            launcher = importlib.util.find_spec("ipykernel_launcher").origin  # the kernel's sys.argv[0], as with -m
            for name in PRELOAD:
                importlib.import_module(name)
            while server in select.select([server, sys.stdin], [], [])[0]:
                connection, _ = server.accept()
                request = json.loads(connection.makefile().readline())
                if os.fork() == 0:
                    server.close()
                    _kernel(connection, [launcher] + request["argv"], request)
                connection.close()
        finally:  # also when the build that started it was stopped
            shutil.rmtree(Path(path).parent, ignore_errors=True)


def _kernel(connection: socket.socket, argv: list[str], request: dict) -> None:
    """In the forked process: become the kernel the request asked for, and end with it."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.argv = argv
        connection.sendall(f"{os.getpid()}\n".encode())  # the connection stays open until this process ends
        threading.Thread(target=_end_with_client, args=(connection,), daemon=True).start()
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    except Exception:
        traceback.print_exc()  # into the labs' error output, which a failed build shows
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _end_with_client(connection: socket.socket) -> None:
    """End this kernel when its kernel command has gone (killed, or its build stopped): nothing else would."""
    with contextlib.suppress(OSError):
        while connection.recv(1):
            pass
    os._exit(1)


def kernel(path: str, argv: list[str]) -> None:
    """The kernel command: have a kernel forked with these arguments; pass it signals; end when it ends."""
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(path)
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        connection.sendall((json.dumps(request) + "\n").encode())
        replies = connection.makefile()
        pid = int(replies.readline())

        def forward(number: int, _) -> None:
            with contextlib.suppress(ProcessLookupError):  # the kernel has just ended
                os.kill(pid, number)

        for number in (signal.SIGINT, signal.SIGTERM):  # an interrupt, and a shutdown that took too long
            signal.signal(number, forward)
        replies.read()  # the end of the connection: the kernel has ended


def kernel_python(executable: str) -> str:
    """The Python a kernelspec's argv[0] names: a bare python, python3 or python3.X is this one, as jupyter_client says.

    A kernelspec as ipykernel ships it names `python`; in a virtual environment that is not activated
    (`.venv/bin/mkdocs build`) the `python` on PATH is another one, without the course's packages.
    """
    bare = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    return sys.executable if executable in bare else executable


@contextlib.contextmanager
def forked_kernels():
    """While it lasts, the python3 kernel of this process and its children is forked as above."""
    from jupyter_client.kernelspec import KernelSpecManager

    folder = Path(tempfile.mkdtemp(prefix="course-kernels-"))
    path = str(folder / "socket")
    spec = KernelSpecManager().get_kernel_spec("python3")
    python = kernel_python(spec.argv[0])
    server = subprocess.Popen([python, *[a for a in spec.argv[1:] if a.startswith("-X")], __file__, "serve", path],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    while not os.path.exists(path):  # bound at once, before its imports
        if server.poll() is not None:
            raise RuntimeError(f"the process to fork the kernels from ended at start ({server.returncode})")
        time.sleep(0.01)
    kernels = folder / "kernels" / "python3"
    kernels.mkdir(parents=True)
    options = spec.to_dict()
    options["argv"] = [python, "-S", __file__, "kernel", path, *spec.argv[spec.argv.index("-m") + 2:]]
    (kernels / "kernel.json").write_text(json.dumps(options))
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(folder)] + ([before] if before else []))
    try:
        yield
    finally:
        os.environ.pop("JUPYTER_PATH") if before is None else os.environ.update(JUPYTER_PATH=before)
        server.stdin.close()
        server.wait()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        kernel(sys.argv[2], sys.argv[3:])
