"""Poisoned outputs, the output comparison (arena/check/compare.py) and the inputs
(arena/check/inputs.py), on the CPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from arena.check.compare import _POISON_BITS, all_ok, check_tensors, compare_output, is_poison, poison_, same_bytes
from arena.check.inputs import DTYPES, draw_bytes, generator, input_seed, make_inputs, make_one
from arena.errors import ArenaError
from arena.records import Status
from arena.taskdef.loader import Config, InputSpec

REPO = Path(__file__).resolve().parents[1]
AXPY = REPO / "tests" / "fixtures" / "tasks" / "triton2triton" / "axpy"
FP32 = {"atol": 1e-4, "rtol": 1e-4, "norm": 1e-5}          # the fp32 defaults (CONTRIBUTING.md)
KERNELBENCH = {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-5}   # KernelBench's allclose tolerances + our norm


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- poison ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(_POISON_BITS), ids=str)
def test_poison_and_is_poison(dtype):
    t = torch.zeros(3, 5, dtype=dtype)
    assert not is_poison(t).any()
    assert poison_(t) is t                       # in place
    assert is_poison(t).all() and is_poison(t).shape == (3, 5)
    if dtype.is_floating_point:
        assert torch.isnan(t.float()).all()      # a NaN bit pattern of ours
    t[1, 2] = 1
    mask = is_poison(t)
    assert not mask[1, 2] and int(mask.sum()) == 14


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_a_computed_nan_is_not_poison(dtype):
    t = torch.full((4,), float("nan"), dtype=dtype)
    assert not is_poison(t).any()


def test_every_declared_output_dtype_can_be_poisoned():
    assert {d for name, d in DTYPES.items() if name != "bool"} == set(_POISON_BITS)


# -- compare_output ----------------------------------------------------------------------------------

def test_poisoned_element_is_output_unwritten():
    ref = torch.randn(4, 6, generator=gen(), dtype=torch.float64)
    out = ref.float()
    poison_(out[2:3, 4:5])
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.OUTPUT_UNWRITTEN
    assert r.where["index"] == [2, 4]
    assert r.mismatch_fraction == pytest.approx(1 / 24)
    assert "1 of 24" in r.message and r.message.startswith("y:")


def test_all_poisoned_is_output_unwritten():
    ref = torch.randn(100, generator=gen(), dtype=torch.float64)
    out = poison_(torch.empty(100))
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.OUTPUT_UNWRITTEN and r.mismatch_fraction == 1.0


def test_nan_where_the_reference_is_finite_is_nan_inf():
    ref = torch.randn(50, generator=gen(), dtype=torch.float64)
    out = ref.float()
    out[7] = float("nan")
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.NAN_INF
    assert r.where["index"] == [7] and r.where["candidate"] == "nan"
    out[7] = float("inf")
    assert compare_output("y", out, ref, FP32).status is Status.NAN_INF


def test_non_finite_reference_must_be_matched():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")], dtype=torch.float64)
    out = ref.float().clone()
    assert compare_output("y", out, ref, FP32).status is Status.PASSED
    out[2] = 3.0e38                              # finite where the reference is inf
    assert compare_output("y", out, ref, FP32).status is Status.INCORRECT_NUMERICAL


def test_small_relative_error_beyond_1e4_in_fp32():
    ref = torch.randn(1000, generator=gen(1), dtype=torch.float64) * 10
    out = (ref * (1 + 3e-4)).float()
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.INCORRECT_NUMERICAL
    assert r.max_rel_err == pytest.approx(3e-4, rel=1e-2)
    assert "outside atol=0.0001 rtol=0.0001" in r.message
    assert r.mismatch_fraction > 0.5


def test_within_tolerance_passes():
    ref = torch.randn(1000, generator=gen(1), dtype=torch.float64) * 10
    out = (ref * (1 + 1e-6)).float()
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.PASSED and r.message == ""
    assert r.max_abs_err < 1e-4 and r.norm_err < 1e-5 and r.mismatch_fraction == 0.0
    assert bool(all_ok(check_tensors(out, ref, FP32)))


def test_half_output_within_its_tolerance_passes():
    ref = torch.randn(64, 64, generator=gen(2))
    tol = {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-2}
    assert compare_output("y", ref.half(), ref, tol).status is Status.PASSED
    assert compare_output("y", (ref * 1.05).half(), ref, tol).status is Status.INCORRECT_NUMERICAL


def test_exact_comparison_for_integers():
    ref = torch.randint(-100, 100, (10, 10), generator=gen(3), dtype=torch.int32)
    assert compare_output("idx", ref.clone(), ref, None).status is Status.PASSED
    out = ref.clone()
    out[3, 4] += 1
    r = compare_output("idx", out, ref, None)
    assert r.status is Status.INCORRECT_NUMERICAL
    assert "exact" in r.message and r.where["index"] == [3, 4]
    assert r.where["candidate"] == int(ref[3, 4]) + 1 and r.where["reference"] == int(ref[3, 4])


def test_integer_unwritten_and_the_sentinel_as_a_real_value():
    ref = torch.arange(8, dtype=torch.int32)
    out = poison_(torch.empty(8, dtype=torch.int32))
    out[:7] = ref[:7]
    assert compare_output("idx", out, ref, None).status is Status.OUTPUT_UNWRITTEN
    # a reference value equal to the sentinel, computed by the candidate: written, and correct
    sentinel = _POISON_BITS[torch.int32][1]
    ref[7] = sentinel
    out[7] = sentinel
    assert compare_output("idx", out, ref, None).status is Status.PASSED


def softmax_logits(rows: int, cols: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(rows, cols, generator=gen(seed))
    return x, torch.softmax(x.double(), dim=-1)       # fp32 task: the reference in fp64


def test_correct_fp32_softmax_passes():
    x, ref = softmax_logits(64, 1024)
    r = compare_output("y", torch.softmax(x, dim=-1), ref, FP32)
    assert r.status is Status.PASSED and r.norm_err < 1e-6


def test_precision_downgrade_is_caught_by_the_norm_check():
    # an fp32 softmax computed through bfloat16, cast back
    x, ref = softmax_logits(64, 1024)
    out = torch.softmax(x.bfloat16(), dim=-1).float()
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.INCORRECT_NUMERICAL
    assert "norm error" in r.message and r.norm_err > 1e-3
    assert r.mismatch_fraction < 0.01               # elementwise alone lets almost all of it through
    loose = compare_output("y", out, ref, KERNELBENCH)
    assert loose.status is Status.INCORRECT_NUMERICAL
    assert loose.mismatch_fraction == 0.0 and "norm error" in loose.message


def test_constant_one_over_cols_is_caught():
    # the KernelBench failure: softmax over 32768 columns of N(0,1) logits, output 1/cols
    cols = 32768
    x, ref = softmax_logits(4, cols, seed=5)
    out = torch.full((4, cols), 1.0 / cols)
    r = compare_output("y", out, ref, FP32)
    assert r.status is Status.INCORRECT_NUMERICAL
    assert "norm error" in r.message and r.norm_err > 0.5
    assert r.mismatch_fraction < 0.05               # most elements are within atol 1e-4
    loose = compare_output("y", out, ref, KERNELBENCH)  # what KernelBench accepted
    assert loose.status is Status.INCORRECT_NUMERICAL and loose.mismatch_fraction == 0.0
    # and the correct kernel on the same data passes
    assert compare_output("y", torch.softmax(x, dim=-1), ref, FP32).status is Status.PASSED


def test_zero_dim_and_empty_outputs():
    ref = torch.tensor(2.0, dtype=torch.float64)
    assert compare_output("s", torch.tensor(2.0), ref, FP32).status is Status.PASSED
    r = compare_output("s", torch.tensor(3.0), ref, FP32)
    assert r.status is Status.INCORRECT_NUMERICAL and r.where["index"] == []
    assert compare_output("e", torch.empty(0, 4), torch.empty(0, 4, dtype=torch.float64), FP32).status \
        is Status.PASSED


# -- same_bytes --------------------------------------------------------------------------------------

def test_same_bytes():
    a = torch.randn(4, 5, generator=gen())
    assert same_bytes(a, a.clone())
    b = a.clone()
    b[0, 0] = torch.nextafter(b[0, 0], torch.tensor(float("inf")))
    assert not same_bytes(a, b)
    assert not same_bytes(a, a.reshape(5, 4))                       # shape
    assert not same_bytes(a, a.view(torch.int32))                   # dtype, same bits
    assert same_bytes(a.t(), a.t().contiguous())                    # layout does not matter
    z = torch.zeros(3)
    assert torch.equal(z, -z) and not same_bytes(z, -z)             # bits, not values
    n = poison_(torch.empty(3))
    assert not torch.equal(n, n.clone()) and same_bytes(n, n.clone())
    m = torch.tensor([True, False, True])
    assert same_bytes(m, m.clone()) and not same_bytes(m, ~m)


# -- inputs ------------------------------------------------------------------------------------------

def with_inputs(task, *specs: InputSpec):
    return dataclasses.replace(task, inputs=tuple(specs))


def env_of(task, **params):
    return task.env(Config("seen", 0, "c", params))


def test_make_inputs_is_reproducible_and_seeded(axpy):
    env = env_of(axpy, n=4096)
    a = make_inputs(axpy, env, 123, "cpu")
    b = make_inputs(axpy, env, 123, "cpu")
    c = make_inputs(axpy, env, 124, "cpu")
    assert list(a) == ["x", "y"]
    for k in a:
        assert torch.equal(a[k], b[k])
        assert not torch.equal(a[k], c[k])
    assert not torch.equal(a["x"], a["y"])


def test_default_and_declared_inits(axpy):
    env = env_of(axpy, n=20000)
    ins = make_inputs(axpy, env, 7, "cpu")
    x, y = ins["x"], ins["y"]
    assert x.dtype == y.dtype == torch.float32 and x.shape == y.shape == (20000,)
    assert abs(float(x.mean())) < 0.05 and abs(float(x.std()) - 1.0) < 0.05     # normal(0, 1)
    assert float(y.min()) >= -2.0 and float(y.max()) < 2.0                       # uniform(-2, 2)
    assert float(y.min()) < -1.9 and float(y.max()) > 1.9


@pytest.mark.parametrize("spec, check", [
    (InputSpec("a", "float16", ("n",), {"kind": "uniform", "low": 0.5, "high": 1.5}),
     lambda t: t.dtype == torch.float16 and bool((t >= 0.5).all() and (t <= 1.5).all())),
    (InputSpec("a", "float32", ("n",), {"kind": "uniform", "low": "n // 1000", "high": "n // 500"}),
     lambda t: bool((t >= 20).all() and (t < 40).all())),
    (InputSpec("a", "bfloat16", ("n",), {"kind": "ones_plus_noise"}),
     lambda t: t.dtype == torch.bfloat16 and abs(float(t.float().mean()) - 1) < 0.01
     and 0.05 < float(t.float().std()) < 0.15),
    (InputSpec("a", "float32", ("n",), {"kind": "ones_plus_noise", "std": 0.01}),
     lambda t: abs(float(t.mean()) - 1) < 0.001 and float(t.std()) < 0.02),
    (InputSpec("a", "float32", ("n",), {"kind": "normal", "mean": 5.0, "std": 2.0}),
     lambda t: abs(float(t.mean()) - 5) < 0.1 and abs(float(t.std()) - 2) < 0.1),
    (InputSpec("a", "float32", ("n",), {"kind": "normal", "scale": 0.5}),
     lambda t: abs(float(t.std()) - 0.5) < 0.03),
    (InputSpec("a", "int64", ("n",), {"kind": "randint", "low": 0, "high": 10}),
     lambda t: t.dtype == torch.int64 and int(t.min()) == 0 and int(t.max()) == 9),
    (InputSpec("a", "int32", ("n",), {"kind": "randint", "low": -3, "high": "n // 5000"}),   # high = 4
     lambda t: t.dtype == torch.int32 and int(t.min()) == -3 and int(t.max()) == 3),
    (InputSpec("a", "uint8", ("n",), {"kind": "randint", "high": 256}),
     lambda t: t.dtype == torch.uint8 and int(t.max()) == 255),
    (InputSpec("a", "float32", ("n",), {"kind": "randint", "high": 2, "scale": 2.0, "offset": -1.0}),  # hinge targets
     lambda t: t.dtype == torch.float32 and set(t.unique().tolist()) == {-1.0, 1.0}),
    (InputSpec("a", "bfloat16", ("n",), {"kind": "randint", "low": 1, "high": 4}),
     lambda t: t.dtype == torch.bfloat16 and set(t.unique().tolist()) == {1.0, 2.0, 3.0}),
    (InputSpec("a", "int64", ("n",), {"kind": "randint", "high": 3, "scale": 10, "offset": 1}),
     lambda t: t.dtype == torch.int64 and set(t.unique().tolist()) == {1, 11, 21}),
    (InputSpec("a", "float32", ("n",), {"kind": "normal", "std": 0.1, "offset": 3.0}),
     lambda t: abs(float(t.mean()) - 3) < 0.01),
    (InputSpec("a", "bool", ("n",), {"kind": "bernoulli", "p": 0.25}),
     lambda t: t.dtype == torch.bool and abs(float(t.float().mean()) - 0.25) < 0.02),
    (InputSpec("a", "bool", ("n",), {"kind": "bernoulli"}),
     lambda t: abs(float(t.float().mean()) - 0.5) < 0.02),
    (InputSpec("a", "int8", ("n",), {"kind": "normal", "std": 20.0}),
     lambda t: t.dtype == torch.int8 and int(t.abs().max()) > 30),
    (InputSpec("a", "float8_e4m3fn", ("n",), {"kind": "normal"}),
     lambda t: t.dtype == torch.float8_e4m3fn and bool(torch.isfinite(t.float()).all())),
], ids=lambda v: v.init["kind"] + "-" + v.dtype if isinstance(v, InputSpec) else "")
def test_init_kinds(axpy, spec, check):
    task = with_inputs(axpy, spec)
    env = env_of(task, n=20000)
    t = make_inputs(task, env, 11, "cpu")["a"]
    assert t.shape == (20000,) and t.dtype == DTYPES[spec.dtype]
    assert check(t)
    assert bool((t != 0).any())                      # never all zeros


@pytest.mark.parametrize("init, formula", [
    ({"kind": "normal", "std": 3.0, "mean": 0.5}, lambda g, n: torch.randn(n, generator=g) * 3.0 + 0.5),
    ({"kind": "uniform", "low": 0.6, "high": 1.4}, lambda g, n: torch.rand(n, generator=g) * (1.4 - 0.6) + 0.6),
    ({"kind": "ones_plus_noise"}, lambda g, n: 1.0 + torch.randn(n, generator=g) * 0.1),
    ({"kind": "normal", "scale": 7.0}, lambda g, n: torch.randn(n, generator=g) * 1.0 + 0.0),
], ids=["normal", "uniform", "ones_plus_noise", "scaled"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_a_draw_is_its_formula_in_fp32_rounded_once(init, formula, dtype):
    """make_one changes its fp32 draw in place (one buffer, not one per operation): the values
    are those of the formula computed in fp32, rounded once to the input's dtype."""
    n = 5000
    want = formula(generator(9, "cpu"), (n,))
    if "scale" in init:
        want = want * init["scale"]
    want = want.round().to(DTYPES[dtype]) if dtype == "int32" else want.to(DTYPES[dtype])
    got = make_one(InputSpec("a", dtype, (n,), init), (n,), {}, generator(9, "cpu"), "cpu")
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_draw_bytes_counts_the_largest_input_s_draw(axpy):
    """What drawing an input set holds beside its inputs (the memory account counts it in a
    check): an fp32 buffer for a narrower float input or a mask, an int64 one for narrower
    integers, two fp32 temporaries for a task's own make_inputs, nothing for an fp32 input or an
    absent one; the largest of them."""
    def task_of(*specs):
        return with_inputs(axpy, *specs)

    def one(dtype, init, shape=("n",)):
        return InputSpec("a", dtype, shape, init)

    env = {"n": 1000}
    assert draw_bytes(task_of(one("float32", {"kind": "normal"})), env) == 0
    assert draw_bytes(task_of(one("float16", {"kind": "normal"})), env) == 4 * 1000
    assert draw_bytes(task_of(one("bool", {"kind": "bernoulli"})), env) == 4 * 1000
    assert draw_bytes(task_of(one("int32", {"kind": "randint", "high": 5})), env) == 8 * 1000
    assert draw_bytes(task_of(one("int64", {"kind": "randint", "high": 5})), env) == 0
    assert draw_bytes(task_of(one("float32", {"kind": "randint", "high": 2, "scale": 2.0})), env) == 12 * 1000
    assert draw_bytes(task_of(one("float32", {"kind": "custom"})), env) == 8 * 1000
    small = InputSpec("b", "bfloat16", ("n // 10",), {"kind": "normal"})
    assert draw_bytes(task_of(one("float16", {"kind": "uniform"}, ("n", 3)), small), env) == 4 * 3000


def test_shapes_follow_the_signature(axpy):
    task = with_inputs(axpy, InputSpec("m", "float16", ("n // 100", 3, "2 * 4"), {"kind": "normal"}))
    t = make_inputs(task, env_of(task, n=1000), 0, "cpu")["m"]
    assert t.shape == (10, 3, 8) and t.dtype == torch.float16


def test_unknown_init_kind(axpy):
    spec = InputSpec("a", "float32", (4,), {"kind": "zeros"})
    with pytest.raises(ArenaError, match="unknown init kind"):
        make_one(spec, (4,), {}, generator(0, "cpu"), "cpu")


def test_custom_init_needs_make_inputs(axpy):
    task = with_inputs(axpy, InputSpec("a", "float32", ("n",), {"kind": "custom"}))
    with pytest.raises(ArenaError, match="make_inputs"):
        make_inputs(task, env_of(task, n=10), 0, "cpu", reference=None)


def test_each_input_has_its_own_generator(axpy):
    """Input k depends only on input_seed(seed, k): changing the seed of one position changes that
    input alone (the degeneracy check's sensitivity test relies on it)."""
    specs = (axpy.inputs[0], axpy.inputs[1], InputSpec("z", "float32", ("n",), {"kind": "normal"}))
    task = with_inputs(axpy, *specs)
    env = env_of(task, n=512)
    base = make_inputs(task, env, 42, "cpu")
    other = make_inputs(task, env, 42 + 7919, "cpu")
    for pos, spec in enumerate(specs):
        shape = task.shape(spec, env)
        mine = make_one(spec, shape, env, generator(input_seed(42, pos), "cpu"), "cpu")
        assert torch.equal(mine, base[spec.name])
        changed = make_one(spec, shape, env, generator(input_seed(42 + 7919, pos), "cpu"), "cpu")
        assert torch.equal(changed, other[spec.name]) and not torch.equal(changed, base[spec.name])
    # two inputs with the same init are still different (positions differ)
    assert not torch.equal(base["x"], base["z"])
    # appending an input leaves the earlier ones unchanged
    fewer = make_inputs(with_inputs(axpy, *specs[:2]), env, 42, "cpu")
    assert torch.equal(fewer["x"], base["x"]) and torch.equal(fewer["y"], base["y"])


def test_input_seed_is_distinct_per_position_and_seed():
    seeds = {input_seed(s, p) for s in range(50) for p in range(-1, 8)}
    assert len(seeds) == 50 * 9
    assert all(0 <= s < 2**63 - 1 for s in seeds)
    assert input_seed(2**62, 3) < 2**63 - 1


def test_a_mismatch_is_shown_at_the_element_that_fails_not_at_the_largest_allowed_error():
    """The largest error may be allowed (a large value's rounding) or 0 (-inf for -inf): the message and
    ``where`` name the element furthest past its allowance, and one where the reference is not finite and
    the candidate differs before any finite one."""
    ref = torch.tensor([1000.0, 0.0, 5.0, -float("inf")], dtype=torch.float64)
    out = torch.tensor([1000.05, 0.01, 5.0, -float("inf")])       # 0.05 allowed at 1000, 0.01 not at 0
    r = compare_output("y", out, ref, {"atol": 1e-3, "rtol": 1e-4, "norm": 1.0})
    assert r.status is Status.INCORRECT_NUMERICAL and r.where["index"] == [1]
    assert "1 of 4 elements" in r.message and "the worst at [1]" in r.message and "allowed" in r.message
    assert r.max_abs_err == pytest.approx(0.05, rel=1e-3)          # the statistics stay the largest error
    out[3] = -3.0                                                  # a finite value where the reference is -inf
    r = compare_output("y", out, ref, {"atol": 1e-3, "rtol": 1e-4, "norm": 1.0})
    assert r.where["index"] == [3] and r.where["reference"] == "-inf" and "not finite" in r.message
