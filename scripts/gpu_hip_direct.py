"""A HIP task's starting kernel called directly on a GPU, outside the harness: built as the harness builds it
(``build_hip``), its entry called in this process on the inputs ``make_inputs`` draws (seed 0) for each seen and
held-out config, no record, no replay, no second process, and its outputs compared with the reference's as the
harness compares them (``compare_output``). Where the harness fails a starting kernel that passes here, the
harness's way of calling it (its record and replay) is the suspect, not the kernel. Prints one row per config:
    python3 scripts/gpu_hip_direct.py TASK_DIR [TASK_DIR ...]"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from arena.check.compare import compare_output, poison_  # noqa: E402
from arena.check.inputs import DTYPES, make_inputs, run_reference  # noqa: E402
from arena.devices import detect  # noqa: E402
from arena.evaluation.protocol import CandidateSpec  # noqa: E402
from arena.evaluation.sides import Side, import_reference  # noqa: E402
from arena.taskdef.loader import load_task  # noqa: E402
from arena.toolchain.hip import build_hip  # noqa: E402


def rows(folder: Path) -> list[str]:
    task = load_task(folder)
    device = detect("cuda")
    target, arch = device.build_targets[0]
    built = build_hip(task.kernel_file("baseline"), target=target, arch=arch, headers=task.headers)
    if not built.ok:
        return [f"| {task.id} | - | build failed: {built.log.strip().splitlines()[-1][:200]} |"]
    side = Side(CandidateSpec(language="hip", path=str(task.kernel_file("baseline")), entry=task.entry,
                              n_inputs=len(task.inputs), n_outputs=len(task.outputs),
                              scalar_types=[s.type for s in task.scalars], library=str(built.library)))
    ref = import_reference(task.reference_path)
    out = []
    for config in [*task.configs("seen"), *task.configs("heldout")]:
        env = task.env(config)
        ins = make_inputs(task, env, 0, "cuda", ref)
        scalars = [task.scalar_value(sc, env) for sc in task.scalars]
        want = run_reference(ref.reference, task, ins, scalars)
        outs = [poison_(torch.empty(task.shape(spec, env), dtype=DTYPES[spec.dtype], device="cuda"))
                for spec in task.outputs]
        given = [None if t is None else t.clone() for t in ins.values()]
        try:
            side(given, outs, scalars)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - the row says it
            out.append(f"| {task.id} | {config.split}/{config.name} | {type(exc).__name__}: {str(exc)[:160]} |")
            continue
        got = [*outs, *(t for spec, t in zip(task.inputs, given) if spec in task.compared)]
        checks = [compare_output(spec.name, g, w.to(g.device), task.tolerance_of(spec), poisoned=i < len(outs))
                  for i, (spec, g, w) in enumerate(zip(task.compared, got, want))]
        bad = [c for c in checks if c.status.name != "PASSED"]
        said = "; ".join(f"{c.status.name} {c.message[:160]}" for c in bad) or "PASSED"
        out.append(f"| {task.id} | {config.split}/{config.name} | {said} |")
        del ins, outs, given, want
        torch.cuda.empty_cache()
    return out


def main(argv: list[str]) -> int:
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}\n")
    print("| task | config | called directly (seed 0) |\n|---|---|---|")
    for folder in argv:
        try:
            for row in rows(Path(folder)):
                print(row, flush=True)
        except Exception as exc:  # noqa: BLE001 - the next task still runs
            print(f"| {folder} | - | {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
