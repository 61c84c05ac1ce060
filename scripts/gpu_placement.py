"""Does where a call's buffers lie in device memory move a kernel's time? (GPU only)

One process, nothing else on the GPU. For one task, config and Triton or Python kernel file,
the script makes the config's buffers again and again, each time behind a spacer allocation
of a random size (so each set lies somewhere else), and times the kernel on each set (an L2
flush before every call, events around the call, the median of ``CALLS`` calls). Then it
times every set again, in another order: if a set's time comes back where it was and the
sets differ among themselves, where the buffers lie decides the kernel's time.

    python scripts/gpu_placement.py TASK_DIR KERNEL CONFIG [SETS] [MODE]

MODE: ``all`` (inputs and outputs made anew for each set), ``outputs`` (the inputs kept,
the outputs anew) or ``inputs`` (the other way round).
"""

from __future__ import annotations

import importlib.util
import random
import statistics
import sys
from pathlib import Path

import torch

from arena.check.inputs import DTYPES, make_inputs
from arena.taskdef.loader import load_configs, load_task

CALLS = 9


def main() -> None:
    task_dir, kernel_path, config_name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    n_sets = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    mode = sys.argv[5] if len(sys.argv) > 5 else "all"
    task = load_task(task_dir / "task.yaml")
    configs = [c for split in ("seen", "heldout") for c in load_configs(task_dir / "configs" / f"{split}.yaml", split,
                                                                          task)]
    config = next(c for c in configs if c.name == config_name)
    env = task.env(config)
    scalars = [task.scalar_value(s, env) for s in task.scalars]
    spec = importlib.util.spec_from_file_location("placement_kernel", kernel_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, task.entry)
    dev = "cuda"
    rng = random.Random(7)
    flush = torch.empty(int(torch.cuda.get_device_properties(0).L2_cache_size) * 2, dtype=torch.uint8, device=dev)

    def outputs() -> list[torch.Tensor]:
        return [torch.empty(task.shape(o, env), dtype=DTYPES[o.dtype], device=dev) for o in task.outputs]

    keep: list = []
    sets: list[tuple[list, list]] = []
    first_ins, first_outs = list(make_inputs(task, env, 1, dev).values()), outputs()
    for i in range(n_sets):
        keep.append(torch.empty(rng.randrange(1, 256) * 2**20 + rng.randrange(0, 2**20, 256), dtype=torch.uint8,
                                device=dev))
        ins = list(make_inputs(task, env, 1, dev).values()) if mode in ("all", "inputs") else first_ins
        outs = outputs() if mode in ("all", "outputs") else first_outs
        sets.append((ins, outs))

    def time_set(ins: list, outs: list) -> float:
        times = []
        for _ in range(CALLS):
            flush.fill_(1)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn(*ins, *outs, *scalars)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1000)
        return statistics.median(times)

    for ins, outs in sets[:2]:
        time_set(ins, outs)      # compile, warm up
    first = [time_set(*st) for st in sets]
    order = list(range(n_sets))
    rng.shuffle(order)
    second = [0.0] * n_sets
    for i in order:
        second[i] = time_set(*sets[i])
    print(f"# {task.id} {config_name}, {kernel_path.name}, {n_sets} sets ({mode} made anew), "
          f"{torch.cuda.get_device_name()}\n")
    print("| set | where (MiB) | first pass (us) | second pass (us) | second / first |")
    print("|---|---|---|---|---|")
    for i, (ins, outs) in enumerate(sets):
        where = sets[i][0][0].data_ptr() // 2**20 if ins and ins[0] is not None else 0
        print(f"| {i} | {where:,} | {first[i]:,.1f} | {second[i]:,.1f} | {second[i] / first[i]:.3f} |")
    lo, hi = min(first), max(first)
    same = statistics.median(abs(b / a - 1) for a, b in zip(first, second))
    print(f"\nsets: fastest {lo:,.1f} us, slowest {hi:,.1f} us ({hi / lo - 1:.1%} apart); the same set timed twice: "
          f"median change {same:.2%}")


if __name__ == "__main__":
    main()
