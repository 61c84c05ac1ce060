"""Every broken fixture candidate on the GPU, with the status it must get: the GPU half of
tests/test_statuses.py (HIP launch errors and illegal addresses only happen on a GPU).
Prints one row per candidate and exits 1 if any status differs."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.devices import detect  # noqa: E402
from arena.evaluation.parent import Candidate, evaluate  # noqa: E402
from arena.taskdef.loader import load_task  # noqa: E402

FIX = ROOT / "tests" / "fixtures"
EXPECTED = {
    ("triton2triton/axpy", None): {"PASSED"},
    ("triton2triton/axpy", "unwritten.py"): {"OUTPUT_UNWRITTEN"},
    ("triton2triton/axpy", "mutate.py"): {"INPUT_MUTATED"},
    ("triton2triton/axpy", "nan.py"): {"NAN_INF"},
    ("triton2triton/axpy", "wrong.py"): {"INCORRECT_NUMERICAL"},
    ("triton2triton/axpy", "reshape.py"): {"INCORRECT_SHAPE"},
    ("triton2triton/axpy", "raises.py"): {"RUNTIME_ERROR"},
    ("triton2triton/axpy", "raises_in_helper.py"): {"RUNTIME_ERROR"},
    ("triton2triton/axpy", "overrun.py"): {"RUNTIME_ERROR"},
    ("triton2triton/axpy", "segfault.py"): {"CRASHED"},
    ("triton2triton/axpy", "missing_entry.py"): {"SIGNATURE_MISMATCH"},
    ("triton2triton/axpy", "wrong_arity.py"): {"SIGNATURE_MISMATCH"},
    ("triton2triton/axpy", "syntax_error.py"): {"COMPILE_ERROR"},
    ("triton2triton/axpy", "triton_compile_error.py"): {"COMPILE_ERROR"},
    ("triton2triton/axpy", "import_error.py"): {"LOAD_ERROR"},
    ("triton2triton/axpy", "hang.py"): {"TIMEOUT"},
    ("hip2hip/scale", None): {"PASSED"},
    ("hip2hip/scale", "compile_error.hip"): {"COMPILE_ERROR"},
    ("hip2hip/scale", "no_stream.hip"): {"SIGNATURE_MISMATCH"},
    ("hip2hip/scale", "wrong_name.hip"): {"SIGNATURE_MISMATCH"},
    ("hip2hip/scale", "bad_launch.hip"): {"RUNTIME_ERROR"},
    ("hip2hip/scale", "out_of_bounds.hip"): {"RUNTIME_ERROR", "CRASHED"},
    ("hip2hip/scale", "overrun.hip"): {"RUNTIME_ERROR"},
    # a wrapped kernel (@triton.autotune over @triton.heuristics): its own, found through the wrappers
    ("triton2triton/axpy", "../triton_wrappers/axpy_autotuned.py"): {"PASSED"},
    # the signature's extensions through the shared device buffers: an in/out state, a transposed and a
    # broadcast input, an optional input present and absent, a bool scalar (tests/fixtures/extensions)
    ("triton2triton/decay_update", None): {"PASSED"},
}


def main() -> int:
    device = detect("cuda")
    bad = 0
    # python3 scripts/gpu_fixtures.py [ONLY]: a comma list of task ids and candidate names ("(baseline)") to run
    only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
    rows = {k: v for k, v in EXPECTED.items() if only is None or only & {k[0], k[1] or "(baseline)"}}
    print(f"{'task':22s} {'candidate':26s} {'expected':34s} {'got':22s} ok  wall_s")
    for (task_id, name), expected in rows.items():
        root = FIX / "extensions" if (FIX / "extensions" / task_id).is_dir() else FIX / "tasks"
        task = load_task(root / task_id)
        task = dataclasses.replace(task, timeouts={"correctness_s": 15.0})
        folder = "candidates_hip" if task.category == "hip2hip" else "candidates"
        path = None if name is None else FIX / folder / name
        (v,) = evaluate(task, Candidate(task, path, "fixture"), ["heldout"], device,
                        timing=name is None or "autotuned" in name)
        ok = v.status.value in expected
        bad += not ok
        print(f"{task_id:22s} {name or '(baseline)':26s} {'|'.join(sorted(expected)):34s} {v.status.value:22s} "
              f"{'ok' if ok else 'NO'}  {v.wall_s:.1f}", flush=True)
        if not ok:
            print("   ", v.message[:500].replace("\n", "\n    "))
        elif name in ("overrun.py", "overrun.hip"):
            print("   ", v.message[:200])
    print(f"{len(rows) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
