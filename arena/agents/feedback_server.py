"""The feedback tool of an agent workspace: ``./arena-check``.

The harness runs a server on a Unix socket inside the workspace (``.arena/feedback.sock``);
the tool in the workspace is a few lines of standard-library Python that asks it for a
check and prints the answer. The server reads the editable file itself, keeps a snapshot of
every version it checked, evaluates it with the harness's own code on the feedback split
(``arena.feedback``), counts the calls and records each one (feedback.jsonl). Editing or
replacing the tool changes nothing but the agent's own view.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.taskdef.loader import Task
from arena.workspace import editable_name

SOCKET_DIR = ".arena"
SOCKET_NAME = "feedback.sock"
TOOL_NAME = "arena-check"

CHECK_TOOL = '''#!/usr/bin/env python3
"""Check {kernel}: compile, correctness and speed on the configs in configs/seen.yaml.

Usage: ./arena-check [--json]      (exit status 0 when every config passed)
"""
import json
import os
import socket
import sys

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(os.path.join(here, "{sock_dir}"))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("{sock_name}")
except OSError as exc:
    sys.exit("arena-check: the checker is not reachable ({{}})".format(exc))
s.sendall(json.dumps({{"json": "--json" in sys.argv[1:]}}).encode() + b"\\n")
data = b""
while True:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    data += chunk
reply = json.loads(data.decode())
sys.stdout.write(reply["text"])
sys.exit(reply["code"])
'''


class FeedbackServer:
    """Serves ``./arena-check`` for one workspace until ``stop()``; one check at a time."""

    def __init__(self, task: Task, workspace: Path, record_dir: Path, ctx: Any, *, agent: str = "",
                 repeat: int = 0, deadline_s: float | None = None) -> None:
        self.task, self.workspace, self.record_dir, self.ctx = task, Path(workspace), Path(record_dir), ctx
        self.agent, self.repeat, self.deadline_s = agent, repeat, deadline_s
        self.calls: list[dict[str, Any]] = []
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def socket_path(self) -> Path:
        return self.workspace / SOCKET_DIR / SOCKET_NAME

    def install_tool(self) -> Path:
        tool = self.workspace / TOOL_NAME
        tool.write_text(CHECK_TOOL.format(kernel=editable_name(self.task), sock_dir=SOCKET_DIR,
                                          sock_name=SOCKET_NAME))
        tool.chmod(0o755)
        return tool

    def start(self) -> "FeedbackServer":
        path = self.socket_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if len(str(path)) > 100:
            raise ArenaError("the workspace path is too long for a Unix socket; set TMPDIR to a shorter folder",
                             path=path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(4)
        self._sock.settimeout(0.2)
        self.install_tool()
        self._thread = threading.Thread(target=self._serve, name="arena-feedback", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=600)
        if self._sock is not None:
            self._sock.close()
        try:
            self.socket_path.unlink()
        except OSError:
            pass

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                try:
                    conn.settimeout(10)
                    raw = b""
                    while not raw.endswith(b"\n") and len(raw) < 4096:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        raw += chunk
                    try:
                        want_json = bool(json.loads(raw or b"{}").get("json"))
                    except (json.JSONDecodeError, AttributeError):
                        want_json = False
                    conn.settimeout(None)
                    reply = self.check(want_json)
                    conn.sendall(json.dumps(reply).encode())
                except OSError:
                    continue

    def check(self, want_json: bool = False) -> dict[str, Any]:
        """One feedback call: snapshot the editable file, evaluate it, record the call."""
        from arena.feedback import assess, render, summarize

        index = len(self.calls)
        started = time.monotonic()
        src = self.workspace / editable_name(self.task)
        snap_dir = self.record_dir / "feedback" / str(index)
        snap_dir.mkdir(parents=True, exist_ok=True)
        if not src.is_file():
            summary = None
            text, code = f"arena-check: {src.name} is missing\n", 2
        else:
            snap = snap_dir / src.name
            shutil.copyfile(src, snap)
            v = assess(self.task, snap, self.ctx.device, work_dir=snap_dir, deadline_s=self.deadline_s,
                       run_id=self.ctx.run_dir.name, agent=self.agent, repeat=self.repeat,
                       private_dirs=[*self.ctx.private_dirs, self.workspace],
                       timing_params=self.ctx.timing_params)
            summary = summarize(v)
            text = json.dumps(summary, indent=1) + "\n" if want_json else render(summary)
            code = 0 if summary["passed"] else 1
        call = {"index": index, "at": time.time(), "seconds": round(time.monotonic() - started, 3),
                "status": summary["status"] if summary else "MISSING_FILE",
                "speedup_median": summary["speedup_median"] if summary else None,
                "reward": summary["reward"] if summary else None}
        self.calls.append(call)
        with open(self.record_dir / "feedback.jsonl", "a") as f:
            f.write(json.dumps(call) + "\n")
        return {"text": text, "code": code}

