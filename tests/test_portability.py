"""HIP as real code is written: constexpr host functions in device code build for NVIDIA as
hipcc builds them for AMD, and literal warp widths are pointed out (record and feedback)."""

from __future__ import annotations

from pathlib import Path

from toolchains import need  # tests/ is on the path

from arena.devices import detect
from arena.evaluation.parent import Candidate, evaluate
from arena.feedback import render, summarize
from arena.taskdef.loader import load_task
from arena.toolchain.hip import build_hip, toolchain_available
from arena.toolchain.portability import warp_width_warnings

SCALE = Path(__file__).parent / "fixtures" / "tasks" / "hip2hip" / "scale"

INFINITY = """
#include <hip/hip_runtime.h>
#include <cstdint>
#include <limits>

__global__ void clamp_kernel(const float* x, float* y, int64_t n, float alpha) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float lo = -std::numeric_limits<float>::infinity();
    if (i < n) y[i] = fmaxf(alpha * x[i], lo);
}

extern "C" int scale(const float* x, float* y, int64_t n, float alpha, hipStream_t stream) {
    hipLaunchKernelGGL(clamp_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n, alpha);
    return (int)hipGetLastError();
}
"""


def test_numeric_limits_in_device_code_builds_for_both_vendors(tmp_path):
    src = tmp_path / "kernel.hip"
    src.write_text(INFINITY)
    for target, arch in (("cuda", "sm_90"), ("rocm", "gfx90a")):
        need(toolchain_available(target))
        res = build_hip(src, target=target, arch=arch, cache_dir=tmp_path / "cache")
        assert res.ok, res.log[-2000:]


WARPY = """
#define WARP_SIZE 64
constexpr int kLanes = 32;
__device__ float reduce(float v) {
    // __shfl_xor(v, 32) in a comment is not code
    for (int o = WARP_SIZE / 2; o > 0; o /= 2) v += __shfl_xor(v, o);
    v += __shfl_xor(v, 32);
    v += __shfl_down_sync(0xffffffff, v, 1, 32);
    int lane = threadIdx.x % 64, warp = threadIdx.x / 32;
    return v + __shfl(v, lane, warpSize) + warp;
}
"""


def test_literal_warp_widths_are_pointed_out_where_they_are():
    ws = warp_width_warnings(WARPY)
    assert [w.split(":")[0] for w in ws] == ["line 2", "line 3", "line 7", "line 8", "line 9", "line 9"]
    assert "WARP_SIZE is defined as 64" in ws[0] and "kLanes = 32" in ws[1]
    assert "__shfl_xor by 32 lanes" in ws[2] and "__shfl_down_sync with a width of 32" in ws[3]
    assert "threadIdx.x % 64" in ws[4] and "threadIdx.x / 32" in ws[5]
    assert warp_width_warnings("int lane = threadIdx.x % warpSize; v += __shfl_xor(v, 16);") == []


def test_the_record_and_the_feedback_carry_the_warnings(tmp_path):
    task = load_task(SCALE)
    src = (SCALE / "baseline.hip").read_text()
    path = tmp_path / "kernel.hip"
    path.write_text("#define WARP_SIZE 64\n" + src)
    (v,) = evaluate(task, Candidate(task, path), ["smoke"], detect("cpu"), work_dir=tmp_path / "w")
    assert v.build["portability"] and "WARP_SIZE is defined as 64" in v.build["portability"][0]
    summary = summarize(v)
    assert summary["portability"] == v.build["portability"]
    assert "portability (literal warp widths):" in render(summary)


HEADER = """#pragma once
#include <hip/hip_runtime.h>

template <typename T>
__device__ __forceinline__ T scaled(T x, T alpha) { return alpha * x; }
"""

WITH_HEADER = """#include <hip/hip_runtime.h>
#include <cstdint>
#include "scale_ops.h"

__global__ void scale_kernel(const float* x, float* y, int64_t n, float alpha) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = scaled(x[i], alpha);
}

extern "C" int scale(const float* x, float* y, int64_t n, float alpha, hipStream_t stream) {
    hipLaunchKernelGGL(scale_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n, alpha);
    return (int)hipGetLastError();
}
"""


def test_a_task_s_headers_are_built_with_every_candidate_and_key_its_cache(tmp_path, monkeypatch):
    import shutil

    from arena.workspace import make_workspace

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "tasks" / "hip2hip" / "scale"
    shutil.copytree(SCALE, folder)
    (folder / "scale_ops.h").write_text(HEADER)
    (folder / "baseline.hip").write_text(WITH_HEADER)
    task = load_task(folder)
    assert [h.name for h in task.headers] == ["scale_ops.h"]
    ws = make_workspace(task, tmp_path / "ws")
    assert (ws / "scale_ops.h").read_text() == HEADER                 # the agent sees what it may include
    for target, arch in (("cuda", "sm_90"), ("rocm", "gfx90a")):
        need(toolchain_available(target))
        first = build_hip(folder / "baseline.hip", target=target, arch=arch, headers=task.headers)
        assert first.ok and not first.cached, first.log[-2000:]
        assert build_hip(folder / "baseline.hip", target=target, arch=arch, headers=task.headers).cached
        # without the header the file does not build; with a changed header it is built again
        alone = build_hip(folder / "baseline.hip", target=target, arch=arch)
        assert not alone.ok and "scale_ops.h" in alone.log
        (folder / "scale_ops.h").write_text(HEADER.replace("alpha * x", "x * alpha"))
        assert not build_hip(folder / "baseline.hip", target=target, arch=arch, headers=task.headers).cached
        (folder / "scale_ops.h").write_text(HEADER)
    (v,) = evaluate(task, Candidate(task, folder / "baseline.hip"), ["smoke"], detect("cpu"), work_dir=tmp_path / "w")
    assert v.status.value == "NOT_RUNNABLE" and all(b["ok"] in (True, None) for b in v.build["builds"])
