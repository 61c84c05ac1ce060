"""Does the timer's profiler session slow the calls it times? For the first seen config of a
few tasks' references (eager PyTorch, many launches), on one GPU, nothing else running:

    python3 scripts/gpu_timer_overhead.py [TASK ...]

Each call is preceded by the L2 flush. Per task, medians (IQR) in microseconds over N calls of:
  events        ev0, call, ev1 (no profiler): the device time the call's launches allow;
  host          the host seconds of the call itself (no synchronize), no profiler;
  prof events   the same events while a profiler session records (DeviceTimer.sample_rounds);
  prof host     the host time of the call under the profiler;
  span          the harness's figure: first kernel start to last kernel end of the window;
  kernels       the sum of the kernels' own durations in the window (the GPU's work alone).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from arena.check.inputs import make_inputs  # noqa: E402
from arena.evaluation.sides import import_file  # noqa: E402
from arena.taskdef.loader import load_task, select_tasks  # noqa: E402
from arena.timing.timer import FLUSH_KERNEL, MARKER_KERNEL, DeviceTimer, _device_activities  # noqa: E402

N = 200


def _fmt(xs):
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return f"{statistics.median(xs):8.1f} ({q(0.75) - q(0.25):6.1f})"


def main(selectors):
    from torch.profiler import ProfilerActivity, profile

    props = torch.cuda.get_device_properties(0)
    timer = DeviceTimer(getattr(props, "L2_cache_size", 50 * 2**20))
    print(f"{props.name}, torch {torch.__version__}; {N} calls each; median (IQR) us")
    print(f"{'task':45s} {'events':>17s} {'host':>17s} {'prof events':>17s} {'prof host':>17s} "
          f"{'span':>17s} {'kernels':>17s}")
    for folder in select_tasks(selectors):
        task = load_task(folder)
        ref = import_file(task.reference_path, f"ref_{folder.name}")
        cfg = task.configs("seen")[0]
        env = task.env(cfg)
        scalars = [task.scalar_value(s, env) for s in task.scalars]
        sets = [list(make_inputs(task, env, 1000 + i, "cuda", ref).values()) for i in range(8)]

        def call(i):
            ref.reference(*sets[i % len(sets)], *scalars)

        for i in range(20):
            call(i)
        torch.cuda.synchronize()
        ev, host = [], []
        for i in range(N):
            timer.flush()
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            t0 = time.perf_counter()
            call(i)
            host.append((time.perf_counter() - t0) * 1e6)
            e1.record()
            torch.cuda.synchronize()
            ev.append(e0.elapsed_time(e1) * 1000)
        # the harness's own timer: one profiler session over N steps
        phost = []

        def timed(i):
            t0 = time.perf_counter()
            call(i)
            phost.append((time.perf_counter() - t0) * 1e6)

        steps = [("s", (lambda: None), (lambda i=i: timed(i)), (lambda: None)) for i in range(N)]
        samples, _ = timer.sample_round(steps)
        span = [s[1] for s in samples]
        pev = [s[2] for s in samples]
        # the kernels' own durations per window
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(N):
                timer.flush()
                call(i)
                torch.cuda.synchronize()
                timer.marker()
            torch.cuda.synchronize()
        acts = _device_activities(prof)
        flushes = [a for a in acts if FLUSH_KERNEL in a[2]]
        markers = [a for a in acts if MARKER_KERNEL in a[2]]
        busy = []
        for (f0, f1, _), (m0, _, _) in zip(flushes, markers):
            busy.append(sum(min(a[1], m0) - max(a[0], f1) for a in acts
                            if f1 <= a[0] < m0 and FLUSH_KERNEL not in a[2] and MARKER_KERNEL not in a[2]) / 1000)
        print(f"{folder.parent.name + '/' + folder.name:45s} {_fmt(ev)} {_fmt(host)} {_fmt(pev)} "
              f"{_fmt(phost)} {_fmt(span)} {_fmt(busy)}", flush=True)
        sets = []
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:] or ["torch2hip/llama_mlp_decode_block,torch2hip/gru_cell,torch2hip/moe_gate_topk_block,"
                          "torch2hip/attn_scores_mask_softmax,torch2hip/add_rms_norm,hip2hip/bias_layerscale_residual"])
