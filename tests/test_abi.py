"""The HIP kernel ABI check (arena/toolchain/abi.py), against tasks/hip2hip/softmax:
softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream)."""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path

import pytest

from arena.taskdef.loader import ScalarSpec, load_task
from arena.toolchain.abi import ctypes_argtypes, ctypes_scalar, find_entry_params, hip_signature_problem

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def softmax():
    return load_task(REPO / "tasks" / "hip2hip" / "softmax")


@pytest.fixture(scope="module")
def with_eps(softmax):
    """softmax with a float32 scalar appended: (x, y, rows, cols, eps, stream)."""
    return dataclasses.replace(softmax, scalars=softmax.scalars + (ScalarSpec("eps", "float32", 1e-5),))


GOOD = [
    'extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {\n'
    "    return 0;\n}\n",
    # comments (including a decoy declaration inside one), __restrict__, const, line breaks
    '/* extern "C" int softmax(float x); */\n'
    '// extern "C" int softmax(int);\n'
    '__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {}\n'
    'extern "C" int softmax(\n'
    "    const float* __restrict__ x,   // input [rows, cols]\n"
    "    float* __restrict__ y,         /* output */\n"
    "    const int64_t rows,\n"
    "    const int64_t cols,\n"
    "    hipStream_t stream)\n"
    "{\n    return (int)hipGetLastError();\n}\n",
    # an extern "C" block with a declaration, the definition later
    '#include <hip/hip_runtime.h>\n'
    'extern "C" {\n'
    "int softmax(const float *x, float *y, long long rows, long cols, hipStream_t stream);\n"
    "}\n"
    "int softmax(const float *x, float *y, long long rows, long cols, hipStream_t stream) { return 0; }\n",
    # unnamed parameters, cudaStream_t, `extern "C" __host__`
    'extern "C" __host__ int softmax(const float*, float*, int64_t, int64_t, cudaStream_t);\n',
    # pointers written const float * const, void* tensors
    'extern "C" int softmax(const void* const x, void *y, ptrdiff_t rows, int64_t cols, hipStream_t s) {}\n',
]


@pytest.mark.parametrize("source", GOOD)
def test_correct_declarations(softmax, source):
    assert hip_signature_problem(source, softmax) is None


def test_the_shipped_kernels_match(softmax):
    for role in ("baseline", "solution", "specialised"):
        f = softmax.kernel_file(role)
        assert f is not None
        assert hip_signature_problem(f.read_text(), softmax) is None, role


def test_params_are_split_at_top_level_commas():
    src = 'extern "C" int f(const float* a, Foo<int, 2> b, void (*cb)(int, int), hipStream_t s);'
    assert find_entry_params(src, "f") == ["const float* a", "Foo<int, 2> b", "void (*cb)(int, int)",
                                            "hipStream_t s"]
    assert find_entry_params('extern "C" int f(void);', "f") == []
    assert find_entry_params("int f(int a);", "f") is None


def test_wrong_parameter_count(softmax):
    src = 'extern "C" int softmax(const float* x, float* y, int64_t rows, hipStream_t stream) {}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "takes 4 parameters" in msg and "needs 5" in msg


def test_scalar_passed_as_pointer(softmax):
    src = 'extern "C" int softmax(const float* x, float* y, int64_t* rows, int64_t cols, hipStream_t s) {}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "'rows'" in msg and "must not be a pointer" in msg


def test_tensor_passed_by_value(softmax):
    src = 'extern "C" int softmax(const float* x, float y, int64_t rows, int64_t cols, hipStream_t s) {}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "'y'" in msg and "must be a pointer" in msg


@pytest.mark.parametrize("wrong", ["int rows", "int32_t rows", "float rows", "double rows", "size_t rows"])
def test_wrong_int64_scalar_type(softmax, wrong):
    src = f'extern "C" int softmax(const float* x, float* y, {wrong}, int64_t cols, hipStream_t s) {{}}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "'rows'" in msg and "int64_t" in msg


def test_float32_scalar(with_eps):
    head = 'extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, '
    assert hip_signature_problem(head + "float eps, hipStream_t s) {}", with_eps) is None
    assert hip_signature_problem(head + "const float eps, hipStream_t s) {}", with_eps) is None
    msg = hip_signature_problem(head + "double eps, hipStream_t s) {}", with_eps)
    assert msg is not None and "'eps'" in msg and "must be float" in msg
    assert hip_signature_problem(head + "__half eps, hipStream_t s) {}", with_eps) is not None


def test_missing_stream(softmax):
    # the right count, but the last parameter is not a stream
    src = 'extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, int64_t pad) {}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "hipStream_t" in msg and "int64_t pad" in msg
    # no stream at all: one parameter short
    src = 'extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols) {}'
    msg = hip_signature_problem(src, softmax)
    assert msg is not None and "takes 4 parameters" in msg and "the stream" in msg


@pytest.mark.parametrize("source", [
    "int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t s) { return 0; }",
    'extern "C" int softmax_v2(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t s) {}',
    '// extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t s);\n',
    # extern "C" on another declaration; softmax itself is C++ (mangled)
    'extern "C" int helper(int);\n'
    "int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t s) { return 0; }\n",
    "",
])
def test_missing_function(softmax, source):
    msg = hip_signature_problem(source, softmax)
    assert msg is not None and "no extern \"C\" function named 'softmax'" in msg


def test_entry_outside_the_extern_c_block_is_not_extern_c(softmax):
    src = ('extern "C" {\n'
           "__global__ void softmax_kernel(const float* x, float* y, int64_t n);\n"
           "}\n"
           "int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t s) { return 0; }\n")
    assert hip_signature_problem(src, softmax) is not None


def test_ctypes_argtypes(softmax, with_eps):
    assert ctypes_argtypes(softmax) == [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_void_p]
    types = ctypes_argtypes(with_eps)
    assert len(types) == len(with_eps.inputs) + len(with_eps.outputs) + len(with_eps.scalars) + 1 == 6
    assert types[4] is ctypes.c_float and types[-1] is ctypes.c_void_p
    int32_task = dataclasses.replace(softmax, scalars=(ScalarSpec("rows", "int32"),))
    assert ctypes_argtypes(int32_task) == [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]


def test_ctypes_scalar():
    v = ctypes_scalar("int64", 2**40)
    assert isinstance(v, ctypes.c_int64) and v.value == 2**40
    assert ctypes_scalar("int32", -5).value == -5
    assert ctypes_scalar("float32", 0.5).value == 0.5
