"""Whether a Triton task's starting kernel passes its configs as a GPU's dots compute at Triton's default precision,
and with fp32 dots (``TRITON_F32_DEFAULT=ieee``): each task folder given is evaluated twice, in a process of its own
each (the variable is read when Triton loads), through the harness without timing, on its smoke config, its first
seen and its first held-out configs. One row per task and config, a column per precision:
    python3 scripts/gpu_dot_precision.py TASK_FOLDER [TASK_FOLDER ...] [--device cuda]
On an NVIDIA GPU the default for fp32 operands is TF32 (a 10-bit mantissa); on AMD it is fp32 ("ieee")."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def evaluate(folder: str, device: str) -> list[dict]:
    from arena.devices import detect
    from arena.evaluation.parent import Candidate
    from arena.evaluation.parent import evaluate as run
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    splits = {s: task.configs(s)[:1] for s in ("smoke", "seen", "heldout")}
    rows = []
    for v in run(task, Candidate(task, None, "baseline"), splits, detect(device), timing=False):
        rows.append({"task": task.id, "split": v.split, "status": v.status.value,
                     "message": (v.message or "").splitlines()[0][:200] if v.message else ""})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)   # the child: one folder, rows as JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(evaluate(args.folders[0], args.device)))
        return 0
    print("| task | split | default | ieee |\n|---|---|---|---|")
    for folder in args.folders:
        got: dict[str, dict[str, str]] = {}
        for precision in ("default", "ieee"):
            env = dict(os.environ)
            env.pop("TRITON_F32_DEFAULT", None)
            if precision == "ieee":
                env["TRITON_F32_DEFAULT"] = "ieee"
            p = subprocess.run([sys.executable, __file__, folder, "--device", args.device, "--one"], env=env,
                               capture_output=True, text=True)
            lines = p.stdout.strip().splitlines()
            if p.returncode or not lines:
                got.setdefault("(all)", {})[precision] = f"exit {p.returncode}: {p.stderr.strip()[-200:]}"
                continue
            for row in json.loads(lines[-1]):
                got.setdefault(row["split"], {})[precision] = f"{row['status']} {row['message']}".strip()
        for split, by in got.items():
            print(f"| {Path(folder).name} | {split} | {by.get('default', '')} | {by.get('ieee', '')} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
