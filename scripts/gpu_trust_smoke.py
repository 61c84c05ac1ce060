"""A few evaluations through the two-process evaluation on a GPU, timed, one row each:
python3 scripts/gpu_trust_smoke.py [OUT.md]

For each category: the starting kernel as its own candidate (it must read 1.00), the shipped
solution, and the specialised kernel where there is one, on the first seen and first held-out
config; then the time and where it went. A quick check that the processes, the shared
buffers, the two profiler sessions and the decision work on this machine before a full run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.devices import detect  # noqa: E402
from arena.evaluation.parent import Candidate, evaluate  # noqa: E402
from arena.taskdef.loader import load_task  # noqa: E402

CASES = [
    ("triton2triton/rms_norm", ("baseline", "solution")),
    ("triton2triton/transpose_2d", ("baseline", "solution")),
    ("triton2triton/matmul_fp16", ("baseline", "solution")),
    ("triton2triton/kv_cache_append", ("baseline", "solution")),
    ("hip2hip/softmax", ("baseline", "solution")),
    ("torch2hip/add_rms_norm", ("baseline", "solution")),
]
TIMING = {"cap_s": 1.5, "min_pairs": 8, "max_pairs": 60}


def main() -> int:
    device = detect("cuda")
    lines = [f"# Two-process evaluations on {device.name}", "",
             "| task | candidate | split | status | speedup | incidental (cand / base) | wall s | message |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for task_id, roles in CASES:
        folder = ROOT / "tasks" / task_id
        if not folder.is_dir():
            continue
        task = load_task(folder)
        for role in roles:
            path = None if role == "baseline" else task.kernel_file(role)
            if role != "baseline" and path is None:
                continue
            splits = {s: task.configs(s)[:1] for s in ("seen", "heldout")}
            t0 = time.time()
            vs = evaluate(task, Candidate(task, path, origin=role), splits, device, timing=True,
                          timing_params=TIMING)
            for v in vs:
                c = v.configs[0]
                share = "" if c.incidental_share is None else \
                    f"{c.incidental_share:.1%} / {c.baseline_incidental_share or 0:.1%}"
                row = (f"| {task_id} | {role} | {v.split} | {v.status.value} | "
                       f"{'' if v.speedup is None else f'{v.speedup:.3f}'} | {share} | {time.time() - t0:.1f} | "
                       f"{v.message[:160]!r} |")
                lines.append(row)
                print(row, flush=True)
            print(f"<!-- phases {vs[0].phases} sandbox {vs[0].build.get('sandbox')} -->", flush=True)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
