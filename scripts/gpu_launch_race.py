"""Is a multi-launch candidate's span a race between its host launches and the flush?

The harness times a call as flush -> start event -> call -> synchronize -> end event ->
marker, and reads the span from the candidate's first device activity to its last. A call
that launches two short kernels with host work between them (the logsumexp_rows solution on
few rows: a partial kernel, two ``torch.empty``, a combine kernel) reads its kernels' own time
when the host has issued both before the device reaches them (they queue behind the flush),
and the host's gap between them when it has not. This times that call with the harness's
timer as it is (behind its gate: the device waits until the host has made the whole call),
and without the gate under three head starts: the flush as the harness makes it; a flush eight
times as long; and a synchronize after the flush (no head start: the device waits for every
launch). Last, a call that synchronizes inside, to show the gate opening by itself once and
that call timed without it from then on.

Run on a GPU machine from the repository root, a few times (each run is a fresh process):
    python scripts/gpu_launch_race.py [SAMPLES]
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    import torch

    sys.path.insert(0, str(ROOT))
    from arena.timing.stats import quantile
    from arena.timing.timer import DeviceTimer, preload

    spec = importlib.util.spec_from_file_location(
        "lse_solution", ROOT / "tasks" / "triton2triton" / "logsumexp_rows" / "solution.py")
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    preload()
    llc = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    rows_of = {"llama3-decode-b16": (16, 128256), "gemma-decode-b4": (4, 256000),
               "llama3-logprobs-512-tokens": (512, 128256)}
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; {samples} samples a row")
    print("| config | head start | span median (p10-p90) us | host time of the call, median us |")
    print("|---|---|---|---|")
    for name, (rows, vocab) in rows_of.items():
        x = torch.randn(rows, vocab, device="cuda", dtype=torch.float16)
        out = torch.empty(rows, device="cuda", dtype=torch.float32)

        def call():
            sol.logsumexp_rows(x, out, rows, vocab)

        for _ in range(10):
            call()
        torch.cuda.synchronize()
        for label, timer in (("the harness's timer (gated)", DeviceTimer(llc)),
                             ("no gate: the harness's flush", DeviceTimer(llc)),
                             ("no gate: a flush 8x as long", DeviceTimer(8 * llc)),
                             ("no gate: none (synchronize after the flush)", DeviceTimer(llc))):
            if label.startswith("no gate"):
                timer.ungated.add("c")
            if label.endswith("after the flush)"):
                flush = timer.flush

                def flushed(flush=flush):
                    flush()
                    torch.cuda.synchronize()

                timer.flush = flushed
            nothing = lambda: None  # noqa: E731
            out_, _ = timer.sample_round([("c", nothing, call, nothing) for _ in range(samples)])
            spans = [s for _, s, _, _ in out_]
            host = timer.step_parts["call"] / samples * 1e6
            timer.step_parts["call"] = 0.0
            print(f"| {name} | {label} | {statistics.median(spans):.1f} ({quantile(spans, 0.1):.1f}-"
                  f"{quantile(spans, 0.9):.1f}) | {host:.1f} |")

    def waits_inside():
        sol.logsumexp_rows(x, out, rows, vocab)
        out.sum().item()

    timer = DeviceTimer(llc)
    t0 = time.perf_counter()
    out_, warnings = timer.sample_round([("c", nothing, waits_inside, nothing) for _ in range(samples)])
    wall = time.perf_counter() - t0
    spans = [s for _, s, _, _ in out_]
    print(f"\na call that synchronizes inside ({name}): {len(warnings)} samples warned "
          f"{sorted({w.split(':')[0] for _, w in warnings})}, ungated {sorted(timer.ungated)}, "
          f"span median {statistics.median(spans):.1f} us, {samples} samples in {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
