"""Tests of the object check (arena.toolchain.objcheck) and of the HIP build that applies it.

The ELF reader is tested on objects compiled here (gcc, nvcc, hipcc); deliberately bad HIP
sources must be refused for both targets with the symbol named; a build reports its kernels
as the profiler names them; and every shipped ``.hip`` file (every task's, and the tests') builds
for cuda and rocm with the two-step build without refusal, or is refused as it must be
(``test_shipped_file``: the suite's one compile of every file, slow, one test per file and
target, so ``-k`` or xdist can shard it; the builds run two at a time, under a lock per file
shared by the xdist workers, into the shared build cache, so no file is built twice). Compile
tests skip without a toolchain, unless ARENA_REQUIRE_TOOLCHAINS=1, where they fail.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.taskdef.loader import task_headers
from arena.toolchain.hip import BuildResult, build_hip, default_cache_dir, toolchain_available
from arena.toolchain.objcheck import check_object, demangle, offload_kernels, read_elf, refusal_reason

ROOT = Path(__file__).resolve().parents[1]
from toolchains import ARCHS, REQUIRE_TOOLCHAINS  # noqa: E402,F401 - tests/ is on the path
from toolchains import need as _need  # noqa: E402

TARGETS = ("cuda", "rocm")


def _need_tool(name: str) -> str:
    found = shutil.which(name)
    _need(None if found else f"{name} not on PATH")
    assert found is not None
    return found


# ---- the ELF reader on gcc objects ----------------------------------------------------------

C_SOURCE = r"""
#include <stdio.h>
extern void* dlsym(void*, const char*);
extern int external_counter;
__attribute__((constructor)) static void ctor_plain(void) { puts("a"); }
__attribute__((constructor(101))) static void ctor_priority(void) { puts("b"); }
__attribute__((destructor)) static void dtor_plain(void) { puts("c"); }
static void old_style(void) { puts("d"); }
__attribute__((section(".ctors"), used)) static void (*old_ctor)(void) = old_style;
static int pick(void) { return 1; }
static int (*resolve_pick(void))(void) { return pick; }
int picked(void) __attribute__((ifunc("resolve_pick")));
int use(void) { return external_counter + (dlsym(0, "x") != 0); }
"""

CXX_SOURCE = r"""
#include <iostream>
struct Grab { Grab() { std::cout << "loaded"; } };
Grab grab;
int value() { return 1; }
"""


@pytest.fixture(scope="module")
def gcc_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    gcc = _need_tool("gcc")
    directory = tmp_path_factory.mktemp("gcc-objects")
    out = {}
    for name, text, compiler, flags in (("c", C_SOURCE, gcc, ["-x", "c"]),
                                        ("cxx", CXX_SOURCE, shutil.which("g++") or gcc,
                                         ["-x", "c++"])):
        source = directory / f"{name}.src"
        source.write_text(text)
        subprocess.run([compiler, *flags, "-O0", "-fPIC", "-c", "-o", f"{name}.o", source.name],
                       cwd=directory, check=True, capture_output=True)
        out[name] = directory / f"{name}.o"
    return out


def test_reader_undefined_symbols_of_a_gcc_object(gcc_objects: dict[str, Path]) -> None:
    obj = read_elf(gcc_objects["c"])
    # (the ifunc makes gcc refer to the GOT by name)
    assert set(obj.undefined()) - {"_GLOBAL_OFFSET_TABLE_"} == {"dlsym", "external_counter", "puts"}
    if shutil.which("nm"):  # the same answer as binutils
        listed = subprocess.run(["nm", "-u", str(gcc_objects["c"])], capture_output=True,
                                text=True, check=True).stdout.split()
        assert set(obj.undefined()) == {word for word in listed if word != "U"}


def test_reader_load_time_functions_of_a_gcc_object(gcc_objects: dict[str, Path]) -> None:
    entries = read_elf(gcc_objects["c"]).init_entries()
    at_load = {(e.section, e.function) for e in entries if e.at_load}
    assert at_load == {(".init_array", "ctor_plain"), (".init_array.00101", "ctor_priority"),
                       (".ctors", "old_style")}
    assert [(e.section, e.function) for e in entries if not e.at_load] == [
        (".fini_array", "dtor_plain")]


def test_check_refuses_what_the_gcc_object_does(gcc_objects: dict[str, Path]) -> None:
    report = check_object(gcc_objects["c"], "cuda")
    message = report.refused
    assert message is not None and "\n" not in message
    for name in ("dlsym", "external_counter", "ctor_plain", "ctor_priority", "old_style",
                 "dtor_plain", "picked"):
        assert name in message, name
    assert "puts" not in message  # on the allow-list


def test_global_object_constructor_is_refused(gcc_objects: dict[str, Path]) -> None:
    obj = read_elf(gcc_objects["cxx"])
    (entry,) = [e for e in obj.init_entries() if e.at_load]
    assert entry.function.startswith("_GLOBAL__sub_I_") and entry.section == ".init_array"
    message = check_object(obj, "rocm").refused
    assert message is not None and "_GLOBAL__sub_I_" in message and "at load" in message


def test_reader_rejects_what_is_not_elf(tmp_path: Path) -> None:
    from arena.toolchain.objcheck import ElfError

    with pytest.raises(ElfError):
        read_elf(b"not an object")
    with pytest.raises(ElfError):
        read_elf(b"\x7fELF\x02\x01" + b"\0" * 10)  # truncated


# ---- the ELF reader on nvcc and hipcc objects -----------------------------------------------

TINY_CU = r"""
__global__ void twice(float* x) { x[threadIdx.x] *= 2.f; }
extern "C" int run(float* x, cudaStream_t s) { twice<<<1, 32, 0, s>>>(x); return 0; }
"""
TINY_HIP = r"""
#include <hip/hip_runtime.h>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.f; }
extern "C" int run(float* x, hipStream_t s) {
    hipLaunchKernelGGL(twice, dim3(1), dim3(64), 0, s, x);
    return (int)hipGetLastError();
}
"""


def _compile_object(tmp_path: Path, target: str) -> Path:
    _need(toolchain_available(target))
    if target == "cuda":
        (tmp_path / "k.cu").write_text(TINY_CU)
        command = ["nvcc", "-Xcompiler", "-fPIC", "-gencode=arch=compute_90,code=sm_90", "-c",
                   "-o", "k.o", "k.cu"]
    else:
        (tmp_path / "k.hip").write_text(TINY_HIP)
        command = ["hipcc", "-fPIC", "--offload-arch=gfx90a", "-c", "-o", "k.o", "k.hip"]
    subprocess.run(command, cwd=tmp_path, check=True, capture_output=True,
                   env={**os.environ, "HIP_PLATFORM": "amd"})
    return tmp_path / "k.o"


def test_reader_on_an_nvcc_object(tmp_path: Path) -> None:
    obj = read_elf(_compile_object(tmp_path, "cuda"))
    assert {"__cudaRegisterFatBinary", "__cudaRegisterFunction", "__cudaLaunchKernel",
            "atexit"} <= set(obj.undefined())
    assert [(e.section, e.function) for e in obj.init_entries()] == [
        (".init_array", "_ZL24__sti____cudaRegisterAllv")]
    assert check_object(obj, "cuda", ["_Z5twicePf"]).refused is None
    assert check_object(obj, "rocm", ["_Z5twicePf"]).refused is not None  # the other runtime


def test_reader_on_a_hipcc_object(tmp_path: Path) -> None:
    obj = read_elf(_compile_object(tmp_path, "rocm"))
    assert {"__hipRegisterFatBinary", "__hipRegisterFunction", "hipLaunchKernel",
            "hipGetLastError"} <= set(obj.undefined())
    assert [(e.section, e.function) for e in obj.init_entries()] == [
        (".init_array", "__hip_module_ctor")]
    assert offload_kernels(obj) == ("_Z5twicePf",)  # from the AMDGPU code object inside
    assert check_object(obj, "rocm", offload_kernels(obj)).refused is None


# ---- the allow-list and the demangler (no toolchain) ---------------------------------------

@pytest.mark.parametrize("name,target", [
    ("cudaMalloc", "cuda"), ("cudaLaunchKernel", "cuda"), ("__cudaRegisterFunction", "cuda"),
    ("hipMalloc", "rocm"), ("hipLaunchKernel", "rocm"), ("__hipPushCallConfiguration", "rocm"),
    ("memcpy", "cuda"), ("sqrtf", "rocm"), ("pow", "cuda"), ("_Znwm", "cuda"),
    ("__cxa_guard_acquire", "rocm"), ("_ZSt20__throw_length_errorPKc", "cuda"),
    ("fprintf", "rocm"), ("atexit", "cuda"), ("atoi", "cuda"), ("__isoc23_strtol", "cuda"), ("strtod", "rocm"),
])
def test_allowed(name: str, target: str) -> None:
    assert refusal_reason(name, target) is None


@pytest.mark.parametrize("name,target,why", [
    ("dlsym", "cuda", "dynamic loading"), ("__libc_dlopen_mode", "rocm", "dynamic loading"),
    ("_dl_sym", "cuda", "dynamic loading"), ("PyRun_SimpleString", "rocm", "Python"),
    ("_PyObject_New", "cuda", "Python"), ("cublasSgemm_v2", "cuda", "vendor library"),
    ("rocblas_sgemm", "rocm", "vendor library"), ("cuLaunchKernel", "cuda", "driver"),
    ("cudaGetDriverEntryPoint", "cuda", "driver"), ("hipModuleLoad", "rocm", "driver"),
    ("hipGetProcAddress", "rocm", "driver"), ("cudaDeviceSetLimit", "cuda", "L2 persistence"),
    ("cudaStreamSetAttribute", "cuda", "L2 persistence"),
    ("cudaCtxResetPersistingL2Cache", "cuda", "L2 persistence"),
    ("cudaDeviceReset", "cuda", "resets the device"), ("hipSetDevice", "rocm", "device"),
    ("cudaDeviceSetCacheConfig", "cuda", "device-wide"), ("cudaIpcOpenMemHandle", "cuda", "inter-process"),
    ("hipLaunchHostFunc", "rocm", "host callback"), ("cudaGraphLaunch", "cuda", "graph"),
    ("system", "cuda", "process or a thread"), ("pthread_create", "rocm", "process or a thread"),
    ("fork", "cuda", "process"), ("mprotect", "cuda", "memory mapping"),
    ("fopen", "rocm", "file"), ("open", "cuda", "file"), ("getenv", "cuda", "environment"),
    ("_ZN2at6native5emptyEv", "cuda", "ATen"), ("hipMalloc", "cuda", "allow-list"),
    ("cudaMalloc", "rocm", "allow-list"), ("dlsym@GLIBC_2.2.5", "cuda", "dynamic loading"),
])
def test_refused(name: str, target: str, why: str) -> None:
    reason = refusal_reason(name, target)
    assert reason is not None and why in reason, reason


def test_demangle_as_kineto_does() -> None:
    names = demangle(["_Z12scale_kernelILi256EEvPKfPfl", "scale_kernel",
                      "_ZN12_GLOBAL__N_16hiddenEPf", "f", "_Z" + "x" * 1100])
    assert names["_Z12scale_kernelILi256EEvPKfPfl"] == \
        "void scale_kernel<256>(float const*, float*, long)"
    assert names["scale_kernel"] == "scale_kernel"
    assert names["_ZN12_GLOBAL__N_16hiddenEPf"] == "(anonymous namespace)::hidden(float*)"
    assert names["f"] == "float"  # __cxa_demangle reads a type code, and so does kineto
    assert names["_Z" + "x" * 1100] == "_Z" + "x" * 1100  # over kineto's 1,024 bytes


# ---- builds of deliberately bad sources, and of kernels to name -----------------------------

_KERNEL = """
#include <hip/hip_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] = 1.f; }
"""
_LAUNCH = "    hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, s, x);\n"

# (source, the symbol each target's refusal must name)
BAD: dict[str, tuple[str, dict[str, str]]] = {
    "dlsym": ("#include <dlfcn.h>\n" + _KERNEL +
              'extern "C" int run(float* x, hipStream_t s) {\n'
              '    void* f = dlsym(RTLD_DEFAULT, "cublasSgemm");\n' + _LAUNCH +
              "    return f ? 0 : 1;\n}\n", {"cuda": "dlsym", "rocm": "dlsym"}),
    "python": (_KERNEL + 'extern "C" int PyRun_SimpleString(const char*);\n'
               'extern "C" int run(float* x, hipStream_t s) {\n' + _LAUNCH +
               '    return PyRun_SimpleString("import torch");\n}\n',
               {"cuda": "PyRun_SimpleString", "rocm": "PyRun_SimpleString"}),
    "constructor": (_KERNEL + "static int early_devices = 0;\n"
                    "__attribute__((constructor)) static void early() {\n"
                    "    hipGetDeviceCount(&early_devices);\n}\n"
                    'extern "C" int run(float* x, hipStream_t s) {\n' + _LAUNCH +
                    "    return early_devices;\n}\n", {"cuda": "early", "rocm": "early"}),
    "global_object": (_KERNEL + "struct Grab { int n = 0; Grab() { hipGetDeviceCount(&n); } };\n"
                      "static Grab grab;\n"
                      'extern "C" int run(float* x, hipStream_t s) {\n' + _LAUNCH +
                      "    return grab.n;\n}\n",
                      {"cuda": "_GLOBAL__sub_I_", "rocm": "_GLOBAL__sub_I_"}),
    "persisting_l2": (_KERNEL +
                      "#ifdef __HIP_PLATFORM_AMD__\n"
                      "// ROCm 5.2's headers lack it; newer ones declare it like this\n"
                      'extern "C" hipError_t hipDeviceSetLimit(int limit, size_t value);\n'
                      "static const int kPersistingL2 = 0x06;  // hipLimitPersistingL2CacheSize\n"
                      "#else\n"
                      "static const auto kPersistingL2 = cudaLimitPersistingL2CacheSize;\n"
                      "#endif\n"
                      'extern "C" int run(float* x, hipStream_t s) {\n'
                      "    hipDeviceSetLimit(kPersistingL2, size_t(32) << 20);\n" + _LAUNCH +
                      "    return 0;\n}\n",
                      {"cuda": "cudaDeviceSetLimit", "rocm": "hipDeviceSetLimit"}),
    "system": ("#include <cstdlib>\n" + _KERNEL +
               'extern "C" int run(float* x, hipStream_t s) {\n' + _LAUNCH +
               '    return system("nvidia-smi -lgc 2100");\n}\n',
               {"cuda": "system", "rocm": "system"}),
    "pthread": ("#include <pthread.h>\n" + _KERNEL +
                "static void* later(void*) { return nullptr; }\n"
                'extern "C" int run(float* x, hipStream_t s) {\n'
                "    pthread_t t;\n    pthread_create(&t, nullptr, later, nullptr);\n" + _LAUNCH +
                "    return 0;\n}\n", {"cuda": "pthread_create", "rocm": "pthread_create"}),
    # clang renames its own constructor when a candidate's function has taken the name
    "constructor_name": (_KERNEL + "#include <cstdlib>\n"
                         'extern "C" __attribute__((constructor)) void __hip_module_ctor() '
                         '{ system("true"); }\n'
                         'extern "C" int run(float* x, hipStream_t s) {\n' + _LAUNCH +
                         "    return 0;\n}\n", {"rocm": "__hip_module_ctor.1"}),
}

NAMED = r"""
#include <hip/hip_runtime.h>

extern "C" __global__ void plain_kernel(float* x) { x[threadIdx.x] = 1.f; }

template <int BLOCK>
__global__ void scale_kernel(const float* x, float* y, long n) {
    long i = static_cast<long>(blockIdx.x) * BLOCK + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}

namespace {
__global__ void hidden_kernel(float* x) { x[threadIdx.x] += 1.f; }
}

extern "C" int run(const float* x, float* y, long n, hipStream_t s) {
    hipLaunchKernelGGL(plain_kernel, dim3(1), dim3(64), 0, s, y);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_kernel<256>), dim3((n + 255) / 256), dim3(256), 0,
                       s, x, y, n);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_kernel<64>), dim3((n + 63) / 64), dim3(64), 0, s,
                       x, y, n);
    hipLaunchKernelGGL(hidden_kernel, dim3(1), dim3(64), 0, s, y);
    return (int)hipGetLastError();
}
"""
NAMED_KERNELS = ("(anonymous namespace)::hidden_kernel(float*)", "plain_kernel",
                 "void scale_kernel<256>(float const*, float*, long)",
                 "void scale_kernel<64>(float const*, float*, long)")

# Host code an honest kernel file may have: device and constant variables, an out-of-line
# __device__ function (nvcc's host stand-in calls exit), device printf / assert, occupancy and
# attribute queries, symbols, events, a mutex, std::vector, stderr.
HONEST = r"""#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <cstdio>
#include <cassert>
#include <cmath>
#include <vector>
#include <algorithm>
#include <mutex>

__device__ float table[16];
__constant__ float coeffs[4];
__device__ float helper(float v) { return v * coeffs[0] + table[0]; }
__device__ __noinline__ float helper2(float v) { return v + 1.f; }

__global__ void body(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = helper(x[i]) + helper2(x[i]);
    if (i == 0 && n < 0) printf("negative %ld\n", n);
    assert(n >= 0);
}

static std::mutex lock;

extern "C" int run(const float* x, float* y, long n, hipStream_t s) {
    static int blocks_per_sm = -1;
    std::lock_guard<std::mutex> guard(lock);
    if (blocks_per_sm < 0) {
        hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, body, 256, 0);
        hipFuncSetAttribute((const void*)body, hipFuncAttributeMaxDynamicSharedMemorySize, 0);
        hipDeviceProp_t prop;
        int dev; hipGetDevice(&dev);
        hipGetDeviceProperties(&prop, dev);
        std::vector<float> host(4, std::sqrt(2.0f));
        std::sort(host.begin(), host.end());
        hipMemcpyToSymbol(HIP_SYMBOL(coeffs), host.data(), 4 * sizeof(float));
        void* addr = nullptr; hipGetSymbolAddress(&addr, HIP_SYMBOL(table));
        hipMemsetAsync(addr, 0, sizeof(table), s);
        if (prop.multiProcessorCount <= 0) fprintf(stderr, "no SMs\n");
    }
    hipEvent_t e; hipEventCreateWithFlags(&e, hipEventDisableTiming);
    hipLaunchKernelGGL(body, dim3((n + 255) / 256), dim3(256), 0, s, x, y, n);
    hipEventRecord(e, s); hipStreamWaitEvent(s, e, 0); hipEventDestroy(e);
    hipError_t err = hipGetLastError();
    if (err != hipSuccess) { printf("%s\n", hipGetErrorString(err)); return (int)err; }
    return 0;
}
"""

Builds = dict[tuple[str, str], "Future[BuildResult]"]


@pytest.fixture(scope="session")
def refusal_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("refusal-cache")


@pytest.fixture(scope="session")
def named_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("named-cache")


@pytest.fixture(scope="session")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("objcheck-sources")
    for name, (text, _) in BAD.items():
        (directory / f"{name}.hip").write_text(text)
    (directory / "named.hip").write_text(NAMED)
    (directory / "honest.hip").write_text(HONEST)
    return directory


@pytest.fixture(scope="session")
def bad_builds(source_dir: Path, refusal_cache: Path, named_cache: Path) -> Iterator[Builds]:
    """Every bad source, and the named-kernels and honest sources, for both targets, two at
    a time."""
    cases = [(name, target, refusal_cache) for name, (_, symbols) in BAD.items()
             for target in symbols] + [(name, target, named_cache) for target in TARGETS
                                       for name in ("named", "honest")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures: Builds = {}
        for name, target, cache in cases:
            if toolchain_available(target) is None:
                futures[(name, target)] = pool.submit(
                    build_hip, source_dir / f"{name}.hip", target=target, arch=ARCHS[target],
                    cache_dir=cache)
        yield futures


BAD_CASES = [(name, target) for name, (_, symbols) in BAD.items() for target in symbols]


@pytest.mark.parametrize("name,target", BAD_CASES)
def test_bad_source_is_refused(name: str, target: str, bad_builds: Builds) -> None:
    _need(toolchain_available(target))
    result = bad_builds[(name, target)].result()
    symbol = BAD[name][1][target]
    assert not result.ok and result.library is None and not result.timed_out
    assert result.refused is not None, result.log[-3000:]
    assert symbol in result.refused and "\n" not in result.refused
    assert result.refused in result.log  # the log says why
    if not symbol.startswith(("_GLOBAL__sub_I_", "early", "__hip_module_ctor")):
        assert symbol in result.undefined


def test_refused_builds_are_not_cached(bad_builds: Builds, refusal_cache: Path) -> None:
    done = [future.result() for (name, _), future in bad_builds.items() if name in BAD]
    if not done:
        _need("no toolchain")
    assert all(not result.ok for result in done)
    assert not list(refusal_cache.glob("*/*/build.json"))
    assert not any((refusal_cache / ".tmp").iterdir())  # staging cleaned up


@pytest.mark.parametrize("target", TARGETS)
def test_kernel_names(target: str, bad_builds: Builds, source_dir: Path,
                      named_cache: Path) -> None:
    _need(toolchain_available(target))
    result = bad_builds[("named", target)].result()
    assert result.ok and result.refused is None, result.log[-3000:]
    assert result.kernels == NAMED_KERNELS
    mangled = dict(zip(result.kernels, result.kernels_mangled, strict=True))
    assert mangled["plain_kernel"] == "plain_kernel"
    assert mangled["void scale_kernel<64>(float const*, float*, long)"] == \
        "_Z12scale_kernelILi64EEvPKfPfl"
    assert "_GLOBAL__N_" in mangled["(anonymous namespace)::hidden_kernel(float*)"]
    assert set(result.kernels) <= set(result.resources)  # one naming for both
    record = json.loads((result.library.parent / "build.json").read_text())
    assert record["kernels"] == list(NAMED_KERNELS) and record["undefined"]
    assert not (result.library.parent / "kernel.o").exists()
    again = build_hip(source_dir / "named.hip", target=target, arch=ARCHS[target],
                      cache_dir=named_cache)
    assert again.cached and again.kernels == result.kernels
    assert again.kernels_mangled == result.kernels_mangled and again.undefined == result.undefined


@pytest.mark.parametrize("target", TARGETS)
def test_honest_host_code_is_not_refused(target: str, bad_builds: Builds) -> None:
    _need(toolchain_available(target))
    result = bad_builds[("honest", target)].result()
    assert result.refused is None, result.refused
    assert result.ok, result.log[-3000:]
    assert result.kernels == ("body(float const*, float*, long)",)
    runtime = {"cuda": "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
               "rocm": "hipOccupancyMaxActiveBlocksPerMultiprocessor"}[target]
    assert {runtime, "pthread_mutex_lock", "memmove"} <= set(result.undefined)


# ---- every shipped .hip file ----------------------------------------------------------------

def _shipped_files() -> list[str]:
    """Every task's .hip file (committed or not yet), and the other committed ones (the tests')."""
    listed = {str(p.relative_to(ROOT)) for p in ROOT.glob("tasks/*/*/*.hip")}
    try:
        listed |= set(subprocess.run(["git", "ls-files", "*.hip"], cwd=ROOT, capture_output=True,
                                     text=True, check=True).stdout.split())
    except (OSError, subprocess.CalledProcessError):
        listed |= {str(p.relative_to(ROOT)) for p in ROOT.glob("tests/**/*.hip")}
    return sorted(listed)


SHIPPED = _shipped_files()
SHIPPED_CASES = [(path, target) for path in SHIPPED for target in TARGETS]
# Shipped files that must not build: a compile error on purpose, and exploit candidates the
# object check now stops at build time (the symbol the refusal names).
NOT_BUILT = {"tests/fixtures/candidates_hip/compile_error.hip": None,
             # PyTorch extensions, as AgentKernelArena ships them: inputs of the importer's tests
             "tests/fixtures/importers/aka_hip_bias_leaky/hip/bias_leaky.hip": None,
             "tests/fixtures/importers/aka_gpumode_rowscale/hip/rowscale.hip": None,
             "tests/fixtures/importers/aka_gpumode_leaky/hip/leaky.hip": None}
REFUSED = {
    "tests/exploits/candidates/vendor_library.hip": {"cuda": "dlopen", "rocm": "dlopen"},
    "tests/exploits/candidates/device_reset.hip": {"cuda": "cudaDeviceReset",
                                                   "rocm": "hipDeviceReset"},
    "tests/exploits/candidates/background_thread.hip": {"cuda": "std::thread",
                                                        "rocm": "std::thread"},
    "tests/exploits/candidates/constructor_python.hip": {"cuda": "from .init_array at load",
                                                         "rocm": "from .init_array at load"},
    "tests/exploits/candidates/spoof_vendor_name.hip": {"cuda": "dlsym", "rocm": "dlsym"},
    "tests/exploits/candidates/l2_persist.hip": {"cuda": "cudaStreamSetAttribute",
                                                 "rocm": "hipDeviceSetCacheConfig"},
}


def _build_locked(path: str, target: str, locks: Path) -> BuildResult:
    """build_hip under a lock per case shared by the xdist workers: the second to ask waits
    for the first's build and then finds it in the shared cache instead of building again."""
    lock = locks / (path.replace("/", "__") + f".{target}.lock")
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        # a task's file with the task's headers, as its evaluations build it
        headers = task_headers((ROOT / path).parent) if path.startswith("tasks/") else []
        return build_hip(ROOT / path, target=target, arch=ARCHS[target],
                         cache_dir=default_cache_dir(), headers=headers)


class _ShippedBuilds:
    """Builds the selected shipped cases two at a time into the shared build cache (the one
    evaluations use), started at the first request, awaited per test."""

    def __init__(self, cases: list[tuple[str, str]], locks: Path) -> None:
        self.cases = cases
        self.locks = locks
        self.pool: ThreadPoolExecutor | None = None
        self.futures: dict[tuple[str, str], Future[BuildResult]] = {}

    def result(self, case: tuple[str, str]) -> BuildResult:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=2)
            for path, target in self.cases:
                if toolchain_available(target) is None:
                    self.futures[(path, target)] = self.pool.submit(
                        _build_locked, path, target, self.locks)
        return self.futures[case].result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def shipped_builds(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[_ShippedBuilds]:
    selected = {tuple(item.callspec.params["case"]) for item in request.session.items
                if getattr(item, "originalname", "") == "test_shipped_file"}
    # the base temp's parent is shared by the xdist workers of one run
    locks = tmp_path_factory.getbasetemp().parent / "shipped-hip-locks"
    locks.mkdir(exist_ok=True)
    builds = _ShippedBuilds([case for case in SHIPPED_CASES if case in selected], locks)
    yield builds
    builds.close()


@pytest.mark.parametrize("case", SHIPPED_CASES, ids=[f"{p}-{t}" for p, t in SHIPPED_CASES])
def test_shipped_file(case: tuple[str, str], shipped_builds: _ShippedBuilds) -> None:
    path, target = case
    _need(toolchain_available(target))
    result = shipped_builds.result(case)
    if path in NOT_BUILT:
        assert not result.ok and result.refused is None, result.log[-2000:]
        return
    if path in REFUSED:
        assert not result.ok and result.refused is not None, result.log[-2000:]
        assert REFUSED[path][target] in result.refused
        return
    assert result.refused is None, result.refused
    assert result.ok, result.log[-3000:]
    assert result.kernels and len(result.kernels) == len(result.kernels_mangled)
    assert set(result.kernels) <= set(result.resources)
    if target == "cuda":
        assert set(result.kernels) == set(result.resources)  # ptxas lists entries only
