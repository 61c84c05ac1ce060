"""Running a plan's units as Ray tasks (``arena run --executor ray``).

Each (agent, task, repeat) becomes one Ray task asking for a GPU (``num_gpus=1``, or a
share of one with ``per_gpu`` > 1; one CPU on the cpu backend). Tasks sharing a GPU are
timed one at a time through the GPU's lock files on their node (``arena.evaluation.gpulock``). The task runs
the same ``run_unit`` as the local executor, into a scratch run directory on its node, and
returns its Verdicts and a tarball of its artifacts; the driver alone appends records and
unpacks artifacts, so records.jsonl has one writer and ``--resume`` works as for local runs.
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


def _unit_task(unit: Any, plan: Any, kind: str, run_id: str, split_seed: int | None,
               timing: bool | None) -> tuple[list[dict[str, Any]], bytes]:
    from arena.devices import detect
    from arena.units import run_unit

    device = detect(kind)            # Ray has set CUDA_VISIBLE_DEVICES to the GPU it granted
    scratch = Path(tempfile.mkdtemp(prefix="arena-ray-"))
    try:
        verdicts = run_unit(unit, plan, device, scratch, run_id, split_seed, timing)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if (scratch / "artifacts").is_dir():
                tar.add(scratch / "artifacts", arcname="artifacts")
        return [v.to_dict() for v in verdicts], buf.getvalue()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_on_ray(units: list[Any], plan: Any, device: Device, out: Path, run_id: str, split_seed: int | None,
               timing: bool | None, emit: Callable[[Verdict], None], *, address: str | None = None,
               per_gpu: int = 1) -> None:
    try:
        import ray
    except ImportError as exc:
        raise ArenaError("the ray executor needs Ray: pip install 'kernel-arena[ray]'", key="--executor") from exc
    from arena.evaluation.processes import PACKAGE_ROOT
    from arena.units import _task_id_of, failure_verdict

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
                 runtime_env={"env_vars": {"PYTHONPATH": str(PACKAGE_ROOT)}})
    try:
        resources = {"num_gpus": 1.0 / per_gpu} if device.runs_kernels else {"num_cpus": 1}
        remote = ray.remote(max_retries=0, **resources)(_unit_task)
        pending = {remote.remote(u, plan, device.kind, run_id, split_seed, timing): u for u in units}
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
                    verdicts = [failure_verdict(_task_id_of(unit.folder), unit.folder.parent.name, s,
                                                Status.HARNESS_ERROR, msg, device, run_id, unit.agent, unit.repeat)
                                for s in unit.todo]
                for v in verdicts:
                    emit(v)
    finally:
        if started_here:
            ray.shutdown()
