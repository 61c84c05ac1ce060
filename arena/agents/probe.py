"""Each agent probed once before a run, so that a run that cannot work stops at once, with one
line naming the agent and the fix, instead of spending every attempt's budget on it.

A probe asks, of a YAML agent (``CommandAgent``): is its program on PATH; does it start (its
``version_args`` exit 0 within the probe's time); will it run as the user the harness is (an
adapter whose program refuses root outside a sandbox, ``root_needs_sandbox``, needs bubblewrap
there); does its model endpoint answer (``endpoint``: a TCP connection to the URL an option or
a variable of the user's environment names, else the adapter's default, through the user's
proxy where one is set). The built-in agents need none of this.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence

from arena.agents.model_proxy import endpoint_url

PROBE_S = 20.0          # how long an endpoint may take to accept a connection
VERSION_S = 60.0        # how long a program may take to answer its version (a cold start of a Python program)


def probe(agent: Any, timeout_s: float = PROBE_S, environ: Mapping[str, str] | None = None,
          version_s: float = VERSION_S) -> str | None:
    """Why ``agent`` cannot run here, in one line with the fix, or None."""
    from arena.agents.cli_agent import CommandAgent, asked_version, missing_program
    from arena.agents.isolation import bubblewrap_missing

    if not isinstance(agent, CommandAgent):
        return None
    spec = agent.spec
    environ = os.environ if environ is None else environ
    missing = missing_program(spec)
    if missing:
        return missing
    if spec.version_args:
        why, _ = asked_version(spec, version_s)      # asked once: the run records the same answer's version
        if why:
            return f"agent {spec.name}: its program did not start ({' '.join(spec.version_args)} {why})" + \
                (f"; reinstall it: {spec.install}" if spec.install else "")
    if spec.root_needs_sandbox and os.geteuid() == 0 and bubblewrap_missing():
        return (f"agent {spec.name}: {spec.executable} refuses to run as root outside a sandbox, and bubblewrap is "
                f"not installed: install it (Debian: apt install bubblewrap) or run the harness as another user")
    if spec.endpoint:
        url, source = endpoint_url(spec.endpoint, agent.options, environ)
        why = _unanswered(url, timeout_s, environ)
        if why:
            fix = f"point {source} at an endpoint that answers" if source else \
                f"check the network, or set {' or '.join(_sources(spec.endpoint))} to an endpoint that answers"
            return f"agent {spec.name}: its model endpoint {url} did not answer ({why}): {fix}"
    return None


def probe_all(agents: Sequence[Any], timeout_s: float = PROBE_S) -> list[str]:
    """The probes of several agents at once: their failures."""
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(agents)))) as pool:
        return [why for why in pool.map(lambda a: probe(a, timeout_s), agents) if why]


def _sources(endpoint: Mapping[str, str]) -> list[str]:
    return [s for s in (endpoint.get("env"), f"--agent-option {endpoint['option']}" if endpoint.get("option")
                        else None) if s]


def _unanswered(url: str, timeout_s: float, environ: Mapping[str, str]) -> str | None:
    """Why nothing accepted a connection for ``url`` (through the proxy the environment names
    for it), or None."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL"
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    proxies = {k.lower(): v for k, v in environ.items() if k.lower().endswith("_proxy")}
    proxy = proxies.get(f"{parts.scheme}_proxy") or proxies.get("all_proxy")
    if proxy and not urllib.request.proxy_bypass_environment(host, proxies={**proxies}):
        p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if p.hostname:
            host, port = p.hostname, p.port or 8080
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.timeout:
        return f"no answer from {host}:{port} within {timeout_s:g} s"
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
