"""Does a GPU's recent load move a long kernel's time? (GPU only, NVIDIA: reads nvidia-smi)

One process, nothing else on the GPU. A task's starting kernel and solution on one config
are timed in pairs (an L2 flush before every call, events around the call) on a cool GPU,
over a long stretch of pairs, right after a minute of fp16 matmuls that hold the card at its
power limit, and after a rest; nvidia-smi samples the SM clock, power, temperatures and
throttle reasons every 250 ms meanwhile. The table gives each stretch's medians beside what
the card reported during it.

    python scripts/gpu_sustained.py TASK_DIR CONFIG > table.md
"""

from __future__ import annotations

import csv
import importlib.util
import io
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from arena.check.inputs import DTYPES, make_inputs
from arena.taskdef.loader import load_configs, load_task

SMI_FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,temperature.memory,clocks_throttle_reasons.active"


def main() -> None:
    task_dir, config_name = Path(sys.argv[1]), sys.argv[2]
    task = load_task(task_dir / "task.yaml")
    config = next(c for split in ("seen", "heldout")
                  for c in load_configs(task_dir / "configs" / f"{split}.yaml", split, task) if c.name == config_name)
    env = task.env(config)
    scalars = [task.scalar_value(s, env) for s in task.scalars]

    def entry(path: Path):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, task.entry)

    sides = {role: entry(task.kernel_file(role)) for role in ("baseline", "solution")}
    ins = list(make_inputs(task, env, 1, "cuda").values())
    outs = {role: [torch.empty(task.shape(o, env), dtype=DTYPES[o.dtype], device="cuda") for o in task.outputs]
            for role in sides}
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    for role, fn in sides.items():
        for _ in range(3):
            fn(*ins, *outs[role], *scalars)
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader", "-lms", "250"],
                           stdout=subprocess.PIPE, text=True)
    stretches: list[tuple[str, float, float, dict[str, list[float]]]] = []

    def pairs(label: str, secs: float) -> None:
        xs: dict[str, list[float]] = {role: [] for role in sides}
        t0 = time.time()
        while time.time() < t0 + secs:
            for role, fn in sides.items():
                flush.fill_(1)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(*ins, *outs[role], *scalars)
                e.record()
                e.synchronize()
                xs[role].append(s.elapsed_time(e) * 1000)
        stretches.append((label, t0, time.time(), xs))

    def heat(label: str, secs: float) -> None:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
        t0 = time.time()
        while time.time() < t0 + secs:
            for _ in range(20):
                torch.mm(a, a)
            torch.cuda.synchronize()
        stretches.append((label, t0, time.time(), {}))

    pairs("cool", 6)
    time.sleep(5)
    pairs("cool, again", 6)
    pairs("30 s of pairs", 30)
    heat("fp16 matmuls, 60 s", 60)
    pairs("right after the matmuls", 8)
    heat("fp16 matmuls, 30 s", 30)
    pairs("right after the matmuls, again", 8)
    time.sleep(20)
    pairs("after 20 s idle", 6)
    smi.terminate()
    samples = []
    for row in csv.reader(io.StringIO(smi.communicate()[0])):
        try:
            at = datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
            samples.append((at, [float("".join(ch for ch in v if ch.isdigit() or ch == ".") or 0) for v in row[1:5]],
                            row[5].strip()))
        except (ValueError, IndexError):
            continue
    print(f"# {task.id} {config_name}: baseline and solution in pairs ({torch.cuda.get_device_name()}, "
          f"torch {torch.__version__})\n")
    print("| stretch | baseline median (us) | baseline max | solution median (us) | SM clock (MHz) | power (W) | "
          "GPU / HBM temperature (C) | throttle reasons |")
    print("|---|---|---|---|---|---|---|---|")
    for label, t0, t1, xs in stretches:
        inside = [s for s in samples if t0 <= s[0] <= t1]

        def span(i: int) -> str:
            vals = [s[1][i] for s in inside]
            return f"{min(vals):.0f}-{max(vals):.0f}" if vals else "-"

        reasons = ", ".join(sorted({s[2] for s in inside})) or "-"
        base = xs.get("baseline")
        sol = xs.get("solution")
        print(f"| {label} | {statistics.median(base):,.1f} | {max(base):,.1f} | {statistics.median(sol):,.1f} | "
              if base else f"| {label} | - | - | - | ", end="")
        print(f"{span(0)} | {span(1)} | {span(2)} / {span(3)} | {reasons} |")


if __name__ == "__main__":
    main()
