"""One unit of a run: an (agent, task, repeat) and the splits it owes, and how it is proposed
and evaluated on one device. The local executor's GPU threads (``arena.runner``) and Ray's
tasks (``arena.ray_executor``) both call ``run_unit``; every failure becomes records."""

from __future__ import annotations

import json
import logging
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path

from arena.agents import AgentContext, Proposal, get_agent
from arena.agents.base import OUTCOME_STATUS, outcome_text
from arena.devices import Device
from arena.errors import ArenaError
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status, Verdict, file_sha256, utc_now
from arena.taskdef.loader import load_task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPlan:
    agents: tuple[str, ...]
    tasks: tuple[Path, ...]
    splits: tuple[str, ...]
    repeats: int = 1
    random_configs: int = 4
    seed: int | None = None   # the random split's secret; None: a fresh os.urandom secret per run
    timing_params: tuple[tuple[str, object], ...] = ()   # e.g. (("torch_compile", True),)
    agent_options: tuple[tuple[str, str], ...] = ()      # --agent-option NAME=VALUE for YAML agents
    agent_budget_s: float | None = None                  # the wall budget per task (default: the agent's)
    auth_files: tuple[str, ...] = ()


def task_id_of(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def failure_verdict(task_id: str, category: str, split: str, status: Status, message: str, device: Device,
                    run_id: str, agent: str, repeat: int, stage: str = "setup") -> Verdict:
    """A verdict of no evaluation: the task did not load, the harness broke, or the agent's run
    decided it (``stage`` "agent")."""
    now = utc_now()
    return Verdict(task_id=task_id, category=category, split=split, status=status, stage=stage, message=message,
                   candidate={}, device=device.to_dict(), run_id=run_id, agent=agent, repeat=repeat,
                   started_at=now, finished_at=now, configs=[])


@dataclass(frozen=True)
class Unit:
    """One (agent, task, repeat) and the splits it still owes."""

    agent: str           # as the plan names it (a built-in, a YAML name or path)
    folder: Path
    repeat: int
    todo: tuple[str, ...]


def agent_settings(plan: RunPlan) -> dict:
    return {"agent_options": dict(plan.agent_options), "budget_s": plan.agent_budget_s,
            "auth_files": tuple(plan.auth_files)}


PROPOSAL = "proposal.json"


def keep_proposal(art: Path, source: Path, info: dict) -> None:
    """Note what the agent proposed (its file, by content, and its run's figures), so that a
    resumed run evaluates that file again instead of asking the agent a second time: the
    splits of one attempt are all of one candidate, and an infrastructure failure redone costs
    the agent nothing."""
    (art / PROPOSAL).write_text(json.dumps({"file": source.name, "sha256": file_sha256(source), "info": info},
                                           indent=1, default=str))


def kept_proposal(art: Path) -> tuple[Path, dict] | None:
    """The proposal noted in ``art`` if its file is there unchanged; None otherwise."""
    try:
        meta = json.loads((art / PROPOSAL).read_text())
        source = art / meta["file"]
        if source.is_file() and file_sha256(source) == meta["sha256"]:
            return source, dict(meta.get("info") or {})
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def run_unit(unit: Unit, plan: RunPlan, device: Device, out: Path, run_id: str, split_seed: int | None,
             timing: bool | None) -> list[Verdict]:
    """Propose and evaluate one unit on one device; every failure becomes records, never an
    exception. Used the same way by the local executor's GPU threads and by Ray tasks."""
    s = agent_settings(plan)
    agent = get_agent(unit.agent, s["agent_options"], budget_s=s["budget_s"], auth_files=s["auth_files"])
    agent_name = agent.name     # a YAML path given on the command line records as its agent's name
    task_id = task_id_of(unit.folder)
    todo = list(unit.todo)
    try:
        task = load_task(unit.folder)
    except ArenaError as exc:
        return [failure_verdict(task_id, unit.folder.parent.name, sp, Status.TASK_ERROR, str(exc), device, run_id,
                                agent_name, unit.repeat) for sp in todo]
    if not agent.applies_to(task):
        log.info("%s has nothing for %s; not attempted", agent_name, task_id)
        return []
    art = out / "artifacts" / agent_name / task_id / str(unit.repeat)
    kept = kept_proposal(art)
    if kept is None:
        if art.exists():
            shutil.rmtree(art)
        art.mkdir(parents=True)
    ctx = AgentContext(device=device, run_dir=out, private_dirs=(out,), timing_params=dict(plan.timing_params))
    try:
        if kept is not None:      # the agent's work stands: only its evaluation is owed (a resume)
            proposed, info = kept
        else:
            proposed = agent.propose(task, art, ctx)
            info = {}
            if isinstance(proposed, Proposal):
                proposed, info = proposed.path, proposed.info
        cand = Candidate(task, proposed, origin=agent_name)
        if cand.source_path.resolve() != (art / cand.source_path.name).resolve():
            shutil.copy2(cand.source_path, art / cand.source_path.name)
        judged = OUTCOME_STATUS.get(str(info.get("exit_reason") or ""))
        if kept is None and judged is not Status.AGENT_UNAVAILABLE:   # that one the agent is asked again
            keep_proposal(art, art / cand.source_path.name, info)
        if judged is not None:     # how the agent's run ended decides it, not the file it left
            verdicts = [failure_verdict(task_id, task.category, sp, judged, outcome_text(info), device, run_id,
                                        agent_name, unit.repeat, stage="agent") for sp in todo]
        else:
            verdicts = evaluate(task, cand, todo, device, timing=timing, work_dir=art, run_id=run_id,
                                agent=agent_name, repeat=unit.repeat, split_seed=split_seed,
                                random_configs=plan.random_configs,
                                timing_params=dict(plan.timing_params), private_dirs=[out])
        for v in verdicts:
            v.agent_run = dict(info)
    except ArenaError as exc:
        verdicts = [failure_verdict(task_id, task.category, sp, Status.TASK_ERROR, str(exc), device, run_id,
                                    agent_name, unit.repeat) for sp in todo]
    except Exception as exc:  # noqa: BLE001 - the run goes on; the record says what broke
        msg = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
        verdicts = [failure_verdict(task_id, task.category, sp, Status.HARNESS_ERROR, msg, device, run_id,
                                    agent_name, unit.repeat) for sp in todo]
    builds = verdicts[0].build if verdicts else {}
    if builds:
        (art / "build.json").write_text(json.dumps(builds, indent=2, default=str))
    return verdicts
