"""Running a plan's units as Ray tasks (``arena run --executor ray``).

Each (agent, task, repeat) becomes one Ray task asking for a GPU (``num_gpus=1``, or a
share of one with ``per_gpu`` > 1; one CPU on the cpu backend). Tasks sharing a GPU are
timed one at a time through the GPU's lock files on their node (``arena.evaluation.gpulock``). The task runs
the same ``run_unit`` as the local executor, into a scratch run directory on its node, and
returns its Verdicts and a tarball of its artifacts; the driver alone appends records and
unpacks artifacts, so records.jsonl has one writer and ``--resume`` works as for local runs.
Each program agent is probed first, on a node, as a local run probes it
(``arena.agents.probe``); an agent whose attempts end the same failed way ``stop_after`` times
in a row has its other tasks cancelled (``arena.runner.Streaks``).
Nodes need kernel-arena importable and the task folders at the same path as the driver
(a shared checkout). Ray is optional: ``pip install 'kernel-arena[ray]'``.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

from arena.devices import Device
from arena.errors import ArenaError
from arena.records import Status, Verdict


def _side_by_side(resource: str, each: float) -> int:
    """How many tasks asking ``each`` of ``resource`` ("GPU", "CPU") this Ray node runs at once, at most (1 where
    Ray does not say)."""
    try:
        import ray

        node = ray.get_runtime_context().get_node_id()
        have = next(float(n["Resources"].get(resource, 0)) for n in ray.nodes() if n.get("NodeID") == node)
        return max(1, int(have / each + 1e-9))
    except Exception:  # noqa: BLE001 - a share of one is torch's default, as before
        return 1


def _unit_task(unit: Any, plan: Any, kind: str, run_id: str, split_seed: int | None,
               timing: bool | None, resource: tuple[str, float] = ("CPU", 1.0)) -> tuple[list[dict[str, Any]], bytes]:
    from arena.devices import detect
    from arena.evaluation.processes import at_once
    from arena.units import run_unit

    device = detect(kind)            # Ray has set CUDA_VISIBLE_DEVICES to the GPU it granted
    scratch = Path(tempfile.mkdtemp(prefix="arena-ray-"))
    try:
        with at_once(_side_by_side(*resource)):    # its evaluations' share of the node's CPUs
            verdicts = run_unit(unit, plan, device, scratch, run_id, split_seed, timing)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if (scratch / "artifacts").is_dir():
                tar.add(scratch / "artifacts", arcname="artifacts")
        return [v.to_dict() for v in verdicts], buf.getvalue()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _probe_task(name: str, options: dict[str, str], budget_s: float | None, auth_files: bool) -> str | None:
    """Why the agent ``name`` cannot run on this node, in one line, or None."""
    from arena.agents import get_agent, require_programs
    from arena.agents.probe import probe

    try:
        require_programs([name])
    except ArenaError as exc:
        return str(exc)
    return probe(get_agent(name, options, budget_s=budget_s, auth_files=auth_files))


def run_on_ray(units: list[Any], plan: Any, device: Device, out: Path, run_id: str, split_seed: int | None,
               timing: bool | None, emit: Callable[[Verdict], None], *, address: str | None = None,
               per_gpu: int = 1, probe: bool = False, attempted: Callable[[str, list[Verdict]], None] | None = None,
               stopped: Callable[[str], bool] = lambda agent: False) -> None:
    try:
        import ray
    except ImportError as exc:
        raise ArenaError("the ray executor needs Ray: pip install 'kernel-arena[ray]'", key="--executor") from exc
    from arena.evaluation.processes import PACKAGE_ROOT
    from arena.units import failure_verdict, task_id_of

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
                 runtime_env={"env_vars": {"PYTHONPATH": str(PACKAGE_ROOT)}})
    try:
        if probe:
            _probe_on_ray(ray, units, plan)
        resource = ("GPU", 1.0 / per_gpu) if device.runs_kernels else ("CPU", 1.0)   # what each unit asks Ray for
        remote = ray.remote(max_retries=0, **{f"num_{resource[0].lower()}s": resource[1]})(_unit_task)
        pending = {remote.remote(u, plan, device.kind, run_id, split_seed, timing, resource): u for u in units}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                unit = pending.pop(ref)
                try:
                    dicts, tar_bytes = ray.get(ref)
                    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:gz") as tar:
                        tar.extractall(out, filter="data")
                    verdicts = [Verdict.from_dict(d) for d in dicts]
                except Exception as exc:  # noqa: BLE001 - a lost node or a crashed task is a record
                    msg = f"the Ray task failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
                    verdicts = [failure_verdict(task_id_of(unit.folder), unit.folder.parent.name, s,
                                                Status.HARNESS_ERROR, msg, device, run_id, unit.agent, unit.repeat)
                                for s in unit.todo]
                for v in verdicts:
                    emit(v)
                if attempted is not None:
                    attempted(unit.agent, verdicts)
                if stopped(unit.agent):        # not attempted: --resume makes them
                    for other in [r for r, u in pending.items() if u.agent == unit.agent]:
                        ray.cancel(other, force=True)
                        del pending[other]
    finally:
        if started_here:
            ray.shutdown()


def _probe_on_ray(ray: Any, units: list[Any], plan: Any) -> None:
    """Each program agent of the run probed once, on a node (the driver's PATH is not the
    nodes'): a failure stops the run before anything is recorded, as a local run's probe does."""
    from arena.agents import BUILTIN
    from arena.units import agent_settings

    s = agent_settings(plan)
    names = sorted({u.agent for u in units} - set(BUILTIN))
    task = ray.remote(num_cpus=1, max_retries=0)(_probe_task)
    refs = [task.remote(n, dict(s["agent_options"]), s["budget_s"], s["auth_files"]) for n in names]
    failed = [why for why in ray.get(refs) if why]
    if failed:
        raise ArenaError(failed[0] + (f" (and {len(failed) - 1} more agents)" if len(failed) > 1 else ""),
                         key="--agent")
