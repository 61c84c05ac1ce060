"""A coding agent driven through its command line, described by one YAML file
(configs/agents/<name>.yaml, schema arena/taskdef/schema/agent.schema.json).

For each (task, repeat): a fresh workspace (``arena.workspace``) with the feedback tool, a
private HOME holding only the auth files named, the command run in its own session under
the wall budget (sandboxed by bubblewrap when installed), its raw output kept as the
transcript, tokens / cost / turns read by the YAML's usage rules. Afterwards only the
editable file is taken; every other change is listed in the artifacts and ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from arena.agents import AgentContext, Proposal
from arena.agents.feedback_server import SOCKET_DIR, TOOL_NAME, FeedbackServer
from arena.agents.isolation import bubblewrap_missing, bwrap_argv, run_budgeted
from arena.agents.usage import parse_usage
from arena.errors import ArenaError
from arena.taskdef.loader import DEFAULT_TASKS_DIR, REPO_ROOT, Task, _schema_errors, read_yaml
from arena.workspace import editable_name, make_workspace, scratch_root

log = logging.getLogger(__name__)

DEFAULT_BUDGET_S = 1800.0
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
    path: Path | None = None


def load_agent_spec(path: Path | str) -> AgentSpec:
    path = Path(path)
    data = read_yaml(path)
    errors = _schema_errors(data, "agent.schema.json", path)
    if errors:
        raise errors[0]
    if data["name"] != path.stem:
        raise ArenaError(f"name {data['name']!r} differs from the file name {path.stem!r}", path=path, key="name")
    return AgentSpec(name=data["name"], command=tuple(data["command"]), description=data.get("description", ""),
                     executable=data.get("executable") or data["command"][0], options=data.get("options", {}),
                     optional_args=data.get("optional_args", {}), env=data.get("env", {}),
                     pass_env=tuple(data.get("pass_env", ())), auth_files=tuple(data.get("auth_files", ())),
                     budget_s=float(data.get("budget_s", DEFAULT_BUDGET_S)), stdin=data.get("stdin", "none"),
                     prompt=data.get("prompt", DEFAULT_PROMPT), prompts=data.get("prompts", {}),
                     usage=data.get("usage", {"format": "none"}), path=path)


_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Substitute {name} for the names given; other braces (JSON, shell) are left alone."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def _hidden_paths(ctx: AgentContext, task: Task) -> list[Path]:
    from arena.processes import cache_root as _cache_root

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

    def _env(self, home: Path, workspace: Path, device) -> dict[str, str]:
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update(device.visible_devices)       # its own GPU only, like its evaluations
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update({"HOME": str(home), "TMPDIR": str(workspace / SOCKET_DIR / "tmp"), "USER": "agent",
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                    "XDG_DATA_HOME": str(home / ".local" / "share")})
        env.update({k: os.environ[k] for k in self.spec.pass_env if k in os.environ})
        env.update({k: str(v) for k, v in self.spec.env.items()})
        return env

    def propose(self, task: Task, art: Path, ctx: AgentContext) -> Proposal:
        with scratch_root() as root:
            return self._propose(task, Path(art), ctx, root)

    def _propose(self, task: Task, art: Path, ctx: AgentContext, root: Path) -> Proposal:
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
        warning = bubblewrap_missing()
        if warning:
            log.warning("%s", warning)
            cmd = argv
        else:
            cmd = bwrap_argv(argv, ws, home, _hidden_paths(ctx, task), _executable_roots())
        (art / "agent.json").write_text(json.dumps({
            "agent": self.name, "argv": [a if a != prompt else "{prompt}" for a in argv], "sandbox":
            "none" if warning else "bubblewrap", "budget_s": self.budget_s, "auth_files_copied": copied,
            "options": self.options}, indent=2, default=str))
        (art / "prompt.md").write_text(prompt)
        try:
            outcome = run_budgeted(cmd, cwd=ws, env=self._env(home, ws, ctx.device), budget_s=self.budget_s,
                                   stdout=art / "transcript.raw", stderr=art / "agent.stderr",
                                   stdin_text=prompt if self.spec.stdin == "prompt" else None,
                                   token=secrets.token_hex(8))
        except FileNotFoundError as exc:
            server.stop()
            raise ArenaError(f"agent {self.name}: cannot run {argv[0]!r} ({exc.strerror}); is it installed?",
                             path=self.spec.path, key="command") from exc
        finally:
            server.stop()
        raw = (art / "transcript.raw").read_text(errors="replace")
        usage = parse_usage(self.spec.usage, raw)
        after = _snapshot(ws)
        name = editable_name(task)
        ignored = sorted(p for p in set(before) | set(after)
                         if p != name and before.get(p) != after.get(p) and not p.startswith(SOCKET_DIR + "/"))
        if ignored:
            (art / "ignored_changes.json").write_text(json.dumps(ignored, indent=1))
            log.info("%s on %s: ignored changes to %s", self.name, task.id, ", ".join(ignored[:10]))
        info: dict[str, Any] = {"wall_s": outcome.wall_s, "exit_reason": outcome.exit_reason,
                                "returncode": outcome.returncode, "budget_s": self.budget_s,
                                "feedback_calls": len(server.calls), "sandbox": "none" if warning else "bubblewrap",
                                "ignored_changes": len(ignored), "leftovers_killed": outcome.leftovers_killed,
                                **{k: v for k, v in usage.items()}}
        edited = ws / name
        if not edited.is_file():
            info["exit_reason"] = "no_file" if outcome.exit_reason == "finished" else outcome.exit_reason
            missing = art / name
            missing.write_text("")      # an empty candidate: it fails to load, and the record says why
            return Proposal(missing, info)
        kept = art / name
        shutil.copyfile(edited, kept)
        return Proposal(kept, info)


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_socket():
            try:
                out[p.relative_to(folder).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                continue
    return out
