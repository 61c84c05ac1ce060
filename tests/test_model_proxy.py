"""The forward proxy an agent's program reaches the network through (arena.agents.model_proxy):
it forwards tunnels and plain requests untouched, through the user's own proxy where one is set,
and tells a model endpoint that answers from one that never does."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from arena.agents.model_proxy import ModelProxy, endpoint_url, user_proxy


class _Listener:
    """A TCP server on 127.0.0.1 that, on each connection, says ``greeting`` (or nothing) and
    keeps the connection open."""

    def __init__(self, greeting: bytes = b""):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.greeting = greeting
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.greeting:
                c.sendall(self.greeting)

    def close(self):
        for c in [*self.conns, self.sock]:
            c.close()


def _tunnel(proxy_url: str, target: str) -> tuple[socket.socket, bytes, bytes]:
    """A tunnel asked of the proxy: the socket, the proxy's reply head, and what followed it."""
    host, port = proxy_url.rsplit("/", 1)[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = s.recv(4096)
        if not chunk:
            break
        reply += chunk
    head, _, rest = reply.partition(b"\r\n\r\n")
    return s, head, rest


def _read(s: socket.socket, rest: bytes, n: int) -> bytes:
    while len(rest) < n:
        rest += s.recv(64)
    return rest


@pytest.fixture
def proxy():
    made = []

    def make(endpoint=None, upstream=None):
        p = ModelProxy(endpoint, upstream)
        made.append(p)
        return p, p.start()

    yield make
    for p in made:
        p.stop()


def test_a_tunnel_to_an_endpoint_that_answers(proxy):
    server = _Listener(b"\x16\x03\x03 server hello")          # what a TLS server says first
    p, url = proxy(f"https://127.0.0.1:{server.port}")
    s, reply, rest = _tunnel(url, f"127.0.0.1:{server.port}")
    assert reply.startswith(b"HTTP/1.1 200")
    assert _read(s, rest, 3).startswith(b"\x16\x03\x03")     # forwarded untouched
    s.close()
    time.sleep(0.2)
    assert p.tries == 1 and p.answered >= 1 and p.silent_s() == 0.0
    server.close()


def test_an_endpoint_that_accepts_and_never_answers_is_silent(proxy):
    server = _Listener()
    p, url = proxy(f"https://localhost:{server.port}")        # localhost and 127.0.0.1: the same endpoint
    s, reply, _ = _tunnel(url, f"127.0.0.1:{server.port}")
    assert reply.startswith(b"HTTP/1.1 200")
    s.sendall(b"client hello")
    time.sleep(1.2)
    assert p.tries == 1 and p.answered == 0 and p.silent_s() >= 1.0
    assert "never answered: 1 connection" in p.why() and "1 with no byte back" in p.why()
    s.close()
    server.close()


def test_a_closed_endpoint_is_a_failed_connection_and_a_502(proxy):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    p, url = proxy(f"http://127.0.0.1:{port}")
    s, reply, _ = _tunnel(url, f"127.0.0.1:{port}")
    assert reply.startswith(b"HTTP/1.1 502")
    s.close()
    assert p.tries == 1 and p.failures["refused"] == 1 and p.silent_s() > 0
    assert "1 refused" in p.why()


def test_other_hosts_do_not_count_for_the_endpoint(proxy):
    other = _Listener(b"hi")
    p, url = proxy("https://api.example.invalid")
    s, reply, rest = _tunnel(url, f"127.0.0.1:{other.port}")
    assert reply.startswith(b"HTTP/1.1 200") and _read(s, rest, 2) == b"hi"     # forwarded all the same
    s.close()
    assert p.tries == 0 and p.silent_s() == 0.0
    other.close()


def test_a_plain_request_is_forwarded_and_through_the_users_proxy(proxy):
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Connection")))
            body = b"model says hi"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{httpd.server_address[1]}/v1/models"
    users, users_url = proxy()                                  # the user's own proxy, as the next hop
    p, url = proxy(target, upstream=user_proxy({"HTTPS_PROXY": users_url}))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
    assert opener.open(target, timeout=10).read() == b"model says hi"
    assert p.tries == 1 and p.answered >= 1 and users.tries == 1
    assert seen[-1] == ("/v1/models", "close")        # to the server itself: its origin form, one request
    direct, direct_url = proxy(target)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": direct_url}))
    assert opener.open(target + "?limit=2", timeout=10).read() == b"model says hi"
    assert seen[-1] == ("/v1/models?limit=2", "close") and direct.answered >= 1
    httpd.shutdown()


def test_the_program_is_pointed_at_it_and_nothing_bypasses_it():
    env = ModelProxy().env("http://127.0.0.1:9")
    assert env["HTTPS_PROXY"] == env["https_proxy"] == env["ALL_PROXY"] == "http://127.0.0.1:9"
    assert env["NO_PROXY"] == env["no_proxy"] == ""
    assert endpoint_url({"default": "https://api.x", "env": "X_URL"}, {}, {"X_URL": "http://h:1"}) == \
        ("http://h:1", "X_URL")
