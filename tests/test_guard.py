"""The in-process checks around candidate code (arena.evaluation.candidate.guard) and the signed channel."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch

from arena.evaluation.candidate.guard import OpTrace, Seal, ThreadWatch
from arena.evaluation.channel import ForgedFrame, signed_reader, signed_writer
from arena.evaluation.trusted.kernels import foreign_kernels, incidental


def test_seal_sees_a_patched_function_and_a_restored_one_is_fine():
    seal = Seal()
    assert seal.broken() == []
    real = torch.cuda.synchronize
    try:
        torch.cuda.synchronize = lambda *a, **k: None
        assert "torch.cuda.synchronize" in seal.broken()
    finally:
        torch.cuda.synchronize = real
    assert seal.broken() == []


def test_seal_sees_hooks():
    import gc
    import sys

    seal = Seal()
    cb = lambda phase, info: None  # noqa: E731
    gc.callbacks.append(cb)
    try:
        assert "gc.callbacks" in seal.broken()
    finally:
        gc.callbacks.remove(cb)
    old = sys.getprofile()
    sys.setprofile(lambda *a: None)
    try:
        assert "sys.getprofile" in seal.broken()
    finally:
        sys.setprofile(old)
    assert seal.broken() == []


def test_thread_watch_reports_a_thread_left_running_and_not_a_finished_one():
    w = ThreadWatch()
    w.before()
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    assert w.after() == []
    stop = threading.Event()
    w.before()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        assert len(w.after()) == 1
    finally:
        stop.set()
        t.join()


def test_op_trace_allows_allocation_and_rejects_compute():
    x = torch.randn(8)
    with OpTrace() as tr:
        y = torch.empty_like(x)
        y.copy_(x)
        y.view(2, 4).zero_()
    assert tr.compute_ops() == []
    with OpTrace() as tr:
        torch.nn.functional.softmax(x, dim=0)
        (x * 2).sum()
    assert {"mul", "sum"} <= set(tr.compute_ops())
    assert tr.forbidden_calls(["torch.nn.functional.softmax", "torch.matmul"]) == ["torch.nn.functional.softmax"]


SOFTMAX = ("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>"
           "(float*, float const*, int, int, int, bool const*, int, bool)")


def test_foreign_kernels_are_told_apart_by_exact_name():
    names = ["_axpy_kernel", "Memcpy DtoD (Device -> Device)",
             "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
             "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
             "void scal_kernel_val<float, float>(cublasScalParamsVal<float, float>)",
             "void at::native::reduce_kernel<512, 1>(int)", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize"]
    assert foreign_kernels(names, {"_axpy_kernel"}) == sorted(names[3:])
    # a HIP build's kernels are its exact demangled names
    hip = "void scale_kernel<256>(float const*, float*, long, float)"
    assert foreign_kernels([hip], {hip}) == []
    assert foreign_kernels(["void scale_kernel<128>(float const*, float*, long, float)"], {hip}) != []
    # a Triton function named after torch's kernel is not that kernel: the names differ
    assert foreign_kernels([SOFTMAX, "softmax_warp_forward"], {"softmax_warp_forward"}) == [SOFTMAX]
    # a function defined but never compiled is no kernel of the candidate's: only what was built counts
    assert foreign_kernels(["cunn_SoftMaxForward"], set()) == ["cunn_SoftMaxForward"]


def test_copies_and_fills_are_incidental_and_compute_is_not():
    assert incidental("Memcpy DtoD (Device -> Device)") and incidental("Memset (Device)")
    assert incidental("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
    assert not incidental(SOFTMAX) and not incidental("_axpy_kernel")


def test_the_share_of_copies_and_fills_is_of_the_device_s_work_not_of_idle_time_nor_of_work_side_by_side():
    """A side's share of copies and fills: of its spans, or of its activities' summed time where that is less.
    The starting kernel against itself, its baseline's side timed off the gate (its span holds the idle time
    between launches): the two shares agree, where by the spans alone the baseline's read half its own code's
    as the candidate (AKA's per_token_quant_int8 on an H200: 37% and 78%, FORBIDDEN_CALL). A candidate's kernels
    run beside its copies on another stream do not dilute its share."""
    from arena.evaluation.trusted.performance import INCIDENTAL_MAX, _incidental_share
    from arena.timing.timer import SampleSet

    copy, own = "Memcpy DtoD (Device -> Device)", "_per_token_quant_int8"
    n = 10
    samples = SampleSet(spans_us={"candidate": [237.0] * n, "baseline": [439.0] * n},
                        activity_us={"candidate": {copy: 185.0 * n, own: 52.0 * n},
                                     "baseline": {copy: 185.0 * n, own: 52.0 * n}})
    cand, base = _incidental_share(samples, "candidate", {own}), _incidental_share(samples, "baseline", set())
    assert cand == base == round(185 / 237, 4)
    assert cand <= base + INCIDENTAL_MAX
    # a copy padded with a kernel of its own running beside it: the span, not the summed time, is the bound
    padded = SampleSet(spans_us={"candidate": [100.0] * n}, activity_us={"candidate": {copy: 100.0 * n,
                                                                                         own: 100.0 * n}})
    assert _incidental_share(padded, "candidate", {own}) == 1.0
    # no device work: no share; a side whose timer records no activity (events alone): none of copies
    assert _incidental_share(SampleSet(spans_us={"candidate": [0.0]}), "candidate", set()) is None
    assert _incidental_share(SampleSet(spans_us={"baseline": [50.0]}), "baseline", set()) == 0.0


def test_signed_channel_rejects_forged_and_replayed_frames():
    key = os.urandom(32)
    r, w = os.pipe()
    send = signed_writer(w, key)
    send({"type": "stage"})
    send({"type": "done"})
    read = signed_reader(r, key)
    assert read() == {"type": "stage"} and read() == {"type": "done"}
    # a frame under another key (what candidate code can write without the key)
    signed_writer(w, os.urandom(32))({"type": "done"})
    with pytest.raises(ForgedFrame):
        read()
    # a replay of a genuine frame
    r2, w2 = os.pipe()
    send2 = signed_writer(w2, key)
    send2({"type": "stage"})
    read2 = signed_reader(r2, key)
    raw = os.read(r2, 1 << 16)
    os.write(w2, raw + raw)
    assert read2() == {"type": "stage"}
    with pytest.raises(ForgedFrame):
        read2()
    for fd in (r, w, r2, w2):
        os.close(fd)


def test_plain_json_frames_are_forgeries():
    import json
    import struct

    r, w = os.pipe()
    body = json.dumps({"type": "done"}).encode()
    os.write(w, struct.pack("<I", len(body)) + body)
    with pytest.raises(ForgedFrame):
        signed_reader(r, os.urandom(32))()
    os.close(r)
    os.close(w)
    time.sleep(0)


def test_protocol_violations_are_named():
    from arena.evaluation.decision import protocol_violation
    from arena.evaluation.protocol import CorrectnessFrame, CorrectnessResult, PerformanceFrame, PerformanceResult
    from arena.records import Status
    from arena.taskdef.loader import Config

    cfgs = {"seen": [Config("seen", 0, "a", {"n": 1}), Config("seen", 1, "b", {"n": 2})]}

    def f(config, phase="correctness", split="seen"):
        if phase == "correctness":
            return CorrectnessFrame(split=split, config=config, result=CorrectnessResult(status=Status.PASSED))
        return PerformanceFrame(split=split, config=config, result=PerformanceResult(status=Status.PASSED))

    assert protocol_violation(cfgs, [f("a"), f("b"), f("a", "performance")]) is None
    assert "twice" in protocol_violation(cfgs, [f("a"), f("a")])
    assert "not asked for" in protocol_violation(cfgs, [f("zz")])
    assert "not asked for" in protocol_violation(cfgs, [f("a", split="heldout")])
    assert "before its correctness" in protocol_violation(cfgs, [f("b", "performance")])


def test_defined_functions_are_a_files_function_names():
    from arena.evaluation.trusted.kernels import defined_functions

    src = ("import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef _k(x):\n    pass\n"
           "def entry(x):\n    def helper():\n        pass\n    return helper\n")
    assert defined_functions(src) == {"_k", "entry", "helper"}
    assert defined_functions("def broken(:\n") == set()
