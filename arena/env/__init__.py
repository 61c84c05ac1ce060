"""kernel-arena as an environment: a task is given, the agent submits code with
``run_kernel`` as often as it likes and ends with ``finish`` (the KernelBench environment's
tools and rewards, ANCHORS.md).

    env = KernelEnv("triton2triton/rms_norm", device="cuda", run_dir="runs/rl-1")
    prompt = env.reset()
    result = env.run_kernel(code)        # status, errors, per-config timings, reward
    final = env.finish()                 # held-out and random shapes of the chosen submission (GPU)

Feedback is the gates on the configs the agent may see (``arena.feedback``); ``finish``
scores the last or the best submission on seen, held-out and random configs on a GPU (on
the cpu backend, the smoke configs only: ``arena.feedback.final_splits``) and appends
the Verdicts to the run directory's records.jsonl, so ``arena report`` works on episodes.
Rewards: a pass earns median speedup - 1; incorrect -2; execution failure -3;
initialization failure -4; compilation failure -5; unknown -6; the per-call time limit -7.
A failure that is not the candidate's (the harness's or the task's: TASK_ERROR,
HARNESS_ERROR, an exception in the harness) and NOT_RUNNABLE earn no reward: ``reward`` is
None and ``scored`` False, so a trainer can drop the sample instead of learning from it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import records
from arena.devices import Device, detect
from arena.errors import ArenaError
from arena.evaluation.parent import Candidate, evaluate
from arena.feedback import assess, feedback_split, final_splits, summarize
from arena.records import Status, Verdict
from arena.runner import open_run
from arena.taskdef.loader import load_task, select_tasks
from arena.taskdef.skeleton import hip_skeleton
from arena.workspace import editable_name, render_readme

DEFAULT_TIME_LIMIT_S = 300.0
SELECT = ("last", "best")


@dataclass
class Submission:
    index: int
    path: Path
    summary: dict[str, Any]
    verdict: Verdict | None = None

    @property
    def reward(self) -> float | None:
        r = self.summary["reward"]
        return float(r) if r is not None else None


@dataclass
class _Episode:
    repeat: int
    folder: Path
    starting_code: str
    submissions: list[Submission] = field(default_factory=list)
    finished: dict[str, Any] | None = None
    started: float = field(default_factory=time.monotonic)


class KernelEnv:
    """One task as an environment. ``select`` picks what ``finish`` scores: the ``last``
    submission or the ``best`` one (highest reward on the feedback split)."""

    def __init__(self, task_id: str, *, device: Device | str | None = None, tasks_dir: Path | str | None = None,
                 run_dir: Path | str | None = None, select: str = "last",
                 time_limit_s: float = DEFAULT_TIME_LIMIT_S, agent: str = "env", random_configs: int = 4,
                 split_seed: int | None = None) -> None:
        if select not in SELECT:
            raise ArenaError(f"select must be one of {', '.join(SELECT)}, not {select!r}", key="select")
        folders = select_tasks(task_id, tasks_dir)
        if len(folders) != 1:
            raise ArenaError(f"{task_id!r} names {len(folders)} tasks; an environment takes one", key="task_id")
        self.task = load_task(folders[0])
        self.device = device if isinstance(device, Device) else detect(device)
        self.run_dir = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="arena-env-"))
        self.select = select
        self.time_limit_s = float(time_limit_s)
        self.agent = agent
        self.random_configs = random_configs
        self.split_seed = split_seed
        self._episode: _Episode | None = None
        open_run(self.run_dir, {"agents": [agent], "tasks": [self.task.id], "device": self.device.to_dict(),
                                "mode": "env"})

    # -- the tools --------------------------------------------------------------------------

    def reset(self) -> dict[str, Any]:
        """Start an episode; the prompt: description, signature, reference, starting kernel,
        and the configs feedback runs on."""
        repeat = self._next_repeat()
        folder = self.run_dir / "artifacts" / self.agent / self.task.id / str(repeat)
        folder.mkdir(parents=True)
        baseline = self.task.kernel_file("baseline")
        starting = baseline.read_text() if baseline is not None else hip_skeleton(self.task)
        self._episode = _Episode(repeat=repeat, folder=folder, starting_code=starting)
        split = feedback_split(self.device)
        return {
            "task_id": self.task.id, "category": self.task.category, "title": self.task.title,
            "difficulty": self.task.difficulty, "episode": repeat,
            "prompt": render_readme(self.task), "kernel_filename": editable_name(self.task),
            "entry": self.task.entry, "reference": self.task.reference_path.read_text(),
            "starting_kernel": starting, "feedback_split": split,
            "configs": [{"name": c.name, **c.params} for c in self.task.configs(split)],
            "time_limit_s": self.time_limit_s, "select": self.select,
        }

    def run_kernel(self, code: str) -> dict[str, Any]:
        """Evaluate ``code`` on the feedback split: status, errors, timings, speedup, reward."""
        ep = self._require_episode()
        index = len(ep.submissions)
        path = ep.folder / "submissions" / str(index) / editable_name(self.task)
        path.parent.mkdir(parents=True)
        path.write_text(code)
        start = time.monotonic()
        try:
            v = assess(self.task, path, self.device, work_dir=path.parent, deadline_s=self.time_limit_s,
                       run_id=self.run_dir.name, agent=self.agent, repeat=ep.repeat, private_dirs=[self.run_dir])
            summary = summarize(v)
        except ArenaError:
            raise
        except Exception as exc:  # noqa: BLE001 - the episode goes on; the agent is told
            v = None
            summary = {"task_id": self.task.id, "split": feedback_split(self.device),
                       "status": Status.HARNESS_ERROR.value, "stage": "", "passed": False, "scored": False,
                       "configs_passed": 0, "configs": [], "speedup_median": None, "speedup_geomean": None,
                       "flags": [], "reward": None,
                       "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"}
        if v is not None and v.status.value == "TIMEOUT" and time.monotonic() - start >= self.time_limit_s - 1:
            summary["message"] = (f"the call passed its {self.time_limit_s:.0f} s limit\n" +
                                  summary.get("message", "")).rstrip()
        summary["submission"] = index
        sub = Submission(index, path, summary, v)
        ep.submissions.append(sub)
        with open(ep.folder / "episode.jsonl", "a") as f:
            f.write(json.dumps({"event": "run_kernel", "at": time.time(), "summary": summary}, default=str) + "\n")
        return summary

    def finish(self) -> dict[str, Any]:
        """Score the chosen submission (the starting kernel if none was made) on every final
        split; the Verdicts go to the run's records.jsonl. Ends the episode."""
        ep = self._require_episode()
        if ep.finished is not None:
            return ep.finished
        chosen = self._chosen(ep)
        if chosen is None:
            self.run_kernel(ep.starting_code)
            chosen = ep.submissions[-1]
        kept = ep.folder / editable_name(self.task)
        shutil.copy2(chosen.path, kept)
        verdicts: list[Verdict] = []
        split = feedback_split(self.device)
        if chosen.verdict is not None:
            verdicts.append(chosen.verdict)
        rest = [s for s in final_splits(self.device) if s != split or chosen.verdict is None]
        if rest:
            try:
                verdicts += evaluate(self.task, Candidate(self.task, chosen.path, origin=self.agent), rest,
                                     self.device, work_dir=ep.folder, run_id=self.run_dir.name, agent=self.agent,
                                     repeat=ep.repeat, split_seed=self.split_seed,
                                     random_configs=self.random_configs, private_dirs=[self.run_dir])
            except ArenaError:
                raise
            except Exception as exc:  # noqa: BLE001 - recorded, not raised
                from arena.units import failure_verdict

                verdicts += [failure_verdict(self.task.id, self.task.category, s, Status.HARNESS_ERROR,
                                             f"{type(exc).__name__}: {exc}", self.device, self.run_dir.name,
                                             self.agent, ep.repeat) for s in rest]
        for v in verdicts:
            records.append(self.run_dir / "records.jsonl", v)
        by_split = {v.split: summarize(v) for v in verdicts}
        ep.finished = {
            "task_id": self.task.id, "episode": ep.repeat, "submission": chosen.index, "select": self.select,
            "submissions": len(ep.submissions), "reward": chosen.reward,
            "splits": by_split,
            "correct": {s: d["passed"] for s, d in by_split.items()},
            "wall_s": round(time.monotonic() - ep.started, 3),
        }
        with open(ep.folder / "episode.jsonl", "a") as f:
            f.write(json.dumps({"event": "finish", "at": time.time(), "result": ep.finished}, default=str) + "\n")
        return ep.finished

    # -- helpers ----------------------------------------------------------------------------

    def _require_episode(self) -> _Episode:
        if self._episode is None or self._episode.finished is not None:
            self.reset()
        assert self._episode is not None
        return self._episode

    def _chosen(self, ep: _Episode) -> Submission | None:
        if not ep.submissions:
            return None
        if self.select == "last":
            return ep.submissions[-1]
        # a submission the harness failed on has no reward: never above one that was scored
        return max(ep.submissions, key=lambda s: (s.reward is not None, s.reward or 0.0, s.index))

    def _next_repeat(self) -> int:
        base = self.run_dir / "artifacts" / self.agent / self.task.id
        used = {int(p.name) for p in base.iterdir() if p.name.isdigit()} if base.is_dir() else set()
        used |= {v.repeat for v in records.read(self.run_dir / "records.jsonl")
                 if v.agent == self.agent and v.task_id == self.task.id}
        return max(used) + 1 if used else 0
