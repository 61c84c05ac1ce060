"""A forward proxy between an agent's program and the network, so that a model endpoint that
never answers is seen, even by a program that says nothing while it waits.

The program is pointed at it through the proxy variables every HTTP client reads
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``; ``NO_PROXY`` emptied). It forwards what it is
given untouched: a ``CONNECT`` tunnel (HTTPS: the bytes stay encrypted) or a plain HTTP request,
through the user's own proxy where one was set. It notes, for the model endpoint the agent's
adapter names (``endpoint`` in its YAML; any host where it names none), how many connections the
program opened and whether any byte came back: a TLS server's first bytes come back as its
handshake, before any model has been asked anything, so a slow model is not a silent endpoint.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any, Mapping

HEAD_MAX = 64 * 1024          # bytes of a request's head
CONNECT_S = 20.0              # to open a connection upstream
ANSWER_WAIT_S = 30.0          # a connection this old with no byte back: its endpoint does not answer
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_LOCAL = {"localhost", "127.0.0.1", "::1"}


def _host_port(url: str) -> tuple[str, int] | None:
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def endpoint_url(endpoint: Mapping[str, str], options: Mapping[str, Any],
                 environ: Mapping[str, str]) -> tuple[str, str]:
    """The URL an agent's model endpoint is at, and what named it ("--agent-option base_url",
    "ANTHROPIC_BASE_URL"; "" for the adapter's default)."""
    option = endpoint.get("option")
    if option and options.get(option):
        return str(options[option]), f"--agent-option {option}"
    var = endpoint.get("env")
    if var and environ.get(var):
        return environ[var], var
    return endpoint["default"], ""


def user_proxy(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """The proxy the user's environment names (the program's traffic goes on through it)."""
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        if environ.get(var):
            return _host_port(environ[var])
    return None


class ModelProxy:
    """Forwards a program's connections; says whether its model endpoint ever answered."""

    def __init__(self, endpoint: str | None = None, upstream: tuple[str, int] | None = None):
        self.watch = _host_port(endpoint) if endpoint else None     # None: every host counts
        self.upstream = upstream
        self.tries = 0
        self.answered = 0
        self.first_try: float | None = None
        self.failures: Counter[str] = Counter()
        self._lock = threading.RLock()
        self._open: set[socket.socket] = set()
        self._server: socket.socket | None = None
        self._stopped = threading.Event()

    # -- the program's side ---------------------------------------------------------------------
    def start(self) -> str:
        """Listens on 127.0.0.1; its URL."""
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, name="arena-model-proxy", daemon=True).start()
        return f"http://127.0.0.1:{server.getsockname()[1]}"

    def env(self, url: str) -> dict[str, str]:
        """The variables that point a program at this proxy."""
        out = {v: url for v in PROXY_VARS}
        out.update({v.lower(): url for v in PROXY_VARS})
        out.update({"NO_PROXY": "", "no_proxy": ""})
        return out

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            socks = [s for s in (self._server, *self._open) if s is not None]
            self._open.clear()
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    # -- what it saw ------------------------------------------------------------------------------
    def silent_s(self, now: float | None = None) -> float:
        """How long the endpoint has been tried without a byte back (0 if it answered or was
        never tried)."""
        with self._lock:
            if self.answered or self.first_try is None:
                return 0.0
            return (time.monotonic() if now is None else now) - self.first_try

    def why(self) -> str:
        """What the program's connections to its endpoint came to, in one line."""
        where = f"{self.watch[0]}:{self.watch[1]}" if self.watch else "any host"
        with self._lock:
            failed = ", ".join(f"{n} {what}" for what, n in self.failures.most_common(3))
            silent = self.tries - sum(self.failures.values())
            parts = [p for p in (failed, f"{silent} with no byte back" if silent > 0 else "") if p]
            return (f"its model endpoint ({where}) never answered: {self.tries} connection"
                    f"{'s' if self.tries != 1 else ''} in {self.silent_s():.0f} s ({'; '.join(parts)})")

    # -- forwarding -------------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()      # type: ignore[union-attr]
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="arena-model-proxy-conn", daemon=True).start()

    def _watched(self, host: str, port: int) -> bool:
        if self.watch is None:
            return True
        wh, wp = self.watch
        return wp == port and (host == wh or (host in _LOCAL and wh in _LOCAL))

    def _track(self, s: socket.socket) -> bool:
        with self._lock:
            if self._stopped.is_set():
                return False
            self._open.add(s)
            return True

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            if not self._track(client):
                client.close()
                return
            client.settimeout(CONNECT_S)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(8192)
                if not chunk or len(head) > HEAD_MAX:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target = (line.split(" ") + ["", ""])[:2]
            tunnel = method.upper() == "CONNECT"
            where = _host_port(target) if tunnel or "://" in target else None
            if where is None:
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            watched = self._watched(*where)
            if watched:
                with self._lock:
                    self.tries += 1
                    if self.first_try is None:
                        self.first_try = time.monotonic()
            try:
                upstream = self._connect(where, target, tunnel)
            except OSError as exc:
                if watched:
                    with self._lock:
                        self.failures[_failure(exc)] += 1
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if not self._track(upstream):
                return
            if tunnel:
                rest = head.split(b"\r\n\r\n", 1)[1]
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(_one_request(head, origin_form=self.upstream is None))
            self._pipe(client, upstream, watched)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                if s is not None:
                    with self._lock:
                        self._open.discard(s)
                    try:
                        s.close()
                    except OSError:
                        pass

    def _connect(self, where: tuple[str, int], target: str, tunnel: bool) -> socket.socket:
        """A connection to ``where``, or through the user's proxy to it (a tunnel asked of that
        proxy; a plain request goes to it as it came, in the absolute form proxies take)."""
        if self.upstream is None:
            return socket.create_connection(where, timeout=CONNECT_S)
        s = socket.create_connection(self.upstream, timeout=CONNECT_S)
        if tunnel:
            s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("latin-1"))
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                if not chunk or len(reply) > HEAD_MAX:
                    s.close()
                    raise ConnectionError("the user's proxy closed the tunnel")
                reply += chunk
            status = reply.split(b"\r\n", 1)[0].split(b" ")
            if len(status) < 2 or status[1] != b"200":
                s.close()
                said = b" ".join(status[1:]).decode(errors="replace")
                raise ConnectionError(f"the user's proxy refused the tunnel ({said})")
        return s

    def _pipe(self, client: socket.socket, upstream: socket.socket, watched: bool) -> None:
        client.settimeout(None)
        upstream.settimeout(None)
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ, upstream)
        sel.register(upstream, selectors.EVENT_READ, client)
        open_ends = 2
        try:
            while open_ends and not self._stopped.is_set():
                for key, _ in sel.select(timeout=1.0):
                    src, dst = key.fileobj, key.data
                    try:
                        data = src.recv(65536)  # type: ignore[union-attr]
                    except OSError:
                        data = b""
                    if data and src is upstream and watched:
                        with self._lock:
                            self.answered += 1
                    if data:
                        try:
                            dst.sendall(data)
                        except OSError:
                            return
                        continue
                    sel.unregister(src)
                    open_ends -= 1
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
        finally:
            sel.close()


def _one_request(head: bytes, origin_form: bool) -> bytes:
    """A plain request as it goes on: to the server itself, in the origin form a server expects
    (``GET /v1/models``, not the absolute URL a proxy is given), and as the last request of its
    connection (``Connection: close``), so that every request of the program comes through here
    with its own first line."""
    top, _, rest = head.partition(b"\r\n\r\n")
    lines = top.split(b"\r\n")
    method, target, version = (lines[0].split(b" ") + [b"", b""])[:3]
    if origin_form:
        u = urllib.parse.urlsplit(target.decode("latin-1"))
        target = ((u.path or "/") + (f"?{u.query}" if u.query else "")).encode("latin-1")
    hop = (b"connection:", b"proxy-connection:", b"keep-alive:", b"proxy-authorization:")
    kept = [ln for ln in lines[1:] if not ln.lower().startswith(hop)]
    return (
        b"\r\n".join([b" ".join((method, target, version or b"HTTP/1.1")), *kept, b"Connection: close"])
        + b"\r\n\r\n"
        + rest
    )


def _failure(exc: OSError) -> str:
    if isinstance(exc, socket.timeout):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, socket.gaierror):
        return "name not resolved"
    return (exc.strerror or str(exc) or type(exc).__name__).lower()[:80]
