"""From the trusted process's frames to Verdicts: statuses, speedups, flags, phase times.

``assemble`` reads the typed frames (``arena.evaluation.protocol``) of one evaluation and how the
trusted process ended, and gives one Verdict per split. What the frames do not say (a
process killed at a deadline, one that died) becomes the status of whatever was not
finished. A tampered channel (a frame out of protocol) makes every split an
INTEGRITY_VIOLATION.
"""

from __future__ import annotations

import re
import signal
from typing import Any, Mapping, Sequence

from arena.devices import Device
from arena.devices.ceilings import ceilings_for, roofline_seconds, sol_absent, sol_score, upper_bounds
from arena.evaluation.protocol import (
    WAITING_STAGE,
    CorrectnessFrame,
    DoneFrame,
    FailureFrame,
    LoadedFrame,
    LockFrame,
    PerformanceFrame,
    PerformanceResult,
    SandboxFrame,
    SplitDoneFrame,
    StageFrame,
)
from arena.records import NOT_RUN, ConfigResult, SideTiming, Status, Verdict
from arena.taskdef.loader import Config, Task
from arena.timing import stats

# Informative flags (recorded, not disqualifying): events + synchronize should never read
# much less than the device span; the device span should not be far below the events on
# long calls, nor far below the call's host-side duration (host work). Measured on a shared
# H200: Triton solutions with several launches reach both under host load, and CPU work a
# candidate does between the copies it needs is inside the device span anyway.
EVENTS_DISAGREE_RATIO = 0.5
HOST_WORK_FLOOR_US = 200.0
HOST_WORK_RATIO = 2.0


def side_timing(perf: PerformanceResult, side: str) -> SideTiming:
    spans, events = perf.spans_us[side], perf.events_us.get(side, [])
    timer = perf.timers.get(side, "span")
    other = perf.other_timer_median_us.get(side)
    return SideTiming(median_us=round(stats.median(spans), 3), iqr_us=round(stats.iqr(spans), 3), n=len(spans),
                      events_median_us=round(stats.median(events), 3) if events else None,
                      min_us=round(min(spans), 3), timer=timer if timer in ("span", "events") else "span",
                      other_timer_median_us=float(other) if isinstance(other, (int, float)) else None,
                      replayed=side in perf.replayed)


def roofline_dtype(task: Task) -> str:
    dt = task.inputs[0].dtype
    return "float8" if dt.startswith("float8") else dt


def apply_timing(task: Task, cr: ConfigResult, config: Config, perf: PerformanceResult, device: Device) -> None:
    spans = perf.spans_us
    b, c = spans["baseline"], spans["candidate"]
    cr.baseline = side_timing(perf, "baseline")
    cr.candidate = side_timing(perf, "candidate")
    cr.incidental_share, cr.baseline_incidental_share = perf.incidental_share, perf.baseline_incidental_share
    if cr.candidate.median_us <= 0:
        cr.flags.append("no_device_work")
        return
    cr.speedup = round(cr.baseline.median_us / cr.candidate.median_us, 4)
    # samples taken apart (one side without the profiler, after the probe) are not pairs
    paired = cr.baseline.timer == cr.candidate.timer and len(b) == len(c)
    lo, hi = stats.bootstrap_ratio_ci(b, c, paired=paired)
    cr.speedup_ci = (round(lo, 4), round(hi, 4))
    for side in (cr.baseline, cr.candidate):
        ev = side.events_median_us
        if ev is not None and ev < EVENTS_DISAGREE_RATIO * side.median_us:
            cr.flags.append("events_below_device_span")
    if cr.candidate.events_median_us and cr.candidate.events_median_us > 200 and \
            cr.candidate.median_us < EVENTS_DISAGREE_RATIO * cr.candidate.events_median_us:
        cr.flags.append("device_span_below_events")
    host = perf.host_us.get("candidate")
    if host:
        host_med = stats.median(host)
        if host_med > HOST_WORK_FLOOR_US and host_med > HOST_WORK_RATIO * cr.candidate.median_us:
            cr.flags.append("host_work_in_call")
    if spans.get("compiled"):
        cr.compiled = side_timing(perf, "compiled")
        cr.speedup_compiled = round(cr.compiled.median_us / cr.candidate.median_us, 4)
    for w in perf.warnings:
        flag = w.split(":")[0].replace(" ", "_")
        if flag not in cr.flags:     # one flag for a warning several sides gave (ungated: each side's its own)
            cr.flags.append(flag)
    if perf.warnings and not cr.message:     # a passed config's message: what its flags stand for
        cr.message = "; ".join(str(w)[:300] for w in perf.warnings)[:1000]
    flops, nbytes = task.roofline_for(config)
    dtype = task.roofline.get("dtype") or roofline_dtype(task)
    t_roof = roofline_seconds(dtype, flops, nbytes, ceilings_for(device)[0])
    t_bound = roofline_seconds(dtype, flops, nbytes, upper_bounds(device))
    if t_bound is not None and t_bound > cr.candidate.median_us * 1e-6:
        cr.flags.append("above_roofline")       # faster than the device can be: the time is not trusted
    if t_roof is not None:
        cr.roofline_fraction = round(t_roof / (cr.candidate.median_us * 1e-6), 4)
    sol = sol_score(cr.baseline.median_us * 1e-6, cr.candidate.median_us * 1e-6, t_roof)
    cr.sol = round(sol, 4) if sol is not None else None
    cr.sol_absent = sol_absent(cr.baseline.median_us * 1e-6, t_roof)


def protocol_violation(split_configs: Mapping[str, list[Config]], frames: Sequence[Any]) -> str | None:
    """Frames that the trusted process's protocol never produces: a result for a config not in
    the job, a result given twice, a performance result before its correctness result."""
    seen: set[tuple[str, str, str]] = set()
    for f in frames:
        if not isinstance(f, (CorrectnessFrame, PerformanceFrame)):
            continue
        phase = "correctness" if isinstance(f, CorrectnessFrame) else "performance"
        key = (f.split, f.config, phase)
        if f.config not in {c.name for c in split_configs.get(f.split, [])}:
            return f"the result channel reported a config that was not asked for: {key}"
        if key in seen:
            return f"the result channel reported {key} twice"
        if phase == "performance" and (f.split, f.config, "correctness") not in seen:
            return f"the result channel reported timing for {key[:2]} before its correctness"
        seen.add(key)
    return None


def sandbox_record(f: SandboxFrame) -> dict[str, Any]:
    """The record's account of the candidate process's confinement: ``sandbox``, the defences
    applied (comma-separated, in ``DEFENCES`` order), and ``sandbox_missing``, each defence it
    went without and why."""
    from arena.evaluation.sandbox.confine import DEFENCES

    defences = dict(f.defences) or {"landlock": "" if f.applied else f.reason}
    order = [d for d in DEFENCES if d in defences] + sorted(set(defences) - set(DEFENCES))
    applied = [d for d in order if not defences[d]]
    missing = {d: defences[d] for d in order if defences[d]}
    return {"sandbox": ", ".join(applied) or "none", **({"sandbox_missing": missing} if missing else {})}


def starved_before_load(frames: Sequence[Any]) -> bool:
    """Did the evaluation's processes run out of device memory before the candidate was loaded (a
    device context, the setup's buffers)? Nothing of the candidate had run: the harness's failure
    (HARNESS_ERROR), which ``arena.evaluation.parent.evaluate`` answers by starting again."""
    from arena.evaluation.trusted.correctness import out_of_memory

    if any(isinstance(f, LoadedFrame) for f in frames):
        return False
    failure = next((f for f in frames if isinstance(f, FailureFrame)), None)
    return failure is not None and failure.status is Status.HARNESS_ERROR and out_of_memory(failure.message)


def assemble(task: Task, split_configs: Mapping[str, list[Config]], frames: Sequence[Any],
             exit_info: Mapping[str, Any], base: dict[str, Any], build_info: dict[str, Any],
             device: Device) -> list[Verdict]:
    results: dict[str, dict[str, ConfigResult]] = {s: {} for s in split_configs}
    perf_done: dict[str, set[str]] = {s: set() for s in split_configs}
    finished_splits: set[str] = set()
    failure = next((f for f in frames if isinstance(f, FailureFrame)), None)
    done = any(isinstance(f, DoneFrame) for f in frames)
    last_stage: StageFrame | None = None
    violation = exit_info.get("forged") or protocol_violation(split_configs, frames)
    for f in frames:
        if isinstance(f, StageFrame):
            last_stage = f
        elif isinstance(f, SandboxFrame):
            build_info.update(sandbox_record(f))
        elif isinstance(f, CorrectnessFrame) and violation is None:
            cfg = next(c for c in split_configs[f.split] if c.name == f.config)
            r = f.result
            results[f.split][f.config] = ConfigResult(
                name=f.config, params=dict(cfg.params), status=r.status, message=r.message, seeds=list(r.seeds),
                max_abs_err=r.max_abs_err, max_rel_err=r.max_rel_err, norm_err=r.norm_err, where=r.where,
                mismatch_fraction=r.mismatch_fraction, traceback=list(r.traceback))
        elif isinstance(f, PerformanceFrame) and violation is None:
            cfg = next(c for c in split_configs[f.split] if c.name == f.config)
            cr = results[f.split][f.config]
            perf_done[f.split].add(f.config)
            pr = f.result
            if pr.status is not Status.PASSED:
                cr.status = pr.status
                cr.message = pr.message
                cr.traceback = list(pr.traceback)
                cr.flags.append("failed_while_timed")
            if pr.spans_us.get("baseline") and pr.spans_us.get("candidate"):
                apply_timing(task, cr, cfg, pr, device)
        elif isinstance(f, SplitDoneFrame):
            finished_splits.add(f.split)
    if not base.get("seeds"):
        first = next((cr for rs in results.values() for cr in rs.values() if cr.seeds), None)
        base = {**base, "seeds": list(first.seeds) if first else []}
    # candidate code tampered with the harness: nothing of this evaluation is trusted, on any split
    integrity = violation or next((f.message if isinstance(f, FailureFrame) else f.result.message
                                   for f in frames
                                   if (isinstance(f, FailureFrame) and f.status is Status.INTEGRITY_VIOLATION) or
                                   (isinstance(f, (CorrectnessFrame, PerformanceFrame)) and
                                    f.result.status is Status.INTEGRITY_VIOLATION)), None)
    if integrity is not None:
        return [Verdict(split=s, status=Status.INTEGRITY_VIOLATION, stage="integrity", message=integrity,
                        configs=[ConfigResult(c.name, dict(c.params), Status.INTEGRITY_VIOLATION) for c in cfgs],
                        build=build_info, **base)
                for s, cfgs in split_configs.items()]

    # how the trusted process ended, for whatever it did not finish
    end_status: Status | None = None
    end_msg, end_tb = "", []
    if exit_info["timed_out"] == WAITING_STAGE:     # other evaluations held the GPU: not the candidate's
        end_status = Status.HARNESS_ERROR
        end_msg = "waited longer than its limit for other evaluations (room in the GPU's memory or the GPU's " \
                  "lock); the evaluation was killed"
    elif exit_info["timed_out"]:
        end_status = Status.TIMEOUT
        end_msg = f"no progress for the {exit_info['timed_out']} time limit; the evaluation was killed"
    elif failure is not None:
        end_status, end_msg, end_tb = failure.status, failure.message, list(failure.traceback)
    elif not done:
        rc = exit_info["returncode"]
        sig = f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit code {rc}"
        if any(isinstance(f, LoadedFrame) for f in frames):
            # the candidate's code had run, and the harness sent no signal: no route to "not scored" (Status.scored)
            end_status = Status.CRASHED
            end_msg = f"the evaluation's trusted process died ({sig}) after the candidate's code had run; the " \
                      f"harness did not end it, so the failure is the candidate's"
        else:
            end_status = Status.HARNESS_ERROR
            end_msg = f"the trusted process died ({sig}) without a result"
    if end_status in (Status.TIMEOUT, Status.HARNESS_ERROR) and exit_info.get("log_tail"):
        where, rest = where_it_was(exit_info["log_tail"])
        if where:
            end_msg += f"; where its main thread was (innermost first): {where}"
        if rest.strip():
            end_msg += "\n--- trusted process output (tail) ---\n" + rest[-1500:]

    ceilings, source = ceilings_for(device)
    ceiling_info = {"source": source, **(ceilings or {})} if device.runs_kernels else {}
    verdicts = []
    for split, cfgs in split_configs.items():
        crs: list[ConfigResult] = []
        for c in cfgs:
            got = results[split].get(c.name)
            interrupted = split not in finished_splits and end_status is not None
            if got is None:
                # the config the evaluation stopped at has its end; so, for the record, has the first config of a
                # split it never reached, said as never run (``NOT_RUN``) where the end came at another config
                at = f"{last_stage.split}/{last_stage.config}" if last_stage is not None and last_stage.config else ""
                exact = at == f"{split}/{c.name}"
                here = exact or not crs
                message = end_msg if exact or (here and not at) else (
                    f"{NOT_RUN} the evaluation stopped at {at}: {end_msg}" if here
                    else f"{NOT_RUN} the evaluation stopped earlier" + (f", at {at}" if at else ""))
                cr = ConfigResult(c.name, dict(c.params), end_status or Status.HARNESS_ERROR,
                                  message=message, traceback=list(end_tb) if here else [])
            else:
                cr = got
                if interrupted and end_status is not None and cr.status is Status.PASSED and \
                        last_stage is not None and c.name == last_stage.config and \
                        c.name not in perf_done[split] and last_stage.stage == "performance":
                    cr.status, cr.message, cr.traceback = end_status, end_msg, list(end_tb)
            crs.append(cr)
        failed = next((cr for cr in crs if cr.status is not Status.PASSED), None)
        status = failed.status if failed else Status.PASSED
        if failed is None and end_status is not None and split not in finished_splits:
            status = end_status
        stage = "done"
        if failed is not None:
            stage = "performance" if "failed_while_timed" in failed.flags else (
                "load" if failed.status in (Status.LOAD_ERROR, Status.SIGNATURE_MISMATCH) else "correctness")
        timed = [cr for cr in crs if cr.speedup is not None]
        speedup = stats.geomean([cr.speedup for cr in timed]) if timed and len(timed) == len(crs) else None
        ci = stats.geomean_ci([cr.speedup_ci for cr in timed if cr.speedup_ci]) if speedup else None
        roof = stats.geomean([cr.roofline_fraction for cr in timed if cr.roofline_fraction is not None]) \
            if speedup else None
        sols = [cr.sol for cr in timed if cr.sol is not None]
        sol = sum(sols) / len(sols) if speedup and sols else None
        flags = sorted({fl for cr in crs for fl in cr.flags})
        comp = [cr.speedup_compiled for cr in crs if cr.speedup_compiled]
        speedup_compiled = stats.geomean(comp) if speedup and len(comp) == len(crs) else None
        message = failed.message if failed else ""
        if failed is None and status is not Status.PASSED:
            message = end_msg
        verdicts.append(Verdict(split=split, status=status, stage=stage, message=message, configs=crs,
                                build=build_info, speedup=round(speedup, 4) if speedup else None,
                                speedup_ci=ci, roofline_fraction=round(roof, 4) if roof else None,
                                sol=round(sol, 4) if sol is not None else None,
                                sol_configs=len(sols) if sol is not None else 0, ceilings=ceiling_info,
                                speedup_compiled=round(speedup_compiled, 4) if speedup_compiled else None,
                                flags=flags, **base))
    return verdicts


_DUMP_HEAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):$", re.M)
_DUMP_FRAME = re.compile(r'^  File "([^"]*)", line (\d+) in (\S+)$')
WHERE_FRAMES = 8    # the innermost frames of a stack a record names


def where_it_was(log: str) -> tuple[str, str]:
    """The innermost frames of the last thread (the main one: faulthandler lists the newest
    first) of the stack dump at the end of a trusted process's log (``arena.evaluation.parent._ask_where``),
    as ``function (file:line) < ...``, and the log before the dump; ("", log) where it has none."""
    heads = list(_DUMP_HEAD.finditer(log))
    if not heads:
        return "", log
    frames: list[str] = []
    for line in log[heads[-1].end():].splitlines():
        m = _DUMP_FRAME.match(line)
        if m is None:
            if frames:
                break
            continue
        path, lineno, func = m.groups()
        short = path[path.rindex("/arena/") + 1:] if "/arena/" in path else path.rsplit("/", 1)[-1]
        frames.append(f"{func} ({short}:{lineno})")
    # the dump's first block: where the process's own output ends (the threads before the main one are its too)
    first = heads[0].start()
    start = log.rfind("\n", 0, first) + 1
    return " < ".join(frames[:WHERE_FRAMES]), log[:start]


def phase_times(timed: Sequence[tuple[float, Any]]) -> dict[str, float]:
    """Where the trusted process's wall time went, from the arrival times of its frames
    (seconds): start (spawn to its first frame: Python, torch, the task), load (the sides, the
    timer, the candidate process's load), correctness and timing (per split, from the phase's
    first stage frame to its last result), and the part of those spent waiting for the GPU's
    lock (``arena.evaluation.gpulock``); inside timing: the warm-up, the profiler's start, stop and
    read-out, the renewal of input sets between rounds, the checks of timed outputs, the
    making of timed inputs and poisoning of outputs before each call, the time alone on the
    GPU (exclusive lock held) and the timed device spans themselves (every side). Of the lock
    (from each correctness result and each split's ``lock`` frame of its timing): the seconds
    this evaluation held it shared (other evaluations' timed rounds waited meanwhile), its
    longest shared section, how many shared sections it entered (``shared_n``: each one a wait
    behind any writer queued) and the seconds let go for host-only work (compiling); where it
    took the lock exclusive, the number of sections, of tries that found readers inside and
    the seconds its writer waited for them (``writer_wait_s``, part of the lock wait); where it
    waited for room in the GPU's memory account, how often and how long (``memory_waits``,
    ``memory_wait_s``: outside the lock), and how many retries after running out of memory ran
    beside no other work (``memory_exclusives``); inside the exclusive sections, the host's seconds by
    part (``alone_<part>_s``: arena.timing.timer's parts, and ``served``, the remote steps'
    own time in their processes, the rest of those steps being the channel, and of ``served``
    the parts those processes counted: ``alone_<flush|call|wait|marker|threads>_s``); of the
    shared sections, by what they were for (``arena.evaluation.gpulock``'s labels), the seconds held
    (``held_<label>_s``) and the part past 0.1 s into a section (``over_<label>_s``: what keeps a
    waiting writer out longer than its window). Inside
    load: ``load_<part>_s`` for the parts the trusted process reports (reference, baseline,
    timer, profiler, candidate)."""
    out = {"start_s": 0.0, "load_s": 0.0, "correctness_s": 0.0, "timing_s": 0.0, "lock_wait_s": 0.0,
           "worker_s": 0.0, "warm_s": 0.0, "profiler_s": 0.0, "refresh_s": 0.0, "ahead_s": 0.0, "timed_gpu_s": 0.0,
           "alone_s": 0.0, "prepare_s": 0.0, "verify_s": 0.0, "shared_s": 0.0, "longest_shared_s": 0.0,
           "off_gpu_s": 0.0}
    if not timed:
        return out
    out["start_s"] = timed[0][0]
    out["worker_s"] = timed[-1][0]
    spans: dict[tuple[str, str], list[float]] = {}     # (phase, split) -> [first stage frame, last result]

    def lock_counters(r: Mapping[str, Any]) -> None:
        for k in ("lock_wait_s", "shared_s", "off_gpu_s", "alone_s"):
            out[k] += float(r.get(k) or 0.0)
        for k in ("shared_n", "exclusive_n", "failed_tries", "writer_wait_s", "memory_wait_s", "memory_waits",
                  "memory_exclusives",
                  *(k for k in r if re.fullmatch(r"(alone|held|over)_[a-z]{1,12}_s|records_[a-z]{1,8}_[sn]", k))):
            if r.get(k):
                out[k] = out.get(k, 0.0) + float(r[k])
        out["longest_shared_s"] = max(out["longest_shared_s"], float(r.get("longest_shared_s") or 0.0))

    for t, f in timed:
        if isinstance(f, StageFrame) and f.stage in ("correctness", "performance"):
            spans.setdefault((f.stage, f.split), [t, t])
            if out["load_s"] == 0.0 and f.stage == "correctness":
                out["load_s"] = t - out["start_s"]
        elif isinstance(f, LoadedFrame):
            out["lock_wait_s"] += f.lock_wait_s
            for part, secs in f.parts.items():
                if re.fullmatch(r"[a-z_]{1,20}", part):
                    out[f"load_{part}_s"] = out.get(f"load_{part}_s", 0.0) + secs
        elif isinstance(f, LockFrame):
            lock_counters(f.stats)
        elif isinstance(f, (CorrectnessFrame, PerformanceFrame)):
            phase = "correctness" if isinstance(f, CorrectnessFrame) else "performance"
            span = spans.get((phase, f.split))
            if span is not None:
                span[1] = max(span[1], t)
            if isinstance(f, CorrectnessFrame):
                lock_counters(f.result.lock)
            else:
                r = f.result
                for k in ("warm_s", "profiler_s", "refresh_s", "ahead_s", "prepare_s", "verify_s"):
                    out[k] += float(getattr(r, k) or 0.0)
                out["timed_gpu_s"] += sum(sum(v) for v in r.spans_us.values()) / 1e6
    for (phase, _), (t0, t1) in spans.items():
        out["correctness_s" if phase == "correctness" else "timing_s"] += t1 - t0
    return {k: round(v, 3) for k, v in out.items()}
