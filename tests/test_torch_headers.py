"""PyTorch's HIP headers in a HIP source (arena.toolchain.torch_headers, hip2cuda): the
header-only ones map to their CUDA originals and build; the ones that need PyTorch's C++
library are refused before compiling, in one line naming the file and the line.

Compile tests skip when a toolchain is missing, unless ARENA_REQUIRE_TOOLCHAINS=1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from toolchains import ARCHS, need  # noqa: E402 - tests/ is on the path

from arena.toolchain import hip2cuda, torch_headers
from arena.toolchain.hip import build_hip, toolchain_available

FIX = Path(__file__).parent / "fixtures"

ENTRY = r"""
extern "C" int scale(const float* x, float* y, int64_t n, float alpha, hipStream_t stream) {
    hipLaunchKernelGGL(scale_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n, alpha);
    return (int)hipGetLastError();
}
"""

# header-only PyTorch headers: warp shuffles, device numeric limits, math, the c10 half type
HEADER_ONLY = r"""#include <hip/hip_runtime.h>
#include <cstdint>
#include <c10/hip/HIPMathCompat.h>
#include <ATen/hip/DeviceUtils.cuh>
#include <ATen/hip/NumericLimits.cuh>
#include <c10/util/Half.h>

__global__ void scale_kernel(const float* x, float* y, int64_t n, float alpha) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    float lane_sum = v + WARP_SHFL_XOR(v, 1);           // a shuffle through DeviceUtils
    float floor = at::numeric_limits<float>::lowest();
    c10::Half h = c10::Half(alpha);
    if (i < n) y[i] = c10::hip::compat::max(static_cast<float>(h) * v, floor) + 0.f * lane_sum;
}
""" + ENTRY

NEEDS_LIBRARY = r"""#include <hip/hip_runtime.h>
#include <c10/hip/HIPStream.h>
// #include <torch/extension.h>   (a comment: not an include)
#include <c10/hip/HIPException.h>
#include "ATen/hip/HIPContext.h"
#include <cstdint>

__global__ void scale_kernel(const float* x, float* y, int64_t n, float alpha) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}
""" + ENTRY


@pytest.fixture(scope="module", autouse=True)
def _hipify_tables() -> None:
    need(None if hip2cuda.mappings_file() is not None else "torch's hipify tables not found")


def _write(tmp_path: Path, text: str, name: str = "kernel.hip") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pytorch_hip_headers_and_namespaces_map_to_their_cuda_originals() -> None:
    out = hip2cuda.translate_hip_to_cuda(
        "#include <c10/hip/HIPStream.h>\n#include <c10/hip/HIPMathCompat.h>\n#include \"ATen/hip/HIPContext.h\"\n"
        "#include <ATen/hip/DeviceUtils.cuh>\n#include <c10/hip/impl/hip_cmake_macros.h>\n"
        "float f(float x) { return c10::hip::compat::pow(x, 2.f) + at :: hip :: value(x); }\n").source
    for cuda in ("#include <c10/cuda/CUDAStream.h>", "#include <c10/cuda/CUDAMathCompat.h>",
                 '#include "ATen/cuda/CUDAContext.h"', "#include <ATen/cuda/DeviceUtils.cuh>",
                 "#include <c10/cuda/impl/cuda_cmake_macros.h>", "c10::cuda::compat::pow(x, 2.f)",
                 "at :: cuda :: value(x)"):
        assert cuda in out
    assert not re.search(r"(c10|ATen)/hip/", out)
    assert hip2cuda.torch_header_to_cuda("hip/hip_runtime.h") is None


@pytest.mark.parametrize("target", ["cuda", "rocm"])
def test_headers_that_need_the_library_are_refused_in_one_line_each(tmp_path: Path, target: str) -> None:
    res = build_hip(_write(tmp_path, NEEDS_LIBRARY), target=target, arch=ARCHS[target], cache_dir=tmp_path / "c")
    assert not res.ok and not res.refused
    lines = res.log.splitlines()
    assert lines == [
        "kernel.hip:2: #include <c10/hip/HIPStream.h>: this header needs PyTorch's C++ library, which the HIP "
        "route does not link (the entry is given its stream as its last argument)",
        "kernel.hip:4: #include <c10/hip/HIPException.h>: this header needs PyTorch's C++ library, which the HIP "
        "route does not link (check hipGetLastError() after a launch and return it from the entry)",
        "kernel.hip:5: #include <ATen/hip/HIPContext.h>: this header needs PyTorch's C++ library, which the HIP "
        "route does not link (the entry is given its stream as its last argument; hipGetDeviceProperties gives "
        "the device's properties)"]
    assert "$ " not in res.log                   # refused before any compiler ran


def test_an_extension_source_is_refused_with_what_an_entry_is() -> None:
    [line] = torch_headers.refusals("#include <torch/extension.h>\n", "op.hip")
    assert line.startswith("op.hip:1: #include <torch/extension.h>: this header needs PyTorch's C++ library")
    assert "extern \"C\" function of device pointers" in line
    [atomic] = torch_headers.refusals("#include <ATen/hip/Atomic.cuh>\n", "op.hip")
    assert "static constructor" in atomic
    assert torch_headers.refusals(HEADER_ONLY, "op.hip") == []


def test_header_only_headers_build_for_nvidia(tmp_path: Path) -> None:
    need(toolchain_available("cuda"))
    res = build_hip(_write(tmp_path, HEADER_ONLY), target="cuda", arch=ARCHS["cuda"], cache_dir=tmp_path / "c")
    assert res.ok, res.log
    assert res.library is not None and res.library.is_file()
    assert "-isystem" in res.toolchain["flags"] and res.refused is None
    assert any("scale_kernel" in k for k in res.kernels)


def test_header_only_headers_on_rocm_need_a_rocm_build_of_pytorch(tmp_path: Path) -> None:
    lacking = torch_headers.missing([HEADER_ONLY], "rocm")
    if lacking is None:                          # a ROCm build of PyTorch: they build
        need(toolchain_available("rocm"))
        res = build_hip(_write(tmp_path, HEADER_ONLY), target="rocm", arch=ARCHS["rocm"], cache_dir=tmp_path / "c")
        assert res.ok, res.log
        return
    assert "ATen/hip/DeviceUtils.cuh" in lacking and "a ROCm build of PyTorch" in lacking
    res = build_hip(_write(tmp_path, HEADER_ONLY), target="rocm", arch=ARCHS["rocm"], cache_dir=tmp_path / "c")
    assert not res.ok and lacking in res.log


def test_on_the_cpu_backend_a_refused_header_is_the_candidates_and_a_missing_one_the_machines(tmp_path: Path
                                                                                              ) -> None:
    from arena.devices import detect
    from arena.evaluation.parent import Candidate, evaluate
    from arena.records import Status
    from arena.taskdef.loader import load_task

    cpu = detect("cpu")
    task = load_task(FIX / "tasks" / "hip2hip" / "scale")
    if toolchain_available("cuda") is not None and toolchain_available("rocm") is not None:
        need("neither nvcc nor hipcc is here")
    [v] = evaluate(task, Candidate(task, _write(tmp_path, NEEDS_LIBRARY, "bad.hip")), ["smoke"], cpu)
    assert v.status is Status.COMPILE_ERROR
    assert "bad.hip:2: #include <c10/hip/HIPStream.h>: this header needs PyTorch's C++ library" in v.message
    [v] = evaluate(task, Candidate(task, _write(tmp_path, HEADER_ONLY, "good.hip")), ["smoke"], cpu)
    assert v.status is Status.NOT_RUNNABLE, v.message
    lacking = torch_headers.missing([HEADER_ONLY], "rocm")
    if lacking is not None:                      # this machine's limit, said, not the candidate's failure
        assert any(b.get("skipped") == lacking for b in v.build["builds"])
