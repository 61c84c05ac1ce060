"""The signature's extended forms, end to end on the cpu backend: inputs updated in place
(``inout``), optional inputs (``has_<name>``), bool scalars and strided views, with the
fixture tests/fixtures/extensions/triton2triton/decay_update (S updated in place, g a
transposed view, decay broadcast over the columns, bias optional, clamp a bool scalar); the
HIP side of the ABI (argument types, the skeleton, a compile-only build); and the loader's
errors for each form used wrongly."""

from __future__ import annotations

import ctypes
import dataclasses
import os
import shutil
from pathlib import Path

import pytest
import torch
from toolchains import ARCHS, need  # noqa: E402 - tests/ is on the path

from arena.check.inputs import clone, copy_into, make_inputs, storage
from arena.errors import ArenaError
from arena.evaluation.buffers import SlotMaker, open_slot
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import Config, load_task, validate_task_dir
from arena.taskdef.shapes import draw_configs, tensor_bytes
from arena.taskdef.skeleton import hip_parameters, hip_skeleton
from arena.toolchain.abi import argtypes_for, call_args, ctypes_argtypes, hip_signature_problem

FIX = Path(__file__).parent / "fixtures" / "extensions"
TASK_DIR = FIX / "triton2triton" / "decay_update"
BASELINE = (TASK_DIR / "baseline.py").read_text()
STORE_S = "        tl.store(S_ptr + r * cols + c, new, mask=m)\n"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def _candidate(tmp_path: Path, text: str, name: str = "kernel.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _smoke(task, path, cpu, **kwargs):
    (v,) = evaluate(task, Candidate(task, path, origin="test"), ["smoke"], cpu, **kwargs)
    return v


# -- the harness's side -------------------------------------------------------------------------------

def test_the_fixture_validates_and_keeps_capital_names(task):
    assert validate_task_dir(TASK_DIR) == []
    assert [i.name for i in task.inputs][0] == "S"
    assert [s.name for s in task.compared] == ["y", "S"]
    assert [i.name for i in task.inout_inputs] == ["S"]


def test_inputs_as_the_signature_lays_them_out(task):
    with_bias, without = task.configs("smoke")
    env = task.env(with_bias)
    ins = make_inputs(task, env, 7, "cpu")
    assert ins["S"].is_contiguous() and ins["x"].is_contiguous()
    assert not ins["g"].is_contiguous() and ins["g"].stride() == (1, 5)
    assert ins["decay"].stride() == (1, 0)
    assert torch.equal(ins["decay"], ins["decay"][:, :1].expand(-1, 37))      # one value a row
    assert storage(ins["decay"]).numel() == 5                                 # the memory its strides span
    assert ins["bias"] is not None and env["clamp"] is True
    assert task.scalar_value(task.scalars[2], env) is True
    ins2 = make_inputs(task, task.env(without), 7, "cpu")
    assert ins2["bias"] is None
    assert task.scalar_value(task.scalars[2], task.env(without)) is False
    # memory: the broadcast input counts its own span, the absent one nothing
    assert tensor_bytes(task, task.env(without), task.inputs) == 4 * (3 * 64 * 3 + 3)


def test_a_strided_input_is_copied_and_cloned_memory_for_memory(task):
    env = task.env(task.configs("smoke")[0])
    made = make_inputs(task, env, 3, "cpu")
    dst = torch.empty_strided((5, 37), (1, 0))
    copy_into(dst, made["decay"])               # a stride-0 view cannot be written through its view
    assert torch.equal(dst, made["decay"])
    c = clone(made["decay"])
    assert c.stride() == (1, 0) and torch.equal(c, made["decay"])


def test_slots_carry_absent_and_strided_tensors_to_the_other_side(tmp_path):
    maker = SlotMaker("cpu")
    slot = maker.allocate([(torch.float32, (4, 6), (1, 4)), None, (torch.float32, (3, 5), (1, 0)),
                           (torch.float32, (2,))], ["g", "bias", "decay", "y"])
    g, absent, decay, y = slot.tensors
    assert absent is None and g.stride() == (1, 4) and decay.stride() == (1, 0) and y.is_contiguous()
    storage(g).copy_(torch.arange(24.0))
    theirs, keep = open_slot(slot.handle, os.dup(slot.fd))
    assert theirs[1] is None and theirs[0].stride() == (1, 4) and torch.equal(theirs[0], g)
    theirs[3].fill_(1.0)
    storage(theirs[2]).fill_(2.0)
    assert torch.equal(y, torch.ones(2)) and torch.equal(decay, torch.full((3, 5), 2.0))
    storage(theirs[2])[:4].zero_()
    assert slot.overrun() is None                       # written inside its span only
    theirs[3].as_strided((3,), (1,))[2] = 5.0           # one element past y
    assert slot.overrun() == "past the end of 'y'"      # the names skip the absent input
    del theirs, keep
    slot.close()


def test_the_baseline_passes_with_both_forms_of_the_optional_input(task, cpu):
    v = _smoke(task, None, cpu)
    assert v.status is Status.PASSED, v.message
    assert [c.params["has_bias"] for c in v.configs] == [True, False]
    assert all(c.status is Status.PASSED for c in v.configs)


def test_the_kernel_gets_each_form_as_declared(task, cpu, tmp_path):
    """Checked inside the candidate's own process: a failed assert is its RUNTIME_ERROR."""
    probe = BASELINE.replace("def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):\n", """\
def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):
    import torch
    assert type(clamp) is bool, type(clamp)
    assert type(rows) is int and type(cols) is int
    assert S.is_contiguous() and x.is_contiguous() and y.is_contiguous()
    assert not g.is_contiguous() and g.stride() == (1, rows), g.stride()
    assert decay.stride() == (1, 0), decay.stride()
    assert bias is None or (isinstance(bias, torch.Tensor) and bias.shape == (cols,))
    assert (bias is None) == (cols == 64)          # the smoke config without bias has 64 columns
""")
    v = _smoke(task, _candidate(tmp_path, probe), cpu)
    assert v.status is Status.PASSED, v.message


def test_leaving_the_state_as_it_was_fails_on_the_state(task, cpu, tmp_path):
    """Out of place: y is right (it sums the new values), S is never written."""
    v = _smoke(task, _candidate(tmp_path, BASELINE.replace(STORE_S, "")), cpu)
    assert v.status is Status.INCORRECT_NUMERICAL, v.message
    assert v.message.startswith("S: "), v.message


def test_writing_another_input_is_still_input_mutated(task, cpu, tmp_path):
    text = BASELINE.replace(STORE_S, STORE_S + "        tl.store(x_ptr + r * cols + c, new, mask=m)\n")
    v = _smoke(task, _candidate(tmp_path, text), cpu)
    assert v.status is Status.INPUT_MUTATED, v.message
    assert "'x'" in v.message


def test_writing_into_a_broadcast_input_is_input_mutated(task, cpu, tmp_path):
    text = BASELINE.replace(STORE_S, STORE_S + "        tl.store(decay_ptr + r * d_s0, 0.5)\n")
    v = _smoke(task, _candidate(tmp_path, text), cpu)
    assert v.status is Status.INPUT_MUTATED, v.message
    assert "'decay'" in v.message


def test_applying_the_update_twice_fails(task, cpu, tmp_path):
    text = BASELINE.replace("def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):\n", """\
def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):
    _entry(S, x, g, decay, bias, y, rows, cols, clamp)
    _entry(S, x, g, decay, bias, y, rows, cols, clamp)


def _entry(S, x, g, decay, bias, y, rows, cols, clamp):
""")
    v = _smoke(task, _candidate(tmp_path, text), cpu)
    assert v.status is Status.INCORRECT_NUMERICAL, v.message


def test_timed_calls_start_from_fresh_state(task, cpu):
    """Timed on the host's clock: the warm-up calls one set again and again and its last call
    is checked like the timed ones; without the state made again before each call the update
    would pile up and the check fail. Every timed call checked (check_sets 0)."""
    configs = {"smoke": task.configs("smoke")[:1]}
    (v,) = evaluate(task, Candidate(task, None, origin="test"), configs, cpu, timing=True,
                    timing_params={"host_clock": True, "min_pairs": 4, "max_pairs": 8, "cap_s": 2.0,
                                   "max_sets": 2, "check_sets": 0})
    assert v.status is Status.PASSED, v.message
    (c,) = v.configs
    assert c.speedup is not None


def test_timed_calls_that_leave_the_state_fail(task, cpu, tmp_path):
    """A kernel that updates the state in its first three calls (the correctness gate's, one
    a seed) and leaves it as it was from then on (the warm-up's and the timed calls) fails the
    re-check of its timed calls."""
    text = BASELINE.replace("def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):\n", """\
_calls = [0]


def decay_update(S, x, g, decay, bias, y, rows, cols, clamp):
    _calls[0] += 1
    if _calls[0] > 3:
        return _lazy(S, x, g, decay, bias, y, rows, cols, clamp)
    return _entry(S, x, g, decay, bias, y, rows, cols, clamp)


def _entry(S, x, g, decay, bias, y, rows, cols, clamp):
""")
    lazy = BASELINE.replace(STORE_S, "").replace("_decay_update_kernel", "_lazy_kernel") \
        .replace("def decay_update(", "def _lazy(").replace("import triton\nimport triton.language as tl\n", "")
    configs = {"smoke": task.configs("smoke")[:1]}
    (v,) = evaluate(task, Candidate(task, _candidate(tmp_path, text + lazy), origin="test"), configs, cpu,
                    timing=True, timing_params={"host_clock": True, "min_pairs": 4, "max_pairs": 8, "cap_s": 2.0,
                                                "max_sets": 2, "check_sets": 0})
    assert v.status is Status.INCORRECT_NUMERICAL, v.message
    assert "timed" in v.message


def test_random_configs_draw_the_flags(task):
    drawn = draw_configs(task, 12, seed=5)
    assert {c.params["has_bias"] for c in drawn} == {True, False}
    assert {c.params["clamp"] for c in drawn} == {True, False}


# -- HIP: the argument list ----------------------------------------------------------------------

def test_hip_argument_types_and_values(task):
    types = ctypes_argtypes(task)
    assert types[:6] == [ctypes.c_void_p] * 6                       # 5 inputs, 1 output
    assert types[6:] == [ctypes.c_int64, ctypes.c_int64, ctypes.c_bool, ctypes.c_void_p]
    assert argtypes_for(1, ["bool"]) == [ctypes.c_void_p, ctypes.c_bool, ctypes.c_void_p]
    s, y = torch.zeros(3), torch.zeros(2)
    args = call_args([s, None, y], ["int64", "bool"], [3, True], 0)
    assert args[0].value == s.data_ptr() and args[1].value is None and args[2].value == y.data_ptr()
    assert isinstance(args[4], ctypes.c_bool) and args[4].value is True
    strided = torch.zeros(4, 6).t()
    assert call_args([strided], [], [], 0)[0].value == strided.data_ptr()


def test_hip_signature_of_the_extended_forms(task):
    params = hip_parameters(task)
    assert params[0] == "float* S"                                  # updated in place: not const
    assert params[1] == "const float* x" and params[4] == "const float* bias"
    assert params[-2:] == ["bool clamp", "hipStream_t stream"]
    src = hip_skeleton(task)
    assert hip_signature_problem(src, task) is None
    assert "updated in place" in src and "nullptr when has_bias is false" in src and "strides [1, rows]" in src
    bad = src.replace("bool clamp", "int clamp")
    assert "must be bool" in hip_signature_problem(bad, task)
    const_state = src.replace("float* S", "const float* S", 1)
    assert "must not be const" in hip_signature_problem(const_state, task)


HIP_KERNEL = r"""#include <hip/hip_runtime.h>
#include <cstdint>

__global__ void decay_update_kernel(float* S, const float* x, const float* g, const float* decay,
                                    const float* bias, float* y, int64_t rows, int64_t cols, bool clamp) {
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
        float v = decay[r] * S[r * cols + c] + g[c * rows + r] * x[r * cols + c];
        if (bias != nullptr) v += bias[c];
        if (clamp) v = fminf(fmaxf(v, -1.0f), 1.0f);
        S[r * cols + c] = v;
        acc += v;
    }
    y[r] = acc;
}

extern "C" int decay_update(float* S, const float* x, const float* g, const float* decay, const float* bias,
                            float* y, int64_t rows, int64_t cols, bool clamp, hipStream_t stream) {
    hipLaunchKernelGGL(decay_update_kernel, dim3((unsigned)((rows + 127) / 128)), dim3(128), 0, stream,
                       S, x, g, decay, bias, y, rows, cols, clamp);
    return (int)hipGetLastError();
}
"""


@pytest.mark.parametrize("target", ["cuda", "rocm"])
def test_a_hip_kernel_of_the_extended_forms_builds(task, tmp_path, target):
    from arena.toolchain.hip import build_hip, toolchain_available

    need(toolchain_available(target))
    assert hip_signature_problem(HIP_KERNEL, task) is None
    src = tmp_path / "kernel.hip"
    src.write_text(HIP_KERNEL)
    res = build_hip(src, target=target, arch=ARCHS[target], cache_dir=tmp_path / "cache")
    assert res.ok, res.log


# -- the loader's errors -------------------------------------------------------------------------

@pytest.fixture
def copy(tmp_path):
    dst = tmp_path / "triton2triton" / "decay_update"
    shutil.copytree(TASK_DIR, dst)
    return dst


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def one_error(errors: list[ArenaError], file: Path, key: str) -> ArenaError:
    assert errors, "the broken task validated"
    matching = [e for e in errors if e.key == key]
    assert matching, [str(e) for e in errors]
    e = matching[0]
    assert e.path == str(file) and str(file) in str(e) and key in str(e)
    return e


def test_inout_on_an_output_is_named(copy):
    edit(copy / "task.yaml", "{name: y, dtype: float32, shape: [rows]}",
         "{name: y, dtype: float32, shape: [rows], inout: true}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.outputs.0.inout")
    assert "inout is for inputs" in str(e)


def test_a_misspelt_key_is_named(copy):
    edit(copy / "task.yaml", "inout: true", "in_out: true")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.0.in_out")
    assert "unknown key" in str(e) and "inout" in str(e)


def test_optional_that_no_config_leaves_out(copy):
    for split in ("smoke", "seen", "heldout"):
        p = copy / "configs" / f"{split}.yaml"
        p.write_text(p.read_text().replace("has_bias: false", "has_bias: true"))
    edit(copy / "task.yaml", "has_bias: {choices: [true, false]}", "has_bias: {choices: [true]}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.bias.optional")
    assert "no config leaves it out" in str(e) and "has_bias: false" in str(e)


def test_leaving_out_an_input_that_is_not_optional(copy):
    edit(copy / "configs" / "smoke.yaml", "has_bias: true", "has_bias: true, has_x: false")
    e = one_error(validate_task_dir(copy), copy / "configs" / "smoke.yaml", "[0] (bias-clamp) has_x")
    assert "not optional" in str(e)
    with pytest.raises(ArenaError, match="not optional"):
        load_task(copy, validate=False).configs("smoke")


def test_a_presence_flag_for_no_input(copy):
    edit(copy / "configs" / "smoke.yaml", "has_bias: true", "has_bais: false")
    e = one_error(validate_task_dir(copy), copy / "configs" / "smoke.yaml", "[0] (bias-clamp) has_bais")
    assert "no input is named 'bais'" in str(e)
    edit(copy / "task.yaml", "has_bias: {choices", "has_bais: {choices")
    one_error(validate_task_dir(copy), copy / "task.yaml", "shape_space.has_bais")


def test_a_flag_that_is_not_true_or_false(copy):
    edit(copy / "configs" / "smoke.yaml", "clamp: true", "clamp: 3")
    e = one_error(validate_task_dir(copy), copy / "configs" / "smoke.yaml", "[0] (bias-clamp) clamp")
    assert "true or false" in str(e)
    edit(copy / "configs" / "smoke.yaml", "clamp: 3", "clamp: true")
    edit(copy / "configs" / "smoke.yaml", "has_bias: true", "has_bias: 2")
    e = one_error(validate_task_dir(copy), copy / "configs" / "smoke.yaml", "[0] (bias-clamp) has_bias")
    assert "true or false" in str(e)


def test_bad_strides(copy):
    edit(copy / "task.yaml", "stride: [1, rows]", "stride: [1]")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.g.stride")
    assert "one stride per dimension" in str(e)
    edit(copy / "task.yaml", "stride: [1]", "stride: [1, nrows]")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.g.stride")
    assert "nrows" in str(e)
    edit(copy / "task.yaml", "stride: [1, nrows]", "stride: [1, rows - 1000]")
    e = one_error(validate_task_dir(copy), copy / "configs" / "smoke.yaml", "[0] (bias-clamp)")
    assert "negative stride" in str(e)


def test_a_strided_inout_is_refused(copy):
    edit(copy / "task.yaml", "shape: [rows, cols], inout: true}",
         "shape: [rows, cols], inout: true, stride: [1, rows]}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.S.stride")
    assert "inout" in str(e)


def test_no_outputs_needs_an_inout_input(copy):
    edit(copy / "task.yaml", "  outputs:\n    - {name: y, dtype: float32, shape: [rows]}\n", "  outputs: []\n")
    errors = validate_task_dir(copy)
    assert not [e for e in errors if e.key == "signature.outputs"], [str(e) for e in errors]
    edit(copy / "task.yaml", ", inout: true}", "}")
    one_error(validate_task_dir(copy), copy / "task.yaml", "signature.outputs")


def test_a_reference_that_does_not_update_the_state_is_found(copy, tmp_path):
    from arena.check.degeneracy import load_reference, reference_problems

    edit(copy / "reference.py", "    S.copy_(new)\n    return S.sum(dim=1)", "    return new.sum(dim=1)")
    task = load_task(copy)
    problems = reference_problems(task, task.configs("smoke")[0], "cpu", load_reference(task))
    assert any("leaves inout input S as it was" in p for p in problems), problems


def test_a_config_may_use_the_presence_flag_in_formulas(task):
    config = Config("smoke", 0, "t", {"rows": 2, "cols": 3, "clamp": False})  # has_bias defaults to true
    env = task.env(config)
    assert env["has_bias"] is True
    assert task.roofline_for(config)[1] == 4 * (4 * 6 + 2 + 3)
    off = dataclasses.replace(config, params={**config.params, "has_bias": False})
    assert task.roofline_for(off)[1] == 4 * (4 * 6 + 2)


def test_the_eager_reference_as_the_starting_point_updates_in_place(tmp_path, cpu):
    """torch2hip: the reference run at the declared dtypes is the starting point; it updates the
    call's own state buffer in place, which is then compared like a candidate's."""
    folder = tmp_path / "torch2hip" / "decay_update"
    shutil.copytree(TASK_DIR, folder)
    (folder / "baseline.py").unlink()
    edit(
        folder / "task.yaml",
        "id: triton2triton/decay_update\ncategory: triton2triton",
        "id: torch2hip/decay_update\ncategory: torch2hip",
    )
    task = load_task(folder)
    v = _smoke(task, None, cpu)
    assert v.status is Status.PASSED, v.message
    assert len(v.configs) == 2


def test_the_reference_contract(task):
    """The reference returns the outputs only and updates its copies of the inout inputs; the
    harness's inputs stay as they were."""
    from arena.check.inputs import ReferenceContractError, run_reference

    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 11, "cpu")
    before = ins["S"].clone()
    scalars = [task.scalar_value(s, env) for s in task.scalars]

    def good(S, x, g, decay, bias, rows, cols, clamp):
        S.mul_(2.0)
        return S.sum(dim=1)

    y, s_after = run_reference(good, task, ins, scalars)
    assert s_after.dtype == torch.float64 and torch.allclose(s_after, 2.0 * before.double())
    assert torch.equal(ins["S"], before)  # the reference got a copy
    with pytest.raises(ReferenceContractError, match="returned NoneType for output 'y'"):
        run_reference(lambda *a: None, task, ins, scalars)
    with pytest.raises(ReferenceContractError, match="returned 2 outputs, the signature has 1"):
        run_reference(lambda *a: (y, y), task, ins, scalars)


def test_randint_draws_float_inputs_of_integer_values_but_not_fp8_or_bool(copy):
    """Labels kept as floats (hinge targets in {-1, 1}) are randint with scale and offset; fp8 and bool are not."""
    edit(copy / "task.yaml", "{name: x, dtype: float32, shape: [rows, cols]}",
         "{name: x, dtype: float32, shape: [rows, cols], init: {kind: randint, high: 2, scale: 2.0, offset: -1.0}}")
    assert validate_task_dir(copy) == []
    edit(copy / "task.yaml", "{name: x, dtype: float32,", "{name: x, dtype: float8_e4m3fn,")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.x.init")
    assert "randint is for integer inputs and float inputs of integer values" in str(e)


# -- a compared tensor's own tolerance -------------------------------------------------------------

OWN_Y = ("{name: y, dtype: float32, shape: [rows], "
         "tolerance: {atol: 0.5, norm: 0.5, reason: the row sums may be off by a step}}")
Y_OFF = BASELINE.replace("    tl.store(y_ptr + r, tl.sum(acc, axis=0))",
                         "    tl.store(y_ptr + r, tl.sum(acc, axis=0) + 0.25)")
S_OFF = BASELINE.replace(STORE_S, "        tl.store(S_ptr + r * cols + c, new + 0.25, mask=m)\n")


def test_an_outputs_own_tolerance_holds_it_and_leaves_the_others_at_their_dtypes(copy, cpu, tmp_path):
    """Quantised values beside their scales, in one dtype: a tolerance per output. y's own atol (0.5) holds y; the
    state S, of the same dtype, is still held to float32's; the workspace's README says each."""
    assert Y_OFF != BASELINE and S_OFF != BASELINE
    plain = load_task(copy)
    v = _smoke(plain, _candidate(tmp_path, Y_OFF, "y_off.py"), cpu)
    assert v.status is Status.INCORRECT_NUMERICAL and v.message.startswith("y: "), v.message
    edit(copy / "task.yaml", "{name: y, dtype: float32, shape: [rows]}", OWN_Y)
    assert validate_task_dir(copy) == []
    task = load_task(copy)
    y, s = task.compared
    assert task.tolerance_of(y) == {**task.tolerance_for("float32"), "atol": 0.5, "norm": 0.5}
    assert task.tolerance_of(s) == task.tolerance_for("float32")
    v = _smoke(task, _candidate(tmp_path, Y_OFF, "y_off.py"), cpu)
    assert v.status is Status.PASSED, v.message
    v = _smoke(task, _candidate(tmp_path, S_OFF, "s_off.py"), cpu)
    assert v.status is Status.INCORRECT_NUMERICAL and v.message.startswith("S: "), v.message
    from arena.workspace import render_readme
    readme = render_readme(task)
    assert "y: {'atol': 0.5, 'rtol': 0.0001, 'norm': 0.5}" in readme
    assert "S: {'atol': 0.0001, 'rtol': 0.0001, 'norm': 1e-05}" in readme


def test_an_inout_inputs_own_tolerance_holds_its_update(copy, cpu, tmp_path):
    edit(copy / "task.yaml", "{name: S, dtype: float32, shape: [rows, cols], inout: true}",
         "{name: S, dtype: float32, shape: [rows, cols], inout: true, "
         "tolerance: {atol: 0.5, norm: 0.5, reason: a test of it}}")
    task = load_task(copy)
    v = _smoke(task, _candidate(tmp_path, S_OFF, "s_off.py"), cpu)
    assert v.status is Status.PASSED, v.message


def test_a_tolerance_where_nothing_is_compared_or_compared_with_one_is_named(copy):
    edit(copy / "task.yaml", "{name: x, dtype: float32, shape: [rows, cols]}",
         "{name: x, dtype: float32, shape: [rows, cols], tolerance: {atol: 0.5, reason: an input not compared}}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.inputs.x.tolerance")
    assert "an output, or an input with inout: true" in str(e)
    edit(copy / "task.yaml", ", tolerance: {atol: 0.5, reason: an input not compared}}", "}")
    edit(copy / "task.yaml", "{name: y, dtype: float32, shape: [rows]}",
         "{name: y, dtype: int32, shape: [rows], tolerance: {atol: 1, reason: counts that may be off by one}}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.outputs.y.tolerance")
    assert "int32 is compared exactly" in str(e)
    edit(copy / "task.yaml", "{name: y, dtype: int32, shape: [rows], tolerance: {atol: 1, reason: counts that may be "
                             "off by one}}", "{name: y, dtype: float32, shape: [rows], tolerance: {atol: 1}}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.outputs.0.tolerance.reason")
    assert "required key is missing" in str(e)
    edit(copy / "task.yaml", "tolerance: {atol: 1}}", "tolerance: {reason: a reason and nothing else}}")
    e = one_error(validate_task_dir(copy), copy / "task.yaml", "signature.outputs.y.tolerance")
    assert "sets none of atol, rtol, norm" in str(e)
