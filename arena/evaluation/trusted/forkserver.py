"""The fork server: the process that trusted processes are forked from.

Started by the harness (``arena.evaluation.processes.ForkServers``) once per kind of worker (one
device and environment) as ``python -m arena.evaluation.trusted.forkserver CTL_FD MODE``, it
imports what a trusted process imports before its job (``preload_imports``: torch, Triton, on a
GPU torch's compiler stack, the harness), opens no device and reads no job, and then forks one
trusted process per request that comes on CTL_FD, a Unix socket of message boundaries. So a
worker starts in milliseconds instead of importing torch again (seconds of a core each, the
most of a test suite's CPU on a small machine), and what every worker's trusted process starts
with is the same, made once.

A request is the worker's folder and environment (JSON), with its descriptors: its log, a pipe
to write the worker's wait status to when it ends, its job and result pipes, and on a GPU its
lock's and memory account's descriptions. The child makes a session of its own (the harness
kills a worker by its process group, as before), keeps only its own descriptors, takes its
folder and environment, and runs the trusted process's ``main``; only once it is in its session
and holds none of the server's descriptors does the reply go back, with its pid and the numbers its
descriptors have there. The server
reaps its children and writes each one's exit status (as ``subprocess`` gives it) on its pipe.
It runs no candidate code, and none runs in a process it does not fork: the candidate's and
the replay process are forked by the trusted process, and confined there, as before. It ends
when the harness closes its end of the socket; its workers live on until their jobs end.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import tempfile
from typing import Any

MAX_REQUEST = 1 << 20  # bytes of a request's JSON (an environment)
MAX_FDS = 16


def serve(ctl: socket.socket, mode: str) -> int:
    from arena.evaluation.trusted.process import prepare

    prepare(mode)  # what each worker's trusted process would do first, done once here
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # its wake-up byte is what select sees
    children: dict[int, int] = {}  # pid -> the write end of its status pipe
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(children)
        if ctl not in ready:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, MAX_REQUEST, MAX_FDS)
        except OSError:
            return 0
        if not msg:
            return 0  # the harness closed its end
        try:
            request = json.loads(msg)
            pid, there = _fork_worker(request, fds, mode)
        except Exception as exc:  # noqa: BLE001 - a request it cannot serve is answered, not fatal
            for fd in fds:
                _close(fd)
            ctl.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            continue
        children[pid] = fds[1]
        for fd in (fds[0], *fds[2:]):
            _close(fd)
        ctl.send(json.dumps({"pid": pid, "fds": there}).encode())


def _fork_worker(request: dict[str, Any], fds: list[int], mode: str) -> tuple[int, list[int]]:
    """Fork one trusted process: ``fds`` are its log, its status pipe's write end (kept here),
    its job and result pipes, then its lock's and memory account's descriptors. Returns its
    pid, once it has made its session, and the numbers of its lock descriptors there (the
    numbers they have here)."""
    log, _status, job_r, res_w, *locks = fds
    cwd, env = str(request["cwd"]), {str(k): str(v) for k, v in dict(request["env"]).items()}
    sync_r, sync_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()  # a session of its own: the harness's kill of its group reaches no one else
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            from arena.evaluation.sandbox.confine import close_fds_except

            # the server's socket, its other workers' pipes; sync_w last: the reply means none of them is held here
            close_fds_except((job_r, res_w, *locks, sync_w))
            os.close(sync_w)
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            tempfile.tempdir = None  # $TMPDIR is now the worker's own
            from arena.evaluation.trusted import process

            code = process.main([str(job_r), str(res_w), mode, *map(str, locks[2:])]) or 0
        except BaseException as exc:  # noqa: BLE001 - the child never returns into the server's loop
            from arena.errors import last_words

            last_words(exc)
        finally:
            os._exit(code)
    os.close(sync_w)
    try:
        os.read(sync_r, 1)  # end of file once the child has closed its copy: in its session, holding only its own
    finally:
        os.close(sync_r)
    return pid, list(locks)


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, str(os.waitstatus_to_exitcode(status)).encode())
            except OSError:
                pass
            _close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    ctl = socket.socket(fileno=int(argv[0]))
    return serve(ctl, argv[1] if len(argv) > 1 else "cpu")


if __name__ == "__main__":  # run as the package's module, not as __main__: one copy of its classes
    from arena.evaluation.trusted import forkserver as _self

    sys.exit(_self.main(sys.argv[1:]))
