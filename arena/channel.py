"""The private channel between the parent and its worker: length-prefixed JSON frames on a
pipe of its own (never stdout, which candidate code can write to)."""

from __future__ import annotations

import json
import os
import struct
from typing import Any


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    buf = json.dumps(obj, default=str).encode()
    buf = struct.pack("<I", len(buf)) + buf
    while buf:
        n = os.write(fd, buf)
        buf = buf[n:]


def read_frame(fd: int) -> dict[str, Any] | None:
    """The next frame, or None when the writer closed the pipe (or died) mid-way."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack("<I", head)
    body = _read_exact(fd, n)
    return None if body is None else json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = b""
    while len(chunks) < n:
        part = os.read(fd, n - len(chunks))
        if not part:
            return None
        chunks += part
    return chunks
