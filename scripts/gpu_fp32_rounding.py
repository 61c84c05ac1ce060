"""How far an fp32 task's own reference, run in fp32 on this machine's GPU (the torch2hip starting point), lands
from the fp64 reference, against the task's tolerance, under the backends' settings that decide how fp32 is computed:
    python3 scripts/gpu_fp32_rounding.py TASK_DIR [TASK_DIR ...] [--splits seen,heldout] [--seed 0]
Per task and config, per setting: the elements past the tolerance, the worst |error| over (atol + rtol |ref|), and
the norm error over the task's norm bound. The settings: `default` (the harness's: fp32 computed in fp32, no TF32),
`no-cudnn` (PyTorch's own convolutions), `sdpa-math` (attention through the math backend), and `cpu` (the same
reference in fp32 on the CPU, the rounding an importer measures). A diagnostic, not a check: it prints a table."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.check.compare import check_tensors  # noqa: E402
from arena.check.degeneracy import load_reference  # noqa: E402
from arena.check.inputs import fp32_as_fp32, make_inputs, run_reference  # noqa: E402
from arena.taskdef.loader import load_task  # noqa: E402


@contextlib.contextmanager
def setting(name: str):
    cudnn = torch.backends.cudnn.enabled
    try:
        if name == "no-cudnn":
            torch.backends.cudnn.enabled = False
        if name == "sdpa-math":
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.MATH):
                yield
            return
        yield
    finally:
        torch.backends.cudnn.enabled = cudnn


def fp32_outputs(fn, task, ins, scalars) -> list[torch.Tensor]:
    clones = [None if t is None else t.clone() for t in ins.values()]
    out = fn(*clones, *scalars)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--splits", default="seen,heldout")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda", help="where the default settings run (cpu: to try the script)")
    a = ap.parse_args()
    fp32_as_fp32()
    settings = ["default", "no-cudnn", "sdpa-math", "cpu"]
    name = torch.cuda.get_device_name() if a.device == "cuda" else a.device
    print(f"device: {name}, torch {torch.__version__}")
    print("| task | config | tolerance | " + " | ".join(settings) + " |")
    print("|---|---|---|" + "---|" * len(settings))
    for path in a.tasks:
        task = load_task(path)
        ref = load_reference(task)
        for split in a.splits.split(","):
            for config in task.configs(split):
                env = task.env(config)
                scalars = [task.scalar_value(s, env) for s in task.scalars]
                try:
                    ins = make_inputs(task, env, a.seed, a.device, ref)
                    with torch.no_grad():
                        want = run_reference(ref.reference, task, ins, scalars)
                except torch.OutOfMemoryError:
                    print(f"| {task.id} | {config.name} | - | out of memory |")
                    continue
                cells = []
                tol_txt = ""
                for s in settings:
                    try:
                        with torch.no_grad(), setting(s):
                            if s == "cpu":
                                got = fp32_outputs(ref.reference, task,
                                                   {k: None if v is None else v.cpu() for k, v in ins.items()}, scalars)
                            else:
                                got = fp32_outputs(ref.reference, task, ins, scalars)
                    except Exception as exc:  # noqa: BLE001 - a setting the reference cannot run under
                        cells.append(f"{type(exc).__name__}")
                        continue
                    parts = []
                    for spec, g, w in zip(task.outputs, got, want):
                        tol = task.tolerance_of(spec)
                        if tol is None:
                            continue
                        tol_txt = f"atol {tol['atol']:.1e}, rtol {tol['rtol']:.1e}, norm {tol['norm']:.1e}"
                        p = check_tensors(g.to(w.device), w, tol, poisoned=False)
                        ratio = float((p["diff"] / (tol["atol"] + tol["rtol"] * p["r"].abs())).max())
                        norm = float(p["diff_norm"] / (tol["norm"] * p["ref_norm"].clamp(min=1e-30)))
                        parts.append(f"{int(p['mismatch'])} of {w.numel():,} past, worst {ratio:.2g}x, "
                                     f"norm {norm:.2g}x")
                    cells.append("; ".join(parts))
                print(f"| {task.id} | {config.name} | {tol_txt} | " + " | ".join(cells) + " |", flush=True)
                del ins, want
                if a.device == "cuda":
                    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
