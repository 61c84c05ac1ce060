"""One environment episode on a GPU, for the record: the starting kernel, a wrong kernel and
the task's solution submitted through KernelEnv.run_kernel, then finish() on the best.

    python3 scripts/gpu_env_episode.py TASK RUN_DIR OUT.json

Prints and writes each call's status, median speedup, reward and wall time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.env import KernelEnv  # noqa: E402


def main() -> int:
    task_id, run_dir, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    env = KernelEnv(task_id, device="cuda", run_dir=run_dir, select="best")
    prompt = env.reset()
    start = prompt["starting_kernel"]
    solution = env.task.kernel_file("solution")
    # a wrong kernel: the starting one with its normalisation scaled (right shapes, wrong numbers)
    wrong = start.replace("* rstd", "* rstd * 1.5") if "* rstd" in start else start + "\nraise RuntimeError('x')\n"
    calls = []
    for label, code in (("starting kernel", start), ("wrong kernel", wrong),
                        ("solution", solution.read_text() if solution else start)):
        t0 = time.monotonic()
        r = env.run_kernel(code)
        calls.append({"submission": label, "status": r["status"], "speedup_median": r["speedup_median"],
                      "reward": r["reward"], "seconds": round(time.monotonic() - t0, 1)})
        print(json.dumps(calls[-1]), flush=True)
    t0 = time.monotonic()
    final = env.finish()
    summary = {"task": task_id, "calls": calls, "finish": {
        "submission": final["submission"], "reward": final["reward"],
        "splits": {s: {"status": d["status"], "speedup_geomean": d["speedup_geomean"]}
                   for s, d in final["splits"].items()}, "seconds": round(time.monotonic() - t0, 1)}}
    print(json.dumps(summary["finish"]))
    out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
