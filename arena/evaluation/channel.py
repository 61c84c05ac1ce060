"""The private channel between the parent and its worker: length-prefixed JSON frames on a
pipe of its own (never stdout, which candidate code can write to).

Result frames are authenticated: each carries a sequence number and an HMAC-SHA256 under
a key the parent makes per evaluation and hands over on the job pipe, which the worker
closes before any candidate code is loaded. A frame that candidate code writes into the
pipe, or replays, fails the check and the parent stops trusting the evaluation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
from typing import Any, Callable

from arena.errors import ArenaException

_MAC_BYTES = 32


class ForgedFrame(ArenaException):
    """A frame that the harness did not write (bad MAC, replay, or out of order)."""


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    """An unauthenticated frame (the job, parent to worker)."""
    _write_all(fd, _pack(json.dumps(obj, default=str).encode()))


def read_frame(fd: int) -> dict[str, Any] | None:
    """The next unauthenticated frame, or None when the writer closed the pipe (or died)."""
    body = _read_body(fd)
    return None if body is None else json.loads(body)


def signed_writer(fd: int, key: bytes) -> Callable[[dict[str, Any]], None]:
    """A function that writes authenticated frames with consecutive sequence numbers."""
    state = {"seq": 0}

    def send(obj: dict[str, Any]) -> None:
        body = json.dumps({**obj, "_seq": state["seq"]}, default=str).encode()
        state["seq"] += 1
        _write_all(fd, _pack(hmac.new(key, body, hashlib.sha256).digest() + body))

    return send


def signed_reader(fd: int, key: bytes) -> Callable[[], dict[str, Any] | None]:
    """A function returning the next authenticated frame (None at end of stream); raises
    ForgedFrame on a frame with a wrong MAC or sequence number."""
    state = {"seq": 0}

    def read() -> dict[str, Any] | None:
        raw = _read_body(fd)
        if raw is None:
            return None
        mac, body = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
        if len(raw) < _MAC_BYTES or not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).digest()):
            raise ForgedFrame("a frame on the result channel does not carry the harness's signature")
        try:
            obj = json.loads(body)
        except ValueError:
            raise ForgedFrame("a signed frame is not JSON") from None
        if not isinstance(obj, dict):
            raise ForgedFrame("a signed frame is not a JSON object")
        if obj.pop("_seq", None) != state["seq"]:
            raise ForgedFrame("a frame on the result channel was replayed or is out of order")
        state["seq"] += 1
        return obj

    return read


def _pack(body: bytes) -> bytes:
    return struct.pack("<I", len(body)) + body


def _write_all(fd: int, buf: bytes) -> None:
    while buf:
        n = os.write(fd, buf)
        buf = buf[n:]


class FrameTooLarge(ArenaException, ValueError):
    """A frame announces more bytes than its reader takes."""


def take_frame(buf: bytearray, limit: int | None = None) -> bytes | None:
    """The body of the first whole frame in ``buf`` (bytes read so far from a channel that is
    not blocking), taken out of it; None while it holds no whole frame. ``limit``: a frame that
    announces more bytes is refused (``FrameTooLarge``) before they are waited for."""
    if len(buf) < 4:
        return None
    (n,) = struct.unpack_from("<I", buf)
    if limit is not None and n > limit:
        raise FrameTooLarge(f"a frame of {n} bytes announced, more than the {limit} a reply may have")
    if len(buf) < 4 + n:
        return None
    body = bytes(buf[4:4 + n])
    del buf[:4 + n]
    return body


def _read_body(fd: int) -> bytes | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack("<I", head)
    return _read_exact(fd, n)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = b""
    while len(chunks) < n:
        part = os.read(fd, n - len(chunks))
        if not part:
            return None
        chunks += part
    return chunks
