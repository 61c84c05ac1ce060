"""A coding agent driven through its command line, described by one YAML file
(configs/agents/<name>.yaml, schema arena/taskdef/schema/agent.schema.json).

For each (task, repeat): a fresh workspace (``arena.workspace``) with the feedback tool, a
private HOME holding only the auth files named, the command run in its own session under
the wall budget (sandboxed by bubblewrap when installed), its raw output kept as the
transcript, tokens / cost / turns read by the YAML's usage rules. Afterwards only the
editable file is taken; every other change is listed in the artifacts and ignored.

The program must be on PATH (else one line says which and how to install it); its version
(``version_args``) is recorded with the run, and so is how its run ended (``judge_outcome``):
a failed run whose output says the program could not authenticate (``auth_error``) or reach
its model (``unreachable_error``) is ``exit_reason: auth`` / ``unreachable`` with that message,
one that exits with an error is ``crashed`` (``not_started`` if it did nothing, at once), with
its last words (``arena.units`` turns these into the verdicts).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from arena.agents.base import AgentContext, Proposal
from arena.agents.feedback_server import SOCKET_DIR, TOOL_NAME, FeedbackServer
from arena.agents.isolation import bubblewrap_missing, bwrap_argv, run_budgeted
from arena.agents.model_proxy import ANSWER_WAIT_S, ModelProxy, endpoint_url, user_proxy
from arena.agents.usage import parse_usage
from arena.errors import ArenaError
from arena.taskdef.loader import DEFAULT_TASKS_DIR, REPO_ROOT, Task, read_yaml, schema_errors
from arena.workspace import editable_name, make_workspace, scratch_root

log = logging.getLogger(__name__)

DEFAULT_BUDGET_S = 1800.0
# a program still running this long that has said its model cannot be reached and done nothing else is stopped
# (exit_reason unreachable): it would otherwise retry until its budget ends
UNREACHABLE_AFTER_S = 60.0
BASE_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
            "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")

DEFAULT_PROMPT = """\
You are optimising a GPU kernel for kernel-arena ({category}). Everything you need is in this folder:

- README.md: the task, the exact signature, the tolerances and the rules;
- {kernel_file}: the file you edit (only this file is collected when you stop);
- reference.py: what the kernel must compute; configs/seen.yaml: the shapes you are timed on here.

Make {kernel_file} as fast as you can while staying correct. It is also run on shapes you do not
see, so it must be correct for every shape the signature allows, not only the listed ones.
Run `./{check}` as often as you like: it compiles your file and reports the status, the errors
of each config and the speedup over {baseline}. You have about {budget_min} minutes; stop when
you are done.
"""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    command: tuple[str, ...]
    description: str = ""
    executable: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    optional_args: Mapping[str, Sequence[str]] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    auth_files: tuple[str, ...] = ()
    budget_s: float = DEFAULT_BUDGET_S
    stdin: str = "none"
    prompt: str = DEFAULT_PROMPT
    prompts: Mapping[str, str] = field(default_factory=dict)
    usage: Mapping[str, Any] = field(default_factory=dict)
    install: str = ""
    version_args: tuple[str, ...] = ()
    experimental: str = ""
    sandboxed_env: Mapping[str, str] = field(default_factory=dict)
    auth_error: str = ""
    unreachable_error: str = ""
    transcript_file: str = ""
    root_needs_sandbox: bool = False
    unreachable_after_s: float = UNREACHABLE_AFTER_S
    endpoint: Mapping[str, str] = field(default_factory=dict)
    proxy: bool = True
    path: Path | None = None


def load_agent_spec(path: Path | str) -> AgentSpec:
    """The adapter of one YAML file, validated against its schema."""
    path = Path(path)
    data = read_yaml(path)
    errors = schema_errors(data, "agent.schema.json", path)
    if errors:
        raise errors[0]
    if data["name"] != path.stem:
        raise ArenaError(f"name {data['name']!r} differs from the file name {path.stem!r}", path=path, key="name")
    spec = AgentSpec(name=data["name"], command=tuple(data["command"]), description=data.get("description", ""),
                     executable=data.get("executable") or data["command"][0], options=data.get("options", {}),
                     optional_args=data.get("optional_args", {}), env=data.get("env", {}),
                     pass_env=tuple(data.get("pass_env", ())), auth_files=tuple(data.get("auth_files", ())),
                     budget_s=float(data.get("budget_s", DEFAULT_BUDGET_S)), stdin=data.get("stdin", "none"),
                     prompt=data.get("prompt", DEFAULT_PROMPT), prompts=data.get("prompts", {}),
                     usage=data.get("usage", {"format": "none"}), install=data.get("install", ""),
                     version_args=tuple(data.get("version_args") or ()), experimental=data.get("experimental", ""),
                     sandboxed_env=data.get("sandboxed_env", {}), auth_error=data.get("auth_error", ""),
                     unreachable_error=data.get("unreachable_error", ""),
                     transcript_file=data.get("transcript_file", ""),
                     root_needs_sandbox=bool(data.get("root_needs_sandbox", False)), endpoint=data.get("endpoint", {}),
                     unreachable_after_s=float(data.get("unreachable_after_s", UNREACHABLE_AFTER_S)),
                     proxy=bool(data.get("proxy", True)), path=path)
    for key in ("auth_error", "unreachable_error"):
        try:
            re.compile(getattr(spec, key))
        except re.error as exc:
            raise ArenaError(f"not a regular expression: {exc}", path=path, key=key) from None
    return spec


def missing_program(spec: AgentSpec, path: str | None = None) -> str | None:
    """One line naming the program and how to install it, when it is not on PATH (None: it is)."""
    if shutil.which(spec.executable, path=path) is not None:
        return None
    how = f"; install it with: {spec.install}" if spec.install else ""
    return f"agent {spec.name} needs the program {spec.executable!r}, which is not on PATH{how}"


VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-.+][0-9A-Za-z.]+)?")


def program_version(spec: AgentSpec, timeout_s: float = 60.0) -> str | None:
    """The version the program prints when run with its ``version_args`` (None: it names none,
    or is not on PATH, or printed none)."""
    return asked_version(spec, timeout_s)[1]


def asked_version(spec: AgentSpec, timeout_s: float = 60.0) -> tuple[str | None, str | None]:
    """The program asked its version (``version_args``), once per program and file version in
    this process: why it did not answer (it could not be run, exited with a status other than
    0, with its last words, or ran past ``timeout_s``; None when it answered), and the version
    it printed (None: none, or no ``version_args``, or not on PATH)."""
    exe = shutil.which(spec.executable)
    if exe is None or not spec.version_args:
        return None, None
    try:
        stamp = os.stat(exe).st_mtime_ns
    except OSError:
        stamp = 0
    return _version(tuple(spec.version_args), exe, stamp, timeout_s)


def ask_program(argv: Sequence[str], timeout_s: float) -> tuple[Any, str, str]:
    """Run ``argv`` as the agent's program is run (its own session, killed with whatever it
    started if it overruns), in a throwaway HOME, so that asking writes nothing of the user's:
    its outcome (``isolation.Outcome``; an ``OSError`` where it could not be run), standard
    output and standard error."""
    with tempfile.TemporaryDirectory(prefix="arena-ask-") as home:
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update({"HOME": home, "NO_COLOR": "1", "CI": "1"})
        out, err = Path(home) / "out", Path(home) / "err"
        try:
            outcome: Any = run_budgeted(list(argv), cwd=Path(home), env=env, budget_s=timeout_s, stdout=out,
                                        stderr=err, token=secrets.token_hex(8))
        except OSError as exc:
            return exc, "", ""
        return outcome, out.read_text(errors="replace"), err.read_text(errors="replace")


@functools.lru_cache(maxsize=64)
def _version(argv: tuple[str, ...], exe: str, stamp: int, timeout_s: float) -> tuple[str | None, str | None]:
    outcome, out, err = ask_program(argv, timeout_s)
    if isinstance(outcome, OSError):
        return f"could not be run: {outcome.strerror or outcome}", None
    why = None
    if outcome.exit_reason == "budget":
        why = f"gave no answer within {timeout_s:g} s"
    elif outcome.returncode != 0:
        said = last_words(out, err)
        why = f"exited with status {outcome.returncode}" + (f": {said}" if said else "")
    for line in (out + "\n" + err).splitlines():
        m = VERSION.search(line)
        if m:
            return why, m.group(0)
    return why, None


# a program that ended this soon, with nothing done (no edit, no check), never started its work
NOT_STARTED_S = 30.0
# what the programs print when their model endpoint cannot be reached (Node's, Python's HTTP clients,
# curl's words); an adapter's own ``unreachable_error`` replaces it
UNREACHABLE = (r"(?i)econnrefused|connection refused|apiconnectionerror|connection error|fetch failed|enotfound|"
               r"getaddrinfo|could not resolve host|network is unreachable|failed to connect|unable to connect|"
               r"connect etimedout|socket hang up")


def judge_outcome(spec: AgentSpec, outcome: Any, checked: bool, edited: bool, *outputs: str) -> tuple[str, str]:
    """How the agent's run ended, and in the program's own words where it matters:
    finished | no_edit (finished, the kernel as it was) | budget (stopped at its budget; the
    kernel it left is judged) | crashed (a non-zero exit) | not_started (a non-zero exit within
    ``NOT_STARTED_S`` having done nothing) | auth (its output says it could not authenticate)
    | unreachable (its output says its model endpoint could not be reached; also where it was
    stopped for saying only that, ``UNREACHABLE_AFTER_S``). The last two are
    read where the run failed or did nothing (``checked``: it called the feedback tool)."""
    idle = not checked and not edited
    if outcome.exit_reason == "crashed" or idle:
        for reason, pattern in (("auth", spec.auth_error), ("unreachable", spec.unreachable_error or UNREACHABLE)):
            message = auth_message(pattern, *outputs)
            if message:
                return reason, message
    if outcome.exit_reason == "crashed":
        said = last_words(*outputs[1:], *outputs[:1])
        return ("not_started" if idle and outcome.wall_s < NOT_STARTED_S else "crashed"), said
    if outcome.exit_reason == "finished" and not edited:
        return "no_edit", ""
    if outcome.exit_reason == "stopped":      # cut off as unreachable just as it did something: judged as at a budget
        return "budget", ""
    return outcome.exit_reason, ""


def last_words(*outputs: str) -> str:
    """The last non-empty line of the first output that has one (stderr before stdout): what a
    program that stopped says about why."""
    for text in outputs:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[-1][:1000]
    return ""


def auth_message(pattern: str, *outputs: str) -> str | None:
    """The program's own words where its output says what ``pattern`` matches (that it could not
    authenticate, or reach its endpoint): of the last line that matches (a JSON event: its first
    string value that matches)."""
    if not pattern:
        return None
    rx = re.compile(pattern)
    found = None
    for text in outputs:
        for line in text.splitlines():
            if not rx.search(line):
                continue
            msg = line.strip()
            if msg.startswith("{"):
                try:
                    msg = next((v for v in _strings(json.loads(msg)) if rx.search(v)), msg)
                except json.JSONDecodeError:
                    pass
            found = msg
    return found[:1000] if found else None


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Substitute {name} for the names given; other braces (JSON, shell) are left alone."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def _hidden_paths(ctx: AgentContext, task: Task) -> list[Path]:
    from arena.evaluation.processes import cache_root as _cache_root

    hide = [REPO_ROOT, DEFAULT_TASKS_DIR, task.path.parents[1], ctx.run_dir, _cache_root(),
            Path.home(), *ctx.private_dirs]
    hide += [Path(p) for p in os.environ.get("ARENA_SANDBOX_HIDE", "").split(":") if p]
    out: list[Path] = []
    for p in hide:
        p = Path(p)
        if p not in out:
            out.append(p)
    return out


def _executable_roots() -> list[Path]:
    """What PATH points into that the sandbox would otherwise hide: the top folder of an entry
    under the real HOME (~/.local, ~/.nvm, ~/.pyenv: programs need their libraries beside
    them), or the entry itself under /tmp. Kept read-only."""
    home = Path.home().resolve()
    keep: list[Path] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        p = Path(entry).resolve()
        try:
            rel = p.relative_to(home)
            root = home / rel.parts[0] if rel.parts else None
        except ValueError:
            root = p if str(p).startswith("/tmp/") else None
        if root is not None and root not in keep:
            keep.append(root)
    return keep


class CommandAgent:
    """One YAML-described agent CLI."""

    def __init__(self, spec: AgentSpec, *, options: Mapping[str, str] | None = None, budget_s: float | None = None,
                 auth_files: Sequence[str] = ()) -> None:
        unknown = sorted(set(options or {}) - set(spec.options))
        if unknown:
            raise ArenaError(f"agent {spec.name} has no option {', '.join(unknown)}; its options: "
                             f"{', '.join(spec.options) or 'none'}", path=spec.path, key="options")
        self.spec = spec
        self.name = spec.name
        self.options = {**spec.options, **(options or {})}
        self.budget_s = float(budget_s) if budget_s is not None else spec.budget_s
        self.auth_files = tuple(spec.auth_files) + tuple(auth_files)

    def applies_to(self, task: Task) -> bool:
        return True

    def prompt(self, task: Task) -> str:
        template = self.spec.prompts.get(task.category, self.spec.prompt)
        baseline = "the eager PyTorch reference" if task.category == "torch2hip" else "the starting kernel"
        return fill(template, {"category": task.category, "kernel_file": editable_name(task), "check": TOOL_NAME,
                               "baseline": baseline, "budget_min": max(1, int(self.budget_s // 60)),
                               "task_id": task.id, "title": task.title})

    def argv(self, task: Task, workspace: Path, prompt_file: Path, prompt: str) -> list[str]:
        opts = {k: ("" if v is None else v) for k, v in self.options.items()}
        builtins = {"prompt": prompt, "prompt_file": str(prompt_file), "workspace": str(workspace),
                    "kernel_file": editable_name(task), "budget_s": int(self.budget_s), "check": f"./{TOOL_NAME}"}
        args = [fill(fill(a, opts), builtins) for a in self.spec.command]
        for opt, extra in self.spec.optional_args.items():
            if self.options.get(opt) not in (None, "", False):
                args += [fill(fill(a, opts), builtins) for a in extra]
        return args

    def _private_home(self, root: Path) -> tuple[Path, list[str]]:
        home = root / "home"
        home.mkdir()
        copied = []
        for rel in self.auth_files:
            src = Path(os.path.expanduser(rel))
            if not src.is_absolute():
                src = Path.home() / rel
            if not src.is_file():
                continue
            try:
                dest = home / src.relative_to(Path.home())
            except ValueError:
                dest = home / src.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            copied.append(str(dest.relative_to(home)))
        return home, copied

    def _env(self, home: Path, workspace: Path, device, sandboxed: bool = False) -> dict[str, str]:
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update(device.visible_devices)       # its own GPU only, like its evaluations
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update({"HOME": str(home), "TMPDIR": str(workspace / SOCKET_DIR / "tmp"), "USER": "agent",
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                    "XDG_DATA_HOME": str(home / ".local" / "share")})
        env.update({k: os.environ[k] for k in self.spec.pass_env if k in os.environ})
        env.update({k: str(v) for k, v in self.spec.env.items()})
        if sandboxed:
            env.update({k: str(v) for k, v in self.spec.sandboxed_env.items()})
        return env

    def propose(self, task: Task, art: Path, ctx: AgentContext) -> Proposal:
        with scratch_root() as root:
            return self._propose(task, Path(art), ctx, root)

    def _propose(self, task: Task, art: Path, ctx: AgentContext, root: Path) -> Proposal:
        warning = bubblewrap_missing()
        sandboxed = not warning
        probe_env = self._env(root, root, ctx.device, sandboxed)
        missing = missing_program(self.spec, probe_env.get("PATH"))
        if missing:
            raise ArenaError(missing, key="--agent")
        version = program_version(self.spec)
        ws = make_workspace(task, root / "ws")
        home, copied = self._private_home(root)
        (ws / SOCKET_DIR / "tmp").mkdir(parents=True)
        server = FeedbackServer(task, ws, art, ctx, agent=self.name, repeat=int(art.name) if art.name.isdigit() else 0)
        server.start()
        prompt = self.prompt(task)
        prompt_file = ws / SOCKET_DIR / "prompt.md"
        prompt_file.write_text(prompt)
        before = _snapshot(ws)
        argv = self.argv(task, ws, prompt_file, prompt)
        if warning:
            log.warning("%s", warning)
            cmd = argv
        else:
            cmd = bwrap_argv(argv, ws, home, _hidden_paths(ctx, task), _executable_roots())
        (art / "agent.json").write_text(json.dumps({
            "agent": self.name, "version": version, "argv": [a if a != prompt else "{prompt}" for a in argv],
            "sandbox": "none" if warning else "bubblewrap", "budget_s": self.budget_s, "auth_files_copied": copied,
            "options": self.options}, indent=2, default=str))
        (art / "prompt.md").write_text(prompt)
        pattern = re.compile(self.spec.unreachable_error or UNREACHABLE)
        cut_off_s = self.spec.unreachable_after_s
        env = self._env(home, ws, ctx.device, sandboxed)
        proxy = None
        if self.spec.proxy:         # the program's traffic through the harness: is its model endpoint answering?
            endpoint = endpoint_url(self.spec.endpoint, self.options, os.environ)[0] if self.spec.endpoint else None
            proxy = ModelProxy(endpoint, upstream=user_proxy(os.environ))
            env.update(proxy.env(proxy.start()))
        silent: list[str] = []

        def cut_off(elapsed: float) -> bool:
            """Past ``cut_off_s``, where the program has done nothing (no check, no edit): it has
            said at least three times that its model cannot be reached and the last thing it
            wrote says so again (a stray line of a program that goes on working is followed by
            its work), or its model endpoint has had no byte back through the proxy for
            ``ANSWER_WAIT_S`` (a program that waits without a word), or (an adapter that names its
            endpoint) the program has not connected to it at all. It is stopped, not left to
            wait or retry until its budget ends."""
            if elapsed < cut_off_s or server.calls or _digest(ws / editable_name(task)) != before.get(
                    editable_name(task)):
                return False
            if proxy is not None and proxy.silent_s() >= ANSWER_WAIT_S:
                silent.append(proxy.why())
                return True
            if proxy is not None and proxy.watch is not None and proxy.tries == 0:
                # the adapter names its endpoint and the program has not even tried it: waiting on something
                # else (a prompt on a terminal, a login), it would only run out its budget
                silent.append(f"its program made no connection to its model endpoint ({proxy.watch[0]}:"
                              f"{proxy.watch[1]}) in {elapsed:.0f} s")
                return True
            return unreachable_only(pattern, art / "agent.stderr", art / "transcript.raw")

        try:
            outcome = run_budgeted(cmd, cwd=ws, env=env, budget_s=self.budget_s,
                                   stdout=art / "transcript.raw", stderr=art / "agent.stderr",
                                   stdin_text=prompt if self.spec.stdin == "prompt" else None,
                                   token=secrets.token_hex(8), stop_when=cut_off if cut_off_s > 0 else None)
        except FileNotFoundError as exc:
            raise ArenaError(f"agent {self.name}: cannot run {cmd[0]!r} ({exc.strerror}); is it installed?",
                             path=self.spec.path, key="command") from exc
        finally:
            server.stop()
            if proxy is not None:
                proxy.stop()
        stdout = (art / "transcript.raw").read_text(errors="replace")
        stderr = (art / "agent.stderr").read_text(errors="replace")
        record = ""
        own = _own_record(self.spec.transcript_file, ws, home) if self.spec.transcript_file else None
        if own is not None:                      # the program's own record of the session
            shutil.copyfile(own, art / ("transcript" + (".jsonl" if own.suffix == ".jsonl" else ".json")))
            record = own.read_text(errors="replace")
        if not self.spec.transcript_file:
            usage = parse_usage(self.spec.usage, stdout)
        elif self.spec.usage.get("format") == "jsonl":       # its record's events and what it printed
            usage = parse_usage(self.spec.usage, record + "\n" + stdout)
        else:
            usage = parse_usage(self.spec.usage, record)
        after = _snapshot(ws)
        name = editable_name(task)
        ignored = sorted(p for p in set(before) | set(after)
                         if p != name and before.get(p) != after.get(p) and not p.startswith(SOCKET_DIR + "/"))
        if ignored:
            (art / "ignored_changes.json").write_text(json.dumps(ignored, indent=1))
            log.info("%s on %s: ignored changes to %s", self.name, task.id, ", ".join(ignored[:10]))
        info: dict[str, Any] = {"wall_s": outcome.wall_s, "exit_reason": outcome.exit_reason,
                                "returncode": outcome.returncode, "budget_s": self.budget_s, "version": version,
                                "feedback_calls": len(server.calls), "sandbox": "none" if warning else "bubblewrap",
                                "ignored_changes": len(ignored), "leftovers_killed": outcome.leftovers_killed,
                                **{k: v for k, v in usage.items()}}
        edited = ws / name
        info["edited"] = before.get(name) != after.get(name)
        reason, message = judge_outcome(self.spec, outcome, bool(server.calls), info["edited"], record, stderr,
                                        stdout)
        if outcome.exit_reason == "stopped" and silent and not server.calls and not info["edited"]:
            reason, message = "unreachable", message or silent[-1]      # its own words where it said any
        info["exit_reason"] = reason
        if message:
            info["message"] = message
        if not edited.is_file():
            if info["exit_reason"] == "finished":
                info["exit_reason"] = "no_file"
            missing_file = art / name
            missing_file.write_text("")      # an empty candidate: it fails to load, and the record says why
            return Proposal(missing_file, info)
        kept = art / name
        shutil.copyfile(edited, kept)
        return Proposal(kept, info)


def _own_record(pattern: str, workspace: Path, home: Path) -> Path | None:
    """The file ``transcript_file`` names: relative to the workspace, or to the private HOME
    with ``~/``; a glob pattern takes the newest match."""
    base, rel = (home, pattern[2:]) if pattern.startswith("~/") else (workspace, pattern)
    found = [p for p in base.glob(rel) if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime_ns) if found else None


def unreachable_only(pattern: re.Pattern[str], *paths: Path) -> bool:
    """Do the outputs ``paths`` say at least three times that the model cannot be reached, and
    is the last line written (in the file written last) one of those?"""
    tails = [(p, _tail(p)) for p in paths]
    if sum(len(pattern.findall(text)) for _, text in tails) < 3:
        return False
    written = [(p.stat().st_mtime_ns, text) for p, text in tails if text.strip() and p.exists()]
    if not written:
        return False
    last = [ln for ln in max(written)[1].splitlines() if ln.strip()][-1]
    return bool(pattern.search(last))


def _tail(path: Path, n: int = 65536) -> str:
    """The last ``n`` bytes of a file as text ("" where it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _digest(path: Path) -> str | None:
    """A file's sha256 (None where it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_socket():
            digest = _digest(p)
            if digest is not None:
                out[p.relative_to(folder).as_posix()] = digest
    return out
