"""Tests of the HIP build layer: HIP->CUDA translation, nvcc / hipcc builds, the cache.

Compile tests skip when a toolchain is missing, unless ARENA_REQUIRE_TOOLCHAINS=1 (CI),
where they fail. Builds share one cache and run two at a time to keep the file fast.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from toolchains import ARCHS, REQUIRE_TOOLCHAINS  # noqa: E402,F401 - tests/ is on the path
from toolchains import need as _need

from arena.toolchain import hip2cuda
from arena.toolchain.hip import (
    BuildResult,
    build_hip,
    default_cache_dir,
    parse_amdgpu_remarks,
    parse_ptxas,
    toolchain_available,
)


def _need_toolchain(target: str) -> None:
    _need(toolchain_available(target))


@pytest.fixture(scope="module", autouse=True)
def _hipify_tables() -> None:
    _need(None if hip2cuda.mappings_file() is not None else "torch's hipify tables not found")


def translate(text: str) -> hip2cuda.TranslationResult:
    return hip2cuda.translate_hip_to_cuda(text)


def body_of(result: hip2cuda.TranslationResult) -> str:
    """The translated text without the inlined compat header."""
    text = re.sub(r"#line 1 \"hip_compat_cuda.h\".*?#endif  // KERNEL_ARENA_HIP_COMPAT_CUDA_H",
                  "", result.source, flags=re.DOTALL)
    return re.sub(r"^#line .*\n", "", text, flags=re.MULTILINE)


# ---- translation --------------------------------------------------------------------------

def test_runtime_api_names_are_renamed() -> None:
    out = body_of(translate(
        "hipError_t e = hipMalloc(&p, n);\n"
        "hipStream_t s; hipStreamCreate(&s);\n"
        "hipMemcpyAsync(d, h, n, hipMemcpyHostToDevice, s);\n"
        "if (hipGetLastError() != hipSuccess) hipFree(p);\n"
        "hipDeviceSynchronize(); hipEvent_t ev; hipDeviceProp_t prop;\n"))
    for cuda in ("cudaError_t e = cudaMalloc(&p, n)", "cudaStream_t s; cudaStreamCreate(&s)",
                 "cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s)",
                 "cudaGetLastError() != cudaSuccess", "cudaFree(p)", "cudaDeviceSynchronize()",
                 "cudaEvent_t ev", "cudaDeviceProp prop"):
        assert cuda in out
    assert "hip" not in out


def test_identifiers_only_on_boundaries() -> None:
    out = body_of(translate("int my_hipMalloc = 1; int hipMallocX = 2; hipMalloc_(); s.hipMalloc;"))
    assert "my_hipMalloc" in out and "hipMallocX" in out and "hipMalloc_()" in out
    assert "s.cudaMalloc" in out  # a bare identifier is renamed wherever it stands


def test_runtime_name_preferred_over_driver_name() -> None:
    ident, _ = hip2cuda.reverse_tables()
    assert ident["hipMalloc"] == "cudaMalloc"  # not cuMemAlloc
    assert ident["hipStream_t"] == "cudaStream_t"  # not CUstream
    assert ident["hipError_t"] == "cudaError_t"  # not CUresult
    assert ident["hipDeviceSynchronize"] == "cudaDeviceSynchronize"  # not cudaThreadSynchronize
    assert ident["hipDeviceProp_t"] == "cudaDeviceProp"


def test_only_hip_looking_targets_are_reversed() -> None:
    ident, _ = hip2cuda.reverse_tables()
    assert "int" not in ident and "bool" not in ident and "uint32_t" not in ident
    assert all(name.startswith(("hip", "HIP", "__hip", "__HIP")) for name in ident)


def test_hip_host_malloc_becomes_cuda_host_alloc() -> None:
    out = translate("hipHostMalloc(&p, n, hipHostMallocDefault); hipHostFree(p);").source
    assert "cudaHostAlloc(&p, n, cudaHostAllocDefault)" in out
    assert "cudaFreeHost(p)" in out
    # the two-argument form gets a default-flags overload in the compat header
    assert "cudaHostAlloc(void** ptr, size_t size)" in out


def test_includes_are_mapped() -> None:
    out = body_of(translate(
        "#include <hip/hip_runtime.h>\n#include \"hip/hip_fp16.h\"\n#include <hip/hip_bf16.h>\n"
        "#include <hip/hip_runtime_api.h>\n#include <hipcub/hipcub.hpp>\n"
        "#include <hip/hip_cooperative_groups.h>\n#include <cstdint>\n"))
    for line in ("#include <cuda_runtime.h>", '#include "cuda_fp16.h"', "#include <cuda_bf16.h>",
                 "#include <cuda_runtime_api.h>", "#include <cub/cub.cuh>",
                 "#include <cooperative_groups.h>", "#include <cstdint>"):
        assert line in out
    assert "hip/" not in out


def test_unknown_hip_header_is_noted() -> None:
    result = translate("#include <hip/amd_detail/amd_warp_functions.h>\n")
    assert any("hip/amd_detail/amd_warp_functions.h" in note for note in result.notes)


def test_fp16_and_bf16_types() -> None:
    out = body_of(translate(
        "__half h = __float2half(1.f); __half2 h2; half x;\n"
        "__hip_bfloat16 b = __float2bfloat16(2.f); float f = __bfloat162float(b);\n"
        "__hip_bfloat162 b2; hip_bfloat16 old(1.0f);\n"))
    assert "__half h = __float2half(1.f); __half2 h2; half x;" in out
    assert "__nv_bfloat16 b = __float2bfloat16(2.f); float f = __bfloat162float(b);" in out
    assert "__nv_bfloat162 b2" in out
    assert "hip_bfloat16 old(1.0f)" in out  # typedef'd in the compat header
    assert "typedef __nv_bfloat16 hip_bfloat16;" in translate("").source


@pytest.mark.parametrize("construct", [
    "hipLaunchKernelGGL", "HIP_KERNEL_NAME", "hipExtLaunchKernelGGL", "HIP_DYNAMIC_SHARED",
    "HIP_SYMBOL", "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__ballot", "__any",
    "__all", "__lane_id", "unsafeAtomicAdd",
])
def test_constructs_outside_the_table_are_defined_by_the_compat_header(construct: str) -> None:
    source = translate("#include <hip/hip_runtime.h>\n").source
    assert re.search(rf"#define {re.escape(construct)}\b", source)


def test_launch_macro_and_shuffles_map_to_cuda_forms() -> None:
    header = hip2cuda.COMPAT_HEADER_PATH.read_text()
    assert "kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)" in header
    assert "__shfl_down_sync(0xffffffffu, var, delta, width)" in header
    assert "unsigned long long kernel_arena_hip_ballot(int predicate)" in header
    assert "extern __shared__ type var[];" in header


def test_launch_call_and_warp_code_are_kept_for_the_macros() -> None:
    text = ("#include <hip/hip_runtime.h>\n"
            "__global__ void k(float* x) { HIP_DYNAMIC_SHARED(float, s); "
            "x[0] = __shfl_down(x[0], 1) + warpSize; }\n"
            "void go(float* x, hipStream_t st) {\n"
            "    hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, st, x);\n}\n")
    out = body_of(translate(text))
    assert "HIP_DYNAMIC_SHARED(float, s)" in out and "__shfl_down(x[0], 1) + warpSize" in out
    assert "hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, st, x)" in out
    assert "cudaStream_t st" in out


def test_compat_header_goes_after_the_last_include() -> None:
    text = ("// leading comment with #include <nothing.h>\n"
            "#include <hip/hip_runtime.h>\n"
            "#define BLOCK 256\n"
            "/* #include <not_real.h> */\n"
            "#include <hip/hip_fp16.h>\n"
            "__global__ void kernel_after_includes() {}\n")
    out = translate(text).source
    header_at = out.index("#define KERNEL_ARENA_HIP_COMPAT_CUDA_H")
    assert out.index("#include <cuda_fp16.h>") < header_at < out.index("kernel_after_includes")
    assert out.index("#define BLOCK 256") < header_at
    # compiler messages keep the original line numbers
    assert '#line 6 "kernel.hip"\n__global__ void kernel_after_includes' in out


def test_compat_header_goes_after_a_conditional_include_block() -> None:
    text = ("#include <hip/hip_runtime.h>\n"
            "#ifdef USE_BF16\n#include <hip/hip_bf16.h>\n#endif\n"
            "__global__ void k() {}\n")
    assert hip2cuda.insertion_line(text) == 4
    guarded = ("#ifndef MY_KERNEL_H\n#define MY_KERNEL_H\n#include <hip/hip_runtime.h>\n"
               "__global__ void k() {}\n#endif\n")
    assert hip2cuda.insertion_line(guarded) == 3
    assert hip2cuda.insertion_line("__global__ void k() {}\n") == 0


# Constructs the translation does not support: reported in notes, compile then fails.
UNSUPPORTED = {
    "amdgcn builtin": "int v = __builtin_amdgcn_readfirstlane(x);",
    "gcnArchName": "hipDeviceProp_t p; const char* a = p.gcnArchName;",
    "AMD inline asm": 'asm volatile("v_mov_b32 %0, %1" : "=v"(a) : "v"(b));',
    "AMD device library": "float r = __ocml_native_sqrt_f32(x);",
    "AMD cross-lane": "int y = __hip_ds_swizzle(x, 0x1f);",
    "wave size macro": "constexpr int W = __AMDGCN_WAVEFRONT_SIZE;",
    "AMDGPU attribute": "__attribute__((amdgpu_waves_per_eu(2))) __global__ void k() {}",
    "warpSize as a constant": "__shared__ float partial[1024 / warpSize];",
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_constructs_are_reported(name: str) -> None:
    assert translate(UNSUPPORTED[name]).notes, f"{name} not reported"


def test_portable_code_has_no_notes() -> None:
    assert translate(SOURCES["reduce"]).notes == []
    assert translate(SOURCES["elementwise"]).notes == []


def test_translation_is_deterministic_and_torch_free() -> None:
    assert translate(SOURCES["abi"]).source == translate(SOURCES["abi"]).source
    assert len(hip2cuda.table_fingerprint()) == 64


# ---- compile tests -------------------------------------------------------------------------

SOURCES: dict[str, str] = {
    "elementwise": r"""
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <cstdint>

template <int VEC>
__global__ void scale_add(const __half* __restrict__ x, const __half* __restrict__ y,
                          __half* __restrict__ out, float alpha, int64_t n) {
    int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
    for (int v = 0; v < VEC; ++v) {
        if (i + v < n) {
            float r = alpha * __half2float(x[i + v]) + __half2float(y[i + v]);
            out[i + v] = __float2half(r);
        }
    }
}

__global__ void add_half(const __half* x, __half* out, int64_t n) {
    int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(x[i], x[i]);
}

extern "C" int run(const __half* x, const __half* y, __half* out, int64_t n, hipStream_t s) {
    dim3 block(256);
    dim3 grid((n + 256 * 2 - 1) / (256 * 2));
    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_add<2>), grid, block, 0, s, x, y, out, 0.5f, n);
    hipLaunchKernelGGL(add_half, dim3((n + 255) / 256), dim3(256), 0, s, x, out, n);
    return static_cast<int>(hipGetLastError());
}
""",
    "reduce": r"""
#include <hip/hip_runtime.h>

__device__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    return v;
}

__global__ void row_sum(const float* x, float* out, int cols) {
    __shared__ float partial[32];  // enough for 1024 threads on any wave size >= 32
    const float* row = x + static_cast<long long>(blockIdx.x) * cols;
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += row[c];
    v = warp_sum(v);
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + warpSize - 1) / warpSize;
    if (warp == 0) {
        v = lane < warps ? partial[lane] : 0.f;
        v = warp_sum(v);
        float mx = __shfl_xor(v, 1);
        unsigned long long votes = __ballot(v > 0.f);
        if (__any(mx > 0.f) && __all(lane >= 0) && __lane_id() == 0 && votes != 0ull)
            out[blockIdx.x] = __shfl(v, 0);
        else if (lane == 0)
            out[blockIdx.x] = __shfl_up(v, 0);
    }
}

extern "C" int row_sums(const float* x, float* out, int64_t rows, int64_t cols,
                        hipStream_t stream) {
    hipLaunchKernelGGL(row_sum, dim3(rows), dim3(256), 0, stream, x, out, (int)cols);
    return hipGetLastError();
}
""",
    "dynamic_shared": r"""
#include <hip/hip_runtime.h>

__global__ void reverse_block(const float* x, float* y, int n) {
    HIP_DYNAMIC_SHARED(float, tile)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) y[j] = tile[threadIdx.x];
}

__global__ void copy_extern(const float* x, float* y, int n) {
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) y[i] = buf[threadIdx.x];
}

extern "C" int run(const float* x, float* y, int64_t n, hipStream_t stream) {
    const int threads = 512;
    size_t bytes = threads * sizeof(float);
    hipError_t err = hipFuncSetAttribute(reinterpret_cast<const void*>(&reverse_block),
                                         hipFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (err != hipSuccess) return err;
    hipLaunchKernelGGL(reverse_block, dim3((n + threads - 1) / threads), dim3(threads), bytes,
                       stream, x, y, (int)n);
    copy_extern<<<(n + threads - 1) / threads, threads, bytes, stream>>>(x, y, (int)n);
    return hipGetLastError();
}
""",
    "atomics": r"""
#include <hip/hip_runtime.h>

__global__ void histogram(const int* keys, int* counts, float* total, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&counts[keys[i] & 255], 1);
        unsafeAtomicAdd(total, w[i]);
        atomicMax(&counts[256], keys[i]);
    }
}

extern "C" int run(const int* keys, const float* w, int* counts, float* total, int64_t n,
                   hipStream_t stream) {
    hipLaunchKernelGGL(histogram, dim3((n + 255) / 256), dim3(256), 0, stream,
                       keys, counts, total, w, (int)n);
    return hipGetLastError();
}
""",
    "bf16": r"""
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>

__global__ void gelu_bf16(const __hip_bfloat16* x, __hip_bfloat16* y, long long n) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
        y[i] = __float2bfloat16(0.5f * v * (1.f + tanhf(inner)));
    }
}

extern "C" int gelu(const __hip_bfloat16* x, __hip_bfloat16* y, int64_t n, hipStream_t stream) {
    hipLaunchKernelGGL(gelu_bf16, dim3((n + 255) / 256), dim3(256), 0, stream, x, y, (long long)n);
    return hipGetLastError();
}
""",
    "abi": r"""
#include <hip/hip_runtime.h>
#include <hip/hip_ext.h>
#include <cstdint>

__global__ void square(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] * x[i];
}

extern "C" int entry(const float* x, float* y, int64_t n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    int blocks = (int)((n + 255) / 256);
    if (blocks > 65535) blocks = 65535;
    hipExtLaunchKernelGGL(square, dim3(blocks), dim3(256), 0, stream, nullptr, nullptr, 0,
                          x, y, n);
    hipError_t err = hipGetLastError();
    return static_cast<int>(err);
}
""",
}
ROCM_LACKS = {"bf16": "ROCm 5.2 has no hip/hip_bf16.h"}
COMPILE_CASES = [(name, target) for name in SOURCES for target in ("cuda", "rocm")]
Builds = dict[tuple[str, str], "Future[BuildResult]"]
# Builds the cache and error tests use, started with the others.
EXTRA_SOURCES: dict[str, str] = {
    "abi_changed": SOURCES["abi"].replace("x[i] * x[i]", "x[i] * x[i] + 1.0f"),
    "broken": ("#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n"
               "    x[0] = undefined_name;\n}\n"),
}
EXTRA_CASES = [("abi_changed", "cuda"), ("broken", "cuda"), ("broken", "rocm")]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("build-cache")


@pytest.fixture(scope="session")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hip-sources")
    for name, text in {**SOURCES, **EXTRA_SOURCES}.items():
        (directory / f"{name}.hip").write_text(text)
    return directory


@pytest.fixture(scope="session")
def builds(cache_dir: Path, source_dir: Path) -> Iterator[Builds]:
    """Every (source, target) build, started together two at a time, awaited per test."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {}
        for name, target in COMPILE_CASES + EXTRA_CASES:
            lacking = target == "rocm" and name in ROCM_LACKS
            if toolchain_available(target) is None and not lacking:
                futures[(name, target)] = pool.submit(
                    build_hip, source_dir / f"{name}.hip", target=target, arch=ARCHS[target],
                    cache_dir=cache_dir)
        yield futures


@pytest.mark.parametrize("name,target", COMPILE_CASES)
def test_compiles(name: str, target: str, builds: Builds) -> None:
    _need_toolchain(target)
    if target == "rocm" and name in ROCM_LACKS:
        pytest.skip(ROCM_LACKS[name])
    result = builds[(name, target)].result()
    assert result.ok, result.log
    assert result.library is not None and result.library.is_file()
    assert not result.timed_out
    assert result.toolchain["target"] == target and result.toolchain["arch"] == ARCHS[target]
    assert result.toolchain["version"]
    assert result.resources, result.log
    for info in result.resources.values():
        assert info["registers"] > 0 and "shared_bytes" in info and "spill_bytes" in info


def test_resources_name_kernels(builds: Builds) -> None:
    _need_toolchain("cuda")
    result = builds[("reduce", "cuda")].result()
    assert result.ok, result.log
    (name, info), = [(k, v) for k, v in result.resources.items() if k.startswith("row_sum")]
    assert info["shared_bytes"] == 128  # __shared__ float partial[32]
    assert info["mangled"].startswith("_Z")


@pytest.mark.parametrize("target", ["cuda", "rocm"])
def test_two_steps_and_the_record(target: str, builds: Builds) -> None:
    """The file is compiled to an object, checked, then linked; the record keeps the kernels
    (as the profiler names them) and the object's imports; the object is not kept."""
    _need_toolchain(target)
    result = builds[("reduce", target)].result()
    assert result.ok and result.refused is None, result.log
    compile_line, link_line = [line for line in result.log.splitlines() if line.startswith("$ ")]
    assert " -c " in compile_line and "-o kernel.o" in compile_line and "-shared" not in compile_line
    assert link_line.endswith("-shared -o lib.so kernel.o") or "-o lib.so kernel.o" in link_line
    assert "-shared" in result.toolchain["link_flags"]
    assert result.kernels == ("row_sum(float const*, float*, int)",)
    assert result.kernels_mangled == ("_Z7row_sumPKfPfi",)
    runtime = "cudaGetLastError" if target == "cuda" else "hipGetLastError"
    assert runtime in result.undefined
    assert result.library is not None
    record = json.loads((result.library.parent / "build.json").read_text())
    assert record["kernels"] == list(result.kernels) and record["undefined"] == list(result.undefined)
    kept = sorted(p.name for p in result.library.parent.iterdir())
    if target == "cuda":      # and the device code alone, for a replay process (arena.evaluation.replay.native_player)
        assert kept == sorted(["build.json", "lib.so", "kernel.cu", "kernels.fatbin"])
        code = (result.library.parent / "kernels.fatbin").read_bytes()
        assert code[:4] == bytes.fromhex("50ed55ba")       # a fatbinary's magic number
        assert hashlib.sha256(code).hexdigest() == result.device_code_sha256 == record["device_code_sha256"]
        assert "recorder" in link_line and "--wrap=cudaLaunchKernel" in link_line
    else:
        assert kept == sorted(["build.json", "lib.so", "kernel.hip"]) and result.device_code is None


def test_a_built_file_comes_from_the_cache(builds: Builds,
                                           source_dir: Path, cache_dir: Path) -> None:
    _need_toolchain("cuda")
    first = builds[("elementwise", "cuda")].result()
    assert first.ok, first.log
    again = build_hip(source_dir / "elementwise.hip", target="cuda", arch="sm_90",
                      cache_dir=cache_dir)
    assert again.cached and again.ok      # from the cache: no compiler ran
    assert again.library == first.library
    assert again.resources == first.resources
    assert again.kernels == first.kernels and again.undefined == first.undefined
    # the cache is keyed on content: a copy elsewhere hits too
    copy = cache_dir.parent / "elementwise-copy.hip"
    copy.write_text(SOURCES["elementwise"])
    assert build_hip(copy, target="cuda", arch="sm_90", cache_dir=cache_dir).cached


def test_changed_source_rebuilds(builds: Builds) -> None:
    _need_toolchain("cuda")
    first = builds[("abi", "cuda")].result()
    changed = builds[("abi_changed", "cuda")].result()
    assert first.ok and changed.ok, changed.log
    assert not changed.cached and changed.library != first.library


def test_other_arch_or_flags_change_the_key(cache_dir: Path, source_dir: Path) -> None:
    _need_toolchain("cuda")
    for arch, flags in (("sm_90a", ()), ("sm_90", ("-lineinfo",))):
        result = build_hip(source_dir / "abi.hip", target="cuda", arch=arch, cache_dir=cache_dir,
                           timeout=0.01, extra_flags=flags)
        assert not result.cached and result.timed_out


def test_syntax_error_gives_the_compiler_message(
        builds: Builds) -> None:
    _need_toolchain("cuda")
    result = builds[("broken", "cuda")].result()
    assert not result.ok and result.library is None and not result.timed_out
    assert 'kernel.hip(3): error: identifier "undefined_name" is undefined' in result.log
    assert "nvcc" in result.log and "status" in result.log


def test_rocm_syntax_error(builds: Builds) -> None:
    _need_toolchain("rocm")
    result = builds[("broken", "rocm")].result()
    assert not result.ok and result.library is None
    assert "kernel.hip:3:12: error: use of undeclared identifier 'undefined_name'" in result.log


def test_timeout_kills_the_compiler(source_dir: Path, tmp_path: Path) -> None:
    _need_toolchain("cuda")
    result = build_hip(source_dir / "reduce.hip", target="cuda", arch="sm_90a",
                       cache_dir=tmp_path, timeout=0.01)
    assert result.timed_out and not result.ok and result.library is None
    assert "timed out" in result.log
    assert not any((tmp_path / ".tmp").iterdir())  # the staging directory is cleaned up


@pytest.mark.parametrize("target,arch", [("rocm", "gfx90a"), ("cuda", "sm_90")])
def test_a_build_leaves_nothing_in_the_temporary_directory(target: str, arch: str, source_dir: Path,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """clang's HIP driver (hipcc for an AMD target) makes two directories named after the source in $TMPDIR for
    every compile and leaves them there, empty: a test run left about a thousand ``kernel-XXXXXX`` in /tmp. Each
    compiler run has a temporary directory of its own, removed after it."""
    _need_toolchain(target)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    result = build_hip(source_dir / "elementwise.hip", target=target, arch=arch, cache_dir=tmp_path / "cache")
    assert result.ok and not result.cached, result.log
    assert not list(tmp.iterdir())


def test_missing_toolchain_is_a_failed_build(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("arena.toolchain.hip._COMPILER_ROOTS",
                        {"cuda": ((), ()), "rocm": ((), ())})
    source = tmp_path / "k.hip"
    source.write_text(SOURCES["abi"])
    assert toolchain_available("cuda") == "nvcc not found on PATH"
    result = build_hip(source, target="cuda", arch="sm_90", cache_dir=tmp_path / "cache")
    assert not result.ok and not result.timed_out and "nvcc not found" in result.log


def test_programmer_errors_raise(tmp_path: Path) -> None:
    source = tmp_path / "k.hip"
    source.write_text("")
    with pytest.raises(ValueError):
        build_hip(source, target="metal", arch="sm_90")
    with pytest.raises(ValueError):
        build_hip(source, target="cuda", arch="gfx90a")
    with pytest.raises(ValueError):
        toolchain_available("opencl")


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "build"
    monkeypatch.delenv("ARENA_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "kernel-arena" / "build"


# ---- resource parsing (no toolchain needed) ---------------------------------------------

def test_parse_ptxas() -> None:
    output = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'softmax_kernel' for 'sm_90'
ptxas info    : Function properties for softmax_kernel
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]
"""
    info = parse_ptxas(output)["softmax_kernel"]
    assert info["registers"] == 40 and info["shared_bytes"] == 2048 and info["barriers"] == 1
    assert info["spill_bytes"] == 4 and info["stack_bytes"] == 8 and info["constant_bytes"] == 368


def test_parse_amdgpu_remarks() -> None:
    output = """k.hip:3:1: remark: Function Name: vec_add [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     SGPRs: 14 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     VGPRs: 8 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     AGPRs: 4 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     ScratchSize [bytes/lane]: 16 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     Occupancy [waves/SIMD]: 8 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     VGPRs Spill: 2 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=kernel-resource-usage]
"""
    info = parse_amdgpu_remarks(output)["vec_add"]
    assert info["registers"] == 12 and info["vgprs"] == 8 and info["sgprs"] == 14
    assert info["shared_bytes"] == 1024 and info["scratch_bytes"] == 16
    assert info["spill_bytes"] == 8 and info["occupancy_waves"] == 8
