"""Whether each side's calls were timed as replays of their records, on a GPU: the fixture tasks' baselines
(Triton, HIP, the signature's extensions) timed against themselves, and a copy of the Triton fixture whose
baseline keeps a workspace between its calls (a table its launcher makes at its first call), which is timed
as it runs instead (``arena.evaluation.trusted.calls.ReplayedBaseline``: a replay gives kept memory contents
of its own). Prints one row per config and exits 1 where a side's ``replayed`` or the warning differs from
what the harness promises:
    python3 scripts/gpu_baseline_replay.py"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.devices import detect  # noqa: E402
from arena.evaluation.parent import Candidate, evaluate  # noqa: E402
from arena.taskdef.loader import load_task  # noqa: E402

FIX = ROOT / "tests" / "fixtures"

# The axpy fixture's baseline, computing through a workspace its launcher allocates at its first call and
# keeps, larger where a call needs more: alpha * x into the workspace, then the workspace plus y into out (two
# launches). A call that allocates it records it as its own memory; the first that reuses it (the held-out
# configs' second, n = 7) points into kept memory, and from then on the baseline is called as it runs.
KEEPS_WORKSPACE = '''import torch
import triton
import triton.language as tl

_WORKSPACE = {}


@triton.jit
def _scale_kernel(x_ptr, ws_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ws_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _add_kernel(ws_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(ws_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def axpy(x, y, out, n, alpha):
    BLOCK = 1024
    ws = _WORKSPACE.get("ws")
    if ws is None or ws.numel() < n:
        ws = _WORKSPACE["ws"] = torch.empty(n, dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n, BLOCK),)
    _scale_kernel[grid](x, ws, n, alpha, BLOCK=BLOCK)
    _add_kernel[grid](ws, y, out, n, BLOCK=BLOCK)
'''


def cases(scratch: Path) -> list[tuple[str, Path, bool]]:
    """(name, task folder, whether its baseline must be replayed on every config: where not, on one at least, and
    a config's baseline is replayed exactly where it has no warning)."""
    kept = scratch / "triton2triton" / "axpy_workspace"
    shutil.copytree(FIX / "tasks" / "triton2triton" / "axpy", kept)
    (kept / "baseline.py").write_text(KEEPS_WORKSPACE)
    task_yaml = kept / "task.yaml"
    task_yaml.write_text(task_yaml.read_text().replace("id: triton2triton/axpy", "id: triton2triton/axpy_workspace"))
    return [("triton2triton/axpy", FIX / "tasks" / "triton2triton" / "axpy", True),
            ("hip2hip/scale", FIX / "tasks" / "hip2hip" / "scale", True),
            ("triton2triton/decay_update", FIX / "extensions" / "triton2triton" / "decay_update", True),
            ("axpy, a kept workspace", kept, False)]


def main() -> int:
    device = detect("cuda")
    bad = 0
    print(f"{'task':26s} {'config':10s} {'status':8s} {'baseline us':>12s} {'replayed':>8s} "
          f"{'candidate us':>12s} {'replayed':>8s}  ok  warning")
    with tempfile.TemporaryDirectory() as tmp:
        for name, folder, replays in cases(Path(tmp)):
            task = load_task(folder)
            task = dataclasses.replace(task, timeouts={"correctness_s": 30.0})
            (v,) = evaluate(task, Candidate(task, None, "fixture"), ["heldout"], device, timing=True)
            called = 0
            for cr in v.configs:
                if cr.baseline is None or cr.candidate is None:
                    bad += 1
                    print(f"{name:26s} {cr.name:10s} {cr.status.value:8s} not timed: {cr.message[:200]}")
                    continue
                warned = "baseline_not_replayed" in cr.flags or "baseline_not_replayed" in cr.message
                ok = (cr.status.value == "PASSED" and cr.candidate.replayed and cr.baseline.replayed != warned
                      and (cr.baseline.replayed or not replays))
                called += not cr.baseline.replayed
                bad += not ok
                print(f"{name:26s} {cr.name:10s} {cr.status.value:8s} {cr.baseline.median_us:12.1f} "
                      f"{str(cr.baseline.replayed):>8s} {cr.candidate.median_us:12.1f} {str(cr.candidate.replayed):>8s}"
                      f"  {'ok' if ok else 'NO'}  {cr.message[:160] if warned else ''}", flush=True)
            if not replays and not called:
                bad += 1
                print(f"{name:26s} NO: its baseline was replayed on every config")
            if not v.configs:
                bad += 1
                print(f"{name:26s} {v.status.value}: {v.message[:300]}")
    print(f"{'all as promised' if not bad else f'{bad} rows not as promised'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
