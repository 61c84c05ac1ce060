"""The in-process checks around candidate code (arena.guard) and the signed channel."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch

from arena.channel import ForgedFrame, signed_reader, signed_writer
from arena.guard import OpTrace, Seal, ThreadWatch, foreign_kernels, kernel_base_name


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


@pytest.mark.parametrize("name, base", [
    ("void softmax_kernel<256>(float const*, float*, int)", "softmax_kernel"),
    ("_rms_norm_row", "_rms_norm_row"),
    ("(anonymous namespace)::k(float*)", "k"),
    ("void ns::inner::gemm<float, 4>(float*)", "gemm"),
])
def test_kernel_base_name(name, base):
    assert kernel_base_name(name) == base


def test_foreign_kernels():
    names = ["_axpy_kernel", "Memcpy DtoD (Device -> Device)",
             "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
             "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
             "void scal_kernel_val<float, float>(cublasScalParamsVal<float, float>)",
             "void at::native::reduce_kernel<512, 1>(int)", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize"]
    assert foreign_kernels(names, {"_axpy_kernel"}) == sorted(names[3:])
    assert foreign_kernels(["void scale_kernel(float const*, float*, long, float)"], {"scale_kernel"}) == []


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
    from arena.evaluate import _protocol_violation
    from arena.taskdef.loader import Config

    cfgs = {"seen": [Config("seen", 0, "a", {"n": 1}), Config("seen", 1, "b", {"n": 2})]}

    def f(config, phase="correctness", status="PASSED", split="seen"):
        return {"type": "config", "split": split, "config": config, "phase": phase, "result": {"status": status}}

    assert _protocol_violation(cfgs, [f("a"), f("b"), f("a", "performance")]) is None
    assert "twice" in _protocol_violation(cfgs, [f("a"), f("a")])
    assert "not asked for" in _protocol_violation(cfgs, [f("zz")])
    assert "not asked for" in _protocol_violation(cfgs, [f("a", split="heldout")])
    assert "before its correctness" in _protocol_violation(cfgs, [f("b", "performance")])
    assert "unknown status" in _protocol_violation(cfgs, [f("a", status="GREAT")])
