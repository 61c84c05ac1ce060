"""The shipped agent adapters against the real agent programs, each pointed at the scripted
model endpoint (arena.agents.scripted_model) and run by ``arena run --agent NAME --device
cpu`` inside bubblewrap on a Triton fixture task.

The endpoint takes each program through one session: read the README, run ./arena-check,
read the kernel, write the task's solution into it, run ./arena-check again, stop. A test
checks that the program did (the collected kernel is the solution, the feedback tool was
called, the program exited by itself), that the record's agent_run holds the turns,
tokens and cost the program reported, equal to what the endpoint served, and the
program's version; that the transcript page shows every turn, tool call and edit in
headless Chromium; that a rejected API key is recorded as exit_reason auth with the
program's own message; and that a budget kill leaves none of its processes behind.

The programs are installed by .ci/run at pinned versions. A test whose program is not on
PATH is skipped, or fails where ARENA_REQUIRE_TOOLCHAINS=1.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable

import pytest
from toolchains import chromium  # tests/ is on the path

from arena import records
from arena.agents import AGENTS_DIR, list_agents
from arena.agents.cli_agent import load_agent_spec, program_version
from arena.agents.isolation import bwrap
from arena.agents.scripted_model import Action, ScriptedModel, Usage, session_script
from arena.cli import main

REQUIRE = os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1"
FIX = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"
TASK = "triton2triton/axpy"
SOLUTION = (FIX / "baseline.py").read_text().replace("alpha * x + y", "y + alpha * x")
KEY = "sk-arena-scripted"
BUDGET_S = 300         # a hung program fails its test in minutes, not in the adapters' 45

# published prices, dollars a token: (input, output, cache read, cache write)
PRICES = {"claude-sonnet-4-5": (3e-6, 15e-6, 0.3e-6, 3.75e-6), "gpt-4o": (2.5e-6, 10e-6, 1.25e-6, 0.0)}


def _cost(model: str, usages: list[Usage]) -> float:
    p_in, p_out, p_read, p_write = PRICES[model]
    return sum(u.input * p_in + u.output * p_out + u.cache_read * p_read + u.cache_write * p_write for u in usages)


@dataclass
class Program:
    """How a test points one program at the endpoint, and what its output can say."""

    env: Callable[[str], dict[str, str]]             # endpoint URL -> variables
    options: Callable[[str], dict[str, str]] = lambda url: {}
    mode: str = "tools"
    cost_model: str | None = None                    # the program reports a cost, priced as this model
    reports_cache: bool = True                       # it says how many input tokens were cached
    reports_cache_write: bool = False
    checks: int = 2                                  # feedback calls the session makes
    home_files: dict[str, str] = field(default_factory=dict)   # files of the user's HOME it needs


PROGRAMS: dict[str, Program] = {
    "claude-code": Program(env=lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY},
                           cost_model="claude-sonnet-4-5", reports_cache_write=True),
    "codex": Program(env=lambda url: {"OPENAI_API_KEY": KEY}, options=lambda url: {"base_url": f"{url}/v1"}),
    "mini-swe-agent": Program(env=lambda url: {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{url}/v1"},
                              options=lambda url: {"model": "openai/gpt-4o"}, cost_model="gpt-4o"),
    # aider: one reply carries the edit, its test command runs the check; "sent" counts cached tokens
    "aider": Program(env=lambda url: {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": f"{url}/v1"},
                     options=lambda url: {"model": "openai/gpt-4o"}, mode="aider", cost_model="gpt-4o",
                     reports_cache=False, checks=1),
    # with a base URL, this version needs the API-key auth type set in the user's settings
    "gemini-cli": Program(env=lambda url: {"GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": url},
                          home_files={".gemini/settings.json": json.dumps(
                              {"security": {"auth": {"selectedType": "gemini-api-key"}}})}),
    "opencode": Program(env=lambda url: {"ANTHROPIC_API_KEY": KEY, "OPENCODE_CONFIG_CONTENT": json.dumps(
        {"provider": {"anthropic": {"options": {"baseURL": f"{url}/v1"}}}})},
                        cost_model="claude-sonnet-4-5", reports_cache_write=True),
}


def _need_program(name: str) -> str:
    spec = load_agent_spec(AGENTS_DIR / f"{name}.yaml")
    if shutil.which(spec.executable) is None:
        msg = f"{spec.executable} ({name}) is not installed: {spec.install}"
        if REQUIRE:
            pytest.fail(f"{msg} (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip(msg)
    if bwrap() is None:
        if REQUIRE:
            pytest.fail("bubblewrap is required (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("bubblewrap not installed: the agent programs are run inside it")
    return spec.executable


def _task_with_solution(tmp_path: Path) -> Path:
    """A copy of the axpy fixture that ships a solution (the endpoint writes it)."""
    root = tmp_path / "tasks"
    shutil.copytree(FIX, root / TASK)
    (root / TASK / "solution.py").write_text(SOLUTION)
    return root


def _arena_run(name: str, tmp_path: Path, monkeypatch, model: ScriptedModel, budget_s: float = BUDGET_S,
               ) -> tuple[Any, Path]:
    prog = PROGRAMS[name]
    for k, v in prog.env(model.url).items():
        monkeypatch.setenv(k, v)
    if prog.home_files:                  # the user's HOME, from which the adapter copies its auth files
        home = tmp_path / "user-home"
        for rel, text in prog.home_files.items():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(text)
        monkeypatch.setenv("HOME", str(home))
    tasks = tmp_path / "tasks"
    if not tasks.is_dir():
        _task_with_solution(tmp_path)
    out = tmp_path / "run"
    argv = ["--tasks-dir", str(tasks), "run", "--agent", name, "--device", "cpu", "--tasks", TASK,
            "--split", "smoke", "--out", str(out), "--budget", str(budget_s), "--quiet"]
    for k, v in prog.options(model.url).items():
        argv += ["--agent-option", f"{k}={v}"]
    assert main(argv) == 0
    [v] = [v for v in records.read(out / "records.jsonl") if v.agent == name]
    return v, out / "artifacts" / name / TASK / "0"


def _script(tmp_path: Path) -> list:
    return list(session_script("kernel.py", SOLUTION))


# -- each program through the session -------------------------------------------------------------


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_real_program_runs_the_session(name, tmp_path, monkeypatch):
    _need_program(name)
    prog = PROGRAMS[name]
    _task_with_solution(tmp_path)
    with ScriptedModel(_script(tmp_path), mode=prog.mode) as model:
        v, art = _arena_run(name, tmp_path, monkeypatch, model)
    info = v.agent_run
    stderr = (art / "agent.stderr").read_text(errors="replace")[-3000:]
    # it exited by itself, edited the editable file, called the feedback tool
    assert info["exit_reason"] == "finished" and info["returncode"] == 0, stderr
    assert info["sandbox"] == "bubblewrap"
    assert (art / "kernel.py").read_text().rstrip("\n") == SOLUTION.rstrip("\n")
    assert v.status.value == "PASSED"
    calls = [json.loads(x) for x in (art / "feedback.jsonl").read_text().splitlines()]
    assert info["feedback_calls"] == len(calls) == prog.checks
    assert [c["status"] for c in calls] == ["PASSED"] * prog.checks
    snapshots = sorted((art / "feedback").glob("*/kernel.py"))
    assert snapshots[-1].read_text().rstrip("\n") == SOLUTION.rstrip("\n")   # the last check saw the edit
    # what it says it used is what it was served
    served = model.replies()
    assert served and all(s.kind == "script" for s in served), [s.kind for s in model.served]
    steps = [s.step for s in served]
    assert steps == sorted(set(steps)), "a step was served twice"
    total = model.totals()
    assert info["turns"] == len(served)
    assert info["output_tokens"] == total.output
    if prog.reports_cache:
        assert info["input_tokens"] == total.input and info["cache_read_tokens"] == total.cache_read
    else:
        assert info["input_tokens"] == total.input + total.cache_read
    if prog.reports_cache_write:
        assert info["cache_write_tokens"] == total.cache_write
    if prog.cost_model:
        expected = _cost(prog.cost_model, [s.usage for s in served])
        assert info["cost_usd"] == pytest.approx(expected, rel=0.01 if name == "aider" else 1e-6)   # aider rounds
    else:
        assert "cost_usd" not in info
    # its version, from the program itself, in the record and in `arena agents list`
    version = program_version(load_agent_spec(AGENTS_DIR / f"{name}.yaml"))
    assert version and re.fullmatch(r"\d+\.\d+.*", version)
    assert info["version"] == version
    assert json.loads((art / "agent.json").read_text())["version"] == version
    assert next(r for r in list_agents() if r["name"] == name)["version"] == version
    _check_transcript_page(name, tmp_path, art, served)


# -- the transcript page, as headless Chromium renders it --------------------------------------------

class _Page(HTMLParser):
    """The text of a rendered page and the summaries of its collapsible turns."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.summaries: list[str] = []
        self._in_summary = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "summary":
            self._in_summary += 1
            self.summaries.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary":
            self._in_summary -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_summary:
            self.summaries[-1] += data


def _check_transcript_page(name: str, tmp_path: Path, art: Path, served: list) -> None:
    page = tmp_path / f"{name}.html"
    assert main(["--tasks-dir", str(tmp_path / "tasks"), "transcript", str(tmp_path / "run"), TASK,
                 "--agent", name, "--out", str(page)]) == 0
    dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    parsed = _Page()
    parsed.feed(dom)
    text = html.unescape("".join(parsed.text))
    assert f"{name} on {TASK}" in text
    # every tool call the endpoint made, as a turn of its own with the tool's name
    tools = [s.tool for s in served if s.tool]
    turns = [s for s in parsed.summaries if any(t in s for t in tools)]
    assert len(turns) >= len(tools), (tools, parsed.summaries)
    for t in set(tools):
        assert any(t in s for s in parsed.summaries), (t, parsed.summaries)
    # the commands it ran, and the edit: the kernel's new line in the turns and in the final diff
    assert "README.md" in text and "arena-check" in text
    assert text.count("y + alpha * x") >= 2, "the edit is not shown in its turn and in the final diff"
    assert "Feedback calls" in text and "feedback_calls" in text
    assert f"version {json.loads((art / 'agent.json').read_text())['version']}" in text


# -- bad input --------------------------------------------------------------------------------------


def test_missing_program_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))      # nothing on it
    (tmp_path / "empty-bin").mkdir()
    code = main(["--tasks-dir", str(FIX.parents[1]), "run", "--agent", "claude-code", "--device", "cpu",
                 "--tasks", TASK, "--split", "smoke", "--out", str(tmp_path / "run"), "--quiet"])
    out = capsys.readouterr()
    lines = [ln for ln in (out.out + out.err).splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, lines
    assert "'claude'" in lines[0] and "npm install -g @anthropic-ai/claude-code@" in lines[0]
    assert not (tmp_path / "run" / "records.jsonl").exists()


AUTH_WORDS = {"claude-code": "Invalid API key", "codex": "Incorrect API key", "gemini-cli": "API key not valid",
              "opencode": "invalid x-api-key", "aider": "Incorrect", "mini-swe-agent": "Incorrect"}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_rejected_key_is_recorded_as_auth(name, tmp_path, monkeypatch):
    _need_program(name)
    with ScriptedModel(_script(tmp_path), mode="reject") as model:
        v, art = _arena_run(name, tmp_path, monkeypatch, model)
    info = v.agent_run
    assert model.replies(("rejected",)), "the program never asked the endpoint"
    assert info["exit_reason"] == "auth", (info, (art / "transcript.raw").read_text()[-2000:])
    assert AUTH_WORDS[name] in info["message"]
    assert v.status.value == "AGENT_UNAVAILABLE" and not v.status.scored     # not the untouched kernel's pass
    assert info["feedback_calls"] == 0
    assert info["wall_s"] < 120


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini-cli", "aider", "mini-swe-agent"])
def test_a_closed_endpoint_stops_the_run_or_is_recorded_unreachable(name, tmp_path, monkeypatch, capsys):
    """Nothing listens where the program is pointed. An adapter that names its endpoint is
    probed before the run: one line naming the agent and the endpoint, nothing recorded. The
    others find out in the run: not scored (AGENT_UNAVAILABLE, exit_reason unreachable), not a
    pass of the untouched starting kernel."""
    import socket
    from types import SimpleNamespace

    _need_program(name)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    closed = SimpleNamespace(url=url)
    if load_agent_spec(AGENTS_DIR / f"{name}.yaml").endpoint:
        prog = PROGRAMS[name]
        for k, v in prog.env(url).items():
            monkeypatch.setenv(k, v)
        _task_with_solution(tmp_path)
        argv = ["--tasks-dir", str(tmp_path / "tasks"), "run", "--agent", name, "--device", "cpu", "--tasks", TASK,
                "--split", "smoke", "--out", str(tmp_path / "run"), "--quiet"]
        for k, v in prog.options(url).items():
            argv += ["--agent-option", f"{k}={v}"]
        assert main(argv) == 2
        out = capsys.readouterr()
        lines = [ln for ln in (out.out + out.err).splitlines() if ln.strip()]
        assert len(lines) == 1 and f"agent {name}: its model endpoint" in lines[0] and url in lines[0], lines
        assert not (tmp_path / "run" / "records.jsonl").exists()
        return
    v, art = _arena_run(name, tmp_path, monkeypatch, closed, budget_s=240)
    assert v.agent_run["exit_reason"] == "unreachable", (v.agent_run, (art / "agent.stderr").read_text()[-2000:])
    assert v.status.value == "AGENT_UNAVAILABLE" and not v.status.scored
    assert v.agent_run["wall_s"] < 120          # stopped for saying only that (unreachable_after_s), not at its budget


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini-cli", "aider", "mini-swe-agent"])
def test_an_endpoint_that_accepts_and_never_answers_is_recorded_unreachable(name, tmp_path, monkeypatch):
    """The endpoint accepts every connection and never sends a byte: the probe's connection
    succeeds, and the program waits without a word (or retries). Its traffic goes through the
    harness's proxy, which sees the silence: stopped soon after ``unreachable_after_s``, not
    scored, not a pass of the untouched starting kernel."""
    import socket
    from types import SimpleNamespace

    _need_program(name)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held: list = []

    def accept() -> None:             # every connection kept open, and never a byte sent
        while True:
            try:
                held.append(sock.accept())
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    silent = SimpleNamespace(url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    try:
        v, art = _arena_run(name, tmp_path, monkeypatch, silent, budget_s=400)
    finally:
        sock.close()
    assert v.agent_run["exit_reason"] == "unreachable", (v.agent_run, (art / "agent.stderr").read_text()[-2000:])
    assert v.status.value == "AGENT_UNAVAILABLE" and not v.status.scored
    assert v.agent_run["wall_s"] < 150          # unreachable_after_s (60 s) and the proxy's 30 s, not the budget


def _environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


class _Watcher(threading.Thread):
    """Notes every process of one agent run while it lasts: those whose environment holds the
    run's unique API key, those that carry the same run marker (the harness's, inherited by
    their children), and the command the endpoint asked for (``sleep N``, N unique)."""

    def __init__(self, key: str, command: bytes) -> None:
        super().__init__(daemon=True)
        self.key, self.command = f"OPENAI_API_KEY={key}".encode(), command
        self.markers: set[bytes] = set()
        self.seen: dict[int, str] = {}
        self.stop = threading.Event()

    def ours(self) -> dict[int, str]:
        found = {}
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            pid = int(p.name)
            env = _environ(pid)
            marks = {e for e in env if e.startswith(b"ARENA_AGENT_RUN=")}
            if self.key in env:
                self.markers |= marks
            if self.key in env or marks & self.markers or _cmdline(pid) == self.command:
                found[pid] = _comm(pid)
        return found

    def run(self) -> None:
        while not self.stop.is_set():
            self.seen.update(self.ours())
            time.sleep(0.1)


def test_budget_kill_leaves_no_process_of_a_real_program(tmp_path, monkeypatch):
    """codex: its node launcher, its native program and the command the endpoint asks it to
    run (a long sleep, which it keeps running in the background while it asks the model
    again, and the model never answers), killed by the budget: none is left."""
    name = "codex"
    _need_program(name)
    seconds = 9000 + os.getpid() % 997
    script = [Action("shell", f"sleep {seconds}"), Action("wait", "")]     # then a model that never answers
    key = f"sk-arena-{os.getpid()}-{time.time_ns()}"
    watcher = _Watcher(key, f"sleep\0{seconds}\0".encode())
    keyed = Program(env=lambda url: {"OPENAI_API_KEY": key}, options=PROGRAMS[name].options)
    monkeypatch.setitem(PROGRAMS, name, keyed)
    with ScriptedModel(script) as model:
        watcher.start()
        try:
            v, _ = _arena_run(name, tmp_path, monkeypatch, model, budget_s=25)
        finally:
            watcher.stop.set()
            watcher.join()
    info = v.agent_run
    assert info["exit_reason"] == "budget" and info["wall_s"] >= 25
    assert [s.tool for s in model.replies()] == ["exec_command"]          # the sleep, asked once
    assert [s.kind for s in model.served] == ["script", "held"]
    assert {"node", "codex", "sleep"} <= set(watcher.seen.values()), watcher.seen   # they ran ...
    time.sleep(0.5)
    assert watcher.ours() == {}                                          # ... and are gone
