"""The ``arena`` command: tasks | eval | run | device.

User-caused errors (ArenaError) are printed as one line naming the file and key, without
a traceback, and exit with status 2 (every problem of a task folder, a line each). Commands
over several tasks report a broken one in lines of its own and go on with the others. Text
from task files, records and messages is escaped before rich prints it, so it reads as written.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arena.errors import ArenaError
from arena.records import Status, Verdict

_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "160"))
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def _tasks_root(args: argparse.Namespace) -> Path | None:
    return Path(args.tasks_dir) if getattr(args, "tasks_dir", None) else None


def _fmt(x: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if x is None or x != x else f"{x:{spec}}{suffix}"


def _lit(x: object) -> str:
    """``x`` as rich markup that prints it literally: task text, file contents, messages and
    schema patterns carry brackets rich would read as tags (``y[r, :]``, ``'^[a-z]*$'``)."""
    return escape(str(x))


def _problems(exc: ArenaError) -> list[ArenaError]:
    """Every problem an error carries (``ArenaErrors``: all of a task folder's), else itself."""
    return list(getattr(exc, "problems", None) or [exc])


def print_error(exc: ArenaError | str) -> None:
    """One line on stderr, printed literally and never wrapped."""
    err_console.print(f"[red]error:[/red] {_lit(exc)}", highlight=False, soft_wrap=True)


def why_not_scored(v: Verdict) -> str:
    """Why a verdict that is not scored (``Status.scored``) did not count, in one line: for
    NOT_RUNNABLE what was compiled and that nothing here runs it, for an infrastructure
    failure the first line of its message; empty for a scored verdict."""
    if v.status.scored:
        return ""
    if v.status is Status.NOT_RUNNABLE:
        from arena.evaluation.parent import not_runnable_reason

        if v.build.get("builds"):
            return not_runnable_reason(v.build)
    first = (v.message or "").strip().splitlines()
    return first[0] if first else v.status.value


def verdict_note(v: Verdict) -> str:
    """The note of a verdict's row: how the agent's run ended where it did not simply finish
    (``arena.agents.base.outcome_text``), and why a verdict did not pass (for one that is not
    scored, why it does not count); empty for a plain pass."""
    from arena.agents.base import outcome_text

    agent = outcome_text(v.agent_run)
    if v.status.kind in ("agent", "service"):
        return agent or why_not_scored(v) or v.status.value       # the agent's outcome is its message
    why = why_not_scored(v) if not v.status.scored else \
        "" if v.counts_as_pass else ((v.message or "").strip().splitlines() or [""])[0]
    return "; ".join(p for p in (agent, why) if p)


def _status_style(status: Status) -> str:
    if status is Status.PASSED:
        return "green"
    if status is Status.NOT_RUNNABLE:
        return "yellow"
    if status.infra or status.kind == "service":
        return "magenta"
    return "red"


# ------------------------------------------------------------------------------------------
# tasks


def cmd_tasks_list(args: argparse.Namespace) -> int:
    from arena.taskdef.loader import load_task, select_tasks

    table = Table(title="tasks")
    for col in ("id", "difficulty", "tags", "files", "seen", "heldout", "smoke"):
        table.add_column(col)
    broken: list[ArenaError] = []
    folders = select_tasks(args.selector or "all", _tasks_root(args))
    for folder in folders:
        try:
            t = load_task(folder)      # validated: a task listed without a remark is a valid one
            files = ",".join(r for r in ("baseline", "solution", "specialised") if t.kernel_file(r))
            counts = [str(len(t.configs(s))) for s in ("seen", "heldout", "smoke")]
        except ArenaError as exc:
            # one bad task hides no other: its row says so, its problems follow the table
            problems = _problems(exc)
            broken += problems
            n = len(problems)
            table.add_row(_lit(f"{folder.parent.name}/{folder.name}"), "-", "-",
                          f"[red]broken: {n} problem{'s' if n != 1 else ''}[/red]", "-", "-", "-")
            continue
        table.add_row(_lit(t.id), str(t.difficulty), _lit(",".join(t.tags)), files, *counts)
    console.print(table)
    for e in broken:
        print_error(e)
    if broken:
        err_console.print(f"{len(broken)} problem{'s' if len(broken) != 1 else ''} in the task files; "
                          "`arena tasks validate` checks them",
                          highlight=False, markup=False)
        return 1
    return 0


def cmd_tasks_show(args: argparse.Namespace) -> int:
    from arena.taskdef.loader import load_task, select_tasks

    n_bad = 0
    for folder in select_tasks(args.id, _tasks_root(args)):
        try:
            t = load_task(folder)
            lines = _task_lines(t)
        except ArenaError as exc:
            n_bad += 1
            for e in _problems(exc):
                print_error(e)
            continue
        for line in lines:
            console.print(line, highlight=False)
    return 1 if n_bad else 0


def _task_lines(t) -> list[str]:
    """``arena tasks show``: every value from the task files escaped, so it prints as written."""
    out = [f"[bold]{_lit(t.id)}[/bold] — {_lit(t.title)}  (difficulty {t.difficulty}; {_lit(', '.join(t.tags))})",
           _lit(t.description.rstrip()),
           _lit(f"entry: {t.entry}   language: {t.language}   folder: {t.path}")]
    from arena.workspace import input_role

    for kind, specs in (("input", t.inputs), ("output", t.outputs)):
        for s in specs:
            extra = f"  init {dict(s.init)}" if kind == "input" else f"  tolerance {t.tolerance_of(s)}"
            if kind == "input" and input_role(s) != "input":
                extra += f"  ({input_role(s).removeprefix('input, ')})"
            out.append(_lit(f"  {kind:6s} {s.name}: {s.dtype} {list(s.shape)}{extra}"))
    for s in t.scalars:
        out.append(_lit(f"  scalar {s.name}: {s.type} = {s.value if s.value is not None else '(config)'}"))
    out.append(_lit(f"roofline: {dict(t.roofline)}"))
    out.append(_lit(f"forbidden: {list(t.forbidden) or '-'}"))
    for split in ("seen", "heldout", "smoke"):
        out.append(_lit(f"{split}: " + "; ".join(f"{c.name} {dict(c.params)}" for c in t.configs(split))))
    return out


def _exists(path: Path) -> bool:
    """Whether ``path`` names something here (a name too long for a path is not one)."""
    try:
        return path.exists()
    except OSError:
        return False


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    from arena.taskdef.loader import discover_tasks, select_tasks, validate_task_dir

    folders: list[Path] = []
    for p in args.paths or [str(_tasks_root(args) or "")]:
        path = Path(p) if p else None
        if path is not None and not _exists(path):
            # not a path here: a selector of the task root's, as the other commands take (ids, globs, a comma list)
            folders.extend(f for f in select_tasks(p, _tasks_root(args)) if f not in folders)
        elif path is not None and (path / "task.yaml").is_file():
            folders.append(path)
        elif path is not None and path.name == "task.yaml":
            folders.append(path.parent)
        else:
            found = discover_tasks(path)
            if not found and path is not None:
                found = sorted(q.parent for q in path.glob("*/task.yaml"))
            if not found:
                raise ArenaError("no task.yaml found here", path=path or "tasks")
            folders.extend(found)
    n_bad = 0
    for folder in folders:
        errors = validate_task_dir(folder)
        if errors:
            n_bad += 1
            for e in errors:
                print_error(e)
    console.print(f"{len(folders) - n_bad} of {len(folders)} tasks valid")
    return 1 if n_bad else 0


def cmd_tasks_new(args: argparse.Namespace) -> int:
    from arena.taskdef.loader import DEFAULT_TASKS_DIR
    from arena.taskdef.skeleton import write_new_task

    folder = write_new_task(_tasks_root(args) or DEFAULT_TASKS_DIR, args.id)
    console.print(f"wrote {folder}; edit task.yaml (its TODO title, description and tags), reference.py (its TODO) "
                  f"and the configs, then `arena tasks validate {folder}` (which refuses the TODOs left) and "
                  f"`arena tasks check {args.id} --device cpu`", markup=False, highlight=False)
    return 0


def cmd_tasks_import(args: argparse.Namespace) -> int:
    """``arena tasks import kernelbench|aka PATH``: a task folder drafted from a problem written
    for another harness, validated; what the author must still decide, numbered."""
    from arena.authoring.importers.aka import import_aka
    from arena.authoring.importers.kernelbench import import_kernelbench

    out = Path(args.out) if args.out else _tasks_root(args)
    if args.import_format == "kernelbench":
        device = "cpu"
        if args.device != "cpu":
            from arena.devices import detect
            detect(args.device)     # a GPU this machine does not have: one line that says so
            device = "cuda"         # ROCm's torch names its GPUs cuda too
        result = import_kernelbench(Path(args.path), out, task_id=args.id, device=device)
    else:
        result = import_aka(Path(args.path), out, task_id=args.id, device=args.device)
    console.print(result.report(), markup=False, highlight=False, soft_wrap=True)
    return 0 if result.ok else 1


def cmd_tasks_check(args: argparse.Namespace) -> int:
    from arena.authoring.check import check_tasks
    from arena.devices import detect
    from arena.taskdef.loader import select_tasks

    device = detect(args.device)
    folders = select_tasks(args.selector or "all", _tasks_root(args))
    console.print(f"checking {len(folders)} tasks on {device.kind} ({device.name})", markup=False)
    recorded = []
    if args.from_run:
        from arena.report import load_runs

        recorded = load_runs(args.from_run)
    done: list = []

    def write_files(rows: list) -> None:
        if args.markdown:
            Path(args.markdown).write_text(check_markdown(rows, device, of=len(folders)))
        if args.json:
            Path(args.json).write_text(json.dumps([{
                "task": r.task_id, "ok": r.ok, "schema": r.schema, "reference": r.reference, "baseline": r.baseline,
                "baseline_window_us": r.window_us, "solution": r.solution, "specialised": r.specialised,
                "problems": r.problems, "dropped": r.dropped, "details": r.details,
                "verdicts": [v.to_dict() for v in r.verdicts],
            } for r in rows], indent=1, default=str))

    def on_row(r) -> None:     # each row as it is finished: said with its reasons, and kept in the files asked for
        done.append(r)
        console.print(f"  {r.task_id}: {'ok' if r.ok else 'FAIL'}" + "".join(f"\n      {p}" for p in r.problems)
                      + "".join(f"\n      dropped {d}" for d in r.dropped), highlight=False, markup=False,
                      soft_wrap=True)
        write_files(done)

    try:
        rows = check_tasks(folders, device, recorded=recorded, on_row=on_row, jobs=args.jobs,
                           fit=args.drop_failing_drafts)
    except KeyboardInterrupt:
        files = " and ".join(f for f in (args.markdown, args.json) if f)
        err_console.print(f"interrupted after {len(done)} of {len(folders)} tasks"
                          + (f"; the rows finished are in {files}" if files else ""), highlight=False, markup=False)
        return 130
    table = Table(title=_lit(f"arena tasks check — {device.kind} {device.name}"))
    for col in ("task", "schema", "reference", "baseline", "baseline µs", "solution", "specialised", "result"):
        table.add_column(col)
    for r in rows:
        table.add_row(*(_lit(x) for x in (r.task_id, r.schema, r.reference, r.baseline, r.window_us, r.solution,
                                          r.specialised)),
                      "[green]ok[/green]" if r.ok else "[red]FAIL[/red]")
    console.print(table)
    for r in rows:
        for p in r.problems:
            console.print(f"[red]{_lit(r.task_id)}[/red]: {_lit(p)}", highlight=False, soft_wrap=True)
    write_files(rows)
    return 0 if all(r.ok for r in rows) else 1


def check_markdown(rows, device, of: int | None = None) -> str:
    """The committed validation table: machine, date, versions, one row per task (``of``: the
    tasks asked for, where the rows are fewer: a check still running or interrupted)."""
    from arena.records import utc_now

    lines = [
        f"# arena tasks check — {device.kind} — {device.name}",
        "",
        f"- date: {utc_now()}",
        f"- device: {device.name} ({device.arch}, {device.sm_count or '-'} SMs, "
        f"last-level cache {(device.llc_bytes or 0) / 2**20:.0f} MiB)",
        "- toolchains: " + ", ".join(f"{k} {v}" for k, v in device.toolchains.items()),
        f"- result: {sum(r.ok for r in rows)} of {len(rows)} tasks ok"
        + (f" ({len(rows)} of the {of} asked for checked so far)" if of is not None and of > len(rows) else ""),
        "",
        "| task | result | reference | baseline (configs passed) | baseline µs (min-max) | solution | specialised |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.task_id} | {'ok' if r.ok else 'FAIL'} | {r.reference} | {r.baseline} | {r.window_us} | "
            f"{r.solution} | {r.specialised} |"
        )
    problems = [(r.task_id, p) for r in rows for p in r.problems]
    if problems:
        lines += ["", "## Problems", ""] + [f"- {t}: {p}" for t, p in problems]
    dropped = [(r.task_id, d) for r in rows for d in r.dropped]
    if dropped:
        lines += ["", "## Configs taken out (`--drop-failing-drafts`)", ""] + [f"- {t}: {d}" for t, d in dropped]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# eval / run / device


def _default_splits(device) -> list[str]:
    return ["seen"] if device.runs_kernels else ["smoke"]


def _split_list(value: str | None, device) -> list[str]:
    if value is None:
        return _default_splits(device)
    if value == "all":
        return ["seen", "heldout", "random"] if device.runs_kernels else ["smoke"]
    splits = [s.strip() for s in value.split(",") if s.strip()]
    for s in splits:
        if s not in ("seen", "heldout", "random", "smoke"):
            raise ArenaError(f"unknown split {s!r}; choose seen, heldout, random, smoke or all", key="--split")
    from arena.evaluation.parent import require_runnable_splits

    require_runnable_splits(splits, device)  # the cpu backend runs smoke only: said here, in one line
    return splits


def print_configs(v: Verdict) -> None:
    table = Table(
        title=_lit(f"{v.task_id} [{v.split}] {v.candidate.get('origin', '')}: ")
        + f"[{_status_style(v.status)}]{v.status.value}[/]"
    )
    for col in (
        "config",
        "status",
        "max abs err",
        "norm err",
        "baseline µs",
        "candidate µs",
        "speedup (95% CI)",
        "roofline",
        "flags",
        "why",
    ):
        table.add_column(col)
    for c in v.configs:
        ci = f" ({c.speedup_ci[0]:.2f}-{c.speedup_ci[1]:.2f})" if c.speedup_ci else ""
        # a config that did not pass says why (one that was not run, what stopped the evaluation)
        why = "" if c.status is Status.PASSED else ((c.message or "").strip().splitlines() or [""])[0][:120]
        table.add_row(
            _lit(c.name),
            f"[{_status_style(c.status)}]{c.status.value}[/]",
            _fmt(c.max_abs_err, ".2e"),
            _fmt(c.norm_err, ".2e"),
            _fmt(c.baseline.median_us if c.baseline else None, ".1f"),
            _fmt(c.candidate.median_us if c.candidate else None, ".1f"),
            (_fmt(c.speedup, ".3f", "x") + ci) if c.speedup else "-",
            _fmt(c.roofline_fraction * 100 if c.roofline_fraction else None, ".0f", "%"),
            _lit(",".join(c.flags)),
            _lit(why),
        )
    console.print(table)
    if v.message and v.status is not Status.PASSED:
        console.print(v.message, highlight=False, markup=False)
        from arena.evaluation.tracebacks import render

        failed = next((c for c in v.configs if c.status is not Status.PASSED and c.traceback), None)
        if failed is not None:  # the candidate's own frames (data from its process: printed literally)
            console.print("\n".join(render(failed.traceback)), highlight=False, markup=False, soft_wrap=True)
    if v.speedup is not None:
        ci = f" (95% CI {v.speedup_ci[0]:.3f}-{v.speedup_ci[1]:.3f})" if v.speedup_ci else ""
        console.print(f"speedup (geomean over configs): {v.speedup:.3f}x{ci}")
    if v.speedup_compiled is not None:
        console.print(f"speedup against torch.compile of the reference (geomean): {v.speedup_compiled:.3f}x")


def _timing_params(args) -> dict:
    params: dict = {}
    if getattr(args, "torch_compile", False):
        params["torch_compile"] = True
    mem = getattr(args, "timing_memory", None)
    if mem is not None:
        if mem <= 0:
            raise ArenaError("--timing-memory must be positive", key="--timing-memory")
        params["max_set_bytes"] = float(mem) * 2**30
    cap = getattr(args, "timing_cap", None)
    if cap is not None:
        if cap <= 0:
            raise ArenaError("--timing-cap must be positive", key="--timing-cap")
        params["cap_s"] = float(cap)
    return params


def cmd_eval(args: argparse.Namespace) -> int:
    from arena.devices import detect
    from arena.evaluation.parent import Candidate, evaluate
    from arena.taskdef.loader import load_task, select_tasks

    device = detect(args.device)
    folders = select_tasks(args.task, _tasks_root(args))
    if len(folders) != 1:
        raise ArenaError(f"{args.task!r} names {len(folders)} tasks; eval takes one", key="TASK")
    task = load_task(folders[0])
    kernel = Path(args.kernel) if args.kernel else None
    if kernel is not None and not kernel.is_file():
        raise ArenaError("kernel file not found", path=kernel)
    verdicts = evaluate(
        task,
        Candidate(task, kernel, origin="user"),
        _split_list(args.split, device),
        device,
        timing=False if args.no_timing else None,
        split_seed=args.seed,
        timing_params=_timing_params(args),
        on_wait=lambda line: err_console.print(f"[dim]waiting:[/] {_lit(line)}", highlight=False),
    )
    if args.json:
        sys.stdout.write("\n".join(json.dumps(v.to_dict(), default=str) for v in verdicts) + "\n")
    else:
        for v in verdicts:
            print_configs(v)
    return eval_exit_code(verdicts)


EXIT_NOT_RUNNABLE = 3


def eval_exit_code(verdicts: list[Verdict]) -> int:
    """0: every split passed; 3 (``EXIT_NOT_RUNNABLE``): none failed, but some could not run
    here (NOT_RUNNABLE: HIP on the cpu backend), so a script can tell "not here" from "wrong";
    1: any other (a failure, an infrastructure failure). Usage errors are 2."""
    if all(v.status is Status.PASSED for v in verdicts):
        return 0
    if all(v.status in (Status.PASSED, Status.NOT_RUNNABLE) for v in verdicts):
        return EXIT_NOT_RUNNABLE
    return 1


def print_run_summary(verdicts: list[Verdict], title: str) -> None:
    table = Table(title=_lit(title))
    for col in ("agent", "task", "split", "status", "configs ok", "speedup", "95% CI", "roofline", "note"):
        table.add_column(col)
    for v in verdicts:
        n_ok = sum(c.status is Status.PASSED for c in v.configs)
        ci = f"{v.speedup_ci[0]:.2f}-{v.speedup_ci[1]:.2f}" if v.speedup_ci else "-"
        ran = v.status is not Status.NOT_RUNNABLE  # its configs were compiled for, never run
        table.add_row(
            _lit(v.agent),
            _lit(v.task_id),
            _lit(v.split),
            f"[{_status_style(v.status)}]{v.status.value}[/]",
            f"{n_ok}/{len(v.configs)}" if ran else "-",
            _fmt(v.speedup, ".3f", "x"),
            ci,
            _fmt(v.roofline_fraction * 100 if v.roofline_fraction else None, ".0f", "%"),
            _lit(verdict_note(v)),
        )
    console.print(table)
    counts = tally(verdicts)
    console.print(_tally_text(counts), highlight=False)


def tally(verdicts) -> dict[str, int]:
    """Verdicts by what they mean for the score: passed, not passed (every scored failure,
    flagged passes included), not runnable here (NOT_RUNNABLE), infrastructure failures."""
    out = {"passed": 0, "not passed": 0, "not runnable here": 0, "infrastructure failures": 0, "agents not served": 0}
    for v in verdicts:
        out[_tally_key(v)] += 1
    return out


def _tally_key(v: Verdict) -> str:
    if v.status is Status.NOT_RUNNABLE:
        return "not runnable here"
    if v.status.infra:
        return "infrastructure failures"
    if v.status.kind == "service":
        return "agents not served"
    return "passed" if v.counts_as_pass else "not passed"


def _tally_text(counts: dict[str, int], *, passed: bool = True) -> str:
    """The bar's and the summary's count: scored failures in red; verdicts that are not scored
    (NOT_RUNNABLE, infrastructure failures) apart, only when there are some."""
    parts = [f"[green]{counts['passed']} passed[/]"] if passed else []
    parts.append(f"[red]{counts['not passed']} not passed[/]")
    if counts["not runnable here"]:
        parts.append(f"[yellow]{counts['not runnable here']} not runnable here (not scored)[/]")
    if counts["infrastructure failures"]:
        n = counts["infrastructure failures"]
        parts.append(f"[magenta]{n} infrastructure failure{'s' if n != 1 else ''} (not scored)[/]")
    if counts["agents not served"]:
        parts.append(
            f"[magenta]{counts['agents not served']} refused or unreached by the agent's model service (not scored)[/]"
        )
    return ", ".join(parts)


def cmd_run(args: argparse.Namespace) -> int:
    from arena import records
    from arena.devices import detect
    from arena.runner import run
    from arena.taskdef.loader import select_tasks
    from arena.units import RunPlan

    if args.config:
        from arena.taskdef.loader import load_suite

        suite = load_suite(args.config)
        args.agent = args.agent or suite["agents"]
        args.tasks = args.tasks or suite["tasks"]
        args.device = args.device or suite.get("device")
        args.split = args.split or ",".join(suite.get("splits", [])) or None
        args.repeats = args.repeats or suite.get("repeats")
        args.random_configs = args.random_configs or suite.get("random_configs")
        args.seed = args.seed if args.seed is not None else suite.get("seed")
    if not args.agent:
        raise ArenaError("name at least one agent (--agent) or a suite (--config)", key="--agent")
    device = detect(args.device)
    agents = tuple(a.strip() for spec in args.agent for a in spec.split(",") if a.strip())
    folders = tuple(select_tasks(args.tasks or "all", _tasks_root(args)))
    options = []
    for item in args.agent_option or []:
        if "=" not in item:
            raise ArenaError(f"--agent-option takes NAME=VALUE, not {item!r}", key="--agent-option")
        options.append(tuple(item.split("=", 1)))
    plan = RunPlan(
        agents=agents,
        tasks=folders,
        splits=tuple(_split_list(args.split or "all", device)),
        repeats=args.repeats or 1,
        random_configs=args.random_configs or 4,
        seed=args.seed,
        timing_params=tuple(sorted(_timing_params(args).items())),
        agent_options=tuple(options),
        agent_budget_s=args.budget,
        auth_files=tuple(args.auth_file or ()),
    )
    from arena.agents import BUILTIN, require_programs
    from arena.agents.isolation import bubblewrap_missing
    from arena.runner import STOP_AFTER

    if args.executor != "ray":  # (Ray probes them on a node, whose PATH this is not: arena.ray_executor)
        require_programs(agents)  # a program not on PATH: one line saying which and how to install it
        if not args.no_probe:  # each agent probed once: a run that cannot work stops now, in one line
            from arena.agents import get_agent
            from arena.agents.probe import probe_all

            failed = probe_all([get_agent(a, dict(options)) for a in agents if a not in BUILTIN])
            if failed:
                raise ArenaError(
                    failed[0] + (f" (and {len(failed) - 1} more agents)" if len(failed) > 1 else ""), key="--agent"
                )
    if any(a not in BUILTIN for a in agents) and bubblewrap_missing():
        console.print(f"[yellow]warning:[/] {_lit(bubblewrap_missing())}")
    out = Path(args.out)
    gpus = None
    if args.gpus:
        try:
            gpus = [int(g) for g in args.gpus.split(",") if g.strip()]
        except ValueError:
            raise ArenaError(f"--gpus takes GPU indices like 0,1,2, not {args.gpus!r}", key="--gpus") from None
        if device.kind == "cpu":
            raise ArenaError("--gpus needs a GPU backend", key="--gpus")
    console.print(
        f"run {out.name}: {len(agents)} agents x {len(folders)} tasks x {len(plan.splits)} splits "
        f"on {device.kind} ({device.name})"
        + (f", GPUs {gpus}" if gpus else "")
        + (f", {args.workers_per_gpu} workers each" if args.workers_per_gpu > 1 else "")
        + (" via Ray" if args.executor == "ray" else ""),
        markup=False,
        highlight=False,
    )
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=args.quiet,
        transient=False,
    )
    counts = tally([])
    bar = progress.add_task("verdicts", total=None, tally=_tally_text(counts, passed=False))

    def on_verdict(v: Verdict) -> None:
        counts[_tally_key(v)] += 1
        progress.update(bar, advance=1, tally=_tally_text(counts, passed=False))
        if not args.quiet:
            why = verdict_note(v)
            progress.console.print(
                _lit(f"  {v.agent:12s} {v.task_id:36s} {v.split:8s} ")
                + f"[{_status_style(v.status)}]{v.status.value}[/] "
                f"{_fmt(v.speedup, '.3f', 'x')}" + (f"  {_lit(why)}" if why else ""),
                highlight=False,
                soft_wrap=True,
            )

    stopped: list[str] = []

    def on_stop(line: str) -> None:  # said at once, and again after the summary
        stopped.append(line)
        progress.console.print(f"[red]{_lit(line)}[/]", highlight=False)

    with progress:
        run(
            plan,
            device,
            out,
            resume=args.resume,
            timing=False if args.no_timing else None,
            on_verdict=on_verdict,
            gpus=gpus,
            executor=args.executor,
            ray_address=args.ray_address,
            prebuild=not args.no_prebuild,
            build_jobs=args.build_jobs,
            on_start=lambda n: progress.update(bar, total=n),
            workers_per_gpu=args.workers_per_gpu,
            infra_retries=args.infra_retries,
            stop_after=STOP_AFTER if args.stop_after is None else args.stop_after,
            on_stop=on_stop,
            probe=args.executor == "ray" and not args.no_probe,
        )
    all_records = records.current(records.read(out / "records.jsonl"))
    print_run_summary(all_records, f"{out / 'records.jsonl'} ({len(all_records)} records)")
    infra = [v for v in all_records if v.status.infra or v.status.kind == "service"]
    if infra:
        limit = records.stated_retry_limit(out)
        left = sum(records.redoable(v.status, v.attempt, limit) for v in infra)
        what = (
            "infrastructure failures and agents not served"
            if any(v.status.kind == "service" for v in infra)
            else "infrastructure failures"
        )
        console.print(
            f"{what}: the same command with --resume redoes {left} of {len(infra)}"
            if left
            else f"{what}: no retries left (--infra-retries raises the limit)",
            highlight=False,
            markup=False,
        )
    console.print(
        f"next: arena report {out} --out {out / 'report'}   (the report: Markdown and one HTML file)",
        highlight=False,
        markup=False,
    )
    for line in stopped:
        console.print(f"[red]{_lit(line)}[/]", highlight=False)
    return 1 if stopped else 0


def cmd_agents_list(args: argparse.Namespace) -> int:
    from arena.agents import list_agents

    rows = list_agents()
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return 0
    table = Table(title="agents (configs/agents/*.yaml and built-in)")
    for col in ("agent", "kind", "executable", "on PATH", "version", "description"):
        table.add_column(col)
    for r in rows:
        desc = _lit(r["description"]) + (
            f"\n[yellow]experimental:[/] {_lit(r['experimental'])}" if r.get("experimental") else ""
        )
        table.add_row(
            _lit(r["name"]),
            _lit(r["kind"]),
            _lit(r.get("executable", "-")),
            "[green]yes[/]" if r["available"] else "[red]no[/]",
            _lit(r.get("version") or "-"),
            desc,
        )
    console.print(table)
    from arena.agents.isolation import bubblewrap_missing

    if bubblewrap_missing():
        console.print(f"[yellow]warning:[/] {_lit(bubblewrap_missing())}")
    return 0


def cmd_transcript(args: argparse.Namespace) -> int:
    from arena.transcript import find_run_artifacts, render_transcript

    art = find_run_artifacts(Path(args.run), args.task, args.agent, args.repeat)
    Path(args.out).write_text(render_transcript(art, tasks_dir=_tasks_root(args)))
    console.print(f"wrote {args.out}", markup=False, highlight=False)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from arena.report import build_report

    files = build_report(args.runs, Path(args.out), title=args.title)
    console.print(Path(files["md"]).read_text().split("## Per task")[0], markup=False, highlight=False)
    console.print("wrote " + ", ".join(str(p) for p in files.values()), markup=False, highlight=False)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from arena.report.compare import compare_runs

    rows = compare_runs(args.run_a, args.run_b, agent_a=args.agent_a, agent_b=args.agent_b)
    if not rows:
        raise ArenaError("the two runs have no task and split in common", key="RUN_A RUN_B")
    table = Table(title=_lit(f"B = {args.run_b} vs A = {args.run_a} (paired over common tasks)"))
    for col in (
        "split",
        "tasks",
        "both correct",
        "both timed",
        "speedup B/A (geo)",
        "95% CI",
        "correct B-A",
        "95% CI",
        "SOL B-A",
        "changed",
    ):
        table.add_column(col)
    for r in rows:
        lo, hi = r.log_speedup_ci
        import math

        table.add_row(
            r.split,
            str(r.n_common),
            str(r.n_both_correct),
            str(r.n_both_timed),
            _fmt(r.speedup_ratio, ".3f", "x"),
            "-" if math.isnan(lo) else f"{math.exp(lo):.3f}-{math.exp(hi):.3f}",
            _fmt(r.correct_diff * 100 if not math.isnan(r.correct_diff) else None, "+.0f", "%"),
            "-" if math.isnan(r.correct_ci[0]) else f"{r.correct_ci[0] * 100:+.0f}..{r.correct_ci[1] * 100:+.0f}%",
            _fmt(r.sol_diff, "+.2f"),
            str(len(r.changed)),
        )
    console.print(table)
    for r in rows:
        for task, a, b in r.changed:
            console.print(f"  {r.split:8s} {task:40s} {a} -> {b}", highlight=False, markup=False)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if not args.mcp:
        raise ArenaError("name a protocol: --mcp", key="--mcp")
    from arena.env.mcp_server import serve

    serve(
        device=args.device,
        run_dir=Path(args.run_dir),
        tasks_dir=_tasks_root(args),
        select=args.select,
        time_limit_s=args.time_limit,
        agent=args.agent,
    )
    return 0


def cmd_device(args: argparse.Namespace) -> int:
    from arena.devices import detect
    from arena.devices.ceilings import ceilings_for, measure
    from arena.toolchain.hip import TARGETS, compiler_found

    d = detect(args.device)
    if args.measure:
        if not d.runs_kernels:
            raise ArenaError("ceilings are measured on a GPU; the cpu backend has no roofline", key="--measure")
        measure(d)
    compilers = {t: compiler_found(t) for t in TARGETS}
    builds = hip_builds(d, compilers)
    ceilings, source = ceilings_for(d)
    sandbox = sandbox_defences(d)
    if args.json:
        print(
            json.dumps(
                {
                    **d.to_dict(),
                    "compilers": {
                        c["compiler"]: {k: c[k] for k in ("path", "version", "problem")} for c in compilers.values()
                    },
                    "hip_builds": builds,
                    "ceilings": {"source": source, **(ceilings or {})},
                    "sandbox": sandbox,
                },
                indent=2,
            )
        )
        return 0
    table = Table(title="device", show_header=False)
    for k, v in d.to_dict().items():
        if k == "toolchains":
            v = ", ".join(f"{a} {b}" for a, b in v.items())
        elif k in ("llc_bytes", "memory_bytes") and v:
            v = f"{v / 2**20:.0f} MiB"
        table.add_row(k, _lit(v))
    for c in compilers.values():
        found = (
            f"{c['path']} ({c['version']})"
            if c["problem"] is None
            else f"{c['path']}: unusable: {c['problem']}"
            if c["path"]
            else "not found"
        )
        table.add_row(c["compiler"], _lit(found))
    table.add_row("HIP builds", _lit(builds))
    for defence, why in sandbox.items():
        table.add_row(f"sandbox: {defence}", _lit("yes" if why is None else f"missing: {why}"))
    table.add_row(
        "roofline ceilings",
        _lit(
            f"{source}: "
            + ", ".join(f"{k} {v / 1e12:.3g} T{'B' if k == 'bytes_per_s' else 'FLOP'}/s" for k, v in ceilings.items())
            if ceilings
            else "none (the cpu backend, or a GPU with no datasheet entry: run arena device --measure)"
        ),
    )
    console.print(table)
    return 0


def sandbox_defences(device) -> dict[str, str | None]:
    """Each defence a candidate's process gets here (``arena.evaluation.sandbox``), None where it is had,
    else why not; and the device-memory allowance, which needs the driver's per-process count."""
    from arena.devices.usage import DeviceUsage
    from arena.evaluation.sandbox import confine

    found = {k: v for k, v in confine.features().items() if k != "landlock abi"}
    if device.runs_kernels:
        found["device memory allowance"] = DeviceUsage(device.kind, device.uuid, device.index).why
    return found


def hip_builds(device, compilers: dict[str, dict]) -> str:
    """What becomes of a HIP candidate on this device, given the compilers found: the
    builds made (compile-only on the cpu), and those that cannot be made and why."""
    usable = [(t, a) for t, a in device.build_targets if compilers[t]["problem"] is None]
    missing = [(t, a) for t, a in device.build_targets if compilers[t]["problem"] is not None]
    lacking = " or ".join(compilers[t]["compiler"] for t, _ in missing)
    if device.runs_kernels:
        if not missing:
            return ", ".join(f"{t} {a}" for t, a in usable)
        return (
            f"none: {', '.join(f'{t} {a}' for t, a in missing)} needs {lacking}, not usable here; "
            "HIP candidates get HARNESS_ERROR"
        )
    if not usable:
        return f"none: no {lacking}; HIP candidates are not compiled (NOT_RUNNABLE: no GPU)"
    made = ", ".join(f"{t} {a}" for t, a in usable) + " (compile-only: no GPU runs them; NOT_RUNNABLE)"
    return made + (f"; not {', '.join(f'{t} {a}' for t, a in missing)}: no {lacking}" if missing else "")


# ------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arena", description="kernel-arena: evaluate GPU kernels on seen and unseen shapes"
    )
    p.add_argument("--tasks-dir", help="the tasks folder (default: tasks/ of this repository)")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tasks", help="list, show, validate, create and check tasks")
    tsub = t.add_subparsers(dest="tasks_command", required=True)
    x = tsub.add_parser("list", help="list tasks")
    x.add_argument("selector", nargs="?", help="all | a category | an id | a glob, comma-separated")
    x.set_defaults(fn=cmd_tasks_list)
    x = tsub.add_parser("show", help="show one task")
    x.add_argument("id")
    x.set_defaults(fn=cmd_tasks_show)
    x = tsub.add_parser("validate", help="check task files against the schema")
    x.add_argument("paths", nargs="*", help="task folders, folders of tasks, or a selector of the task root's "
                   "(all, a category, ids, a glob, a comma list); default: the task root")
    x.set_defaults(fn=cmd_tasks_validate)
    x = tsub.add_parser("new", help="write a task skeleton that validates")
    x.add_argument("id", help="CATEGORY/NAME")
    x.set_defaults(fn=cmd_tasks_new)
    x = tsub.add_parser("import", help="draft a task from a problem written for another harness")
    isub = x.add_subparsers(dest="import_format", required=True)
    for fmt, what, ids in (
        (
            "kernelbench",
            "a KernelBench-style problem file (class Model, get_inputs, get_init_inputs) -> a torch2hip task",
            "torch2hip/NAME",
        ),
        (
            "aka",
            "an AgentKernelArena-style task folder (config.yaml, kernel source, test "
            "script) -> a triton2triton or hip2hip task, the kernel kept as written",
            "CATEGORY/NAME",
        ),
    ):
        y = isub.add_parser(fmt, help=what)
        y.add_argument("path", metavar="PATH")
        y.add_argument(
            "--out",
            metavar="DIR",
            help="the tasks folder to write into: DIR/CATEGORY/NAME (default: "
            "--tasks-dir, else tasks/ of this repository)",
        )
        y.add_argument("--id", metavar="ID", help=f"NAME or {ids} (default: from the file or folder name)")
        if fmt == "kernelbench":
            y.add_argument("--device", choices=("cpu", "cuda", "rocm"), default="cpu",
                           help="where the importer's own check of the reference against the original model runs "
                           "(default cpu, where a network past 10 GFLOP is left unchecked; its probes stay on the CPU)")
        else:
            y.add_argument("--device", choices=("cpu", "cuda", "rocm"), default="cpu",
                           help="a GPU the finished task is then checked on, as `arena tasks check "
                           "--drop-failing-drafts` does: the configs the importer drafted that the starting kernel "
                           "fails there, or runs outside the timing window, are taken out (default cpu: the "
                           "importer's own check on the CPU alone; its probes stay on the CPU)")
        y.set_defaults(fn=cmd_tasks_import)
    x = tsub.add_parser("check", help="the author's validator (baseline, degeneracy, timing window, solution)")
    x.add_argument("selector", nargs="?")
    x.add_argument("--device", choices=("cuda", "rocm", "cpu"))
    x.add_argument("--json", help="also write the rows (with every verdict) to this file")
    x.add_argument("--markdown", help="also write the table as Markdown (for reports/validation/)")
    x.add_argument("--jobs", type=int, default=1,
                   help="tasks checked at once, each in a process of its own (default 1; their reference checks, and "
                        "any evaluation not reused from --from-run, share the device)")
    x.add_argument(
        "--from-run",
        action="append",
        help="reuse the verdicts of a run of the built-in agents "
        "(same files, same device) instead of evaluating again; repeatable",
    )
    x.add_argument("--drop-failing-drafts", action="store_true",
                   help="take out of each task the configs an importer drafted (marked DRAFT) that fail on their own "
                        "(the starting kernel wrong there, or its time outside the window), and check again; the "
                        "task's own configs are taken out only where their time is outside the window")
    x.set_defaults(fn=cmd_tasks_check)

    e = sub.add_parser("eval", help="run the gates on one kernel file")
    e.add_argument("task")
    e.add_argument("--kernel", help="the candidate file (default: the task's starting point)")
    e.add_argument("--split", help="seen | heldout | random | smoke | all, or a comma list")
    e.add_argument("--seed", type=int, help="the random split's secret (default: fresh)")
    e.add_argument("--device", choices=("cuda", "rocm", "cpu"))
    e.add_argument("--no-timing", action="store_true", help="correctness only")
    e.add_argument(
        "--torch-compile",
        action="store_true",
        help="torch2hip: also time torch.compile of the reference (a second denominator; compiles per shape)",
    )
    e.add_argument("--timing-cap", type=float, help="seconds of timing per config at most (default 4)")
    e.add_argument(
        "--timing-memory",
        type=float,
        help="GiB of input sets a config's timing may hold at most (default 8; a split's together at most half "
        "of free memory)",
    )
    e.add_argument("--json", action="store_true", help="print the records as JSON lines")
    e.set_defaults(fn=cmd_eval)

    r = sub.add_parser("run", help="built-in agents over a selection of tasks, into a run directory")
    r.add_argument("--config", help="a run configuration, configs/suites/*.yaml (flags override it)")
    r.add_argument(
        "--agent",
        action="append",
        help="built-in (baseline, solution, specialised, tuner) or configs/agents/NAME.yaml (repeatable, comma "
        "lists); `arena agents list`",
    )
    r.add_argument("--tasks", help="task selector (default: all)")
    r.add_argument(
        "--split",
        help="seen | heldout | random | smoke | all, or a comma list (default: all = "
        "seen,heldout,random on a GPU, smoke on the cpu)",
    )
    r.add_argument("--random-configs", type=int, help="configs drawn for the random split (default 4)")
    r.add_argument("--seed", type=int, help="the random split's secret (default: fresh from os.urandom)")
    r.add_argument("--device", choices=("cuda", "rocm", "cpu"))
    r.add_argument("--out", required=True)
    r.add_argument(
        "--resume",
        action="store_true",
        help="finish the run: do what it owes, and redo infrastructure failures (TASK_ERROR, "
        "HARNESS_ERROR) of the same candidates, up to --infra-retries times",
    )
    r.add_argument(
        "--infra-retries",
        type=int,
        help="times --resume redoes a split whose verdict is an infrastructure failure (default: the "
        "run's own, else 2; stated in run.json)",
    )
    r.add_argument(
        "--no-probe",
        action="store_true",
        help="do not probe each agent before the run (its program starts, its model endpoint answers, "
        "bubblewrap is there where the program needs it)",
    )
    r.add_argument(
        "--stop-after",
        type=int,
        default=None,
        metavar="N",
        help="stop an agent whose N attempts in a row ended the same failed way (it did not start, "
        "crashed, was refused by its model service or could not reach it); --resume makes its "
        "other attempts later (default 3; 0: never)",
    )
    r.add_argument("--repeats", type=int)
    r.add_argument("--no-timing", action="store_true")
    r.add_argument(
        "--torch-compile",
        action="store_true",
        help="torch2hip: also time torch.compile of the reference (a second denominator; compiles per shape)",
    )
    r.add_argument("--timing-cap", type=float, help="seconds of timing per config at most (default 4)")
    r.add_argument(
        "--timing-memory",
        type=float,
        help="GiB of input sets a config's timing may hold at most (default 8; a split's together at most half "
        "of free memory)",
    )
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--gpus", help="GPU indices (e.g. 0,1,2,3); default: one GPU")
    r.add_argument(
        "--workers-per-gpu",
        type=int,
        default=1,
        help="evaluations side by side on each GPU (default 1); their timed rounds still take the GPU "
        "one at a time, and no other work runs on it meanwhile",
    )
    r.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="ray: each (agent, task, repeat) is a Ray task with one GPU (pip install 'kernel-arena[ray]')",
    )
    r.add_argument("--ray-address", help="an existing Ray cluster (default: $RAY_ADDRESS, else a local one)")
    r.add_argument("--no-prebuild", action="store_true", help="do not compile the tasks' HIP and Triton files ahead")
    r.add_argument(
        "--build-jobs", type=int, help="parallel HIP builds and Triton warm-ups ahead of GPU work (default: every core)"
    )
    r.add_argument(
        "--agent-option",
        action="append",
        metavar="NAME=VALUE",
        help="an option of a YAML agent, e.g. model=... (repeatable)",
    )
    r.add_argument("--budget", type=float, help="wall seconds per task for an agent (default: its YAML's)")
    r.add_argument(
        "--auth-file", action="append", help="a file under HOME copied into the agent's private HOME (repeatable)"
    )
    r.set_defaults(fn=cmd_run)

    x = sub.add_parser("report", help="metrics, tables and plots over run directories")
    x.add_argument("runs", nargs="+", help="run directories (or records.jsonl files)")
    x.add_argument("--out", required=True)
    x.add_argument("--title")
    x.set_defaults(fn=cmd_report)

    x = sub.add_parser("compare", help="paired A/B comparison of two runs")
    x.add_argument("run_a")
    x.add_argument("run_b")
    x.add_argument("--agent-a", help="only this agent's records of run A")
    x.add_argument("--agent-b", help="only this agent's records of run B")
    x.set_defaults(fn=cmd_compare)

    a = sub.add_parser("agents", help="the agents that can run here")
    asub = a.add_subparsers(dest="agents_cmd", required=True)
    x = asub.add_parser("list", help="built-in agents and configs/agents/*.yaml, with their executables")
    x.add_argument("--json", action="store_true")
    x.set_defaults(fn=cmd_agents_list)

    x = sub.add_parser("transcript", help="one agent run as a self-contained HTML page")
    x.add_argument("run", help="the run directory")
    x.add_argument("task", help="the task id")
    x.add_argument("--agent", help="the agent (when several ran the task)")
    x.add_argument("--repeat", type=int, help="the repeat (default: the first)")
    x.add_argument("--out", required=True)
    x.set_defaults(fn=cmd_transcript)

    x = sub.add_parser("serve", help="the run_kernel / finish environment as MCP tools over stdio")
    x.add_argument("--mcp", action="store_true", help="serve MCP over stdio (needs the mcp package)")
    x.add_argument("--run-dir", required=True, help="where episodes are recorded (records.jsonl, artifacts/)")
    x.add_argument("--device", choices=("cuda", "rocm", "cpu"))
    x.add_argument(
        "--select", choices=("last", "best"), default="last", help="the submission finish scores (default: the last)"
    )
    x.add_argument("--time-limit", type=float, default=300.0, help="seconds per run_kernel call (default 300)")
    x.add_argument("--agent", default="mcp", help="the agent name in the records (default: mcp)")
    x.set_defaults(fn=cmd_serve)

    d = sub.add_parser("device", help="what was detected")
    d.add_argument("--device", choices=("cuda", "rocm", "cpu"))
    d.add_argument("--json", action="store_true")
    d.add_argument(
        "--measure",
        action="store_true",
        help="measure the GPU's copy bandwidth and matrix-multiply throughput per dtype and keep them: "
        "the roofline uses them from then on (a GPU only)",
    )
    d.set_defaults(fn=cmd_device)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: a run claims nothing more, kills the evaluations in flight
    (their worker processes and candidate processes with them) and keeps what was recorded."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def _dump_stacks_on_usr1() -> bool:
    """kill -USR1 PID prints every thread's stack on stderr and the run goes on: what a long or
    stuck run is doing. False where stderr has no descriptor (captured in-process)."""
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (OSError, ValueError):
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    previous = (
        signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() else None
    )
    if previous is not None:  # held by whatever started this process (a mask is inherited): a run could not be stopped
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
    dumps = previous is not None and _dump_stacks_on_usr1()
    try:
        return args.fn(args)
    except ArenaError as exc:
        for e in _problems(exc):
            print_error(e)
        return 2
    except Terminated:
        err_console.print("terminated")
        return 143
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if dumps:
            faulthandler.unregister(signal.SIGUSR1)


if __name__ == "__main__":
    sys.exit(main())
