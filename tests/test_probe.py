"""Each agent probed before a run (arena.agents.probe): a program that does not start, a
model endpoint that does not answer, a program that refuses root without bubblewrap stop the
run at once, in one line naming the agent and the fix; a sound agent passes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from arena.agents import get_agent
from arena.agents.probe import probe
from arena.cli import main

FIX = Path(__file__).parent / "fixtures" / "tasks"


def _agent(tmp_path: Path, monkeypatch, version_body: str, extra: str = "", options: dict | None = None):
    """A YAML agent whose program answers ``--version`` with the shell ``version_body``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "standin"
    exe.write_text(f'#!/bin/sh\ncase "$1" in --version) {version_body};; esac\nexit 0\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    yaml_file = tmp_path / "standin.yaml"
    yaml_file.write_text("name: standin\ncommand: [standin]\nversion_args: [standin, --version]\n"
                         "options: {base_url: null}\n" + extra)
    return get_agent(str(yaml_file), options or {}), yaml_file


@pytest.fixture()
def listening():
    """A local port that accepts connections."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture()
def closed():
    """A local port nothing listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_sound_agent_passes(tmp_path, monkeypatch, listening):
    agent, _ = _agent(tmp_path, monkeypatch, "echo 1.2.3",
                      f'endpoint: {{env: STANDIN_URL, default: "http://127.0.0.1:{listening}"}}\n')
    assert probe(agent, 5) is None


def test_a_program_that_does_not_start_is_named_with_its_words(tmp_path, monkeypatch):
    agent, _ = _agent(tmp_path, monkeypatch, "echo 'Error: Cannot find module yoga.wasm' >&2; exit 1",
                      "install: npm install -g standin@1\n")
    why = probe(agent, 5)
    assert why.startswith("agent standin: its program did not start (standin --version exited with status 1: ")
    assert "Cannot find module yoga.wasm" in why and "reinstall it: npm install -g standin@1" in why


def test_a_program_that_hangs_when_asked_its_version_is_stopped(tmp_path, monkeypatch):
    agent, _ = _agent(tmp_path, monkeypatch, "sleep 30")
    assert "gave no answer within 1 s" in probe(agent, 5, version_s=1)


def test_an_endpoint_that_refuses_names_what_points_at_it(tmp_path, monkeypatch, closed):
    agent, _ = _agent(tmp_path, monkeypatch, "echo 1.2.3",
                      'endpoint: {env: STANDIN_URL, option: base_url, default: "https://api.example.invalid"}\n')
    monkeypatch.setenv("STANDIN_URL", f"http://127.0.0.1:{closed}/v1")
    why = probe(agent, 5)
    assert f"agent standin: its model endpoint http://127.0.0.1:{closed}/v1 did not answer (127.0.0.1:{closed}" in why
    assert why.endswith("point STANDIN_URL at an endpoint that answers")
    by_option, _ = _agent(tmp_path, monkeypatch, "echo 1.2.3",
                          'endpoint: {env: STANDIN_URL, option: base_url, default: "https://api.example.invalid"}\n',
                          options={"base_url": f"http://127.0.0.1:{closed}"})
    assert probe(by_option, 5).endswith("point --agent-option base_url at an endpoint that answers")


def test_the_default_endpoint_is_reached_through_the_users_proxy(tmp_path, monkeypatch, listening, closed):
    agent, _ = _agent(tmp_path, monkeypatch, "echo 1.2.3", 'endpoint: {default: "https://api.example.invalid"}\n')
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{listening}")
    assert probe(agent, 5) is None
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{closed}")
    why = probe(agent, 5)
    assert f"127.0.0.1:{closed}" in why and "check the network, or set" in why


@pytest.mark.skipif(os.geteuid() != 0, reason="the rule is for a harness run as root")
def test_a_program_that_refuses_root_needs_bubblewrap(tmp_path, monkeypatch):
    import arena.agents.isolation as isolation

    agent, _ = _agent(tmp_path, monkeypatch, "echo 1.2.3", "root_needs_sandbox: true\n")
    monkeypatch.setattr(isolation, "bwrap", lambda: None)        # bubblewrap not installed
    why = probe(agent, 5)
    assert "refuses to run as root outside a sandbox" in why and "apt install bubblewrap" in why


def test_arena_run_stops_on_a_failed_probe_in_one_line_with_no_records(tmp_path, monkeypatch, capsys, closed):
    _, yaml_file = _agent(tmp_path, monkeypatch, "echo 1.2.3",
                          f'endpoint: {{default: "http://127.0.0.1:{closed}"}}\n')
    argv = ["--tasks-dir", str(FIX), "run", "--agent", str(yaml_file), "--device", "cpu", "--tasks",
            "triton2triton/axpy", "--split", "smoke", "--out", str(tmp_path / "run"), "--quiet"]
    code = main(argv)
    out = capsys.readouterr()
    lines = [ln for ln in (out.out + out.err).splitlines() if ln.strip() and "warning" not in ln]
    assert code == 2 and len(lines) == 1 and "its model endpoint" in lines[0], lines
    assert not (tmp_path / "run" / "records.jsonl").exists()
