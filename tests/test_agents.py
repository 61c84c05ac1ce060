"""Agents in isolated workspaces (arena/agents): every shipped adapter against a stand-in
executable that prints what the real program printed in a run against the scripted model
endpoint (the real programs themselves: test_agent_programs.py), exit reasons, the budget kill,
bubblewrap hiding the repository, a tampered feedback tool, the tuner, and the transcript
page rendered in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from arena import records
from arena.agents import AGENTS_DIR, get_agent, list_agents
from arena.agents.cli_agent import fill, load_agent_spec
from arena.agents.isolation import bwrap
from arena.agents.tuner import apply, hip_params, triton_params
from arena.agents.usage import parse_usage
from arena.devices import detect
from arena.errors import ArenaError
from arena.records import Status, Verdict
from arena.runner import run
from arena.taskdef.loader import REPO_ROOT
from arena.units import RunPlan

FIX = Path(__file__).parent / "fixtures" / "tasks"
AXPY = FIX / "triton2triton" / "axpy"
GOOD = (AXPY / "baseline.py").read_text()
WRONG = GOOD.replace("alpha * x + y", "alpha * x - y")
REQUIRE = os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1"

# What each program printed in a real run against the scripted model endpoint (see
# test_agent_programs.py: read the README, check, read the kernel, write it, check, stop),
# with its own record of the session where its adapter reads one; paths made neutral.
# cursor-agent, which cannot be run here, from its documented output format.
OUTPUTS_DIR = Path(__file__).parent / "fixtures" / "agent_outputs"
RECORDS = {"codex": ("record.jsonl", ".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-0.jsonl"),
           "mini-swe-agent": ("record.json", ".arena/trajectory.json")}
CURSOR = [
    {"type": "system", "subtype": "init"},
    {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "editing"}]}},
    {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "done", "duration_ms": 10}]
NAMES = ["aider", "claude-code", "codex", "cursor-agent", "gemini-cli", "mini-swe-agent", "opencode"]
# what the endpoint served: six replies of 2100 + 200k uncached input, 600 + 100k cached, 40 cache
# written, 130 + 11k output tokens (k = 0..5); aider asked once (2.7k sent in all, 130 received)
SERVED = {"input_tokens": 15600, "output_tokens": 945, "cache_read_tokens": 5100, "turns": 6}
EXPECTED = {
    "claude-code": {**SERVED, "cache_write_tokens": 240, "cost_usd": 0.063405, "error": False},
    "codex": SERVED,
    "gemini-cli": SERVED,
    "opencode": {**SERVED, "cache_write_tokens": 240, "cost_usd": 0.063405},
    "mini-swe-agent": {**SERVED, "cost_usd": 0.054825},
    "aider": {"input_tokens": 2700, "output_tokens": 130, "cost_usd": 0.0073, "turns": 1},
    "cursor-agent": {"turns": 2, "error": False},
}


def _raw(name: str) -> str:
    if name == "cursor-agent":
        return "\n".join(json.dumps(e) for e in CURSOR) + "\n"
    return (OUTPUTS_DIR / f"{name}.out").read_text()


def _record(name: str) -> str:
    return (OUTPUTS_DIR / f"{name}.{RECORDS[name][0]}").read_text() if name in RECORDS else ""


def _usage(name: str) -> dict:
    spec = load_agent_spec(AGENTS_DIR / f"{name}.yaml")
    if not spec.transcript_file:
        return parse_usage(spec.usage, _raw(name))
    return parse_usage(spec.usage, _record(name) + ("\n" + _raw(name) if spec.usage["format"] == "jsonl" else ""))


def _stand_in(bin_dir: Path, exe: str, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / exe
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _run_agent(tmp_path: Path, agent: str, monkeypatch, **plan_kw) -> list:
    out = tmp_path / "run"
    plan = RunPlan(agents=(agent,), tasks=(AXPY,), splits=("smoke",), **plan_kw)
    return run(plan, detect("cpu"), out)


def _with_bin(monkeypatch, bin_dir: Path) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


# -- adapters ------------------------------------------------------------------------------------


def test_every_shipped_adapter_is_valid_and_listed():
    names = {p.stem for p in AGENTS_DIR.glob("*.yaml")}
    assert set(NAMES) | {"command"} == names
    for p in AGENTS_DIR.glob("*.yaml"):
        spec = load_agent_spec(p)
        assert spec.install or spec.name == "command"          # a missing program says how to get it
    listed = {r["name"]: r for r in list_agents(versions=False)}
    assert names | {"baseline", "solution", "specialised", "tuner"} == set(listed)
    assert listed["command"]["available"] is True
    # the one adapter not proven against its program says so
    assert [n for n, r in listed.items() if r.get("experimental")] == ["cursor-agent"]


# A program that cannot log in: Claude Code's last event (exit 1), aider's report (exit 0, nothing done)
AUTH_FAILURES = {
    "claude-code": (json.dumps({"type": "result", "subtype": "success", "is_error": True, "num_turns": 1,
                                "api_error_status": 401, "api_error_type": "authentication_error",
                                "result": "Invalid API key · Fix external API key"}) + "\n", 1,
                    "Invalid API key · Fix external API key"),
    "aider": ("Aider v0.86.2\nlitellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key "
              "provided: sk-x.\nThe API provider is not able to authenticate you. Check your API key.\n", 0,
              "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided: sk-x."),
}


@pytest.mark.parametrize("name", sorted(AUTH_FAILURES))
def test_an_authentication_failure_is_recorded_as_auth(name, tmp_path, monkeypatch):
    out, code, message = AUTH_FAILURES[name]
    spec = load_agent_spec(AGENTS_DIR / f"{name}.yaml")
    (tmp_path / "out.txt").write_text(out)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _stand_in(tmp_path / "bin", spec.executable, 'case "$1" in --version) echo 9.9.9; exit 0;; esac\n'
                                                 f"cat {tmp_path}/out.txt\nexit {code}\n")
    _with_bin(monkeypatch, tmp_path / "bin")
    [v] = _run_agent(tmp_path, name, monkeypatch)
    assert v.agent_run["exit_reason"] == "auth" and v.agent_run["message"] == message
    assert v.agent_run["returncode"] == code
    # nothing was asked of the agent: not scored, whatever its untouched kernel would score; --resume asks again
    assert v.status.value == "AGENT_UNAVAILABLE" and not v.status.scored and message in v.message


@pytest.mark.parametrize("name", NAMES)
def test_usage_rules_read_each_program_output(name):
    assert _usage(name) == pytest.approx(EXPECTED[name])


def test_usage_rules_skip_garbage_lines():
    spec = load_agent_spec(AGENTS_DIR / "opencode.yaml")
    raw = "warning: something\n{not json\n" + _raw("opencode")
    assert parse_usage(spec.usage, raw)["input_tokens"] == 15600


@pytest.mark.parametrize("name", NAMES)
def test_adapter_end_to_end_with_a_stand_in(name, tmp_path, monkeypatch):
    spec = load_agent_spec(AGENTS_DIR / f"{name}.yaml")
    (tmp_path / "out.txt").write_text(_raw(name))
    (tmp_path / "good.py").write_text(GOOD.replace("alpha * x + y", "y + alpha * x"))
    keep = ""
    if name in RECORDS:          # the program's own record, where it writes it (the workspace or its HOME)
        (tmp_path / "record").write_text(_record(name))
        dest = RECORDS[name][1]
        dest = dest if dest.startswith(".arena/") else f"$HOME/{dest}"
        keep = f'mkdir -p "$(dirname {dest})"\ncp {tmp_path}/record "{dest}"\n'
    bin_dir = tmp_path / "bin"
    # the stand-in: answers for its version, edits the kernel, runs the feedback tool once, prints the output
    _stand_in(bin_dir, spec.executable, 'case "$1" in --version|--help) echo "stand-in 9.9.9"; exit 0;; esac\n'
                                        f"cp {tmp_path}/good.py kernel.py\n./arena-check > /dev/null\n{keep}"
                                        f"cat {tmp_path}/out.txt\necho \"$@\" > .arena/argv.txt\n")
    _with_bin(monkeypatch, bin_dir)
    if shutil.which("bwrap"):
        # the stand-in reads its fixture from the test's tmp folder: keep it visible
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    [v] = _run_agent(tmp_path, name, monkeypatch)
    assert v.status.value == "PASSED" and v.agent == name
    info = v.agent_run
    assert info["exit_reason"] == "finished" and info["feedback_calls"] == 1 and info["version"] == "9.9.9"
    for k, val in EXPECTED[name].items():
        assert info[k] == pytest.approx(val)
    art = tmp_path / "run" / "artifacts" / name / "triton2triton" / "axpy" / "0"
    assert (art / "kernel.py").read_text() == (tmp_path / "good.py").read_text()
    assert (art / "transcript.raw").read_text() == _raw(name)
    if name in RECORDS:
        assert (art / f"transcript.{RECORDS[name][0].split('.')[-1]}").read_text() == _record(name)
    calls = [json.loads(x) for x in (art / "feedback.jsonl").read_text().splitlines()]
    assert [c["status"] for c in calls] == ["PASSED"]


def test_exit_reason_crashed_and_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _stand_in(tmp_path / "bin", "crashy", "rm kernel.py\nexit 3\n")
    _with_bin(monkeypatch, tmp_path / "bin")
    yaml_file = tmp_path / "crashy.yaml"
    yaml_file.write_text("name: crashy\ncommand: [crashy]\nbudget_s: 60\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    assert v.agent_run["exit_reason"] == "crashed" and v.agent_run["returncode"] == 3
    # the agent's failure, on every split, whatever file it left (here: none)
    assert v.status.value == "AGENT_FAILED" and v.status.scored and v.stage == "agent"
    assert "the agent crashed" in v.message


# -- how an agent's run ended decides what is judged ------------------------------------------


def _agent(tmp_path: Path, monkeypatch, body: str, budget_s: float = 60) -> Path:
    """A YAML agent whose program is the shell ``body``, run in the workspace."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _stand_in(tmp_path / "bin", "standin", body)
    _with_bin(monkeypatch, tmp_path / "bin")
    yaml_file = tmp_path / "standin.yaml"
    yaml_file.write_text(f"name: standin\ncommand: [standin]\nbudget_s: {budget_s}\n")
    return yaml_file


OUTCOMES = {
    # the program refuses to start (claude-code run as root outside bubblewrap)
    "not_started": ("echo '--dangerously-skip-permissions cannot be used with root/sudo privileges for security "
                    "reasons' >&2\nexit 1\n", "AGENT_FAILED", "cannot be used with root/sudo"),
    # it edits, then dies: its failure, although the file it left is right
    "crashed": ("sed -i 's/alpha \\* x + y/y + alpha * x/' kernel.py\n"
                "echo 'TypeError: cannot read properties of undefined' >&2\nexit 2\n", "AGENT_FAILED",
                "TypeError: cannot read properties"),
    "unreachable": ("echo 'API Error: Connection error. ECONNREFUSED 127.0.0.1:9' >&2\nexit 1\n", "AGENT_UNAVAILABLE",
                    "ECONNREFUSED"),
    "no_edit": ("echo 'nothing to do'\nexit 0\n", "PASSED", ""),
}


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_how_the_agents_run_ended_decides_its_verdict(outcome, tmp_path, monkeypatch):
    body, status, words = OUTCOMES[outcome]
    [v] = _run_agent(tmp_path, str(_agent(tmp_path, monkeypatch, body)), monkeypatch)
    assert v.agent_run["exit_reason"] == outcome and v.status.value == status, (v.agent_run, v.message)
    assert words in v.message and words in v.agent_run.get("message", "")
    assert v.agent_run["edited"] is (outcome == "crashed")
    from arena.cli import verdict_note

    assert (words or "without changing the kernel") in verdict_note(v)


def test_an_agent_cut_off_from_its_model_until_its_budget_is_not_scored(tmp_path, monkeypatch):
    """A program that only retries an unreachable endpoint until its budget ends it has done
    nothing: not scored (it said so), not a pass of the untouched starting kernel."""
    body = "while true; do echo 'Error: connect ECONNREFUSED 127.0.0.1:9 (retrying)' >&2; sleep 0.2; done\n"
    [v] = _run_agent(tmp_path, str(_agent(tmp_path, monkeypatch, body, budget_s=2)), monkeypatch)
    assert v.agent_run["exit_reason"] == "unreachable" and v.status.value == "AGENT_UNAVAILABLE"


def test_an_agent_that_only_says_its_model_is_unreachable_is_stopped_early(tmp_path, monkeypatch):
    """It retries an unreachable endpoint and does nothing else: past ``unreachable_after_s`` it
    is stopped, well before its budget, and not scored; one that edits meanwhile is not."""
    body = "while true; do echo 'Error: connect ECONNREFUSED 127.0.0.1:9 (retrying)' >&2; sleep 0.2; done\n"
    yaml_file = _agent(tmp_path, monkeypatch, body, budget_s=120)
    yaml_file.write_text(yaml_file.read_text() + "unreachable_after_s: 2\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    assert v.agent_run["exit_reason"] == "unreachable" and v.status.value == "AGENT_UNAVAILABLE"
    assert v.agent_run["wall_s"] < 30 and "ECONNREFUSED" in v.agent_run["message"]
    busy = ("sed -i 's/alpha \\* x + y/y + alpha * x/' kernel.py\n"
            "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo 'ECONNREFUSED (retrying)' >&2; sleep 0.2; done\n")
    other = tmp_path / "other"
    other.mkdir()
    yaml2 = _agent(other, monkeypatch, busy, budget_s=120)
    yaml2.write_text(yaml2.read_text() + "unreachable_after_s: 1\n")
    [w] = _run_agent(other, str(yaml2), monkeypatch)
    assert w.agent_run["exit_reason"] == "finished" and w.status.value == "PASSED" and w.agent_run["wall_s"] >= 2.5


# a program that asks its endpoint through the proxy (HTTPS_PROXY: a tunnel) and then waits without a word
_SILENT_CLIENT = """python3 - <<'PY'
import os, socket, sys, time
host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[1].split(":")
s = socket.create_connection((host, int(port)))
s.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n")
s.recv(200)
s.sendall(b"client hello")
time.sleep({wait})
PY
"""


def _endpoint(greeting: bytes):
    """A model endpoint on 127.0.0.1 that accepts connections and says ``greeting`` (or nothing)."""
    import socket
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    conns = []

    def serve():
        while True:
            try:
                c, _ = sock.accept()
            except OSError:
                return
            conns.append(c)
            if greeting:
                c.sendall(greeting)

    threading.Thread(target=serve, daemon=True).start()
    return sock, sock.getsockname()[1]


@pytest.mark.parametrize("answers", [False, True])
def test_an_agent_whose_endpoint_never_answers_is_stopped_even_if_it_says_nothing(answers, tmp_path, monkeypatch):
    """Its program reaches the network through the harness's proxy: an endpoint that accepts the
    connection and never sends a byte back is seen there, though the program says nothing while
    it waits (it would otherwise wait until its budget, then be judged on the untouched kernel).
    An endpoint that answers (a TLS server's first bytes) is left to the program, however long
    its model takes."""
    import arena.agents.cli_agent as cli_agent

    monkeypatch.setattr(cli_agent, "ANSWER_WAIT_S", 1.0)
    sock, port = _endpoint(b"\x16\x03\x03 server hello" if answers else b"")
    body = _SILENT_CLIENT.format(port=port, wait=5 if answers else 600)
    yaml_file = _agent(tmp_path, monkeypatch, body, budget_s=120)
    yaml_file.write_text(yaml_file.read_text() + f"unreachable_after_s: 2\nendpoint: {{default: 'https://127.0.0.1:{port}'}}\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    sock.close()
    if answers:
        assert v.agent_run["exit_reason"] == "no_edit" and v.status.value == "PASSED", v.agent_run
        assert v.agent_run["wall_s"] >= 4
        return
    assert v.agent_run["exit_reason"] == "unreachable" and v.status.value == "AGENT_UNAVAILABLE", v.agent_run
    assert v.agent_run["wall_s"] < 30 and not v.status.scored
    assert f"its model endpoint (127.0.0.1:{port}) never answered: 1 connection" in v.agent_run["message"]


def test_an_agent_that_never_asks_its_named_endpoint_is_stopped(tmp_path, monkeypatch):
    """A program that waits on something else (a prompt, a login) without a word and without
    a connection to the endpoint its adapter names: stopped past ``unreachable_after_s`` and not
    scored, not judged at its budget on the untouched kernel."""
    sock, port = _endpoint(b"")
    yaml_file = _agent(tmp_path, monkeypatch, "sleep 600\n", budget_s=120)
    yaml_file.write_text(yaml_file.read_text() + f"unreachable_after_s: 2\nendpoint: {{default: 'https://127.0.0.1:{port}'}}\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    sock.close()
    assert v.agent_run["exit_reason"] == "unreachable" and v.status.value == "AGENT_UNAVAILABLE", v.agent_run
    assert v.agent_run["wall_s"] < 30
    assert f"made no connection to its model endpoint (127.0.0.1:{port})" in v.agent_run["message"]


def test_a_stray_connection_error_of_a_program_at_work_is_not_a_cut_off(tmp_path):
    """Three connection errors and the last line one of them: unreachable. A program that said
    so once or twice, or whose last line is its work, is not."""
    import re

    from arena.agents.cli_agent import UNREACHABLE, unreachable_only

    pattern = re.compile(UNREACHABLE)
    err, out = tmp_path / "err", tmp_path / "out"
    out.write_text("")
    err.write_text("fetch failed (update check)\nreading kernel.py\nplanning the tiling\n")
    assert not unreachable_only(pattern, err, out)
    err.write_text("ECONNREFUSED\nretrying\nECONNREFUSED\nretrying\nECONNREFUSED\n")
    assert unreachable_only(pattern, err, out)
    time.sleep(0.01)
    out.write_text('{"type": "assistant", "text": "the model answered"}\n')      # written after: its work goes on
    assert not unreachable_only(pattern, err, out)


def test_resume_asks_an_agent_its_service_did_not_serve_again(tmp_path, monkeypatch):
    yaml_file = _agent(tmp_path, monkeypatch, "echo 'Invalid API key' >&2\nexit 1\n")
    yaml_file.write_text(yaml_file.read_text() + "auth_error: '(?i)invalid api key'\n")
    out = tmp_path / "run"
    plan = RunPlan(agents=(str(yaml_file),), tasks=(AXPY,), splits=("smoke",))
    [v] = run(plan, detect("cpu"), out)
    assert v.status.value == "AGENT_UNAVAILABLE" and v.agent_run["exit_reason"] == "auth"
    _stand_in(tmp_path / "bin", "standin", f"cp {tmp_path / 'good.py'} kernel.py\n")      # the key fixed
    (tmp_path / "good.py").write_text(GOOD.replace("alpha * x + y", "y + alpha * x"))
    [v2] = run(plan, detect("cpu"), out, resume=True)
    assert v2.status.value == "PASSED" and v2.agent_run["exit_reason"] == "finished" and v2.attempt == 2
    assert [r.status.value for r in records.current(records.read(out / "records.jsonl"))] == ["PASSED"]


def test_an_agent_failing_the_same_way_three_times_in_a_row_makes_no_more_attempts(tmp_path, monkeypatch):
    """Five attempts of an agent that cannot reach its model: after the third the run stops it
    (one line naming it, the outcome and the program's words), the other two are not made and
    not recorded, and --resume makes them once the cause is fixed."""
    refused = "echo 'API Error: Connection error. ECONNREFUSED 127.0.0.1:9' >&2\nexit 1\n"
    yaml_file = _agent(tmp_path, monkeypatch, refused)
    out = tmp_path / "run"
    plan = RunPlan(agents=(str(yaml_file),), tasks=(AXPY,), splits=("smoke",), repeats=5)
    said: list[str] = []
    got = run(plan, detect("cpu"), out, on_stop=said.append)
    assert [v.status.value for v in got] == ["AGENT_UNAVAILABLE"] * 3
    assert len(said) == 1 and "agent standin stopped: 3 attempts in a row ended 'unreachable'" in said[0]
    assert "ECONNREFUSED" in said[0] and "--resume" in said[0]
    _stand_in(tmp_path / "bin", "standin", f"cp {tmp_path / 'good.py'} kernel.py\n")  # reachable again
    (tmp_path / "good.py").write_text(GOOD.replace("alpha * x + y", "y + alpha * x"))
    again = run(plan, detect("cpu"), out, resume=True, on_stop=said.append)
    assert sorted(v.repeat for v in again) == [0, 1, 2, 3, 4] and {v.status.value for v in again} == {"PASSED"}
    assert len(said) == 1


def test_a_streak_counts_one_failure_in_a_row_and_a_success_or_another_failure_ends_it():
    from arena.runner import Streaks

    def attempt(reason: str, message: str = "") -> list:
        return [
            Verdict(
                task_id="t/x",
                category="t",
                split="seen",
                status=Status.AGENT_FAILED,
                candidate={},
                device={},
                agent="a",
                agent_run={"exit_reason": reason, "message": message},
            )
        ]

    s = Streaks(3)
    assert [s.add("a", attempt(r)) for r in ("crashed", "crashed", "auth", "crashed", "finished", "crashed")] == [
        None
    ] * 6
    assert s.add("a", attempt("crashed")) is None and s.add("a", attempt("crashed", "boom\nmore")) is not None
    assert "3 attempts in a row ended 'crashed' (boom)" in s.stopped["a"]
    assert s.add("a", attempt("crashed")) is None  # said once
    never = Streaks(0)
    assert all(never.add("a", attempt("crashed")) is None for _ in range(10)) and not never.stopped
    assert Streaks(3).add("a", []) is None  # an attempt with no agent run


def test_the_report_counts_agent_outcomes_and_leaves_the_unserved_out(tmp_path, monkeypatch):
    """A run mixing the outcomes: the report's correctness rate is the one computed by hand
    (the crash counts as a failure, the unserved attempt not at all), its no-edit column counts
    the untouched kernel, and the agent-runs section lists every outcome."""
    from arena.report import build_report

    recs = []
    for outcome in ("crashed", "unreachable", "no_edit"):
        body = OUTCOMES[outcome][0]
        folder = tmp_path / outcome
        folder.mkdir()
        recs += _run_agent(folder, str(_agent(folder, monkeypatch, body)), monkeypatch)
    merged = tmp_path / "all.jsonl"
    for v in recs:  # three runs: three attempts
        v.run_id = f"run-{v.agent_run['exit_reason']}"
        records.append(merged, v)
    files = build_report([merged], tmp_path / "report")
    import pandas as pd

    summ = pd.read_csv(files["summary_csv"])
    row = summ[summ["category"] == "all"].iloc[0]
    assert row["attempts"] == 2  # the unserved attempt is not scored
    assert row["correct_smoke"] == 0.5  # the starting kernel passed, the crash did not
    assert row["no_edit"] == 1
    md = files["md"].read_text()
    assert "## Agent runs" in md and "| standin | unreachable | 1 |" in md and "| standin | crashed | 1 |" in md
    assert "## Not scored, per agent" in md and "1 of its 3 verdicts not scored" in md


def _alive(arg: str) -> list[int]:
    """Live processes one of whose arguments is exactly ``arg`` (a substring would match any
    process whose temporary path or port happens to hold those digits)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if arg.encode() in (p / "cmdline").read_bytes().split(b"\0"):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


def test_budget_kill_leaves_no_process(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    # a child that leaves the session (setsid) and one in the group, then the agent hangs
    waits = ("913.0417", "914.0417", "915.0417")
    _stand_in(tmp_path / "bin", "hangs", "setsid sleep {} &\nsleep {} &\nsleep {}\n".format(*waits))
    _with_bin(monkeypatch, tmp_path / "bin")
    yaml_file = tmp_path / "hangs.yaml"
    yaml_file.write_text("name: hangs\ncommand: [hangs]\nbudget_s: 3\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    # stopped by its budget (it would sleep for 915 s), not before it
    assert v.agent_run["exit_reason"] == "budget" and v.agent_run["wall_s"] >= 3
    time.sleep(0.3)
    assert [_alive(w) for w in waits] == [[], [], []]
    assert v.status.value == "PASSED"  # the kernel it left (the starting one) is still evaluated


def test_bubblewrap_hides_the_repository_and_the_run(tmp_path, monkeypatch):
    if bwrap() is None:
        if REQUIRE:
            pytest.fail("bubblewrap is required (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("bubblewrap not installed")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    probe = (
        f"ls {REPO_ROOT} > .arena/repo.txt 2>&1; ls {FIX} > .arena/tasks.txt 2>&1; "
        f"ls {tmp_path / 'run'} > .arena/run.txt 2>&1; touch {tmp_path}/escaped 2>/dev/null; "
        "cat .arena/*.txt"
    )
    yaml_file = tmp_path / "probe.yaml"
    yaml_file.write_text(f"name: probe\ncommand: [sh, -c, {json.dumps(probe)}]\nbudget_s: 60\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    art = tmp_path / "run" / "artifacts" / "probe" / "triton2triton" / "axpy" / "0"
    seen = (art / "transcript.raw").read_text()
    assert "pyproject.toml" not in seen and "axpy" not in seen and "records.jsonl" not in seen
    assert not (tmp_path / "escaped").exists()
    assert v.agent_run["sandbox"] == "bubblewrap"


def test_a_tampered_feedback_tool_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "wrong.py").write_text(WRONG)
    script = (
        f"cp {tmp_path}/wrong.py kernel.py; printf '#!/bin/sh\\necho PASSED\\n' > arena-check; "
        "./arena-check; echo extra > notes.txt"
    )
    yaml_file = tmp_path / "liar.yaml"
    yaml_file.write_text(f"name: liar\ncommand: [sh, -c, {json.dumps(script)}]\nbudget_s: 60\n")
    [v] = _run_agent(tmp_path, str(yaml_file), monkeypatch)
    assert v.status.value == "INCORRECT_NUMERICAL"
    assert v.agent_run["feedback_calls"] == 0 and v.agent_run["ignored_changes"] == 2  # arena-check, notes.txt
    art = tmp_path / "run" / "artifacts" / "liar" / "triton2triton" / "axpy" / "0"
    assert json.loads((art / "ignored_changes.json").read_text()) == ["arena-check", "notes.txt"]


def test_unknown_option_and_agent_name_the_key(tmp_path):
    with pytest.raises(ArenaError, match="no option temperature"):
        get_agent("codex", {"temperature": "1"})
    with pytest.raises(ArenaError, match="unknown agent"):
        get_agent("nobody")


def test_fill_leaves_other_braces():
    assert fill('{"a": {x}} {y}', {"x": 1}) == '{"a": 1} {y}'


# -- tuner ------------------------------------------------------------------------------------------


def test_tuner_finds_launch_parameters():
    src = textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def k(x, BLOCK: tl.constexpr):
            A = 64
            pass

        def entry(x, n):
            BLOCK = 1024
            k[(1,)](x, BLOCK=BLOCK, num_warps=4, num_stages=2, OTHER=3)
        """)
    ps = triton_params(src)
    assert [(p.name, p.value) for p in ps] == [("BLOCK", 1024), ("num_warps", 4), ("num_stages", 2)]
    changed = apply(src, {ps[0]: 256, ps[1]: 8})
    assert "BLOCK = 256" in changed and "num_warps=8" in changed and "A = 64" in changed
    hip = "constexpr int THREADS = 256;  // tunable\n#define TILE 32 // tunable\nconstexpr int N = 256;\n"
    assert [(p.name, p.value) for p in hip_params(hip)] == [("THREADS", 256), ("TILE", 32)]


def test_tuner_runs_the_loop_through_the_feedback_tool(tmp_path, monkeypatch):
    [v] = _run_agent(tmp_path, "tuner", monkeypatch, agent_budget_s=40)
    assert v.status.value == "PASSED" and v.agent == "tuner"
    info = v.agent_run
    assert info["feedback_calls"] >= 2 and info["exit_reason"] in ("budget", "finished")
    assert info["tuned"] == {"BLOCK": 1024}  # no timing on the cpu backend: nothing beats the start
    art = tmp_path / "run" / "artifacts" / "tuner" / "triton2triton" / "axpy" / "0"
    trials = [json.loads(x) for x in (art / "transcript.raw").read_text().splitlines()]
    assert len(trials) == info["feedback_calls"] and trials[0]["params"] == {"BLOCK": 1024}


# -- transcript -------------------------------------------------------------------------------------


def test_transcript_page_renders_in_headless_chromium(tmp_path, monkeypatch):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if REQUIRE:
            pytest.fail("chromium is required (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("chromium not installed")
    (tmp_path / "out.txt").write_text(_raw("claude-code"))
    (tmp_path / "good.py").write_text(GOOD.replace("alpha * x + y", "y + alpha * x"))
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _stand_in(
        tmp_path / "bin",
        "claude",
        'case "$1" in --version) echo 9.9.9; exit 0;; esac\n'
        f"cp {tmp_path}/good.py kernel.py\n./arena-check >/dev/null\n"
        f"cat {tmp_path}/out.txt\n",
    )
    _with_bin(monkeypatch, tmp_path / "bin")
    _run_agent(tmp_path, "claude-code", monkeypatch)
    page = tmp_path / "t.html"
    from arena.cli import main

    assert (
        main(["--tasks-dir", str(FIX), "transcript", str(tmp_path / "run"), "triton2triton/axpy", "--out", str(page)])
        == 0
    )
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "claude-code on triton2triton/axpy" in dom
    assert "cost_usd 0.063405" in dom and "feedback_calls 1" in dom and "version 9.9.9" in dom
    assert "Write" in dom and "y + alpha * x" in dom  # the tool call and the final diff
    assert "<details" in dom and "smoke: PASSED" in dom
    # the report carries the attempt's cost and time
    from arena.report import build_report

    build_report([tmp_path / "run"], tmp_path / "report")
    rows = json.loads((tmp_path / "report" / "summary.json").read_text())
    row = next(r for r in (rows if isinstance(rows, list) else rows["summary"]) if r["category"] == "all")
    assert row["cost_usd_mean"] == pytest.approx(0.063405) and row["feedback_calls_mean"] == 1
