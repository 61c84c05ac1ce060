"""`arena tasks import kernelbench|aka`: sample problems written here (tests/fixtures/importers/)
become task folders that load and validate, whose reference computes what the original
computes, and whose message lists what the author must still decide; bad inputs stop in one
line naming the file."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import sys
import types
from pathlib import Path
from typing import Iterable

import pytest
import torch
import yaml

from arena.authoring.importers.aka import import_aka
from arena.authoring.importers.common import ImportStop
from arena.authoring.importers.kernelbench import import_kernelbench
from arena.check.inputs import make_inputs, run_reference
from arena.cli import main
from arena.errors import ArenaError
from arena.evaluation.sides import import_file
from arena.taskdef.loader import load_task, validate_task_dir

FIX = Path(__file__).parent / "fixtures" / "importers"


@pytest.fixture(autouse=True)
def _scale_read_briefly(monkeypatch):
    """The outputs' scale and the range rule read on the configs 2 CPU seconds allow, not SCALE_SECONDS (10): these
    tests import fixtures whose cases are grown into the timing window, where the read takes every second it is given
    (inputs drawn at hundreds of MB on the CPU); the read's own tests give it the budget they test."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "SCALE_SECONDS", 2.0)
TOO_SMALL = "memory-bound but no config moves >= 100 MB"   # the check's rule of the sizes alone


def _found(result) -> list[str]:
    """What the importer's own check found but the rule of the sizes alone (``TOO_SMALL``, which it reads too): the
    fixtures are small, so that their imports are quick."""
    return [p for p in result.check_problems if TOO_SMALL not in p]


def _only_too_small(folder: Path) -> bool:
    """`arena tasks check --device cpu` of an AKA fixture imported with its cases as written (tiny, so
    that the import is quick): its one failure is that no config is large enough to time, a rule of
    the sizes alone; its reference and its starting kernel pass."""
    from arena.authoring.check import check_task
    from arena.devices import detect

    row = check_task(folder, detect("cpu"))
    return row.reference == "ok" and bool(re.fullmatch(r"smoke (\d+)/\1", row.baseline)) and \
        len(row.problems) == 1 and TOO_SMALL in row.problems[0]


def _module(path: Path, **constants):
    """The problem file as a module, with some of its constants changed (they are read at call time)."""
    spec = importlib.util.spec_from_file_location(f"problem_{path.stem}_{len(constants)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for k, v in constants.items():
        setattr(mod, k, v)
    return mod


def _reference_matches_forward(folder: Path, problem: Path, split: str = "seen", cls: str = "Model") -> float:
    """The task's reference and the original model's forward on the same inputs, for the first
    config of a split, on the CPU; the model's tensors are set to the signature's inputs."""
    task = load_task(folder)
    config = task.configs(split)[0]
    env = task.env(config)
    ins = make_inputs(task, env, 7, "cpu")
    ref = import_file(task.reference_path, f"ref_{folder.name}_{split}")
    got = ref.reference(*[t.clone() for t in ins.values()], *[task.scalar_value(s, env) for s in task.scalars])
    mod = _module(problem, **dict(config.params))
    init = mod.get_init_inputs()
    model = getattr(mod, cls)(*init)
    names = {re.sub(r"[^A-Za-z0-9_]", "_", n): n for n, _ in [*model.named_parameters(), *model.named_buffers()]}
    with torch.no_grad():
        for sig_name, path in names.items():
            if sig_name in ins:
                model.get_parameter(path).copy_(ins[sig_name]) if path in dict(model.named_parameters()) \
                    else model.get_buffer(path).copy_(ins[sig_name])
        forward_inputs = [ins[spec.name] for spec in task.inputs if spec.name not in names]
        want = model(*forward_inputs)
    assert got.shape == want.shape
    return (got - want).abs().max().item()


def _edited_fixture(tmp_path: Path, name: str, file: str, edits: Iterable[tuple[str, str]]) -> Path:
    """A copy of the importer fixture ``name`` under ``tmp_path``/src, its ``file`` edited (each pair's first text,
    which must be there, replaced by its second)."""
    src = tmp_path / "src" / name
    shutil.copytree(FIX / name, src)
    path = src / file
    text = path.read_text()
    for a, b in edits:
        assert a in text, a
        text = text.replace(a, b)
    path.write_text(text)
    return src


def _decisions(report: str) -> list[str]:
    tail = report.split("what you must still decide:\n", 1)[1]
    items = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    assert all(re.match(rf"{i}\. ", item) for i, item in enumerate(items, 1)), items
    return items


# ---- kernelbench ------------------------------------------------------------------------------


def test_kernelbench_linear_activation_becomes_a_valid_torch2hip_task(tmp_path):
    result = import_kernelbench(FIX / "kb_linear_gelu.py", tmp_path)
    folder = tmp_path / "torch2hip" / "kb_linear_gelu"
    assert result.folder == folder and result.ok, result.report()
    assert validate_task_dir(folder) == []
    task = load_task(folder)
    assert task.entry == "kb_linear_gelu" and task.kernel_file("baseline") is None     # torch2hip: no baseline
    # forward's tensor, then the Linear's parameters drawn like nn.Linear draws them, then the constants
    assert [(i.name, i.shape) for i in task.inputs] == [
        ("x", ("batch_size", "in_features")), ("proj_weight", ("out_features", "in_features")),
        ("proj_bias", ("out_features",))]
    assert dict(task.inputs[1].init) == {"kind": "uniform", "low": "-1 / sqrt(in_features)",
                                         "high": "1 / sqrt(in_features)"}
    assert [(o.name, o.shape) for o in task.outputs] == [("out", ("batch_size", "out_features"))]
    assert [(s.name, s.type, s.value) for s in task.scalars] == [
        ("batch_size", "int64", None), ("in_features", "int64", None), ("out_features", "int64", None),
        ("scale", "float32", 1.5)]
    # the seen config is the problem's own; the drafts are marked
    seen = task.configs("seen")
    assert dict(seen[0].params) == {"batch_size": 24, "in_features": 96, "out_features": 80}
    assert len(seen) >= 3 and len(task.configs("heldout")) >= 4
    text = (folder / "configs" / "heldout.yaml").read_text()
    assert all("DRAFT" in line for line in text.splitlines() if line.startswith("- "))
    assert "DRAFT" in (folder / "task.yaml").read_text()
    # the reference is forward written out, and computes what it computes
    assert "F.linear(x, proj_weight, proj_bias)" in task.reference_path.read_text()
    assert "self" not in task.reference_path.read_text().split("def reference", 1)[1]
    for split in ("seen", "heldout", "smoke"):
        assert _reference_matches_forward(folder, FIX / "kb_linear_gelu.py", split) < 1e-5
    report = result.report()
    assert "arena tasks validate: ok" in report and "reference.py computes what Model.forward computes" in report
    decisions = _decisions(report)
    assert any("shape_space is a draft" in d for d in decisions)
    assert any("heldout.yaml are drafts" in d for d in decisions)
    assert any("arena tasks check torch2hip/kb_linear_gelu --device cpu" in d for d in decisions)


def test_kernelbench_smoke_config_past_the_cpu_bound_is_left_to_a_gpu(tmp_path, monkeypatch):
    """The importer's own check runs the reference and the module on the CPU; a smoke config whose
    work (counted on the meta device) is past its bound is not run (a whole network at an image
    size its classifier fixes took minutes): the task is written, the check says why it was not
    made and who makes it."""
    import arena.authoring.importers.kernelbench as kb

    monkeypatch.setattr(kb, "SELF_CHECK_FLOPS", 1000)
    result = import_kernelbench(FIX / "kb_linear_gelu.py", tmp_path)
    assert result.ok and validate_task_dir(result.folder) == []
    assert not result.checks and len(_found(result)) == 1, result.report()
    assert "GFLOP, more than the importer checks on the CPU (0 GFLOP, 134 M parameters)" in _found(result)[0]
    assert "`arena tasks check` on a GPU" in _found(result)[0]


def test_kernelbench_a_draft_the_degeneracy_rules_refuse_is_dropped_where_enough_remain(tmp_path, monkeypatch):
    """As the AKA importer does (one function): a held-out draft whose outputs the degeneracy rules refuse (a
    spread a hair under the scaled atol on one aspect ratio) is taken out of heldout.yaml where 4 others remain,
    and the check says so; the import is then self-checked."""
    import arena.authoring.importers.kernelbench as kb

    real = kb.rounding_tolerance
    refused: list[str] = []

    def one_draft_refused(folder, d):
        decisions, degenerate = real(folder, d)
        refused.append(d.heldout[0]["name"])
        return decisions, [*degenerate, f"on heldout config {refused[0]}: out: std 0.000489 <= 0.0005"]

    monkeypatch.setattr(kb, "rounding_tolerance", one_draft_refused)
    result = import_kernelbench(FIX / "kb_linear_gelu.py", tmp_path)
    assert result.ok and not _found(result), result.report()
    task = load_task(result.folder)
    held = [c.name for c in task.configs("heldout")]
    assert refused and refused[0] not in held and len(held) >= 4
    said = f"1 config whose output is degenerate dropped (heldout {refused[0]};"
    assert any(c.startswith(said) for c in result.checks)


def test_kernelbench_module_that_does_not_run_on_the_meta_device_is_still_checked_on_the_cpu(tmp_path):
    """The bound on the importer's CPU check is counted on the meta device; a forward that reads a
    value on the host (.item()) cannot run there, and is checked on the CPU as before."""
    result = import_kernelbench(FIX / "kb_item_scale.py", tmp_path)
    assert result.ok and not _found(result), result.report()
    assert any("reference.py computes what Model.forward computes on the smoke config" in c for c in result.checks)


def test_kernelbench_sizes_written_as_numbers_become_parameters_with_held_out_drafts(tmp_path):
    """A problem with no module constants, its sizes written as numbers in get_inputs: each
    number becomes a config parameter (one number, one parameter, so a matmul's shared size
    stays shared), and held-out configs are drafted over them and checked against the original;
    a randint's bounds are values, not sizes, and stay as written."""
    src = FIX / "kb_literal_matmul.py"
    result = import_kernelbench(src, tmp_path)
    folder = tmp_path / "torch2hip" / "kb_literal_matmul"
    assert result.ok and validate_task_dir(folder) == [], result.report()
    task = load_task(folder)
    assert [(i.name, i.shape) for i in task.inputs] == [
        ("a", ("dim0", "dim1")), ("b", ("dim1", "dim2")), ("idx", ("dim0", "dim2"))]
    assert dict(task.configs("seen")[0].params) == {"dim0": 48, "dim1": 160, "dim2": 96}
    held = [dict(c.params) for c in task.configs("heldout")]
    assert len(held) >= 4 and any(c["dim0"] % 2 for c in held)          # an odd size among them
    for split in ("seen", "heldout", "smoke"):
        assert _reference_matches_forward(folder, src, split) < 1e-4
    assert any("dim0 = 48, dim1 = 160, dim2 = 96" in d for d in _decisions(result.report()))


def _imported(tmp_path, fixture: str):
    result = import_kernelbench(FIX / f"{fixture}.py", tmp_path)
    folder = tmp_path / "torch2hip" / fixture
    assert result.ok and validate_task_dir(folder) == [], result.report()
    return result, load_task(folder)


def _refused_draws(task, src: Path, n: int = 24) -> list[dict]:
    """Configs drawn from the task's shape space (as the random split draws) whose output shape the
    original model does not give (or that it refuses)."""
    from arena.taskdef.shapes import DrawLimits, draw_configs

    bad = []
    for c in draw_configs(task, n, 3, DrawLimits(max_tensor_bytes=1e15, max_roofline_bytes=1e18, max_flops=1e21)):
        mod = _module(src, **dict(c.params))
        try:
            with torch.device("meta"):
                out = mod.Model(*mod.get_init_inputs())(*mod.get_inputs())
        except Exception:  # noqa: BLE001 - refused by the original
            bad.append(dict(c.params))
            continue
        env = task.env(c)
        if tuple(out.shape) != task.shape(task.outputs[0], env):
            bad.append(dict(c.params))
    return bad


def test_kernelbench_an_axis_constant_is_not_probed_as_a_size(tmp_path):
    """``reduce_dim = 1`` picks an axis: doubling it reduces another one, and two probes fit a line to
    anything (the output's size was written ``4095 * reduce_dim - 4094`` and every drawn config refused)."""
    _, task = _imported(tmp_path, "kb_axis_sum")
    assert task.outputs[0].shape == ("batch_size", 1, "dim2")
    assert _refused_draws(task, FIX / "kb_axis_sum.py") == []


def test_kernelbench_a_strided_windows_quotient_gets_its_phase(tmp_path):
    """An 11-wide, stride-4 convolution: the probes at 64, 128 and 192 fit ``size // 4 - 1``, which is wrong
    for 171; the values just above the base tell the phase."""
    _, task = _imported(tmp_path, "kb_strided_conv")
    assert task.outputs[0].shape[2] == "(size + 1) // 4 - 1"
    assert task.shape(task.outputs[0], {"batch_size": 2, "size": 171})[2] == (171 + 4 - 11) // 4 + 1
    assert _refused_draws(task, FIX / "kb_strided_conv.py") == []


@pytest.mark.parametrize("fixture, constraint, multiples", [
    ("kb_group_norm", "features % num_groups == 0", {}),
    ("kb_avgpool", "height >= kernel_size and width >= kernel_size", {}),
    ("kb_padded_pool", "kernel_size >= 2 * padding", {}),
    ("kb_grouped_squeeze", "in_channels % groups == 0 and out_channels % (4 * groups) == 0", {}),
    ("kb_pool_unpool", None, {"height": 4, "width": 4}),
    ("kb_depthwise", None, {"out_channels": 128}),
])
def test_kernelbench_a_relation_the_original_needs_becomes_the_spaces_constraint(tmp_path, fixture, constraint,
                                                                                   multiples):
    """Draws from the draft shape_space that the original refuses: the one relation between two parameters
    that makes every refused draw valid is written as shape_space.constraint, and the author told; a size a number
    divides is drawn as a multiple of it (a depthwise convolution's output channels of 128 input channels: as a
    constraint, the random split's draws, which shun powers of two, met it in 1 of 5000 tries)."""
    from arena.taskdef.shapes import draw_configs

    result, task = _imported(tmp_path, fixture)
    assert task.shape_space.get("constraint") == constraint
    assert {k: v["multiple_of"] for k, v in task.shape_space.items() if isinstance(v, dict) and "multiple_of" in v} \
        == multiples
    said = [f"shape_space.{k}.multiple_of {m}" for k, m in multiples.items()] + \
        ([f"shape_space.constraint {constraint!r}"] if constraint else [])
    assert any(all(x in d for x in said) and "confirm" in d for d in _decisions(result.report())), said
    assert _refused_draws(task, FIX / f"{fixture}.py") == []
    assert len(draw_configs(task, 24, 5)) == 24
    assert len(task.configs("heldout")) >= 4


def test_kernelbench_pooling_sizes_with_a_padding_that_cannot_double_and_a_default_stride(tmp_path):
    """A padding at half the kernel cannot be doubled, so it was not among the window's roles and the
    output size stayed a number; an average pool's stride is its kernel."""
    _, task = _imported(tmp_path, "kb_pools")
    assert task.outputs[0].shape[2] == "length + 2 * padding - dilation * (kernel_size - 1)"
    assert _refused_draws(task, FIX / "kb_pools.py") == []
    _, task = _imported(tmp_path, "kb_avgpool")
    assert task.outputs[0].shape[2:] == ("(height - (kernel_size - 1) - 1) // kernel_size + 1",
                                         "(width - (kernel_size - 1) - 1) // kernel_size + 1")


def test_a_one_value_output_is_degenerate_only_where_drawing_the_inputs_again_leaves_it_in_tolerance(tmp_path):
    """A loss is one value: it has no spread (it was refused as "std 0" on every config). It is degenerate
    where a constant would pass: a mean over 8M uniform draws moves by ~1e-4 when they are drawn again, within
    float32's tolerance; over 2,048 it moves by far more."""
    from arena.check.degeneracy import load_reference, reference_problems
    from arena.taskdef.loader import Config

    result, task = _imported(tmp_path, "kb_mse")
    assert not _found(result), result.check_problems
    ref = load_reference(task)
    assert task.outputs[0].shape == ()
    small = Config("seen", 0, "small", {"batch_size": 32, "dim": 64})
    assert reference_problems(task, small, "cpu", ref) == []
    big = Config("seen", 1, "big", {"batch_size": 4096, "dim": 2048})
    problems = reference_problems(task, big, "cpu", ref)
    assert len(problems) == 1 and "is one value" in problems[0] and "a constant would pass" in problems[0]


def test_a_config_whose_few_values_several_draws_move_by_about_their_tolerance_is_refused(tmp_path):
    """Whether one redraw moves a one-value output past its tolerance is itself a draw: a mean squared error over
    1,048,576 uniform draws spreads by about 1.6 times its tolerance across draws, so one redraw passes it in some
    draws and not in others (rmsnorm's rsigma of one row so passed the CPU and failed an H200). The check reads it
    over several draws and refuses it where its spread is below 3 times the tolerance; it keeps it at 4,096 elements,
    where the spread is 25 times. The importer reads the rule at the configs' own sizes on the CPU and drops the
    configs it refuses; an output of many values is read by the spread rule, on one draw."""
    from arena.authoring.importers.common import drop_degenerate, few_values_at_sizes
    from arena.check.degeneracy import FEW_VALUES_MARGIN, REDRAW, load_reference, reference_problems

    _imported(tmp_path, "kb_mse")
    folder = tmp_path / "torch2hip" / "kb_mse"
    sizes = {"small": (64, 64), "big": (1024, 1024), "bigger": (2048, 2048)}
    (folder / "configs" / "seen.yaml").write_text(
        "".join(f"- {{name: {n}, batch_size: {b}, dim: {d}}}\n" for n, (b, d) in sizes.items()))
    task = load_task(folder)
    ref = load_reference(task)
    small, big = task.configs("seen")[:2]
    env = task.env(big)
    scalars = [task.scalar_value(s, env) for s in task.scalars]
    once = [float(run_reference(ref.reference, task, make_inputs(task, env, seed, "cpu", ref), scalars)[0])
            for seed in (1234, 1234 + REDRAW)]
    tol = task.tolerance_for("float32")
    # the check's seed and one redraw: moved past the tolerance, which one redraw alone would let through
    assert abs(once[0] - once[1]) > tol["atol"] + tol["rtol"] * abs(once[1])
    problems = reference_problems(task, big, "cpu", ref)
    assert len(problems) == 1 and "draws of the inputs move by" in problems[0], problems
    assert "a constant would pass" in problems[0]
    assert reference_problems(task, small, "cpu", ref) == []
    found = few_values_at_sizes(folder)
    assert [p.split(":")[0] for p in found] == ["on seen config big", "on seen config bigger"], found
    times = [float(re.search(r"([\d.]+) times its tolerance", p).group(1)) for p in found]
    assert all(t < FEW_VALUES_MARGIN for t in times), found
    draft = types.SimpleNamespace(seen=[{"name": n} for n in [*sizes, "a", "b"]],
                                  heldout=[{"name": f"h{i}"} for i in range(4)])
    assert drop_degenerate(draft, found) == [("seen", "big"), ("seen", "bigger")]
    # an output of many values is read by the spread rule, on one draw
    (folder / "reference.py").write_text((folder / "reference.py").read_text().replace(
        "torch.mean((predictions - targets) ** 2)", "((predictions - targets) ** 2).mean(-1)"))
    (folder / "task.yaml").write_text((folder / "task.yaml").read_text().replace(
        "{name: out, dtype: float32, shape: []}", "{name: out, dtype: float32, shape: [batch_size]}"))
    assert few_values_at_sizes(folder) == []


def test_kernelbench_constants_written_as_arithmetic_are_read_and_varied(tmp_path):
    """``M = 64 * 2`` and ``K = 2**7`` are the problem's constants like ``M = 128`` (before, a
    problem writing its sizes so had one seen config and no held-out one)."""
    import ast

    from arena.authoring.importers.common import literal_constants

    src = FIX / "kb_expr_sizes.py"
    assert literal_constants(ast.parse(src.read_text())) == {"M": 128, "K": 128, "half": 0.5}
    assert literal_constants(ast.parse("A = 2 ** 100000\nB = n * 2\nC = True\nD = -(3 << 2)\n")) == {"D": -12}
    result = import_kernelbench(src, tmp_path)
    folder = tmp_path / "torch2hip" / "kb_expr_sizes"
    assert result.ok and validate_task_dir(folder) == [], result.report()
    task = load_task(folder)
    assert [(i.name, i.shape) for i in task.inputs] == [("a", ("M", "K")), ("b", ("K", "dim0"))]
    assert len(task.configs("seen")) >= 3 and len(task.configs("heldout")) >= 4
    for split in ("seen", "heldout", "smoke"):
        assert _reference_matches_forward(folder, src, split) < 1e-4


def test_a_sliding_windows_output_size_is_written_as_its_formula():
    """A convolution's or pooling's output size follows its input's size, kernel, stride,
    padding and dilation in a way no affine or product formula writes; the importer fits
    PyTorch's formulas over the constants that change it (those absent are left out)."""
    from arena.authoring.importers.common import Fitter
    from arena.taskdef import formula

    def conv(q):
        return (q["height"] + 2 * q["pad"] - q["dil"] * (q["kernel"] - 1) - 1) // q["stride"] + 1

    base = {"height": 67, "kernel": 3, "stride": 2, "pad": 1, "dil": 1, "batch": 16}
    text = Fitter(base, conv).int_formula(lambda r: r, "out")
    assert text == "(height + 2 * pad - dil * (kernel - 1) - 1) // stride + 1"
    for h in (8, 31, 128):
        q = {**base, "height": h, "kernel": 5, "dil": 2}
        assert int(formula.evaluate(text, q)) == conv(q)

    def transposed(q):
        return (q["length"] - 1) * q["stride"] + (q["kernel"] - 1) + 1

    text = Fitter({"length": 100, "kernel": 3, "stride": 2}, transposed).int_formula(lambda r: r, "out")
    assert text == "(length - 1) * stride + (kernel - 1) + 1"

    def padded(q):      # a transposed convolution's output padding: a role of its own
        return (q["height"] - 1) * q["stride"] - 2 * q["padding"] + (q["kernel"] - 1) + q["output_padding"] + 1

    base = {"height": 128, "kernel": 3, "stride": 2, "padding": 1, "output_padding": 1}
    text = Fitter(base, padded).int_formula(lambda r: r, "out")
    assert text == "(height - 1) * stride - 2 * padding + (kernel - 1) + output_padding + 1"
    fit = Fitter({"length": 100, "kernel": 3}, lambda q: q["length"] * q["length"] % 97 + q["kernel"])
    assert fit.int_formula(lambda r: r, "odd") == 100 * 100 % 97 + 3 and fit.inexact


def test_a_sum_of_products_of_sizes_and_a_halved_size_is_written_as_its_formula():
    """vLLM's speculative-decoding tests size their token tensors by a sum over requests: ``num_reqs * (1 +
    num_spec)`` tokens, or ``sum(max_draft - j % 2 for j in range(batch))``, lengths that alternate. No product,
    affine or window formula writes those, and the size was kept as the number: the signature said 480 tokens at
    every config, and the reference refused the smoke config (its inputs made with 10). Now each is written as a
    sum of products of the sizes, a halved size as a floor division whose phase the values just above the base
    tell; a value that no such sum gives is still kept as the number and said to be."""
    from arena.authoring.importers.common import Fitter
    from arena.taskdef import formula

    def alternating(q):
        return sum(q["max_draft"] - j % 2 for j in range(q["batch"]))

    base = {"batch": 64, "max_draft": 8, "vocab": 1024}
    fit = Fitter(base, alternating)
    text = fit.int_formula(lambda r: r, "dimension 0 of draft_ids")
    assert text == "batch * max_draft - batch // 2" and not fit.inexact, (text, fit.inexact)
    for b, m in ((1, 1), (7, 3), (65, 5), (1000, 17)):
        assert formula.evaluate(text, {**base, "batch": b, "max_draft": m}) == alternating({"batch": b, "max_draft": m})
    odd_first = Fitter(base, lambda q: q["batch"] * q["max_draft"] + (q["batch"] + 1) // 2)
    assert odd_first.int_formula(lambda r: r) == "batch * max_draft + (batch + 1) // 2"
    fit = Fitter({"num_reqs": 64, "num_spec": 4, "seq": 1024}, lambda q: q["num_reqs"] * (1 + q["num_spec"]))
    assert fit.int_formula(lambda r: r) == "num_reqs * num_spec + num_reqs"
    three = Fitter({"a": 6, "b": 4, "c": 10}, lambda q: 3 * q["a"] * q["b"] * q["c"] + q["a"] * q["c"] - 2 * q["b"] + 7)
    assert three.int_formula(lambda r: r) == "3 * a * b * c + a * c - 2 * b + 7"
    fit = Fitter({"a": 64, "b": 4}, lambda q: q["a"] * q["b"] + q["a"] * q["a"] % 97)
    assert fit.int_formula(lambda r: r, "odd") == 64 * 4 + 64 * 64 % 97 and "cannot write" in fit.inexact[0]


def test_lifting_sizes_leaves_values_small_numbers_and_taken_names_alone():
    import ast

    from arena.authoring.importers.kernelbench import lift_literal_sizes

    tree = ast.parse("dim0 = 3\n"
                     "def get_inputs():\n"
                     "    return [torch.randn(4, 4096), torch.randint(0, 100, (4096, 16)), torch.full((32,), 9.0)]\n"
                     "def get_init_inputs():\n"
                     "    return [64, 2, 0.5]\n")
    funcs = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    lifted_tree, lifted = lift_literal_sizes(tree, funcs)
    assert lifted == {"dim1": 4096, "dim2": 16, "dim3": 32, "dim4": 64}
    text = ast.unparse(lifted_tree)
    assert "torch.randn(4, dim1)" in text and "torch.randint(0, 100, (dim1, dim2))" in text
    assert "torch.full((dim3,), 9.0)" in text and "return [dim4, 2, 0.5]" in text


def test_kernelbench_conv_and_norm(tmp_path):
    result = import_kernelbench(FIX / "kb_conv_groupnorm.py", tmp_path, task_id="conv_gn_tanh")
    folder = tmp_path / "torch2hip" / "conv_gn_tanh"
    assert result.ok, result.report()
    task = load_task(folder)
    by_name = {i.name: i for i in task.inputs}
    assert set(by_name) == {"x", "conv_weight", "conv_bias", "norm_weight", "norm_bias", "bias"}
    fan = "in_channels * kernel_size * kernel_size"
    assert dict(by_name["conv_weight"].init) == {"kind": "uniform", "low": f"-1 / sqrt({fan})",
                                                 "high": f"1 / sqrt({fan})"}
    assert by_name["norm_weight"].init["kind"] == "ones_plus_noise"
    assert dict(by_name["bias"].init) == {"kind": "normal", "std": 0.02}       # torch.randn(bias_shape) * 0.02
    assert by_name["bias"].shape == ("out_channels", 1, 1)
    # the output size of a padded convolution follows two constants
    assert task.outputs[0].shape == ("batch_size", "out_channels", "height - kernel_size + 3",
                                     "width - kernel_size + 3")
    ref_text = task.reference_path.read_text()
    assert "F.conv2d(" in ref_text and "F.group_norm(x, num_groups, norm_weight, norm_bias, 1e-05)" in ref_text
    for split in ("seen", "heldout"):
        assert _reference_matches_forward(folder, FIX / "kb_conv_groupnorm.py", split) < 1e-4
    decisions = _decisions(result.report())
    # the divisibility GroupNorm needs is found by drawing (the original refuses draws without it), and said
    assert task.shape_space["constraint"] == "out_channels % num_groups == 0"
    assert any("'out_channels % num_groups == 0' is the importer's" in d for d in decisions)
    assert not any("rejected by the original" in d for d in decisions)
    # what the importer cannot know is said, not guessed: the zero-initialised bias
    assert any("norm_bias" in d and "zeros" in d for d in decisions)
    # the counter's FLOPs are no product of the constants (the output's height is height - kernel_size + 3): they
    # are one per output element, a product of the constants, times the output's elements
    assert task.roofline["flops"] == ("2 * in_channels * kernel_size * kernel_size * batch_size * out_channels"
                                      " * (height - kernel_size + 3) * (width - kernel_size + 3)")
    assert not any("roofline.flops" in d for d in decisions)


def test_kernelbench_module_without_a_functional_form_is_called_through_the_model(tmp_path):
    problem = tmp_path / "residual_stack.py"
    problem.write_text('''import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.reset_parameters()

    def reset_parameters(self):          # initialisation may draw and write: only what forward runs must be pure
        nn.init.normal_(self.fc.weight, std=0.02)

    def forward(self, x):
        return torch.tanh(self.fc(x)) + x


class Model(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


batch = 12
dim = 40
depth = 2


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [dim, depth]
''')
    result = import_kernelbench(problem, tmp_path / "out")
    assert result.ok, result.report()
    folder = result.folder
    assert "torch.func.functional_call" in (folder / "reference.py").read_text()
    assert _reference_matches_forward(folder, problem) < 1e-5
    decisions = _decisions(result.report())
    assert any("functional_call" in d for d in decisions)
    assert any("changes with depth" in d for d in decisions)
    assert any("re-initialises tensors (nn.init.normal_ (line" in d for d in decisions)
    assert load_task(folder).shape_space["depth"] == {"choices": [2]}


def test_kernelbench_model_whose_init_reads_values_is_built_where_the_inputs_are(tmp_path):
    """A module called through the model whose __init__ reads a tensor's value (Swin's drop-path
    rates: ``.item()`` of a linspace) cannot be built on the meta device: the reference builds it
    where the inputs are instead, and matches the original's forward."""
    problem = tmp_path / "rated_stack.py"
    problem.write_text('''import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, rate):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.rate = rate

    def forward(self, x):
        return torch.tanh(self.fc(x)) * (1.0 - self.rate) + x


class Model(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        rates = [r.item() for r in torch.linspace(0, 0.2, depth)]
        self.blocks = nn.ModuleList([Block(dim, rates[i]) for i in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


batch = 12
dim = 40
depth = 3


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [dim, depth]
''')
    result = import_kernelbench(problem, tmp_path / "out")
    assert result.ok, result.report()
    assert _reference_matches_forward(result.folder, problem) < 1e-5
    assert "torch.func.functional_call" in (result.folder / "reference.py").read_text()


PROBLEM = '''import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.drop = nn.Dropout({p})
        self.count = 0

    def forward(self, x):
{body}


n = 16


def get_inputs():
    return [torch.randn(4, n)]
{init}
'''


@pytest.mark.parametrize("case, expected", [
    (dict(cls="Net"), "no `class Model(nn.Module)`"),
    (dict(init="", inputs=False), "no get_inputs()"),
    (dict(body="        return self.lin(x) * torch.rand_like(x)"), "draws random numbers (torch.rand_like, line 13)"),
    (dict(body="        return torch.nn.functional.dropout(self.lin(x), 0.1)"), "draws random numbers"),
    (dict(body="        return self.drop(self.lin(x))", p="0.25"), "self.drop (Dropout) with p=0.25 in training mode"),
    (dict(body="        self.count += 1\n        return self.lin(x)"),
     "assigns self.count (line 13): that is module state"),
    (dict(body="        x.mul_(2)\n        return self.lin(x)"), "writes into its input x in place"),
    (dict(body="        return self.lin(x).sum().item()"), "returns a float, not a tensor"),
    (dict(body="        return self.lin(x) * args[0]", args=True), "Model.forward reads *args (line 12)"),
])
def test_kernelbench_bad_problems_stop_in_one_line_naming_the_file(tmp_path, capsys, case, expected):
    text = PROBLEM.format(cls=case.get("cls", "Model"), p=case.get("p", "0.0"),
                          body=case.get("body", "        return self.lin(x)"),
                          init=case.get("init", "\n\ndef get_init_inputs():\n    return [n]"))
    if case.get("args"):
        text = text.replace("def forward(self, x):", "def forward(self, x, *args):")
    if case.get("inputs") is False:
        text = text.replace("def get_inputs():\n    return [torch.randn(4, n)]\n", "")
    problem = tmp_path / "bad_problem.py"
    problem.write_text(text)
    with pytest.raises(ImportStop) as err:
        import_kernelbench(problem, tmp_path / "out")
    assert expected in str(err.value) and str(problem) in str(err.value)
    assert not (tmp_path / "out").exists()
    rc = main(["tasks", "import", "kernelbench", str(problem), "--out", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert rc == 2 and out.out == ""
    assert len(out.err.strip().splitlines()) == 1 and "bad_problem.py" in out.err and "Traceback" not in out.err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU runs the check there")
def test_kernelbench_import_on_a_gpu_this_machine_lacks_says_so_in_one_line(tmp_path, capsys):
    """``arena tasks import kernelbench --device cuda`` runs the importer's own check on a GPU (a network past what a
    CPU core checks: KernelBench's VGGs); on a machine without one it says so in one line and writes nothing."""
    rc = main(["tasks", "import", "kernelbench", str(FIX / "kb_mse.py"), "--out", str(tmp_path / "out"),
               "--device", "cuda"])
    out = capsys.readouterr()
    assert rc == 2 and len(out.err.strip().splitlines()) == 1, out.err
    assert "cuda" in out.err and "not available" in out.err and "Traceback" not in out.err
    assert not (tmp_path / "out").exists()


def test_kernelbench_a_forward_whose_star_args_are_never_read_imports_with_its_named_parameters(tmp_path):
    """AKA's gpumode modules take ``forward(self, x_1, x_2, *args, fn=None)``: what get_inputs() gives fills the
    named parameters, ``*args`` and ``fn`` stay empty, and the task's inputs are the named ones (the forward that
    reads ``*args`` is refused: test_kernelbench_bad_problems_stop_in_one_line_naming_the_file)."""
    problem = tmp_path / "star_args.py"
    problem.write_text(PROBLEM.format(cls="Model", p="0.0", body="        return self.lin(x) * y",
                                      init="\n\ndef get_init_inputs():\n    return [n]")
                       .replace("def forward(self, x):", "def forward(self, x, y, *args, fn=None, **kwargs):")
                       .replace("return [torch.randn(4, n)]", "return [torch.randn(4, n), torch.randn(4, n)]"))
    result = import_kernelbench(problem, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(tmp_path / "out" / "torch2hip" / "star_args")
    assert [s.name for s in task.inputs][:2] == ["x", "y"] and "args" not in {s.name for s in task.inputs}
    problem.write_text(problem.read_text().replace("return [torch.randn(4, n), torch.randn(4, n)]",
                                                   "return [torch.randn(4, n), torch.randn(4, n), torch.randn(4, n)]"))
    with pytest.raises(ImportStop, match=r"get_inputs\(\) gives 3 values but Model.forward takes 2"):
        import_kernelbench(problem, tmp_path / "out3")


def test_kernelbench_a_dropout_of_probability_zero_is_the_identity(tmp_path):
    """KernelBench's ViT and GoogleNet call ``self.dropout(x)`` on an ``nn.Dropout(0.0)``: the identity, no random
    number drawn, so the problem imports; a dropout called with p = 0 too. Of probability 0.25 it is refused."""
    init = "\n\ndef get_init_inputs():\n    return [n]"
    for i, (body, p) in enumerate([("        return self.dropout(self.lin(x))", "0.0"),
                                   ("        return torch.nn.functional.dropout(self.lin(x), 0.0)", "0.5"),
                                   ("        return torch.nn.functional.dropout(self.lin(x), p=0)", "0.5")]):
        problem = tmp_path / f"p{i}.py"
        text = PROBLEM.format(cls="Model", p=p, body=body, init=init)
        problem.write_text(text.replace("self.drop =", "self.dropout ="))
        assert import_kernelbench(problem, tmp_path / f"out{i}").ok, body
    problem = tmp_path / "p_random.py"
    problem.write_text(PROBLEM.format(cls="Model", p="0.25", body="        return self.dropout(self.lin(x))",
                                      init=init).replace("self.drop =", "self.dropout ="))
    with pytest.raises(ImportStop, match=r"draws random numbers \(self\.dropout, line 13\)"):
        import_kernelbench(problem, tmp_path / "out_random")


def test_kernelbench_statements_whose_results_are_not_returned_are_left_out(tmp_path):
    """A forward that decodes through ``self.dec`` and returns the encoder's output: the decoder's line is left out
    of the reference, its weights out of the signature (inputs the outputs would not depend on, which the
    degeneracy rules refuse), and the report says which line."""
    result, task = _imported(tmp_path, "kb_dead_decoder")
    names = [s.name for s in task.inputs]
    assert [n for n in names if n.startswith("enc")] and not [n for n in names if n.startswith("dec")], names
    assert "Model.forward computes what it does not return (line 15)" in result.report()
    assert "self.dec" not in (tmp_path / "torch2hip" / "kb_dead_decoder" / "reference.py").read_text()
    assert not [p for p in result.report().splitlines() if "do not depend on" in p]


def test_kernelbench_a_forward_run_as_written_leaves_out_its_dead_lines_and_the_tensors_only_they_read(tmp_path):
    """An LSTM called with a tuple is not translated: the reference builds the model and runs its forward. That
    forward decodes its last step through ``self.fc`` and returns the hidden state: the line is blanked in the
    reference's copy of the class, and the tensors the forward's live lines read (recorded as it runs once) are the
    inputs, so the decoder's weights are none (the outputs would not depend on them, which the degeneracy rules
    refuse). The LSTM, which PyTorch runs as one fused operator on the CPU, counts in the FLOPs (it counted as
    nothing: a recurrence of 31 GFLOP read as memory-bound)."""
    result, task = _imported(tmp_path, "kb_lstm_hidden")
    names = [s.name for s in task.inputs]
    assert names[:3] == ["x", "h0", "c0"] and [n for n in names if n.startswith("lstm_")], names
    assert not [n for n in names if n.startswith("fc")], names
    report = result.report()
    assert "Model.forward computes what it does not return (line 16)" in report
    assert "the model's parameters fc.weight, fc.bias are not used by forward: left out of the signature" in report
    assert "through torch.func.functional_call" in report
    ref = (tmp_path / "torch2hip" / "kb_lstm_hidden" / "reference.py").read_text()
    assert "self.fc(" not in ref and "self.lstm(x, (h0, c0))" in ref
    assert "reference.py computes what Model.forward computes" in report
    assert not [p for p in report.splitlines() if "do not depend on" in p], report
    env = task.env(task.configs("seen")[0])
    flops, _ = task.roofline_for(task.configs("seen")[0])
    # per step of each sequence, each layer: 2 x (4 hidden x its input + 4 hidden x hidden)
    steps = env["batch_size"] * env["sequence_length"]
    h, i = env["hidden_size"], env["input_size"]
    assert flops >= 2 * steps * (4 * h * i + 4 * h * h + 4 * h * h + 4 * h * h), (flops, env)


def test_kernelbench_a_first_meta_run_slowed_by_one_time_costs_keeps_the_probes_on_the_meta_device(tmp_path,
                                                                                                  monkeypatch):
    """A forward slower than META_SLOW_S on the meta device is probed on the CPU; the first run in a process counts
    one-time costs (the operators' first dispatch, the FLOP counter's first use): KernelBench's VGG16 took 1.5 CPU s
    on one machine and 4 on another, where its second run took 0.02, and on the second its probes ran on the CPU and
    its outputs' scale went unmeasured (then refused as near-constant at the default atol). Such a run is timed
    again: here the first costs 0.5 CPU s more, the bound is 0.2 s, and the probes stay on the meta device."""
    import time

    import arena.authoring.importers.kernelbench as kb

    monkeypatch.setattr(kb, "META_SLOW_S", 0.2)
    real, first = kb.ModuleProblem.run, []

    def run(self, params, device="meta"):
        if device == "meta" and not first:
            first.append(True)
            t = time.process_time()
            while time.process_time() - t < 0.5:
                pass
        return real(self, params, device)

    monkeypatch.setattr(kb.ModuleProblem, "run", run)
    result, _ = _imported(tmp_path, "kb_linear_gelu")
    assert first and "every probe ran on the CPU" not in result.report(), result.report()


@pytest.mark.parametrize("fixture", ["kb_lstm_hidden", "kb_attention_widths"])
def test_kernelbench_a_reference_that_calls_the_model_builds_it_once_for_its_sizes(tmp_path, fixture):
    """A forward that is not translated runs through the problem's own Model, which the reference built on every
    call: a network's __init__ (KernelBench's SwinV2: 29-58 ms on an H200, its weights drawn there) was timed as
    part of its forward, and its eager starting point was past the timing window at every batch. The model is now
    built once for a config's sizes (and the inputs' device and dtype) and kept, the last one only; what the
    reference computes is the same call after call. Sizes given as a list (a ResNet's layers) key it too."""
    result, task = _imported(tmp_path, fixture)
    assert "through torch.func.functional_call" in result.report()
    ref = import_file(task.reference_path, "arena_test_built_once")
    built = []
    init = ref.Model.__init__

    def counted(self, *args, **kwargs):
        built.append(args)
        init(self, *args, **kwargs)

    ref.Model.__init__ = counted
    outs = []
    for config in [task.configs("seen")[0], task.configs("seen")[0], task.configs("heldout")[0]]:
        env = task.env(config)
        ins = make_inputs(task, env, 0, "cpu", ref)
        outs.append(run_reference(ref.reference, task, ins, [task.scalar_value(s, env) for s in task.scalars])[0])
    assert len(built) == 2, built       # the first config's model once, then the held-out config's
    assert torch.equal(outs[0], outs[1])
    assert len(ref._built) == 1


def test_kernelbench_rounding_is_measured_on_a_config_shrunk_by_the_importers_own_count_of_its_flops(tmp_path,
                                                                                                        monkeypatch):
    """A network's FLOP count is no formula of its sizes (a strided convolution's output is (size - 3) // 2 + 1
    wide): the roofline holds the seen config's number for every config, and a config with its batch halved read as
    no less work, so where every config is past what the CPU measures, the fp32 rounding was not measured (ResNet-101
    then failed the default tolerance on a GPU, 543 of 10,000 logits). The importer's own count of each config's
    FLOPs (the original run once on it) now decides: the batch is halved until a config fits, the length of the sums
    each output needs unchanged."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "ROUNDING_FLOPS", 500_000)   # the largest config needs 3.6 M, with a batch of 1 450 k
    measured = []   # the batch of each config the reference is run on in fp32 to measure its rounding
    real = common._fp32_outputs
    monkeypatch.setattr(common, "_fp32_outputs", lambda ref, ins, scalars, *tf32: measured.append(ins["x"].shape[0])
                        or real(ref, ins, scalars, *tf32))
    result, task = _imported(tmp_path, "kb_strided_net")
    assert "roofline.flops is the count of the seen config" in result.report()
    assert min(c.params["batch_size"] for c in [*task.configs("seen"), *task.configs("heldout")]) >= 4
    assert measured and measured[0] == 1, measured


def test_kernelbench_a_buffer_the_module_makes_from_its_sizes_is_made_by_the_reference(tmp_path):
    """A causal mask ``__init__`` registers from its largest length (no random number): the reference makes it as
    ``__init__`` does, from the constant ``get_init_inputs`` passes, and it is no input (drawn at random, its
    ``== 0`` would never hold and the outputs would not depend on it, which the degeneracy rules refuse)."""
    result, task = _imported(tmp_path, "kb_causal_mask")
    assert [s.name for s in task.inputs] == ["scores"]
    ref = (tmp_path / "torch2hip" / "kb_causal_mask" / "reference.py").read_text()
    assert "mask = torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, max_seqlen, max_seqlen)" in ref
    assert "the model's buffer self.mask is made by its __init__ from its sizes alone" in result.report()
    assert "reference.py computes what Model.forward computes" in result.report()
    assert not [p for p in result.report().splitlines() if "do not depend on" in p]


def test_kernelbench_a_buffer_a_submodule_makes_from_the_sizes_it_is_given_is_made_by_the_reference(tmp_path):
    """The mask is a submodule's (``self.attn = MaskedAttention(hidden, length=2 * max_len)``, a class of the
    problem's file): its ``__init__``'s arguments are read through the call that makes it, and the reference makes
    the buffer from the problem's constants. Before, only the model's own buffers were made, and KernelBench's
    MiniGPT block's mask was an input drawn at random, on which its outputs did not depend (refused). The length
    sizes only the mask, so it is not varied: the held-out configs vary the sizes the kernel sees."""
    result, task = _imported(tmp_path, "kb_block_causal_mask")
    assert "attn_bias" not in [s.name for s in task.inputs]
    ref = (tmp_path / "torch2hip" / "kb_block_causal_mask" / "reference.py").read_text()
    assert ("attn_bias = torch.tril(torch.ones(2 * max_seqlen, 2 * max_seqlen)).view(1, 2 * max_seqlen, "
            "2 * max_seqlen)") in ref
    assert "'attn.bias': attn_bias" in ref
    report = result.report()
    assert "the model's buffer self.attn.bias is made by its __init__ from its sizes alone" in report
    assert "max_seqlen sizes only the buffers the reference makes" in report
    assert "reference.py computes what Model.forward computes" in report
    assert not [p for p in report.splitlines() if "do not depend on" in p]
    held = task.configs("heldout")
    assert len(held) >= 4 and {c.params["max_seqlen"] for c in [*held, *task.configs("seen")]} == {64}
    assert len({c.params["seq_len"] for c in held}) >= 3


def test_kernelbench_an_argument_the_forward_draws_where_it_is_not_given_is_an_input(tmp_path):
    """KernelBench's level-3 LSTM draws its initial state, ``if h0 is None: h0 = torch.randn(...)``, and get_inputs()
    does not give it: the forward's output was random, and the import was refused. The argument is now an input,
    drawn as the forward draws it (its shape read off the forward's own lines), and the reference is the forward
    given it, with no draw of its own."""
    result, task = _imported(tmp_path, "kb_drawn_initial_state")
    assert [s.name for s in task.inputs][:2] == ["x", "h0"], task.inputs
    h0 = task.inputs[1]
    assert tuple(h0.shape) == ("batch_size", "hidden_size") and h0.init["kind"] == "normal", h0
    report = result.report()
    assert "get_inputs() does not give forward's h0, which forward draws at random where it is not given (line " \
        in report, report
    assert "reference.py computes what Model.forward computes" in report
    ref = (tmp_path / "torch2hip" / "kb_drawn_initial_state" / "reference.py").read_text()
    assert "randn" not in ref and "h0" in ref


def test_kernelbench_module_state_the_forward_overwrites_before_it_reads_it_is_a_local(tmp_path):
    """KernelBench's level-3 VanillaRNN keeps its hidden state on the module, but copies the ``initial_hidden``
    get_inputs() gives into it before reading it: no value passes from one call to the next, and the state is a
    local of the reference (the import was refused: "updates module state in place"). Where get_inputs() does not
    give it, the state made in __init__ and written by the last call is read: still refused."""
    result, task = _imported(tmp_path, "kb_overwritten_state")
    assert [s.name for s in task.inputs][:2] == ["x", "initial_hidden"], task.inputs
    report = result.report()
    assert "forward overwrites the module state self.hidden from its inputs before it reads it" in report, report
    assert "reference.py computes what Model.forward computes" in report
    ref = (tmp_path / "torch2hip" / "kb_overwritten_state" / "reference.py").read_text()
    assert "self.hidden" not in ref and "initial_hidden.clone()" in ref
    carried = tmp_path / "carried_state.py"
    carried.write_text((FIX / "kb_overwritten_state.py").read_text().replace(
        "return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]",
        "return [torch.rand(batch_size, input_size)]"))
    with pytest.raises(ImportStop, match=r"Model\.forward assigns self\.hidden \(line \d+\): that is module state"):
        import_kernelbench(carried, tmp_path / "out")


def test_kernelbench_a_size_no_formula_follows_is_fixed_and_sizes_unpacked_in_one_statement_are_varied(tmp_path):
    """A DenseNet's growth rate (a number get_init_inputs writes) sets channel counts through halving transitions no
    formula of the importer writes, so the signature keeps them as numbers and no config that changes the growth
    rate matches it: it is kept fixed (before, every seen draft doubled or halved it, the original refused each, and
    the task had one seen config; the shape_space drew it too, and every draw was refused). The image's sides,
    ``height, width = 48, 40``, are constants of their own and are varied (before, they were numbers in x's shape)."""
    result, task = _imported(tmp_path, "kb_dense_transition")
    report = result.report()
    assert "dim0 changes tensors' shapes in a way no formula here writes" in report
    assert tuple(task.inputs[0].shape) == ("batch_size", 3, "height", "width")
    configs = [*task.configs("seen"), *task.configs("heldout")]
    assert len(task.configs("seen")) >= 3 and len(task.configs("heldout")) >= 4
    assert {c.params["dim0"] for c in configs} == {12}
    assert len({(c.params["height"], c.params["width"]) for c in configs}) >= 5
    assert task.shape_space["dim0"] == {"choices": [12]}
    assert _refused_draws(task, FIX / "kb_dense_transition.py") == []


def test_seen_drafts_vary_the_next_size_where_the_original_refuses_the_largests():
    """The seen drafts double and halve the largest size; where the original refuses every such draft (a size it
    ties to its weights), they vary the next size instead of leaving one seen config. And the held-out aspect
    draft is the pair of sizes that keeps the work nearest the base's: a classifier's width quartered and the batch
    quadrupled is four times a network's work (KernelBench's ShuffleNet: 53.5 ms on an H200, past the window)."""
    from arena.authoring.importers.common import draft_configs

    base = {"classes": 1000, "height": 224, "width": 224, "batch": 10}

    def size(c):    # the network's activations: the batch times the image; the classifier barely counts
        return c["batch"] * 3 * c["height"] * c["width"] + c["batch"] * c["classes"]

    def valid(c):
        return c["classes"] == 1000 or c == base

    seen, held, _, _, _ = draft_configs(base, list(base), valid, size, "problem", nbytes=lambda c: 4 * size(c))
    assert [s["name"] for s in seen] == ["problem", "draft-x2", "draft-half"]
    assert [s["height"] for s in seen] == [224, 448, 112] and {s["classes"] for s in seen} == {1000}
    assert [s["#"] for s in seen[1:]] == ["DRAFT: height doubled", "DRAFT: height halved"]
    aspect = next(h for h in held if h["name"] == "draft-aspect")
    assert 0.5 <= size(aspect) / size(base) <= 2, aspect


def test_kernelbench_a_smoke_config_degenerate_where_it_is_shrunk_that_far_is_grown_back(tmp_path):
    """A softmax over a width pooled eight times narrower: the smoke config shrunk to a width of 8 takes it over one
    value, every output 1, and the convolution before it is read by nothing (the self-check refused KernelBench's
    UNet with softmax so: "the outputs do not depend on input bottleneck_double_conv_0_weight"). Where the smoke
    config's outputs are degenerate, one of its sizes is doubled (or made four times as large), the smallest such
    config first, until they are not."""
    result, task = _imported(tmp_path, "kb_pooled_softmax")
    assert result.check_problems == [], result.check_problems
    smoke = task.configs("smoke")[0].params
    assert smoke["width"] // 8 >= 2 and smoke["width"] < 256, smoke
    assert "gave degenerate outputs" in result.report() and "2 times as large, 16, they are not" in result.report()


def test_kernelbench_a_memory_bound_problem_below_100_mb_gets_a_seen_config_grown_by_its_batch(tmp_path):
    """A layer of 16.8 MB of weights at a batch of 2, as KernelBench's EfficientNetB2 is (44 MB at a batch of 2): the
    batch, below the sizes the drafts vary, was kept, and no config reached the 100 MB a memory-bound task moves in
    one (`arena tasks check` refused it). The batch (the leading size of every input and output, in no parameter's
    shape) is varied, drawn no smaller than the problem's, and a seen config grown from the problem's by it sits
    beside the problem's own."""
    result, task = _imported(tmp_path, "kb_small_batch_layer")
    assert result.check_problems == [], result.check_problems
    seen = {c.name: c.params for c in task.configs("seen")}
    assert seen["problem"]["batch_size"] == 2
    grown = seen["draft-grown"]
    assert grown["batch_size"] > 2 and (grown["in_features"], grown["out_features"]) == (2048, 2048), grown
    assert max(task.roofline_for(c)[1] for s in ("seen", "heldout") for c in task.configs(s)) >= 100e6
    assert task.roofline["bound"] == "memory"
    assert task.shape_space["batch_size"]["min"] == 2
    assert any(c.params["batch_size"] != 2 for c in task.configs("heldout"))
    assert "seen.yaml has a config grown from them (batch_size 2 -> " in result.report()


def test_kernelbench_fixture_with_randomness_is_refused(tmp_path):
    with pytest.raises(ImportStop, match=r"kb_dropout\.py: Model\.forward draws random numbers \(torch\.rand_like"):
        import_kernelbench(FIX / "kb_dropout.py", tmp_path)


# ---- aka ---------------------------------------------------------------------------------------


@pytest.fixture
def cases_as_written(monkeypatch):
    """The test's cases as the seen configs, as read: these tests are about reading a source's test script, so the
    growth of its cases into the timing window (``test_aka_cases_below_the_timing_window_are_grown_into_it``) is
    off (every case counts as inside the window)."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "WINDOW_BYTES", 0)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_triton_folder_keeps_the_kernel_and_adds_a_thin_entry(tmp_path):
    src_folder = FIX / "aka_triton_scaled_softmax"
    result = import_aka(src_folder, tmp_path)
    folder = tmp_path / "triton2triton" / "aka_triton_scaled_softmax"
    assert result.folder == folder and result.ok, result.report()
    task = load_task(folder)
    original = (src_folder / "source" / "scaled_softmax.py").read_text()
    baseline = (folder / "baseline.py").read_text()
    assert baseline.startswith(original.rstrip("\n"))                  # the kernel as written
    entry = baseline[len(original.rstrip("\n")):]
    assert f"def {task.entry}(x, y, n_rows, n_cols):" in entry and "scaled_softmax(x, SCALE)" in entry
    assert [(i.name, i.dtype, i.shape) for i in task.inputs] == [("x", "float32", ("n_rows", "n_cols"))]
    assert dict(task.inputs[0].init) == {"kind": "normal", "std": 4.0}   # torch.randn(...) * 4
    assert [(o.name, o.shape) for o in task.outputs] == [("y", ("n_rows", "n_cols"))]
    assert [s.name for s in task.scalars] == ["n_rows", "n_cols"]
    # the test's shapes are the seen configs; the reference is what the test compares with
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"n_rows": 8, "n_cols": 64}, {"n_rows": 64, "n_cols": 1000}, {"n_rows": 256, "n_cols": 4096},
        {"n_rows": 1024, "n_cols": 8192}]
    assert len(task.configs("heldout")) >= 4
    ref = import_file(task.reference_path, "aka_triton_ref")
    x = torch.randn(8, 64, dtype=torch.float64)
    assert torch.allclose(ref.reference(x, 8, 64), torch.softmax(x * 0.5, dim=-1))
    decisions = _decisions(result.report())
    assert any("cases of task_runner.py" in d and "production shapes" in d for d in decisions)
    assert any("copies it into the harness's output" in d for d in decisions)
    assert any("compares with, copied out of it" in d for d in decisions)
    # the starting kernel runs through the harness on the cpu backend (Triton interpreter)
    from arena.authoring.check import check_task
    from arena.devices import detect

    row = check_task(folder, detect("cpu"))
    assert row.ok, row.problems
    assert row.baseline == "smoke 1/1"


def test_aka_hip_torch_extension_keeps_its_device_code_and_reads_the_module(tmp_path):
    src_folder = FIX / "aka_hip_bias_leaky"
    result = import_aka(src_folder / "config.yaml", tmp_path, task_id="hip2hip/bias_leaky")
    folder = tmp_path / "hip2hip" / "bias_leaky"
    assert result.ok, result.report()
    task = load_task(folder)
    original = (src_folder / "hip" / "bias_leaky.hip").read_text()
    baseline = (folder / "baseline.hip").read_text()
    kernel = original[original.index("__device__ __forceinline__"):original.index("at::Tensor bias_leaky_forward")]
    assert kernel.strip() in baseline                                  # device code as written
    assert "#include <torch/extension.h>" not in baseline.replace("// (import) left out: #include <torch/", "")
    assert "// at::Tensor bias_leaky_forward(at::Tensor x" in baseline  # host code kept, as comments
    assert f'extern "C" int {task.entry}(' in baseline and "hipErrorNotSupported" not in baseline
    # the host code is translated; a scalar a host local shadows (channels) is renamed in the entry
    assert "    int64_t arena_channels,\n" in baseline
    assert "const int64_t channels = (int64_t)arena_channels;" in baseline
    assert ", 0, stream, ((float*)x), ((float*)bias), ((float*)out), planes, channels, plane_size," in baseline
    assert [i.name for i in task.inputs] == ["x", "bias"]
    assert [(s.name, s.type) for s in task.scalars] == [("batch", "int64"), ("channels", "int64"), ("height", "int64"),
                                                        ("width", "int64"), ("slope", "float32"), ("scale", "float32")]
    module = src_folder / "torch_module" / "bias_leaky.py"
    assert _reference_matches_forward(folder, module, cls="BiasLeakyReLU") < 1e-6
    decisions = _decisions(result.report())
    assert "the entry is bias_leaky_forward translated from it" in decisions[0]
    assert "renamed where a host local shadows them (channels)" in decisions[0]
    assert any("torch_module/bias_leaky.py" in d for d in decisions)
    assert any("exported forward (bias_leaky_forward)" in d for d in decisions)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_harness_with_dict_cases_and_an_output_argument(tmp_path):
    """Cases as dicts read into names, a try around the body, a zero-filled output the launcher
    writes into, assert_close: the entry fills the output as the test did and passes it on."""
    folder = tmp_path / "rowsum"
    (folder / "source").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "config.yaml").write_text("source_file_path: source/rowsum.py\ntask_type: triton2triton\n"
                                        "correctness_command: python3 scripts/run.py correctness\n")
    (folder / "source" / "rowsum.py").write_text('''import triton
import triton.language as tl


@triton.jit
def _rowsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = 0.0
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.sum(tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0), axis=0)
    tl.atomic_add(out_ptr + row, acc)


def rowsum_into(x, out, n_rows, n_cols):
    _rowsum_kernel[(n_rows,)](x, out, n_cols, BLOCK=64)
''')
    (folder / "scripts" / "run.py").write_text('''import torch
CASES = [{"M": 16, "N": 100}, {"M": 64, "N": 512}, {"M": 128, "N": 2048}]


def check_correctness(mod):
    dtype = torch.float32
    for case in CASES:
        M = case["M"]
        N = case["N"]
        try:
            x = torch.rand((M, N), dtype=dtype, device="cuda") * 2 - 1
            out = torch.zeros(M, device="cuda", dtype=torch.float32)
            mod.rowsum_into(x, out, M, N)
            torch.testing.assert_close(out, x.sum(dim=1), atol=1e-3, rtol=1e-3)
        except AssertionError:
            return False
    return True
''')
    result = import_aka(folder, tmp_path / "tasks")
    assert result.ok, result.report()
    task = load_task(result.folder)
    assert [(i.name, i.shape, dict(i.init)) for i in task.inputs] == [
        ("x", ("M", "N"), {"kind": "uniform", "low": -1.0, "high": 1.0})]
    assert [(o.name, o.shape) for o in task.outputs] == [("out", ("M",))]
    assert [dict(c.params) for c in task.configs("seen")] == [{"M": 16, "N": 100}, {"M": 64, "N": 512},
                                                              {"M": 128, "N": 2048}]
    entry = (result.folder / "baseline.py").read_text().split("# ---- entry", 1)[1]
    assert "out.zero_()\n    rowsum_into(x, out, M, N)" in entry
    assert "return x.sum(dim=1)" in task.reference_path.read_text()
    assert any("filled with 0.0" in d for d in _decisions(result.report()))


@pytest.mark.parametrize("target", ["cuda", "rocm"])
def test_aka_hip_baseline_builds(tmp_path, target):
    """The device code kept from a PyTorch extension, with the generated entry, builds through
    the project's HIP route where the toolchain is installed."""
    sys.path.insert(0, str(Path(__file__).parent))
    from toolchains import ARCHS, need

    from arena.toolchain.hip import build_hip, toolchain_available

    need(toolchain_available(target))
    result = import_aka(FIX / "aka_hip_bias_leaky", tmp_path)
    built = build_hip(result.folder / "baseline.hip", target=target, arch=ARCHS[target], cache_dir=tmp_path / "cache")
    assert built.ok, built.log[-2000:]


def test_aka_plain_hip_launcher_gets_a_calling_entry_and_the_unknowns_are_listed(tmp_path):
    folder = tmp_path / "src" / "axpby"
    (folder / "src").mkdir(parents=True)
    (folder / "config.yaml").write_text("source_file_path: [src/axpby.hip]\ntask_type: hip2hip\n"
                                        "prompt: {instructions: 'y = a * x + b * z'}\n")
    (folder / "src" / "axpby.hip").write_text('''#include <hip/hip_runtime.h>
#include <cstdint>

__global__ void axpby_kernel(const float* x, const float* z, float* y, int64_t n, float a, float b) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b * z[i];
}

void launch_axpby(const float* x, const float* z, float* y, int64_t n, float a, float b, hipStream_t stream) {
    hipLaunchKernelGGL(axpby_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, z, y, n, a, b);
}
''')
    result = import_aka(folder, tmp_path / "tasks")
    baseline = (result.folder / "baseline.hip").read_text()
    assert "launch_axpby((const float*)x, (const float*)z, (float*)y, (int64_t)n, (float)a, (float)b, stream);" \
        in baseline
    # nothing in the folder says the shapes, the constants' values, the reference or the configs: validation names them
    assert not result.ok
    problems = " ".join(str(p) for p in result.problems)
    for todo in ("TODO_x_shape", "TODO_z_shape", "TODO_y_shape", "signature.scalars.a.value"):
        assert todo in problems
    decisions = _decisions(result.report())
    assert "calls launch_axpby" in decisions[0]
    assert any("write the shapes (TODO_*)" in d for d in decisions)
    assert "NotImplementedError" in (result.folder / "reference.py").read_text()


def test_aka_bad_folders_say_what_is_missing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImportStop, match="no task YAML"):
        import_aka(empty, tmp_path / "out")
    (empty / "config.yaml").write_text("source_file_path: [source/missing.py]\ntask_type: triton2triton\n")
    with pytest.raises(ImportStop, match="names no kernel source that exists here"):
        import_aka(empty, tmp_path / "out")
    rc = main(["tasks", "import", "aka", str(FIX / "kb_linear_gelu.py"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "not a single source file" in err


# ---- the command -------------------------------------------------------------------------------


@pytest.mark.parametrize("source, name", [
    ("10_3D_tensor_matrix_multiplication", "tensor_matrix_multiplication_3d"),
    ("11_4D_tensor_matrix_multiplication", "tensor_matrix_multiplication_4d"),   # not d_tensor_..., as before
    ("1_Square_matrix_multiplication_", "square_matrix_multiplication"),
    ("triton_fla_l2norm", "triton_fla_l2norm"),
    ("12_3D", "imported_3d"),
])
def test_a_task_name_drops_the_problems_index_and_keeps_its_other_digits(source, name, tmp_path):
    from arena.authoring.importers.common import resolve_task_id

    assert resolve_task_id(None, source, ("torch2hip",)) == (None, name)
    # the name is the entry's too, which may not start with a digit
    copy = tmp_path / f"{source}.py"
    shutil.copy(FIX / "kb_linear_gelu.py", copy)
    if source[0].isdigit():
        result = import_kernelbench(copy, tmp_path / "tasks")
        assert result.folder == tmp_path / "tasks" / "torch2hip" / name
        assert not validate_task_dir(result.folder)


@pytest.mark.usefixtures("cases_as_written")      # the command's behaviour, not the sizes it drafts
def test_the_command_writes_validates_and_lists_what_remains(tmp_path, capsys):
    out = tmp_path / "tasks"
    rc = main(["tasks", "import", "kernelbench", str(FIX / "kb_linear_gelu.py"), "--out", str(out), "--id",
               "linear_gelu"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "arena tasks validate: ok" in printed and "what you must still decide:" in printed
    assert re.search(r"^  1\. ", printed, re.M)
    assert main(["tasks", "validate", str(out / "torch2hip" / "linear_gelu")]) == 0
    capsys.readouterr()
    # a second import to the same place is refused, the first folder untouched
    before = (out / "torch2hip" / "linear_gelu" / "task.yaml").read_text()
    assert main(["tasks", "import", "kernelbench", str(FIX / "kb_linear_gelu.py"), "--out", str(out), "--id",
                 "linear_gelu"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "torch2hip" / "linear_gelu" / "task.yaml").read_text() == before
    # --tasks-dir is the default destination; a wrong category in --id is one line
    copy = tmp_path / "aka"
    shutil.copytree(FIX / "aka_triton_scaled_softmax", copy)
    assert main(["--tasks-dir", str(out), "tasks", "import", "aka", str(copy)]) == 0
    assert (out / "triton2triton" / "aka" / "baseline.py").is_file()
    capsys.readouterr()
    assert main(["tasks", "import", "aka", str(copy), "--out", str(out), "--id", "hip2hip/x"]) == 2
    assert "--id" in capsys.readouterr().err
    with pytest.raises(ArenaError):
        import_kernelbench(FIX / "kb_linear_gelu.py", out, task_id="Not-A-Name")


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_runner_is_observed_up_to_the_kernel_call(tmp_path):
    """A vllm-style runner (TEST_SHAPES, a tensor made by code the importer does not read, a size
    that is a quotient of two fields): its statements run on the meta device up to the kernel
    call, so the signature has the shapes the runs show and make_inputs makes the inputs as the
    test does; the held-out drafts are the ones the test and its reference accept."""
    result = import_aka(FIX / "aka_vllm_group_scale", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_group_scale"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape), i.init["kind"]) for i in task.inputs] == [
        ("q", "int32", ["K", "N"], "custom"),
        ("scales", "float16", ["K // group_size", "N"], "custom"),
    ]
    assert [(o.name, o.dtype, list(o.shape)) for o in task.outputs] == [("result", "float32", ["K", "N"])]
    assert [s.name for s in task.scalars] == ["K", "N", "group_size"]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"K": 64, "N": 128, "group_size": 32}, {"K": 128, "N": 256, "group_size": 64},
        {"K": 256, "N": 512, "group_size": 128}]
    held = {c.name: dict(c.params) for c in task.configs("heldout")}
    assert held == {"draft-not-mult-8": {"K": 256, "N": 516, "group_size": 128},
                    "draft-prime": {"K": 256, "N": 509, "group_size": 128},
                    "draft-aspect": {"K": 1024, "N": 128, "group_size": 128},     # N / 4, K x 4: K // 4 refused
                    "draft-scale-up": {"K": 256, "N": 1026, "group_size": 128},
                    "draft-scale-down": {"K": 256, "N": 171, "group_size": 128}}
    # the odd draft (K // group_size not a whole number of groups) is one the test's reference refuses
    assert "draft-odd" not in held
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", import_file(task.reference_path, "ref_group_scale"))
    assert ins["q"].dtype == torch.int32 and int(ins["q"].min()) >= -8 and int(ins["q"].max()) < 8
    assert float(ins["scales"].min()) >= 0.01                     # .abs() * 0.1 + 0.01, as the test draws it
    assert "which the importer does not read" not in result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_input_updated_in_place_is_inout_and_its_reference_updates_its_copy(tmp_path):
    """The test compares x, which the kernel updates in place, with a reference it builds before the
    call and after it (a loop appending to a list, a loop writing into a clone after the call, math
    imported in the test's function, a helper that computes in the test's float32 only, x changed
    in place after it is drawn): x is an inout input, the
    reference updates its copy and returns nothing, its inputs are cast back to the test's dtypes;
    the helper's own manual_seed and torch.empty are not copied as they are, so make_inputs is the
    same for a seed and differs between seeds."""

    result = import_aka(FIX / "aka_vllm_row_floor", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_row_floor"
    assert result.ok, result.report()
    assert result.checks and not _found(result), result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape), i.inout) for i in task.inputs] == [
        ("x", "float32", ["R", "V"], True), ("scratch", "float32", ["R"], False), ("noise", "float32", ["R"], False)]
    assert task.outputs == ()
    assert [dict(c.params) for c in task.configs("seen")] == [{"R": 4, "V": 64}, {"R": 8, "V": 128},
                                                               {"R": 16, "V": 256}]
    assert len(task.configs("heldout")) >= 4
    text = task.reference_path.read_text()
    assert "x.copy_(" in text and "x.to(torch.float32)" in text and "import torch, math" in text
    ref = import_file(task.reference_path, "ref_row_floor")
    env = task.env(task.configs("smoke")[0])
    a, b = make_inputs(task, env, 3, "cpu", ref), make_inputs(task, env, 3, "cpu", ref)
    c = make_inputs(task, env, 4, "cpu", ref)
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert not torch.equal(a["noise"], c["noise"]) and not torch.equal(a["x"], c["x"])
    assert torch.equal(a["scratch"], torch.zeros_like(a["scratch"]))
    assert float(a["x"].max()) == 2.0     # x.clamp_(max=2.0): the test's in-place change is copied
    (updated,) = run_reference(ref.reference, task, a, [env["R"], env["V"]])
    x = a["x"].double()
    want = torch.maximum(x, x.mean(dim=1, keepdim=True) + a["noise"].double()[:, None] - torch.log(torch.tensor(2.0)))
    assert torch.allclose(updated.double(), want, atol=1e-5)


def test_aka_a_zeroed_cache_the_test_copies_for_its_reference_is_state_the_kernel_updates(tmp_path):
    """The runner zeroes a cache, copies it for its reference and compares the cache after the kernel wrote some
    of its rows: what the cache holds before the call is compared too, so it is an inout input drawn at random
    (a kernel that writes rows it was not given fails), not an output the entry zeroes before every call (a fill
    as large as the cache, which would cost more than the kernel's scatter). The roofline counts the cache by the
    rows written (the reference's copy of it and the copy back count nothing), so the cases grow by their tokens,
    and the slots, which bound the tokens but move nothing themselves, are doubled with them where they must be
    (counted whole, the cache grew alone: vLLM's reshape_and_cache_flash ran far below the window on a GPU)."""
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN
    from arena.taskdef import formula

    result = import_aka(FIX / "aka_vllm_cache_scatter", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_cache_scatter"
    assert result.ok, result.report()
    assert result.checks and not _found(result), result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape), i.inout) for i in task.inputs] == [
        ("x", ["tokens", "dim"], False), ("cache", ["num_slots", "dim"], True), ("slots", ["tokens"], False)]
    assert task.outputs == ()
    assert any(d.startswith("input cache: made by `zeros` and copied before the kernel call") for d in result.decisions)
    assert task.roofline["bytes"].endswith("min(4 * num_slots * dim, 4 * tokens * dim)"), task.roofline
    seen = [c.params for c in task.configs("seen")]
    heldout = [c.params for c in task.configs("heldout")]
    assert all(c["tokens"] > 256 for c in seen), seen
    # slots left unwritten in every config: written all over, the cache's old values are gone from the outputs
    assert all(c["num_slots"] > c["tokens"] for c in seen + heldout), (seen, heldout)
    assert all(formula.evaluate(task.roofline["bytes"], c) >= WINDOW_BYTES / WINDOW_MARGIN for c in seen), seen
    entry = (folder / "baseline.py").read_text().split("def aka_vllm_cache_scatter(")[1]
    assert "zero_()" not in entry and "fill_(" not in entry
    ref = import_file(task.reference_path, "ref_cache_scatter")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 5, "cpu", ref)
    before = ins["cache"].clone()
    assert not torch.any(before == 0)     # drawn, not zeroed as the test made it
    (after,) = run_reference(ref.reference, task, ins, [env["tokens"], env["dim"], env["num_slots"]])
    want = before.clone()
    want[ins["slots"]] = ins["x"]
    assert torch.equal(after, want)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_runner_looping_over_seeds_with_a_helper_that_makes_the_inputs(tmp_path):
    """AKA's FLA runners loop over seeds (``for i, seed in enumerate(SEEDS)``) and make the kernel's arguments
    in ``gen_inputs(seed, device)`` at sizes written as numbers, then call ``kernel(*args, **kwargs)`` (refused
    before: "the loop variable seed is used whole"). The helper is read in place of its call, its sizes
    become parameters (its chunk size ``BT`` stays as written), the runner's own ``reference`` does not
    collide with the task's, and the entry writes the output the test names ``result``."""

    result = import_aka(FIX / "aka_vllm_seed_chunks", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_seed_chunks"
    assert result.ok and validate_task_dir(folder) == [], result.report()
    assert result.checks and not _found(result), result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("g", ["B", "T", "H"])]
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("result", ["B", "T", "H"])]
    assert dict(task.configs("seen")[0].params) == {"B": 2, "T": 96, "H": 4}
    assert len(task.configs("seen")) >= 3 and len(task.configs("heldout")) >= 4
    text = task.reference_path.read_text()
    assert "def reference_of_test(" in text and "reference_of_test(*args_cpu, **kwargs)" in text
    assert "BT = 32" in text
    _computes_chunked_cumsum(task)
    # and the starting kernel, through its entry, on the Triton interpreter
    assert _only_too_small(folder)


def test_aka_inputs_made_again_on_the_cpu_for_the_reference_are_the_tasks_inputs(tmp_path):
    """vllm's runners make the kernel's inputs with a helper that seeds itself, then make them again on the CPU for
    the reference (``args_cpu, _ = gen_inputs(seed, "cpu")``): the second call is the first's values, and the
    reference is handed the task's inputs. Before, the reference made its own and read none of them (refused as
    "the outputs do not depend on input g")."""
    src = _seed_chunks_with(tmp_path, "            args_cpu = tuple(a.float().cpu() if isinstance(a, torch.Tensor) "
                                      "else a for a in args)\n", '            args_cpu, _ = gen_inputs(seed, "cpu")\n')
    result = import_aka(src, tmp_path / "out")
    assert result.ok and result.checks and not _found(result), result.report()
    assert any("makes the kernel's inputs again on another device (args_cpu, _ = gen_inputs(seed, 'cpu')): the "
               "same values, read as args_cpu, _ = (args, kwargs)" in d for d in _decisions(result.report()))
    _computes_chunked_cumsum(load_task(tmp_path / "out" / "triton2triton" / "aka_vllm_seed_chunks"))


def test_only_a_helper_that_seeds_itself_makes_the_same_inputs_twice():
    """``x_cpu = make(n, "cpu")`` after ``x = make(n, device)`` is read as ``x_cpu = x`` where ``make`` seeds itself;
    a helper that does not (here one that makes the buffer the kernel writes) makes other tensors each call."""
    import ast

    from arena.authoring.importers.aka import _made_again

    tree = ast.parse("def make(n, device):\n    torch.manual_seed(0)\n    return torch.randn(n, device=device)\n\n"
                     "def alloc(n, device):\n    return torch.zeros(n, device=device)\n")
    stmts = ast.parse("x = make(n, device)\nout = alloc(n, device)\nmod.kernel(x, out)\nx_cpu = make(n, 'cpu')\n"
                      "out_cpu = alloc(n, 'cpu')\nref = reference(x_cpu, out_cpu)\n").body
    call = stmts[2].value
    notes: list[str] = []
    got = [ast.unparse(s) for s in _made_again(stmts, call, tree, notes, "t.py")]
    assert got[3] == "x_cpu = x" and got[4] == "out_cpu = alloc(n, 'cpu')", got
    assert notes == ["t.py makes the kernel's inputs again on another device (x_cpu = make(n, 'cpu')): the same "
                     "values, read as x_cpu = x"]


def test_aka_inputs_read_by_position_and_state_handed_to_the_reference_are_inout_inputs(tmp_path):
    """vllm's eagle runners make every tensor the kernel is handed in one helper, read its tuple by position
    (``mod.update(inputs[0], ..., inputs[4])``), make it again on the CPU for their reference, which updates clones
    of three of them, and compare those by position (``torch.equal(inputs[2].cpu(), ref[0])``); refused before:
    "the comparison after the kernel call does not name its result". The tuple's values are read as the names its
    helper returns, and a tensor the kernel is handed, the reference is handed too and the test compares after the
    call is state the kernel updates: an inout input (before, such a tensor was an output the entry filled, and
    the reference made the inputs again on its own)."""
    result = import_aka(FIX / "aka_vllm_positional_state", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_positional_state"
    assert result.ok and result.checks and not _found(result), result.report()
    notes = _decisions(result.report())
    assert any("reads the 5 values make_inputs() returns by position (gpu_inputs[i]): read as tokens, hidden_new, "
               "ids, pos, state" in d for d in notes), notes
    assert any(re.match(r"\d+\. pos is given to the kernel and to the reference, and compared after the call", d) and
               "inout input" in d for d in notes), notes
    task = load_task(folder)
    assert not task.outputs
    assert {i.name: (list(i.shape), i.inout) for i in task.inputs} == {
        "ids": (["2 * nr"], True), "pos": (["nr"], True), "state": (["2 * nr", "hs"], True),
        "tokens": (["nr"], False), "hidden_new": (["nr", "hs"], False)}
    ref = import_file(task.reference_path, "ref_positional_state")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 7, "cpu", ref)
    nr, cap = env["nr"], env["cap"]
    ids, pos, state = run_reference(ref.reference, task, ins, [env["nr"], env["hs"], env["cap"]])
    # the first nr rows updated from the task's own inputs, the rows past them as they were drawn
    assert torch.equal(ids[:nr], ins["tokens"]) and torch.equal(ids[nr:], ins["ids"][nr:])
    assert torch.equal(pos.long(), torch.clamp(ins["pos"].long() + 1, max=cap - 1))
    assert torch.equal(state[:nr].half(), ins["hidden_new"]) and torch.equal(state[nr:].half(), ins["state"][nr:])
    assert any("the starting kernel passes the smoke config on the CPU" in c for c in result.checks), result.checks


def test_a_tuple_read_whole_or_sliced_is_left_as_written():
    """Only a tuple read by constant positions alone is bound as names: one also read whole (handed on as it is),
    or indexed by a variable, is left as the test wrote it."""
    import ast

    from arena.authoring.importers.aka import _positions_named

    tree = ast.parse("def make(n):\n    return a, b\n")
    for body, named in (("t = make(n)\nk(t[0], t[1])\n", True), ("t = make(n)\nk(t[0], t)\n", False),
                        ("t = make(n)\nk(t[i], t[1])\n", False), ("t = make(n)\nk(t[0], t[2])\n", False)):
        fn = ast.parse("def f(n, i):\n" + "".join(f"    {ln}\n" for ln in body.splitlines())).body[0]
        notes: list[str] = []
        _positions_named(fn, tree, notes, "t.py")
        assert bool(notes) == named, (body, notes)
        if named:
            assert ast.unparse(fn).splitlines()[1:] == ["    a, b = make(n)", "    k(a, b)"]


def test_aka_a_scalar_the_tests_input_maker_returns_is_computed_from_the_tasks_scalars(tmp_path):
    """vllm's decode attention runners write ``q, k, ..., sm_scale = make_inputs(bs, ..., head_dim, ...)``, where
    make_inputs draws the tensors and computes ``sm_scale = 1.0 / (head_dim ** 0.5)``, and hand the kernel and the
    reference that scale. The entry could not make it (a stub: "uses make_inputs, which the importer cannot
    trace"), and the reference copied the call, making its inputs again, a draw of its own. The value is now
    arithmetic on the call's arguments, computed where it is needed: the import is complete, its kernel passes,
    and the reference reads the inputs it is handed."""
    import math

    result = import_aka(FIX / "aka_vllm_returned_scale", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_returned_scale"
    assert result.ok and result.checks and not _found(result), result.report()
    assert any("takes scale = 1.0 / math.sqrt(dim) from what make_inputs() returns" in d
               for d in _decisions(result.report())), result.report()
    baseline = (folder / "baseline.py").read_text()
    entry = baseline.split("# ---- entry added by", 1)[1]
    assert "import math" in entry and "scale = 1.0 / math.sqrt(dim)" in entry and "make_inputs" not in entry
    task = load_task(folder)
    ref = import_file(task.reference_path, "ref_returned_scale")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", ref)
    (out,) = run_reference(ref.reference, task, ins, [env["num_rows"], env["dim"]])
    assert torch.allclose(out.float(), ins["x"].float() / math.sqrt(env["dim"]), rtol=1e-6, atol=0)


def test_aka_a_reference_that_would_make_its_inputs_again_is_refused(tmp_path):
    """Where the value the input maker returns is read from a tensor it draws (not arithmetic on its arguments),
    the reference would need the call that makes the inputs, which draws them anew: the import says so instead
    of writing a reference that ignores its inputs."""
    src = tmp_path / "src" / "aka_vllm_returned_scale"
    shutil.copytree(FIX / "aka_vllm_returned_scale", src)
    runner = src / "scripts" / "task_runner.py"
    text = runner.read_text()
    assert "    scale = 1.0 / math.sqrt(width)\n" in text
    runner.write_text(text.replace("    scale = 1.0 / math.sqrt(width)\n",
                                   "    scale = 1.0 / float(x.float().abs().max())\n"))
    result = import_aka(src, tmp_path / "root")
    assert "the reference in task_runner.py uses scale, which the statement that makes x binds: copied into " \
           "the reference, it would make them anew" in result.report(), result.report()
    ref = (tmp_path / "root" / "triton2triton" / "aka_vllm_returned_scale" / "reference.py").read_text()
    assert "NotImplementedError" in ref


def test_arithmetic_of_a_functions_parameters_is_read_where_it_is_only_that():
    """What ``_scalars_returned`` takes: arithmetic on the function's parameters, its locals bound once inlined;
    not a tensor's shape, a call outside the scalar ones, a parameter the function binds again, a module name."""
    import ast

    from arena.authoring.importers.aka import _arithmetic_of_parameters

    def read(body: str, expr: str) -> str | None:
        fn = ast.parse("def f(n, d, x, dtype=None):\n" + "".join(f"    {ln}\n" for ln in body.splitlines())
                       + "    return 0\n").body[0]
        got = _arithmetic_of_parameters(fn, ast.parse(expr, mode="eval").body)
        return None if got is None else ast.unparse(got)

    assert read("w = d * 2\nh = w + 1", "1.0 / math.sqrt(h)") == "1.0 / math.sqrt(d * 2 + 1)"
    assert read("", "triton.cdiv(n, 64) * max(d, 1)") == "triton.cdiv(n, 64) * max(d, 1)"
    assert read("", "x.shape[1]") is None
    assert read("", "torch.finfo(dtype).max") is None
    assert read("if dtype is None:\n    dtype = 1", "dtype * 2") is None
    assert read("w = d\nw = w * 2", "w") is None
    assert read("", "SCALE / n") is None
    assert read("", "'a' + 'b'") is None


def test_aka_a_reference_right_only_in_the_tests_dtype_is_called_in_it(tmp_path):
    """vllm's MRoPE runner reads each half of a half-precision row with ``.float()`` and writes the first half
    before reading it again: in float16, ``.float()`` is a copy and the reference is right; called with the upcast
    (float32) copies the harness hands a reference, ``.float()`` is the tensor itself, and the second half is
    computed from the first's new values. The starting kernel failed the import's check (and, on an H200, every
    config, 47% of the elements off). The reference's results on upcast copies and on the test's dtypes are now
    compared at the smallest case: apart beyond rounding, it is called on its inputs cast back to the test's."""
    result = import_aka(FIX / "aka_vllm_rotate_halves", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_rotate_halves"
    assert result.ok and result.checks and not _found(result), result.report()
    assert any("computes another result when called with upcast copies of the inputs (normwise" in d
               for d in _decisions(result.report())), result.report()
    task = load_task(folder)
    ref = import_file(task.reference_path, "ref_rotate_halves")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", ref)
    (q,) = run_reference(ref.reference, task, ins, [env["num_tokens"], env["dim"]])
    half = env["dim"] // 2
    x1, x2 = ins["q_triton"][:, :half].float(), ins["q_triton"][:, half:].float()
    c, s = ins["cos"].float(), ins["sin"].float()
    want = torch.cat([(x1 * c - x2 * s).half(), (x2 * c + x1 * s).half()], dim=1)
    assert torch.equal(q.half(), want)


def test_a_reference_is_kept_in_the_upcast_dtypes_where_they_change_only_its_rounding():
    """The check behind the last test says nothing of a reference whose upcast run differs from its run in the
    test's dtypes by rounding alone, or that draws random numbers (both runs draw alike); it names one that fails
    for a dtype mismatch on the upcast dtypes, as before."""
    from arena.authoring.importers.aka import _needs_given_dtypes

    spec = [{"name": "x", "dtype": "float16", "shape": ["n", "n"]}]
    case = {"n": 16}

    def softmax(x, n):
        return torch.softmax(x, -1)

    def sampled(x, n):
        return x + torch.rand(x.shape, dtype=x.dtype)

    def mixed(x, n):
        return x @ torch.ones(n, n, dtype=torch.float16)

    def aliased(x, n):
        out = x.clone()
        a = out[:, :8].float()
        out[:, :8] = a * 2
        out[:, 8:] = a
        return out

    assert _needs_given_dtypes(softmax, spec, ["n"], case) is None
    assert _needs_given_dtypes(sampled, spec, ["n"], case) is None
    assert "mixes dtypes" in (_needs_given_dtypes(mixed, spec, ["n"], case) or "")
    assert "computes another result" in (_needs_given_dtypes(aliased, spec, ["n"], case) or "")


def _seed_chunks_with(tmp_path: Path, written: str, instead: str) -> Path:
    """A copy of the aka_vllm_seed_chunks fixture whose runner has ``instead`` where it has ``written``."""
    src = tmp_path / "src" / "aka_vllm_seed_chunks"
    shutil.copytree(FIX / "aka_vllm_seed_chunks", src)
    runner = src / "scripts" / "task_runner.py"
    assert written in runner.read_text()
    runner.write_text(runner.read_text().replace(written, instead))
    return src


def _computes_chunked_cumsum(task) -> None:
    """The reference of an import of aka_vllm_seed_chunks is the runner's: a chunked cumulative sum of the task's
    input g, times the scale the helper hands the kernel."""
    ref = import_file(task.reference_path, f"ref_seed_chunks_{id(task)}")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", ref)
    (out,) = run_reference(ref.reference, task, ins, [env["B"], env["T"], env["H"]])
    g = ins["g"].double()
    want = torch.cat([g[:, s:s + 32].cumsum(1) for s in range(0, env["T"], 32)], dim=1) * 2.0
    assert torch.allclose(out.double(), want, atol=1e-5)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_self_check_runs_the_starting_kernel_and_the_tests_tolerance_is_the_tasks(tmp_path):
    """What a GPU found in imports the importer called complete: a launcher that computes with torch
    operators (a Triton candidate may not) fails the starting kernel's run on the CPU, which the importer's
    own check now makes (Triton's interpreter); and the test's own ``allclose(atol=..., rtol=...)`` is the
    task's tolerance, with its reason (the default held kernels the test accepts to 1e-4)."""
    src = tmp_path / "src" / "aka_vllm_seed_chunks"
    shutil.copytree(FIX / "aka_vllm_seed_chunks", src)
    runner = src / "scripts" / "task_runner.py"
    runner.write_text(runner.read_text().replace("atol=1e-4, rtol=1e-4", "atol=1e-2, rtol=2e-2"))
    result = import_aka(src, tmp_path / "a")
    task = load_task(tmp_path / "a" / "triton2triton" / "aka_vllm_seed_chunks")
    assert dict(task.tolerance["float32"]) == {"atol": 1e-2, "rtol": 2e-2, "norm": 2e-2}
    assert "reason: \"the source test task_runner.py compares with atol=0.01, rtol=0.02" in \
        (task.path / "task.yaml").read_text()
    assert any("starting kernel passes the smoke config" in c for c in result.checks), result.report()
    kernel = src / "source" / "chunk_cumsum.py"
    kernel.write_text(kernel.read_text().replace("    return o\n", "    return o * 1.0\n"))
    result = import_aka(src, tmp_path / "b")
    assert result.ok and len(_found(result)) == 1, result.report()
    assert "FORBIDDEN_CALL" in _found(result)[0] and "mul" in _found(result)[0]


def test_a_reference_that_computes_on_the_cpu_is_compared_where_the_inputs_are():
    """A test's own reference moves the inputs to the CPU (``x.float().cpu()``); its outputs come back to
    the inputs' device (on a GPU the comparison raised: cuda:0 and cpu, a HARNESS_ERROR)."""
    task = types.SimpleNamespace(outputs=[object()], inputs=[types.SimpleNamespace(inout=False)])
    x = torch.ones(3, device="meta")
    (out,) = run_reference(lambda x: torch.zeros(3), task, {"x": x}, [])  # type: ignore[arg-type]
    assert out.device == x.device


def test_a_quotient_of_two_constants_is_written_as_floor_division():
    from arena.authoring.importers.common import Fitter

    fitter = Fitter({"K": 256, "G": 128, "N": 64}, lambda p: {"rows": p["K"] // p["G"], "cols": 8 * p["N"] // p["G"]})
    assert fitter.int_formula(lambda r: r["rows"]) == "K // G"
    assert fitter.int_formula(lambda r: r["cols"]) == "(8 * N) // G"


def test_a_quotient_plus_a_constant_is_written_so():
    """A sequence's chunk boundaries (``arange(0, seqlen // chunk_size + 1)``; the ``.item()``-free formula the
    vllm ssd runners' sizes follow): no monomial (doubling chunk_size does not halve it) and no window of a
    convolution; a ceiling's quotient too."""
    from arena.authoring.importers.common import Fitter

    fitter = Fitter({"seqlen": 384, "chunk_size": 128},
                    lambda p: {"bounds": p["seqlen"] // p["chunk_size"] + 1,
                               "blocks": (p["seqlen"] + p["chunk_size"] - 1) // p["chunk_size"] - 1})
    assert fitter.int_formula(lambda r: r["bounds"]) == "seqlen // chunk_size + 1"
    assert fitter.int_formula(lambda r: r["blocks"]) == "(seqlen + chunk_size - 1) // chunk_size - 1"
    assert not fitter.inexact


def test_aka_buffers_and_copies_the_test_hands_the_kernel_are_the_entrys_to_make(tmp_path):
    """A test hands the kernel an output buffer it made zeroed (the launcher writes and returns it) and a copy of
    weights the kernel consumes, while its comparison reads the original weights: neither is an input of the task
    (as inputs, the buffer was drawn at random and failed the degeneracy rule, "the outputs do not depend on input
    out", and the copy was an input the kernel changes, INPUT_MUTATED). The entry makes both as the test does, the
    weights are the input, and the starting kernel passes on the CPU."""
    result = import_aka(FIX / "aka_vllm_chunk_buffers", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_chunk_buffers"
    assert result.ok and result.checks and not _found(result), result.report()
    assert any("starting kernel passes the smoke config" in c for c in result.checks), result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [
        ("x", ["seqlen"]), ("weights", ["seqlen // chunk_size"]), ("cu", ["seqlen // chunk_size + 1"])]
    assert [o.name for o in task.outputs] == ["result"]
    entry = (folder / "baseline.py").read_text().split("entry added by")[1]
    assert "weights_copy = weights.clone()" in entry
    assert "out = torch.zeros(nchunks, device=device, dtype=torch.float32)" in entry and "device = x.device" in entry
    decisions = _decisions(result.report())
    assert any(". out: made by task_runner.py empty or filled with a constant" in d for d in decisions)
    assert any(". weights_copy (of weights): a copy task_runner.py hands the kernel" in d for d in decisions)
    # a buffer written again after it is made (moved to the device under an ``if``: a helper of vllm's
    # prepare_eagle_inputs) is not the entry's: made as its first statement says, it was a CPU tensor on a GPU
    src = tmp_path / "src" / "aka_vllm_chunk_buffers"
    shutil.copytree(FIX / "aka_vllm_chunk_buffers", src)
    runner = src / "scripts" / "task_runner.py"
    made = "        out = torch.zeros(nchunks, device=device, dtype=torch.float32)\n"
    assert made in runner.read_text()
    runner.write_text(runner.read_text().replace(made, "        out = torch.zeros(nchunks, dtype=torch.float32)\n"
                                                 "        if device != 'cpu':\n            out = out.to(device)\n"))
    result = import_aka(src, tmp_path / "moved")
    task = load_task(tmp_path / "moved" / "triton2triton" / "aka_vllm_chunk_buffers")
    assert "out" in [i.name for i in task.inputs] and "weights" in [i.name for i in task.inputs]
    assert "out = torch.zeros" not in (task.path / "baseline.py").read_text().split("entry added by")[1]
    # the copies made in the call itself (``chunk_sums(x.clone(), cu, weights.clone(), out)``, as vllm's
    # causal_conv1d_update runner has them): the same, the first input's copy too (the reference reads the device
    # off its first input); before, the entry drew them at random and the reference was a stub
    text = (FIX / "aka_vllm_chunk_buffers" / "scripts" / "task_runner.py").read_text()
    runner.write_text(text.replace("        weights_copy = weights.clone()\n", "").replace(
        "mod.chunk_sums(x, cu, weights_copy, out)", "mod.chunk_sums(x.clone(), cu, weights.clone(), out)"))
    result = import_aka(src, tmp_path / "inline")
    assert result.ok and not _found(result), result.report()
    task = load_task(tmp_path / "inline" / "triton2triton" / "aka_vllm_chunk_buffers")
    assert sorted(i.name for i in task.inputs) == ["cu", "weights", "x"]
    entry = (task.path / "baseline.py").read_text().split("entry added by")[1]
    assert "x_copy = x.clone()" in entry and "weights_copy = weights.clone()" in entry and "randn" not in entry
    assert any("starting kernel passes the smoke config" in c for c in result.checks), result.report()


def test_observing_a_test_runs_only_what_its_kernel_call_is_handed():
    """The test's statements up to its kernel call run for every case the importer observes: an assignment whose
    names nothing after it reads (the reference computed before the call, a host-side total of the input, a value
    at a time) is left out; a loop that writes into a tensor the call reads, a seed set, stay."""
    import ast

    from arena.authoring.importers.observe import _feeding_the_call

    stmts = ast.parse(
        "x = torch.randn(n, device=device)\n"
        "mask = torch.zeros(n, dtype=torch.bool, device=device)\n"
        "for b in range(n):\n    mask[b] = b % 2 == 0\n"
        "ref = slow_reference(x, mask)\n"
        "total, count = sum(float(v) for v in x.tolist()), n\n"
        "scale = 2.0\n"
        "torch.manual_seed(1)\n"
        "out = mod.kernel(x * scale, mask)\n").body
    kept = [ast.unparse(s).split("\n")[0] for s in _feeding_the_call(stmts)]
    assert kept == ["x = torch.randn(n, device=device)", "mask = torch.zeros(n, dtype=torch.bool, device=device)",
                    "for b in range(n):", "scale = 2.0", "torch.manual_seed(1)", "out = mod.kernel(x * scale, mask)"]


def test_aka_a_test_that_fills_its_inputs_a_value_at_a_time_is_observed_within_a_budget(tmp_path, monkeypatch):
    """A runner that fills the kernel's index one value at a time in a loop over its size (and totals the table on
    the host before the call, which the call does not read): its cases, a list of one size each, are read with the
    loop variable as the parameter, the inputs are made by its own statements, and its cases are not grown past
    where one observation of its statements would take more CPU seconds than it may: the report says so (vectorise
    them), instead of the import running for hours. Where even the case itself takes longer, the shapes are read
    from the test's text and the report says why."""
    import arena.authoring.importers.observe as observe

    monkeypatch.setattr(observe, "ONE_OBSERVATION_SECONDS", 2.0)
    monkeypatch.setattr(observe, "OBSERVATION_SECONDS", 4.0)
    result = import_aka(FIX / "aka_vllm_filled_index", tmp_path)
    task = load_task(result.folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("table", [512, 64]), ("idx", ["n"])]
    assert [dict(c.params) for c in task.configs("seen")][:2] == [{"n": 1024}, {"n": 4096}]
    assert "for i in range(n):" in (result.folder / "reference.py").read_text()     # make_inputs fills it so
    (note,) = [d for d in _decisions(result.report()) if "production shapes" in d]
    assert re.search(r"the largest growth refused is n = \d+ \([\d.]+ MB\): the test's statements up to its kernel "
                     r"call ran (more than 2 CPU seconds|past the 4 CPU seconds the observations of an import may "
                     r"take) there", note), note
    monkeypatch.setattr(observe, "ONE_OBSERVATION_SECONDS", 0.0)
    result = import_aka(FIX / "aka_vllm_filled_index", tmp_path / "none")
    assert any(". the test's statements up to its kernel call ran more than 0 CPU seconds for the case n = 4096: "
               "the shapes are read from the text of task_runner.py only" in d
               for d in _decisions(result.report())), result.report()


def _entry_of(folder: Path) -> str:
    return (folder / "baseline.hip").read_text().split("entry added by")[1].split("// ---- the original")[0]


def test_aka_gpumode_module_whose_get_inputs_loops_over_cases(tmp_path, cases_as_written):
    """A gpumode-style folder: the module's get_inputs loops over cases written in it. Their sizes
    become parameters (one number of the first case, one parameter), the cases of the common
    rank are the seen configs, and the held-out drafts are each run through the module on the
    meta device; the extension's host code is cut, so the entry is left to write (not complete)."""
    result = import_aka(FIX / "aka_gpumode_rowscale", tmp_path)
    folder = tmp_path / "hip2hip" / "aka_gpumode_rowscale"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("x", ["case0", "case1", "case2"]), ("w", ["case2"])]
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("out", ["case0", "case1", "case2"])]
    assert [s.name for s in task.scalars] == ["case0", "case1", "case2"]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"case0": 2, "case1": 64, "case2": 256}, {"case0": 4, "case1": 128, "case2": 512},
        {"case0": 8, "case1": 128, "case2": 1024}]                 # the 1-D case of the list is left out
    held = {c.name: dict(c.params) for c in task.configs("heldout")}
    assert len(held) >= 4 and held["draft-prime"] == {"case0": 8, "case1": 128, "case2": 1021}
    assert held["draft-scale-up"] == {"case0": 8, "case1": 128, "case2": 2050}
    report = result.report()
    assert "loops over 4 cases written in it (configs)" in report and "1 of another rank" in report
    # the host code follows the common pattern: it is translated into the entry
    entry = _entry_of(folder)
    assert "hipErrorNotSupported" not in entry and "torch::" not in entry
    assert "int rows = (int64_t)case0 * (int64_t)case1, cols = (int64_t)case2;" in entry
    assert ("hipLaunchKernelGGL(rowscale_kernel, dim3(blocks), dim3(threads), 0, stream, ((float*)x), "
            "((float*)w), ((float*)out), rows, cols)") in entry
    assert "the entry is forward translated from it: tensors matched to the signature's inputs by name" in report


def test_aka_gpumode_module_cases_below_the_timing_window_are_grown_into_it(tmp_path, monkeypatch):
    """A module's get_inputs cases are test shapes: where none is in the timing window, each is grown into it
    (its sizes doubled in turn, each run through the module), as a test script's cases are; the drafts are made
    around the largest, and the smoke config is shrunk from the problem's own sizes."""
    import arena.authoring.importers.common as common

    # a window of 60 MB, not 300: the same growth, at a fifth of the sizes (the module's probes, and the rounding
    # measured on the drafts, run at full size on the CPU)
    monkeypatch.setattr(common, "WINDOW_BYTES", 60 * 10**6)
    from arena.authoring.importers.common import MAX_CONFIG_BYTES, WINDOW_BYTES

    result = import_aka(FIX / "aka_gpumode_rowscale", tmp_path)
    task = load_task(tmp_path / "hip2hip" / "aka_gpumode_rowscale")
    assert result.ok, result.report()
    seen = [dict(c.params) for c in task.configs("seen")]

    def moved(c: dict) -> int:     # x, w and out, float32
        return 4 * (2 * c["case0"] * c["case1"] * c["case2"] + c["case2"])

    assert len(seen) == 3 and all(WINDOW_BYTES <= moved(c) <= MAX_CONFIG_BYTES for c in seen), seen
    names = [c.name for c in task.configs("seen")]
    assert names[0] == "case0" and names[1].startswith("case") and "grown from" in (
        tmp_path / "hip2hip" / "aka_gpumode_rowscale" / "configs" / "seen.yaml").read_text()
    largest = max(seen, key=moved)
    held = [dict(c.params) for c in task.configs("heldout")]
    assert len(held) >= 4 and all(moved(h) >= moved(largest) // 8 for h in held), held
    assert moved(dict(task.configs("smoke")[0].params)) < 10**6
    assert "below the timing window (>= 20 us on an H100): seen.yaml holds" in result.report()


def test_a_size_the_bytes_and_the_work_do_not_follow_is_not_grown_without_end():
    """A growth into the timing window doubles the size that moves the most bytes; where the sizes that move them are
    frozen (the original refuses them larger), a size neither the bytes nor the work follow (a block size that only
    divides a count) was doubled on without end, and the work's float of it overflowed (AKA's w8a8_block_int8_matmul:
    OverflowError, the import lost). It is frozen too: the growth ends where the others stopped."""
    from arena.authoring.importers.common import grown, in_window

    def nbytes(c: dict) -> int:           # a matrix of M x K and its scales, one a block of K
        return 4 * c["M"] * c["K"] + 4 * c["M"] * -(-c["K"] // c["block_k"])

    def work(c: dict) -> float:
        return float(2 * c["M"] * c["K"])

    def valid(c: dict) -> bool:           # the original takes M and K up to 1024 only
        assert c["block_k"] < 2**20, f"block_k doubled without end: {c}"
        return c["M"] <= 1024 and c["K"] <= 1024

    base = {"M": 16, "K": 128, "block_k": 128}
    got = grown(base, ["M", "K", "block_k"], valid, nbytes, in_window(nbytes, work), work)
    assert got == {"M": 1024, "K": 1024, "block_k": 128}, got
    # work alone moves the window where bytes do not: a size only the work follows still grows
    steps = grown({"n": 4, "steps": 1}, ["n", "steps"], lambda c: c["n"] <= 64, lambda c: 4 * c["n"],
                  in_window(lambda c: 4 * c["n"], lambda c: float(c["n"] * c["steps"] * 10**6)),
                  lambda c: float(c["n"] * c["steps"] * 10**6))
    assert steps["n"] == 64 and steps["steps"] > 1, steps


def test_a_size_whose_doubling_the_original_refuses_steps_by_three_halves_then_five_quarters():
    """FLA's chunked cumsum: its reference's cost, a chunk at a time, refused 2,097,152 steps (134 MB), and
    1,048,576 (67 MB) is below the check's floor of 100 MB: the import stayed below the window. A size whose doubling
    the original refuses steps by 3/2, then by 5/4, as far as it takes them, as a size past the bytes bound does:
    1,572,864 steps are past the floor."""
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN, grown, in_window

    def nbytes(c: dict) -> int:
        return 64 * c["T"]

    bound = WINDOW_BYTES / WINDOW_MARGIN / 64 * 1.02          # the reference's cost bound, just past the floor
    enough, floor = in_window(nbytes, lambda c: 0.0), in_window(nbytes, lambda c: 0.0, 1 / WINDOW_MARGIN)
    start = 1 << 10
    doubled = start << int(math.log2(bound / start))
    got = grown({"T": start}, ["T"], lambda c: c["T"] <= bound, nbytes, enough)
    assert not floor({"T": doubled}) and got["T"] > doubled and floor(got) and got["T"] <= bound, (got, doubled)
    assert got == {"T": doubled * 3 // 2}, got


def test_a_size_the_original_bounds_by_one_that_moves_nothing_grows_with_it():
    """A KV cache counted by the slots written moves nothing more for more slots, and its tokens may not pass its
    slots: doubled alone, the tokens stopped at the slots, below the window. Refused alone, they are doubled with a
    size that moves nothing itself, where the original takes that, in the case's proportion to it (doubled only to
    the bound, the tokens wrote every slot and the cache's old values were gone from the outputs: degenerate); a
    size the original refuses either way stays where it stopped."""
    from arena.authoring.importers.common import grown, in_window

    def nbytes(c: dict) -> int:           # the tokens' rows, read and written to their slots
        return 2 * 4 * c["tokens"] * c["dim"]

    def valid(c: dict) -> bool:
        return c["tokens"] <= c["slots"] and c["dim"] <= 64

    enough = in_window(nbytes, lambda c: 0.0)
    got = grown({"tokens": 64, "dim": 32, "slots": 256}, ["tokens", "dim", "slots"], valid, nbytes, enough)
    assert enough(got) and got["dim"] == 64 and got["tokens"] > 256 and got["slots"] == 4 * got["tokens"], got
    stuck = grown({"tokens": 64, "dim": 32, "slots": 256}, ["tokens", "dim", "slots"],
                  lambda c: valid(c) and c["slots"] <= 256, nbytes, enough)
    assert stuck == {"tokens": 256, "dim": 64, "slots": 256}, stuck


def test_a_cache_of_whole_blocks_and_spare_ones_is_written_as_a_formula():
    """vLLM's paged attention tests size a KV cache as the blocks every sequence needs and a few spare
    (``num_seqs * ceil(seq_len_k / block_size) + 4``): no product, line, window or quotient of the sizes writes it,
    so the cache's first dimension was kept as the largest case's number (20), and the inputs made at any other
    config did not have the signature's shape. It is written as the others' product times a whole number of blocks,
    plus the spare ones, where that holds at every probe; a size that is no such count stays a number, said so."""
    from arena.authoring.importers.common import Fitter
    from arena.taskdef import formula

    def probe(spare: int):
        def run(c: dict) -> dict:
            if c["nkvh"] > c["nqh"]:
                raise ValueError("num_queries_per_kv = 0")
            blocks = (c["seq_len_k"] + c["bs"] - 1) // c["bs"]
            return {"cache": c["num_seqs"] * blocks + spare, "odd": c["num_seqs"] * blocks + c["bs"] % 7}
        return run

    base = {"num_seqs": 1, "seq_len_q": 16, "seq_len_k": 512, "nqh": 8, "nkvh": 8, "hs": 128, "bs": 32}
    fit = Fitter(base, probe(4))
    got = fit.int_formula(lambda r: r["cache"], "dimension 0 of key_cache")
    assert got == "num_seqs * ((seq_len_k - 1) // bs + 1) + 4" and not fit.inexact, (got, fit.inexact)
    for c in ({"num_seqs": 3, "seq_len_k": 100, "bs": 16}, {"num_seqs": 7, "seq_len_k": 4097, "bs": 64}):
        assert formula.evaluate(got, {**base, **c}) == probe(4)({**base, **c})["cache"]
    assert Fitter(base, probe(0)).int_formula(lambda r: r["cache"]) == "num_seqs * ((seq_len_k - 1) // bs + 1)"
    fit = Fitter(base, probe(4))
    assert fit.int_formula(lambda r: r["odd"], "dimension 1 of odd") == 16 + 32 % 7
    assert fit.inexact and "cannot write" in fit.inexact[0], fit.inexact


def test_a_shape_space_drafted_around_a_config_with_a_size_of_0_keeps_it():
    """A size the cases vary (a sliding window of 64) may be 0 in the config the ranges are drafted around (a case
    grown with it off): [0 // 8, 0 * 4] is no range, and the task did not validate (``min > max``)."""
    from arena.authoring.importers.common import shape_space_draft

    assert shape_space_draft({"seq": 512, "window": 0, "bs": 16}, ["seq", "window"]) == {
        "seq": {"min": 64, "max": 2048}, "window": {"choices": [0]}, "bs": {"choices": [16]}}


def test_a_count_whose_probes_run_out_of_time_at_the_largest_case_is_fitted_around_the_smallest():
    """An attention's FLOPs grow as its sequence's square: around the test's largest case the probe with the sequence
    doubled ran out of CPU time, the sequence read as a size the count does not follow, no product fitted the rest,
    and the largest case's count (8.6 GFLOP) stood for every config, so configs of 10 us passed for ones inside the
    timing window (vLLM's flash_prefill_attention). The count is fitted again around the smallest case and kept
    where it gives the largest case's count; where no formula does, the count is said to be the largest case's
    alone."""
    from arena.authoring.importers.aka import _flops_formula
    from arena.authoring.importers.common import Fitter, ProbeTimeout

    def probe(extra: int = 0):
        def run(c: dict) -> dict:
            if c["seq"] * c["heads"] > 1024 * 16:
                raise ProbeTimeout("more than 8 CPU seconds")
            return {"flops": 4 * c["batch"] * c["heads"] * c["seq"] * c["seq"] * c["dim"] + extra * c["seq"]}
        run.cpu_left = [0.0]    # spent by the first fit: the refit gets a budget of its own
        return run

    largest, smallest = {"batch": 1, "seq": 1024, "heads": 16, "dim": 64}, {"batch": 2, "seq": 128, "heads": 8,
                                                                           "dim": 64}
    fn = probe()
    assert Fitter(largest, fn).number_formula(lambda r: int(r["flops"]))[1] is False   # what happened before
    decisions: list[str] = []
    got, ok = _flops_formula(Fitter(largest, fn), smallest, fn, decisions)
    assert ok and got == "4 * batch * seq * seq * heads * dim", got
    assert fn.cpu_left[0] > 0 and any("fitted around the smallest case" in d for d in decisions), decisions
    # where no product fits around the smallest either: the largest case's count, said to be no formula
    fn = probe(extra=3)
    got, ok = _flops_formula(Fitter(largest, fn), smallest, fn, [])
    assert (got, ok) == (4 * 1024 * 1024 * 16 * 64 + 3 * 1024, False)


def test_growth_keeps_a_half_precision_output_in_range_and_grows_the_sizes_its_values_follow_last():
    """Growth into the timing window doubled the size that moves the most bytes, whatever the outputs' values did:
    rocmbench's test_chained_matmul grew the length of its second product's sum (n, 64 to 1,048,576) until its fp16
    outputs reached 6.8e6, and the check refused the task. The outputs' magnitudes are read on the CPU at the case
    and with each size made larger (``RangeModel``): a size whose values follow it is held where its output's
    predicted largest value stays ``RANGE_MARGIN`` times inside the dtype's range, and is grown after the others (the
    rows here), which then take the task into the window."""
    from arena.authoring.importers.common import RANGE_MARGIN, RangeModel, grown, in_window

    reads = []

    # out[m, k] = (a[m, k] @ b[n, k].T) @ c[n, k]: its values follow sqrt(n); at the case, its largest is where the
    # range's bound is reached at n = 8,192
    edge = 0.999 * 65504 / RANGE_MARGIN / math.sqrt(8192 / 64)

    def magnitudes(c: dict) -> dict:
        reads.append(dict(c))
        grow = math.sqrt(c["n"] / 64)
        return {"out": (edge * grow, edge / 4 * grow, c["m"] * c["k"])}

    def counts(c: dict) -> dict:
        return {"out": c["m"] * c["k"]}

    base = {"m": 32, "n": 64, "k": 128}
    model = RangeModel(magnitudes, base, ["m", "n", "k"], {"out": 65504.0}, counts)
    assert set(model.follows) == {"n"} and model.follows["n"]["out"] == pytest.approx(math.sqrt(2))
    assert reads[0] == base and len(reads) == 4         # the case, then each size four times larger
    assert model(base) and model({**base, "n": 8192}) and not model({**base, "n": 16384})
    big_n = {**base, "n": 2**30}
    assert not model(big_n) and "out would reach about" in model.past(big_n) and "follow n" in model.past(big_n)

    def nbytes(c: dict) -> int:             # a and the output m x k, b and c n x k, fp16
        return 2 * (2 * c["m"] * c["k"] + 2 * c["n"] * c["k"])

    enough = in_window(nbytes, lambda c: 0.0)
    # k as the kernel's block takes it (kept); n moves the most bytes a doubling (it is in two inputs): grown first, it
    # takes the range to its bound, and the rows, which move the largest value's tail (more values), are refused
    # after it: the config stops far below the window
    first = grown(base, ["m", "n"], model, nbytes, enough)
    assert first == {**base, "n": 8192} and not enough(first), first
    # grown last, the rows take the config into the window, the values as the case has them
    got = grown(base, ["m", "n"], model, nbytes, enough, last=model.follows)
    assert enough(got) and got["n"] == base["n"] and got["m"] > base["m"] and model(got), got
    # a case whose values the reference cannot read (None): no size is held
    assert RangeModel(lambda c: None, base, ["m", "n", "k"], {"out": 65504.0}, counts)(big_n)


def test_growth_keeps_an_output_that_shrinks_as_a_size_grows_above_what_its_tolerance_asks():
    """An attention averages its values over its keys: its outputs shrink as 1 / sqrt(keys). vLLM's
    unified_attention_2d, grown along its keys to 16,384, had 56% of its outputs below the test's atol of 0.01 on an
    H200, and the check refused every config (configs too large for the CPU to read for the tolerance's scale). The
    range model reads how each output's values shrink along each size, and holds growth and drafts where the predicted
    spread and median stay ``FLOOR_MARGIN`` times above what the degeneracy rules ask at the output's atol; the other
    sizes then take the config into the window."""
    from arena.authoring.importers.common import FLOOR_MARGIN, RangeModel, grown, in_window

    def magnitudes(c: dict) -> dict:        # out[seqs, heads, 64]: a mean over `keys` of N(0, 1) values
        sd = 1 / math.sqrt(c["keys"])
        return {"out": (4 * sd, sd, c["seqs"] * c["heads"] * 64, sd, 0.674 * sd)}

    def counts(c: dict) -> dict:
        return {"out": c["seqs"] * c["heads"] * 64}

    base = {"seqs": 4, "heads": 8, "keys": 512}
    sizes = ["seqs", "heads", "keys"]
    model = RangeModel(magnitudes, base, sizes, {}, counts, floors={"out": 0.01})
    assert set(model.shrinks) == {"keys"} and model.shrinks["keys"]["out"] == pytest.approx(1 / math.sqrt(2))
    assert not model.follows
    # the median at 512 keys is 0.0298, at 1,024 0.0211, at 2,048 0.0149: under FLOOR_MARGIN times the atol
    assert FLOOR_MARGIN == 2
    assert model(base) and model({**base, "keys": 1024}) and not model({**base, "keys": 2048})
    why = model.past({**base, "keys": 2048})
    assert "median nonzero |value| would shrink to about 0.0149" in why and "as keys grows" in why, why
    assert model({**base, "seqs": 4096, "heads": 64})       # sizes the values do not follow

    def nbytes(c: dict) -> int:             # a K and a V cache of fp16, and the output
        return 2 * (2 * c["seqs"] * c["keys"] * c["heads"] * 64 + c["seqs"] * c["heads"] * 64)

    enough = in_window(nbytes, lambda c: 0.0)
    # with no floor the keys grow as far as the sequences: their doublings move as many bytes
    free = grown(base, ["seqs", "keys"], RangeModel(magnitudes, base, sizes, {}, counts), nbytes, enough)
    assert enough(free) and free["keys"] > 2048, free
    got = grown(base, ["seqs", "keys"], model, nbytes, enough)
    assert enough(got) and got["keys"] == 1024 and got["seqs"] > free["seqs"] and model(got), got
    # an output the test's own atol already leaves degenerate at the case is the tolerance's scaling's to answer
    # (``scaled_test_tolerance``): no floor is held
    low = RangeModel(magnitudes, base, sizes, {}, counts, floors={"out": 0.1})
    assert low({**base, "keys": 2**20}) and not low.floor_read(0)[0]
    # read at the case nearest a config: a case whose window bounds the keys (its values do not shrink along them)
    # holds nothing along them; one with no window (0) does, and a config with no window is nearest it
    def windowed(c: dict) -> dict:
        sd = 1 / math.sqrt(min(c["keys"], c["window"]) if c["window"] else c["keys"])
        return {"out": (4 * sd, sd, c["seqs"] * 64, sd, 0.674 * sd)}

    wide = {"seqs": 4, "keys": 1024, "window": 64}
    cases = [{"seqs": 2, "keys": 256, "window": 0}, {"seqs": 8, "keys": 128, "window": 32}]
    two = RangeModel(windowed, wide, ["seqs", "keys", "window"], {}, counts, {"out": 0.01}, cases)
    assert "keys" not in two.shrinks and two({**wide, "keys": 2**20})
    assert two.nearest({"seqs": 64, "keys": 512, "window": 0}) == 1
    assert two({"seqs": 2, "keys": 1024, "window": 0}) and not two({"seqs": 2, "keys": 4096, "window": 0})
    # sizes that bound each other's effect (a window read alone at 128 keys, past them, moves little): where the
    # reference ran at a config on the CPU, its outputs there are read as well
    assert two.measured({"seqs": 8, "keys": 4096, "window": 4096}, {"out": (0.05, 0.03)}) is None
    why = two.measured({"seqs": 8, "keys": 4096, "window": 4096}, {"out": (0.05, 0.015)})
    assert why and "median nonzero |value| is 0.015 there" in why, why


def test_aka_gpumode_host_code_is_translated_into_the_entry(tmp_path, cases_as_written):
    """A gpumode extension whose host function reads sizes off its tensors, allocates one output,
    dispatches over dtypes and launches on PyTorch's stream: the entry is that function with
    data_ptr -> the entry's pointers, size/numel/stride -> the signature's shape formulas, the
    allocation -> the output pointer, the stream -> the entry's, the attribute the module hands
    `fn` (slope) a constant; checks dropped, a `return;` of the dispatch lambda kept a lambda's."""
    result = import_aka(FIX / "aka_gpumode_leaky", tmp_path)
    folder = tmp_path / "hip2hip" / "aka_gpumode_leaky"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("x", ["case0", 256]), ("bias", [256])]
    assert [s.name for s in task.scalars] == ["case0"]
    assert [dict(c.params) for c in task.configs("seen")] == [{"case0": 64}, {"case0": 128}, {"case0": 256}]
    assert len(task.configs("heldout")) >= 4
    entry = _entry_of(folder)
    assert entry.startswith(" `arena tasks import aka`: the task's ABI ----\nextern \"C\" int aka_gpumode_leaky(\n"
                            "    const float* x,\n    const float* bias,\n    float* out,\n    int64_t case0,\n"
                            "    hipStream_t stream) {\n    const double slope = 0.125;\n")
    assert "const long n = ((int64_t)case0 * (int64_t)256);" in entry
    assert "const int cols = static_cast<int>((int64_t)256);" in entry
    assert "const long row_stride = ((int64_t)256);" in entry
    assert "if (n == 0) return (int)hipGetLastError();" in entry
    assert "[&]() { using scalar_t = float;" in entry and "}();" in entry and "if (n < 0) return;" in entry
    assert "leaky_kernel<scalar_t><<<grid, block, 0, stream>>>(((scalar_t*)x), ((scalar_t*)bias)," in entry
    assert "((scalar_t*)out), n, cols, row_stride," in entry
    for gone in ("torch::", "at::", "TORCH_CHECK", "C10_", "check_input", "xc", "getCurrentHIPStream"):
        assert gone not in entry, gone
    assert entry.rstrip().endswith("return (int)hipGetLastError();\n}")
    assert "slope set to the values the module passes" in result.report()


@pytest.mark.usefixtures("cases_as_written")
@pytest.mark.parametrize("fixture", ["aka_gpumode_leaky", "aka_gpumode_rowscale"])
def test_aka_translated_entry_compiles_for_rocm(tmp_path, fixture):
    """The translated baseline builds (compile, object check, link) with hipcc; running it needs
    a GPU, so this says nothing of its results (nor do the sizes: the cases as written)."""
    from toolchains import ARCHS, need  # noqa: E402 - tests/ is on the path

    from arena.toolchain.hip import build_hip, toolchain_available

    need(toolchain_available("rocm"))
    assert import_aka(FIX / fixture, tmp_path).ok
    built = build_hip(tmp_path / "hip2hip" / fixture / "baseline.hip", target="rocm", arch=ARCHS["rocm"],
                      cache_dir=tmp_path / "cache")
    assert built.ok, built.log[-2000:]


def test_aka_the_translated_starting_kernel_is_built_on_the_cpu(tmp_path, cases_as_written):
    """The import builds a HIP starting kernel as the harness builds it on the CPU (compile-only, for each vendor
    whose compiler is here). A branch the task takes keeps its braces, so the locals it declares stay its own (gpumode's
    TanH declares its block size in its fp32 branch and again after it: unbraced, nvcc refused the entry on an
    H200); device code that does not compile is found on the CPU, not on a GPU."""
    from toolchains import need  # noqa: E402 - tests/ is on the path

    from arena.toolchain.hip import toolchain_available

    need(toolchain_available("rocm") and toolchain_available("cuda"))
    src = tmp_path / "src" / "aka_gpumode_leaky"
    shutil.copytree(FIX / "aka_gpumode_leaky", src)
    hip = src / "hip" / "leaky.hip"
    text = hip.read_text()
    dispatch = text[text.index("    AT_DISPATCH_FLOATING_TYPES"):text.index("    C10_HIP_CHECK")]
    fp32 = ("    if (x.scalar_type() == at::kFloat) {\n        const int blocks = (int)((n + threads - 1) / threads);\n"
            "        leaky_kernel<float><<<blocks, threads>>>(xc.data_ptr<float>(), bias.data_ptr<float>(),\n"
            "            out.data_ptr<float>(), n, cols, row_stride, static_cast<float>(slope));\n        return out;\n"
            "    }\n    const int blocks = (int)((n + threads - 1) / threads);\n")
    hip.write_text(text.replace(dispatch, fp32 + dispatch))
    result = import_aka(src, tmp_path / "a")
    entry = _entry_of(tmp_path / "a" / "hip2hip" / "aka_gpumode_leaky")
    assert "    {\n        const int blocks" in entry and "leaky_kernel<float><<<blocks, threads, 0, stream>>>" in entry
    assert any(c.startswith("the starting kernel builds for ") for c in result.checks), result.report()
    assert not _found(result), result.report()
    hip.write_text(hip.read_text().replace("T v = x[i] + bias[i % cols];", "T v = x[i] + bias[i % cols] + nowhere;"))
    result = import_aka(src, tmp_path / "b")
    assert any(p.startswith("the starting kernel does not build (") and "nowhere" in p
               for p in _found(result)), result.report()


@pytest.mark.parametrize("body, why", [
    ("auto y = torch::empty_like(x); float s = x.sum().item<float>(); k<<<1, 1>>>(y.data_ptr<float>(), s); return y;",
     "uses PyTorch beyond sizes, pointers and one output (`float s = x.sum().item<float>();"),
    ("auto y = torch::empty_like(x); auto z = torch::empty(sizes, x.options()); return y;",
     "`z` is allocated with a shape that is not a braced list"),
    ("auto y = torch::empty_like(x); return x;", "returns something other than its output"),
    ("auto y = torch::empty_like(x); k<<<1, 1>>>(y.data_ptr<float>(), x.sizes().vec()[n]); return y;",
     "uses PyTorch beyond sizes"),
])
def test_aka_host_code_off_the_pattern_is_not_translated(body, why):
    """What does not follow the pattern (a host-side `.item()`, scratch of a shape not written
    out, a returned input, the sizes as a vector) keeps the stub, with the reason."""
    from arena.authoring.importers.aka import translate_torch_host

    piece = "torch::Tensor fwd(torch::Tensor x) {\n    " + body + "\n}"
    spec = {"dtype": "float32", "shape": ["n"]}
    params, lines, _, reason = translate_torch_host(
        [piece], [("forward", "fwd")], [{"name": "x", **spec}], [{"name": "out", **spec}],
        [{"name": "n", "type": "int64"}])
    assert params is None and lines == [] and why in reason, reason


BRANCHED_HOST = """torch::Tensor fwd(torch::Tensor x, int64_t axis, const std::string& mode) {
    if (!x.device().is_hip()) {
        return x.softmax(axis);
    }
    auto dtype = x.scalar_type();
    bool supported =
        dtype == torch::kFloat32 ||
        dtype == torch::kHalf;
    if (!supported) return x.transpose(0, 1).contiguous();
    const int64_t ndim = x.dim();
    bool fast = (axis == ndim - 1) && x.is_contiguous();
    at::Tensor xin;
    if (fast) {
        xin = x;
    } else {
        xin = x.permute({1, 0}).contiguous();
    }
    int64_t rows = 1;
    for (int64_t i = 0; i < ndim - 1; ++i) rows *= x.size(i);
    int64_t cols = fast ? x.size(ndim - 1) : xin.size(ndim - 1);
    auto y2 = at::empty_like(xin);
    size_t shmem = 32 * torch::elementSize(x.scalar_type());
    if (mode == std::string("exp")) {
        k<<<rows, 256, shmem>>>(xin.data_ptr<float>(), y2.data_ptr<float>(), cols);
    } else if (mode == std::string("log")) {
        k2<<<rows, 256, shmem>>>(xin.data_ptr<float>(), y2.data_ptr<float>(), cols);
    } else {
        TORCH_CHECK(false, "unknown mode ", mode);
    }
    at::Tensor out;
    if (fast) {
        out = y2.view(x.sizes());
    } else {
        out = y2.permute({1, 0}).contiguous();
    }
    return out;
}"""


@pytest.mark.parametrize("axis, mode", [(1, "exp"), (1, "log"), (0, "exp")])
def test_aka_host_translation_takes_the_branches_the_task_fixes(axis, mode):
    """gpumode's host functions branch on what the task fixes: a fallback for a tensor not on the GPU or of
    another dtype, a fast path for the last axis, a mode string the module passes. Those branches are taken as
    they run for the task (the device, the layout, the dtype, the rank and the module's constant arguments), the
    tensor a branch sets is declared where it is set, and a size at an index the host computes as it runs (a
    loop over the dimensions) picks one of the signature's; what is left on the path taken is translated, and a
    path that computes with PyTorch (a permute's copy, for axis 0) is refused."""
    from arena.authoring.importers.aka import translate_torch_host

    spec = {"dtype": "float32", "shape": ["n", 64]}
    params, lines, _, reason = translate_torch_host(
        [BRANCHED_HOST], [("forward", "fwd")], [{"name": "x", **spec}], [{"name": "out", **spec}],
        [{"name": "n", "type": "int64"}], ([("tensor", "x"), ("value", axis)], {"mode": ("value", mode)}))
    if axis == 0:
        assert params is None and reason == "fwd returns something other than its output", reason
        return
    assert reason == "" and params == ["const float* x", "float* out", "int64_t n", "hipStream_t stream"]
    body = "\n".join(lines)
    for gone in ("softmax", "transpose", "permute", "is_hip", "scalar_type", "elementSize", "TORCH_CHECK"):
        assert gone not in body, gone
    assert "    const int64_t axis = 1;" in lines and f'    const std::string mode = "{mode}";' in lines
    assert "int64_t cols = (int64_t)64;" in body
    assert ("rows *= [&](int64_t arena__k) { const int64_t arena__d[] = {(int64_t)n, (int64_t)64}; "
            "return arena__d[arena__k]; }(i);") in body
    assert "size_t shmem = 32 * sizeof(*x);" in body
    launch = f"{'k' if mode == 'exp' else 'k2'}<<<rows, 256, shmem, stream>>>(((float*)x), ((float*)out), cols);"
    assert launch in body and body.count("<<<") == 1, body
    assert body.rstrip().endswith("return (int)hipGetLastError();")


def test_aka_host_translation_inlines_a_helper_that_returns_sizes():
    """`auto [B, M, K, N] = get_bmknd(a_, b_);`: the extension's helper reads the sizes off its tensors and returns
    them; its body takes the call's place, its parameters named as the call names them, so the sizes are the
    signature's. A last error read into a local that only a dropped check read goes (read there, it would be cleared
    before the entry returns it)."""
    from arena.authoring.importers.aka import translate_torch_host

    helper = """static inline std::tuple<int64_t, int64_t, int64_t, int64_t> get_bmknd(const at::Tensor& a,
                                                                       const at::Tensor& b) {
    TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2, "at least 2-D");
    int64_t M = a.size(-2);
    int64_t K = a.size(-1);
    int64_t N = b.size(-1);
    int64_t B = 1;
    for (int64_t i = 0; i < a.dim() - 2; ++i) B *= a.size(i);
    return {B, M, K, N};
}"""
    host = """torch::Tensor fwd(torch::Tensor a, torch::Tensor b) {
    auto a_ = a.contiguous();
    auto b_ = b.contiguous();
    auto [B, M, K, N] = get_bmknd(a_, b_);
    auto out = torch::empty({B, M, N}, a_.options());
    k<<<B, 256>>>(a_.data_ptr<float>(), b_.data_ptr<float>(), out.data_ptr<float>(), B, M, K, N);
    hipError_t err = hipGetLastError();
    TORCH_CHECK(err == hipSuccess, "launch failed: ", hipGetErrorString(err));
    return out;
}"""
    params, lines, _, reason = translate_torch_host(
        [helper, host], [("forward", "fwd")],
        [{"name": "a", "dtype": "float32", "shape": ["nb", "m", "k"]},
         {"name": "b", "dtype": "float32", "shape": ["nb", "k", "n"]}],
        [{"name": "out", "dtype": "float32", "shape": ["nb", "m", "n"]}],
        [{"name": s, "type": "int64"} for s in ("nb", "m", "k", "n")])
    assert reason == "", reason
    body = "\n".join(lines)
    assert "get_bmknd" not in body and "hipError_t err" not in body and "TORCH_CHECK" not in body, body
    # the scalar k, shadowed by the kernel's name, is the entry's arena_k: the index a loop picks with is another name
    assert "int64_t M = (int64_t)m;" in body and "int64_t K = (int64_t)arena_k;" in body
    assert ("B *= [&](int64_t arena__k) { const int64_t arena__d[] = {(int64_t)nb, (int64_t)m, (int64_t)arena_k}; "
            "return arena__d[arena__k]; }(i);") in body and "i < 3 - 2" in body
    assert "k<<<B, 256, 0, stream>>>(((float*)a), ((float*)b), ((float*)out), B, M, K, N);" in body
    assert body.rstrip().endswith("return (int)hipGetLastError();")


def test_aka_the_module_hands_its_host_function_tensors_of_its_submodules_and_keywords(tmp_path):
    """`fn(x, self.proj.weight, self.proj.bias, self.k, mode="exp")`: the submodule's tensors are the inputs the
    module's importer names proj_weight and proj_bias, the number and the keyword string their values."""
    from arena.authoring.importers.aka import host_call_args

    module = tmp_path / "proj.py"
    module.write_text(
        "import torch\nimport torch.nn as nn\n\n\ndef module_fn(x, w, b, k=4, mode='fwd'):\n"
        "    return x @ w.t() + b * k\n\n\nclass Proj(nn.Module):\n    def __init__(self, d):\n"
        "        super().__init__()\n        self.proj = nn.Linear(d, d)\n        self.k = 3\n\n"
        "    def forward(self, x, fn=module_fn):\n        return fn(x, self.proj.weight, self.proj.bias, self.k, "
        "mode='exp')\n\n\ndef get_inputs():\n    return [torch.randn(8, 16)]\n\n\n"
        "def get_init_inputs():\n    return [16]\n")
    assert host_call_args(module) == (
        [("tensor", "x"), ("tensor", "proj_weight"), ("tensor", "proj_bias"), ("value", 3)],
        {"mode": ("value", "exp")})


def test_aka_host_code_that_changes_its_input_in_place_copies_it_into_the_output_first():
    """gpumode's activations change their input in place and return it: the entry copies the input into the
    output, the kernels change the output (the input stays as given), and a dtype kept in a local and
    compared later resolves like one compared at once."""
    from arena.authoring.importers.aka import translate_torch_host

    piece = ("torch::Tensor fwd(torch::Tensor x) {\n    torch::Tensor y = x.is_contiguous() ? x : x.contiguous();\n"
             "    int64_t N = y.numel();\n    if (N == 0) return y;\n    auto st = y.scalar_type();\n"
             "    if (st == at::kFloat) { k<<<1, 1>>>(y.data_ptr<float>(), N); }\n"
             "    else if (st == at::kDouble) { k<<<1, 1>>>(y.data_ptr<double>(), N); }\n    return y;\n}")
    spec = {"dtype": "float32", "shape": ["n"]}
    params, lines, decisions, reason = translate_torch_host(
        [piece], [("forward", "fwd")], [{"name": "x", **spec}], [{"name": "out", **spec}],
        [{"name": "n", "type": "int64"}])
    assert reason == "" and params == ["const float* x", "float* out", "int64_t n", "hipStream_t stream"]
    body = "\n".join(lines)
    assert lines[0] == ("    (void)hipMemcpyAsync(out, x, (size_t)(((int64_t)n)) * sizeof(*out), "
                        "hipMemcpyDeviceToDevice, stream);")
    assert "if (true) { k<<<1, 1, 0, stream>>>(((float*)out), N); }" in body and "else if (false)" in body
    assert "scalar_type" not in body and "x)" not in body.split("\n", 1)[1]
    assert "the input `x` it changes in place copied into the output first" in decisions[0]
    # an input changed in place whose shape is not the output's: not translated
    params, _, _, reason = translate_torch_host(
        [piece], [("forward", "fwd")], [{"name": "x", **spec}], [{"name": "out", "dtype": "float32", "shape": [1]}],
        [{"name": "n", "type": "int64"}])
    assert params is None and "changes its input `x` in place" in reason


def test_aka_host_translation_renames_an_entry_parameter_a_host_local_shadows():
    from arena.authoring.importers.aka import translate_torch_host

    piece = ("torch::Tensor fwd(torch::Tensor x) {\n    auto y = torch::empty_like(x);\n"
             "    const int64_t n = x.size(0);\n    k<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
             "    return y;\n}")
    spec = {"dtype": "float32", "shape": ["n // 2 * 2"]}
    params, lines, _, reason = translate_torch_host(
        [piece], [("forward", "fwd")], [{"name": "x", **spec}], [{"name": "out", **spec}],
        [{"name": "n", "type": "int64"}])
    assert reason == "" and params == ["const float* x", "float* out", "int64_t arena_n", "hipStream_t stream"]
    assert "    const int64_t n = (((int64_t)arena_n / (int64_t)2) * (int64_t)2);" in lines
    assert "    k<<<1, 1, 0, stream>>>(((float*)x), ((float*)out), n);" in lines


def test_aka_host_translation_allocates_the_intermediates_and_reads_views():
    """A host function that allocates intermediates besides its output (options taken from an
    input), views an input and returns a view of its output: the intermediates become scratch the
    entry allocates and frees on its stream (on every return, an early one too), their sizes the
    host's own expressions; the returned allocation is the output pointer (zeroed, as `zeros`)."""
    from arena.authoring.importers.aka import translate_torch_host

    piece = """torch::Tensor fwd(torch::Tensor x, torch::Tensor w) {
    auto opts = x.options();
    const int64_t B = x.size(0);
    auto x2 = x.contiguous().view({B, 64});
    auto h = torch::empty({B, 32}, opts);
    auto y2 = at::zeros({B, 16}, opts);
    if (B == 0) return y2;
    k1<<<B, 32>>>(x2.data_ptr<float>(), w.data_ptr<float>(), h.data_ptr<float>(), h.size(1));
    k2<<<B, 16>>>(h.data_ptr<float>(), y2.data_ptr<float>(), h.numel());
    return y2.view({B, 4, 4});
}"""
    params, lines, decisions, reason = translate_torch_host(
        [piece], [("forward", "fwd")],
        [{"name": "x", "dtype": "float32", "shape": ["n", 64]}, {"name": "w", "dtype": "float32", "shape": [32, 64]}],
        [{"name": "out", "dtype": "float32", "shape": ["n", 4, 4]}], [{"name": "n", "type": "int64"}])
    assert reason == "" and params == ["const float* x", "const float* w", "float* out", "int64_t n",
                                       "hipStream_t stream"]
    done = "{ if (arena_tmp_h) (void)hipFreeAsync(arena_tmp_h, stream); return (int)hipGetLastError(); }"
    assert [ln for ln in lines if ln.strip()] == [
        "    float* arena_tmp_h = nullptr;",
        "    const int64_t B = (int64_t)n;",
        "    (void)hipMallocAsync((void**)&arena_tmp_h, (size_t)((B) * (32)) * sizeof(float), stream);",
        "    (void)hipMemsetAsync(out, 0, (size_t)(((int64_t)n * (int64_t)4 * (int64_t)4)) * sizeof(*out), stream);",
        f"    if (B == 0) {done}",
        "    k1<<<B, 32, 0, stream>>>(((float*)x), ((float*)w), ((float*)arena_tmp_h), (int64_t)(32));",
        "    k2<<<B, 16, 0, stream>>>(((float*)arena_tmp_h), ((float*)out), ((int64_t)(B) * (int64_t)(32)));",
        f"    {done}",
    ]
    assert "the other allocations (h) scratch the entry allocates and frees on `stream`" in decisions[0]


def test_aka_host_translation_reduces_a_files_own_error_macro_to_its_call():
    """A file's own check macro prints and exits, which a kernel file may not: a runtime call it
    wraps stays (its error is the entry's last), one that synchronises or reads the last error
    goes, a check of values goes; each leaves a statement where an `if` governs it."""
    from arena.authoring.importers.aka import _unwrap_checks

    text = ("  HIP_CHECK(hipGetLastError());\n  HIP_CHECK(hipMemcpyAsync(a, b, n, hipMemcpyDeviceToDevice, s));\n"
            "  CHECK_HIP(hipDeviceSynchronize());\n  if (x) HIP_CHECK(foo(1, (2)));\n  TORCH_CHECK(a, b);\n"
            "  CHECK_INPUT(x);\n")
    assert _unwrap_checks(text) == (
        "  (void)0;\n  (void)(hipMemcpyAsync(a, b, n, hipMemcpyDeviceToDevice, s));\n  (void)0;\n"
        "  if (x) (void)(foo(1, (2)));\n  TORCH_CHECK(a, b);\n  (void)0;\n")


def test_aka_host_translation_returns_a_view_of_a_computed_shape():
    """A host function that returns its output viewed to a shape it computes in a vector: the
    view is the output, the vector and what builds it go (a loop's body with it); a vector
    something else still reads keeps the stub."""
    from arena.authoring.importers.aka import translate_torch_host

    spec = {"dtype": "float32", "shape": ["n"]}

    def translate(body: str):
        piece = "torch::Tensor fwd(torch::Tensor x) {\n" + body + "\n}"
        return translate_torch_host([piece], [("forward", "fwd")], [{"name": "x", **spec}],
                                    [{"name": "out", **spec}], [{"name": "n", "type": "int64"}])

    params, lines, _, reason = translate(
        "    auto y = torch::empty({x.numel()}, x.options());\n"
        "    k<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>());\n"
        "    std::vector<int64_t> shape;\n    shape.reserve(x.dim());\n"
        "    for (int i = 0; i < x.dim(); ++i) {\n        shape.push_back(x.size(i));\n    }\n"
        "    auto output = y.view(shape);\n    return output;")
    assert reason == "", reason
    assert not any("shape" in ln or "x.size" in ln for ln in lines), lines
    assert "    k<<<1, 1, 0, stream>>>(((float*)x), ((float*)out));" in lines
    _, _, _, reason = translate(
        "    auto y = torch::empty_like(x);\n    std::vector<int64_t> shape = {x.size(0)};\n"
        "    k<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>(), shape.size());\n    return y.view(shape);")
    assert "uses PyTorch beyond sizes" in reason, reason
    _, _, _, reason = translate(
        "    auto y = torch::empty_like(x);\n    auto v = y.view(shape);\n"
        "    k<<<1, 1>>>(v.data_ptr<float>(), v.size(0));\n"
        "    return v;")
    assert "the sizes of `v`, a view of a shape not read here, are read" in reason, reason


def test_aka_host_translation_reads_an_input_viewed_in_place_with_its_new_shape():
    """`x = x.view({...})`: its sizes before the statement are the signature's, after it the view's."""
    from arena.authoring.importers.aka import translate_torch_host

    piece = ("torch::Tensor fwd(torch::Tensor x) {\n    const int64_t B = x.size(0);\n    x = x.view({B, 64});\n"
             "    auto y = torch::empty({B, x.size(1)}, x.options());\n"
             "    k<<<B, 64>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1), x.numel());\n    return y;\n}")
    params, lines, _, reason = translate_torch_host(
        [piece], [("forward", "fwd")], [{"name": "x", "dtype": "float32", "shape": ["n", 8, 8]}],
        [{"name": "out", "dtype": "float32", "shape": ["n", 64]}], [{"name": "n", "type": "int64"}])
    assert reason == "" and "    const int64_t B = (int64_t)n;" in lines
    assert ("    k<<<B, 64, 0, stream>>>(((float*)x), ((float*)out), (int64_t)(64), "
            "((int64_t)(B) * (int64_t)(64)));") in lines


def test_a_quotient_with_a_far_fetched_factor_is_not_written():
    """A pooling's output size (h - k) // k + 1 is not a monomial: the fit that matches the probes
    with a factor 1023/1024 is refused (kept as the number, reported as inexact)."""
    from arena.authoring.importers.common import Fitter

    fitter = Fitter({"h": 2048, "k": 11}, lambda p: {"out": (p["h"] - p["k"]) // p["k"] + 1})
    assert fitter._monomial(["h", "k"], lambda r: r["out"], 186) is None


def test_a_static_forward_keeps_its_first_parameter(tmp_path):
    """`@staticmethod def forward(x)` has no self: x is the problem's input, not dropped."""
    problem = tmp_path / "static_silu.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    @staticmethod\n"
        "    def forward(x):\n        return x * torch.sigmoid(x)\n\n\nN = 1024\n\n\n"
        "def get_inputs():\n    return [torch.randn(N, 64)]\n\n\ndef get_init_inputs():\n    return []\n")
    result = import_kernelbench(problem, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(result.folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("x", ["N", "dim0"])]
    assert "return x * torch.sigmoid(x)" in (result.folder / "reference.py").read_text()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_geak_harness_indexes_a_config_list_and_checks_each_case_in_a_function(tmp_path):
    """A geak_eval-style harness: ``for idx in indices: cfg = ALL_CONFIGS[idx]`` over a comprehension
    of dicts, each case handed to a check function that reads ``cfg["M"]``, makes its inputs in a
    helper and compares: the dicts' integer fields are the parameters, the float that never changes
    a constant; the test is observed up to its kernel call for the shapes, and the reference does
    not import the kernel's file."""
    result = import_aka(FIX / "aka_geak_add_scaled", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_geak_add_scaled"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape)) for i in task.inputs] == [
        ("x", "float32", ["M", "N"]), ("y", "float32", ["M", "N"])]
    assert [(o.name, o.dtype, list(o.shape)) for o in task.outputs] == [("out", "float32", ["M", "N"])]
    assert [s.name for s in task.scalars] == ["M", "N"]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"M": m, "N": n} for m in (64, 128, 256) for n in (96, 192)]
    held = {c.name: dict(c.params) for c in task.configs("heldout")}
    assert len(held) >= 4 and held["draft-prime"] == {"M": 251, "N": 192}
    text = task.reference_path.read_text()
    assert "alpha = 0.5" in text and "kernel" not in text.split("def reference")[0]
    ref = import_file(task.reference_path, "ref_geak_add_scaled")
    x, y = torch.ones(2, 3), torch.full((2, 3), 2.0)
    assert torch.equal(ref.reference(x, y, 2, 3), torch.full((2, 3), 2.0))


def test_aka_whole_numbers_drawn_in_a_float_dtype_are_drawn_uniform_over_the_values_the_test_draws(tmp_path):
    """``torch.randint(-2, 3, ..., dtype=float32)`` draws -2 to 2 (randint's high is never drawn):
    the task draws uniform over [-2, 2], centred where the test's draws are, not over [-2, 3),
    whose mean of 0.5 sends a sum over a long row far from 0 (a sigmoid of it saturates)."""
    src = tmp_path / "src" / "aka_geak_whole_numbers"
    shutil.copytree(FIX / "aka_geak_add_scaled", src)
    harness = src / "test_kernel_harness.py"
    text = harness.read_text()
    draws = '    x, y = build_inputs(cfg, dtype)\n'
    assert draws in text
    size = '(cfg["M"], cfg["N"]), dtype=dtype, device="cuda")\n'
    harness.write_text(text.replace(draws, f"    x = torch.randn({size}    y = torch.randint(-2, 3, {size}"))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(tmp_path / "out" / "triton2triton" / "aka_geak_whole_numbers")
    assert [i.init for i in task.inputs] == [{"kind": "normal"}, {"kind": "uniform", "low": -2, "high": 2}]
    assert any("draws whole numbers (randint) in float32" in d for d in result.decisions)
    ys = make_inputs(task, task.env(task.configs("seen")[-1]), 0, "cpu")["y"]
    assert -2 <= ys.min() < -1.9 and 1.9 < ys.max() <= 2 and abs(float(ys.mean())) < 0.05


@pytest.mark.usefixtures("cases_as_written")
def test_aka_geak_harness_loops_over_a_parameter_and_compares_a_cpu_copy(tmp_path):
    """The other geak_eval layout: ``run_correctness(shapes=None)`` falls back to a module list
    that a comprehension computes, ``for idx, (M, N) in enumerate(shapes)``, inputs made by a helper
    whose device defaults to "cuda", the kernel imported
    under the test's own name (``rowmax as triton_rowmax``), its result compared through a CPU
    copy, and the reference a helper of the kernel's file: that helper is copied into
    reference.py (the task has no kernel.py to import), and the entry calls the launcher by its
    name in the file."""
    result = import_aka(FIX / "aka_geak_rowmax", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_geak_rowmax"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape)) for i in task.inputs] == [("x", "float32", ["M", "N"])]
    assert [(o.name, o.dtype, list(o.shape)) for o in task.outputs] == [("got", "float32", ["M"])]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"M": m, "N": n} for m in (32, 64) for n in (100, 200, 300)]
    assert len(task.configs("heldout")) >= 4
    text = task.reference_path.read_text()
    assert "def rowmax_torch(x):" in text
    assert [ln for ln in text.splitlines() if ln.startswith(("import ", "from "))] == ["import torch"]
    ref = import_file(task.reference_path, "ref_geak_rowmax")
    x = torch.tensor([[1.0, 5.0, 2.0], [-3.0, -1.0, -2.0]])
    assert torch.equal(ref.reference(x, 2, 3), torch.tensor([5.0, -1.0]))
    baseline = (folder / "baseline.py").read_text()
    assert "_returned = rowmax(x)" in baseline and "triton_rowmax" not in baseline
    # the test's helper makes its tensors on "cuda" (a default argument): make_inputs makes them where it is asked
    assert [i.init["kind"] for i in task.inputs] == ["custom"]
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", ref)
    assert ins["x"].device.type == "cpu" and tuple(ins["x"].shape) == (env["M"], env["N"])


def test_aka_launchers_of_a_triton_file_include_aliases_and_what_starts_a_kernel():
    """``gemm_a16w16 = gemm`` is a launcher too; of the file's functions, those that launch a
    kernel (or call one that does) come before helpers that make inputs or compute a reference."""
    import ast

    from arena.authoring.importers.aka import _launchers_py, _launching

    tree = ast.parse(
        "import triton\n"
        "@triton.jit\ndef _k(x): pass\n"
        "def gemm(x):\n    _k[(1,)](x)\n    return x\n"
        "def outer(x):\n    return gemm(x)\n"
        "def make_input(n):\n    return n\n"
        "gemm_a16w16 = gemm\n"
        "helper_alias = make_input\n"
    )
    jit, plain = _launchers_py(tree)
    assert jit == ["_k"] and plain == ["gemm", "outer", "make_input", "gemm_a16w16", "helper_alias"]
    assert _launching(tree, jit) == {"gemm", "outer", "gemm_a16w16"}


@pytest.mark.usefixtures("cases_as_written")
def test_aka_pytest_file_that_launches_its_kernel(tmp_path, capsys):
    """A rocmbench-style folder: the kernel and its pytest test are one file, the test launches the
    @triton.jit kernel itself (``kernel[grid](...)``) over stacked parametrisations (a comprehension
    of shapes the test unpacks, dtype strings, a launch setting), and imports a helper module of the
    folder that does not import here. The sizes of the cases are the seen configs (the first dtype, the launch setting a
    constant), the entry launches the kernel as the test does, and the baseline runs under the
    interpreter on the smoke config."""
    result = import_aka(FIX / "aka_pytest_row_scale", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_pytest_row_scale"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape)) for i in task.inputs] == [
        ("x", "float32", ["M", "N"]), ("s", "float32", ["M"])]
    assert [(o.name, o.dtype, list(o.shape)) for o in task.outputs] == [("out", "float32", ["M", "N"])]
    assert [s.name for s in task.scalars] == ["M", "N"]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"M": 1, "N": 128}, {"M": 1, "N": 320}, {"M": 16, "N": 128}, {"M": 16, "N": 320}, {"M": 48, "N": 128},
        {"M": 48, "N": 320}]
    # the smoke config is the smallest case with no size of 1 (one row would make a degenerate output)
    assert [dict(c.params) for c in task.configs("smoke")] == [{"M": 16, "N": 128}]
    held = {c.name: dict(c.params) for c in task.configs("heldout")}
    assert len(held) >= 4 and held["draft-prime"] == {"M": 48, "N": 317}
    baseline = (folder / "baseline.py").read_text()
    assert "def test_" not in baseline and "perf_helpers" not in baseline and "import pytest" not in baseline
    # the kernel as written (its decorator too); what only the test uses (its dtype table) goes
    assert "@triton.jit\ndef row_scale_kernel(" in baseline and "DTYPES" not in baseline
    entry = baseline[baseline.index("def aka_pytest_row_scale(x, s, out, M, N):"):]
    assert "BLOCK_N = 64" in entry and "grid = lambda meta: (M, triton.cdiv(N, meta['BLOCK_N']))" in entry
    assert "row_scale_kernel[grid](x, s, out, N, x.stride(0), BLOCK_N=BLOCK_N)" in entry
    reference = (folder / "reference.py").read_text()
    assert "expected = x * s[:, None]" in reference and "pytest" not in reference
    assert "dtype_str takes the values ['float32', 'float16']" in result.report()
    capsys.readouterr()
    assert _only_too_small(tmp_path / "triton2triton" / "aka_pytest_row_scale")


@pytest.mark.usefixtures("cases_as_written")
def test_aka_test_file_that_asks_tritons_driver_for_its_gpu_at_load(tmp_path):
    """rocmbench's gemm.py chooses its fp8 types at load (``torch.float8_e5m2 if is_cdna4() else ...``, asking
    ``triton.runtime.driver.active``): where Triton has no GPU driver that raised "0 active drivers", and the
    parametrisation, evaluated in the file's namespace, could not be read. The file runs where the cpu backend runs
    a starting kernel, told the nominal GPU's target, and its cases are read."""
    src = tmp_path / "src" / "aka_pytest_row_scale"
    shutil.copytree(FIX / "aka_pytest_row_scale", src)
    test = src / "test_row_scale.py"
    text = test.read_text()
    asked = ('DTYPES = {"float16": torch.float16, "float32": torch.float32}\n'
             'NARROW = torch.float8_e5m2 if triton.runtime.driver.active.get_current_target().arch == "gfx950" '
             'else torch.float8_e5m2fnuz\n')
    test.write_text(text.replace('DTYPES = {"float16": torch.float16, "float32": torch.float32}\n', asked))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(tmp_path / "out" / "triton2triton" / "aka_pytest_row_scale")
    assert len(task.configs("seen")) == 6 and "could not be evaluated" not in result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_test_that_calls_its_kernel_inside_an_if_is_read_on_that_branch(tmp_path):
    """rocmbench's gemm.py calls its kernel, and computes what it compares with, inside the branches of
    ``if dtype_is_8_bit(...)``: the statements before and after the call were the ``if`` as one statement, and the
    reference a stub ("uses torch_output, which the importer cannot trace"). The branch that holds the call is the
    test's path to it, read as if written in its place."""
    src = tmp_path / "src" / "aka_pytest_row_scale"
    shutil.copytree(FIX / "aka_pytest_row_scale", src)
    test = src / "test_row_scale.py"
    text = test.read_text()
    call = ('    row_scale_kernel[grid](x, s, out, N, x.stride(0), BLOCK_N=BLOCK_N)\n'
            '    expected = x * s[:, None]\n')
    assert call in text
    test.write_text(text.replace(call, '    if dtype_str == "int8":\n        pytest.skip("no int8 path")\n    else:\n'
                                       + "".join("    " + ln + "\n" for ln in call.splitlines())))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    folder = tmp_path / "out" / "triton2triton" / "aka_pytest_row_scale"
    assert "expected = x * s[:, None]" in (folder / "reference.py").read_text()
    assert "row_scale_kernel[grid](x, s, out, N, x.stride(0), BLOCK_N=BLOCK_N)" in (folder / "baseline.py").read_text()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_pytest_file_with_sizes_written_in_its_test(tmp_path, capsys):
    """The test sets its sizes as numbers (``rows, cols = 24, 40``), calls the kernel through an
    autograd Function's ``apply`` bound at the module's top level, and compares with ``assert
    (got == want).all()``: the sizes are parameters with the test's values as the one seen case
    (two more drafted, each the one before doubled), and the entry calls the Function as the test does."""
    result = import_aka(FIX / "aka_pytest_fixed_sizes", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_pytest_fixed_sizes"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("src", ["rows", "cols"]), ("shift", ["cols"])]
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("got", ["rows", "cols"])]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"rows": 24, "cols": 40}, {"rows": 48, "cols": 80}, {"rows": 96, "cols": 160}]
    assert len(task.configs("heldout")) >= 4
    baseline = (folder / "baseline.py").read_text()
    assert "_returned = col_shift(src, shift)\n    got.copy_(_returned)" in baseline
    # the reference uses a builtin (getattr) as the test does
    assert 'want = (src + shift[None, :]).to(getattr(torch, \'float32\'))\n    return want' in \
        (folder / "reference.py").read_text()
    capsys.readouterr()
    assert _only_too_small(tmp_path / "triton2triton" / "aka_pytest_fixed_sizes")


@pytest.mark.usefixtures("cases_as_written")
def test_aka_numpy_test_of_a_whole_block_kernel(tmp_path, capsys):
    """A rocmbench-style test defined twice (the later definition is the one pytest runs), that draws its inputs
    with NumPy's ``RandomState(17)``, hands the kernel ``torch.tensor(a)`` and compares with
    ``np.testing.assert_allclose(expected, out.cpu().numpy())``; its kernel covers whole blocks only (a grid of
    ``M // 16, N // 32``). The shapes are observed, make_inputs draws with a RandomState of the harness's seed, the
    reference reads the inputs' values (not the test's draw again) and returns a tensor, and the shape space offers
    only the multiples the kernel is right at, found on the CPU: the drafts (odd, prime) are rounded to them."""
    result = import_aka(FIX / "aka_pytest_numpy_blocks", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_pytest_numpy_blocks"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype, list(i.shape)) for i in task.inputs] == [
        ("a_t", "float32", ["M", "N"]), ("b_t", "float32", ["M", "N"])]
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("out_t", ["M", "N"])]
    reference = (folder / "reference.py").read_text()
    assert "a = a_t.detach().cpu().numpy()" in reference and "return torch.as_tensor(expected, device=a_t.device)" \
        in reference and "RandomState(17)" not in reference
    assert "rs = RandomState(seed)" in reference and "from numpy.random import RandomState" in reference
    assert reference.count("from numpy.random import RandomState") == 1
    assert {k: v.get("multiple_of") for k, v in task.shape_space.items() if k != "constraint"} == {"M": 16, "N": 32}
    configs = [dict(c.params) for s in ("smoke", "seen", "heldout") for c in task.configs(s)]
    assert all(c["M"] % 16 == 0 and c["N"] % 32 == 0 for c in configs), configs
    assert len(task.configs("heldout")) >= 4
    assert "right only where its sizes are multiples (M of 16, N of 32" in result.report()
    capsys.readouterr()
    # where the kernel is wrong on the smoke config itself, its sizes are rounded up to a multiple of 2, 4, ..., 256
    # until it is right, then each moved off that alone: the same multiples
    from types import SimpleNamespace

    from arena.authoring.importers.aka import _multiples_needed

    draft = SimpleNamespace(smoke=[{"name": "smoke", "M": 24, "N": 40}], shape_space={
        "M": {"min": 8, "max": 192}, "N": {"min": 8, "max": 384}})
    assert _multiples_needed(task, draft, smoke_right=False) == {"M": 16, "N": 32}


def test_aka_configs_whose_output_is_degenerate_are_dropped_where_enough_remain():
    """A test's case of a size of 1 that growth keeps (a softmax over one column: ones) fails the degeneracy rules
    on the CPU: the configs refused are taken out of the draft where 3 seen and 4 held-out remain, and none is where
    either split would be left short."""
    from types import SimpleNamespace

    from arena.authoring.importers.common import drop_degenerate

    def draft():
        return SimpleNamespace(seen=[{"name": f"case{i}", "M": 8, "N": i + 1} for i in range(4)],
                               heldout=[{"name": f"draft-{i}", "M": 9, "N": i + 2} for i in range(5)])

    d = draft()
    problems = ["on seen config case0: y: std 0 <= 0.01", "on seen config case0: y: a constant (its mean, 1) passes",
                "on heldout config draft-3: y: std 0.0098 <= 0.01"]
    assert drop_degenerate(d, problems) == [("heldout", "draft-3"), ("seen", "case0")]
    assert [c["name"] for c in d.seen] == ["case1", "case2", "case3"]
    assert [c["name"] for c in d.heldout] == ["draft-0", "draft-1", "draft-2", "draft-4"]
    d = draft()
    assert drop_degenerate(d, problems + ["on seen config case1: y: std 0 <= 0.01"]) == []
    assert len(d.seen) == 4 and len(d.heldout) == 5
    # where the importer can draft seen configs around those left (rmsnorm's cases of one and two rows, grown to 67 M
    # columns: three of five refused), they are topped up to 3; none with a refused config's sizes or a name taken
    d = draft()
    d.top_up_seen = lambda kept: kept + [{"name": "draft-9", "M": 8, "N": 1}, {"name": "case3", "M": 16, "N": 4},
                                         {"name": "draft-2", "M": 8, "N": 64}]
    refused = problems + [f"on seen config case{i}: y: one value" for i in (1, 2)]
    assert drop_degenerate(d, refused) == [("heldout", "draft-3"), ("seen", "case0"), ("seen", "case1"),
                                           ("seen", "case2")]
    assert [(c["name"], c["N"]) for c in d.seen] == [("case3", 4), ("case3-9", 4), ("draft-2-10", 64)]


def test_observing_leaves_torch_generator_a_class():
    """While the test runs on the meta device a generator made for ``cuda`` is made on the CPU, and
    ``torch.Generator`` stays a class: a module imported meanwhile may write ``torch.Generator | None``."""
    from arena.authoring.importers.observe import OnDevice

    with OnDevice("meta"):
        assert str(torch.Generator | None).endswith("| None")
        assert torch.Generator("cuda").device.type == "cpu"
    assert torch.Generator().device.type == "cpu"


def test_aka_kernel_call_is_the_first_whose_result_is_compared_not_torchs_namesake(tmp_path):
    """A pytest file whose launcher is named softmax: ``torch.softmax`` is not a call into the kernel's
    file, and of two launches binding the same name (a forward pass, then the one its backward pass
    runs through) the first, whose result is compared, is the kernel call."""
    import ast

    from arena.authoring.importers.aka import read_harness

    path = tmp_path / "softmax.py"
    path.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\n"
        "def softmax(x):\n    y = torch.empty_like(x)\n    k[(1,)](x, y, x.numel(), BLOCK=64)\n    return y\n\n\n"
        "def test_softmax():\n    x = torch.randn(8, 16, device='cuda')\n    y_triton = softmax(x)\n"
        "    y_torch = torch.softmax(x, axis=1)\n    assert torch.allclose(y_triton, y_torch)\n"
        "    x2 = x.clone()\n    g = torch.empty_like(x2)\n    y_triton = softmax(x2)\n"
        "    y_triton.backward(g)\n    assert torch.allclose(g, x2)\n")
    h, why = read_harness(path, {"k", "softmax"}, {"k", "softmax"})
    assert h is not None, why
    assert ast.unparse(h.call) == "softmax(x)" and h.call.lineno == 19
    assert [key for key, _, _ in h.compared] == ["y_triton"]


@pytest.mark.parametrize("after", ["A = A * mask[None, :, None, :]", "A *= mask[None, :, None, :]", ""])
def test_an_input_the_test_computes_from_its_draw_is_made_as_the_test_makes_it(tmp_path, after):
    """``A = randn(...) * 0.1`` then ``A = A * mask`` (vllm's triangular solves take strictly lower triangular
    tiles; the kernel reads the zeros the mask makes): the draw is not what the kernel is handed, so the test's own
    statements make the input (make_inputs), mask and all. Moved or converted only (``A = A.contiguous()``), it
    is the draw: a plain init."""
    from arena.authoring.importers.aka import _observed_inputs, read_harness

    path = tmp_path / "t.py"
    path.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef k(a_ptr, o_ptr, BT: tl.constexpr):\n    pass\n\n\n"
        "def solve(A):\n    o = torch.empty_like(A)\n    k[(1,)](A, o, BT=16)\n    return o\n\n\n"
        "def test_solve():\n    B, T, H, BT = 2, 32, 4, 16\n"
        "    A = torch.randn(B, T, H, BT, device='cuda') * 0.1\n    A = A.contiguous()\n"
        "    mask = torch.arange(T, device='cuda')[:, None] % BT > torch.arange(BT, device='cuda')[None, :]\n"
        f"    {after}\n    got = solve(A)\n    assert torch.allclose(got, torch.tril(A, -1))\n")
    h, why = read_harness(path, {"k", "solve"}, {"k", "solve"})
    assert h is not None, why
    inputs = [{"name": "A", "dtype": "float32", "shape": ["B", "T", "H", 16]}]
    outputs = [{"name": "got", "dtype": "float32", "shape": ["B", "T", "H", 16]}]
    _, text = _observed_inputs(h, inputs, outputs, {"B": 2, "T": 32, "H": 4}, [])
    if not after:
        assert text is None and "init" not in inputs[0]
        return
    assert inputs[0]["init"] == "custom"
    ns: dict = {"torch": torch}
    exec(text, ns)
    a = ns["make_inputs"]({"B": 2, "T": 48, "H": 3}, torch.Generator().manual_seed(1), "cpu")["A"]
    assert a.shape == (2, 48, 3, 16)
    tiles = a.permute(0, 2, 1, 3).reshape(2, 3, 3, 16, 16)
    assert torch.equal(tiles, torch.tril(tiles, -1)) and (torch.tril(tiles, -1) != 0).float().mean() > 0.4


@pytest.mark.usefixtures("cases_as_written")
def test_aka_drafts_fitted_to_what_the_starting_kernel_runs_on(tmp_path, capsys):
    """The kernel holds a row in one block (``tl.arange(0, N)``: N a power of two) and its launcher asserts an
    even row count. The importer probes the starting kernel on every draft (Triton's interpreter, one program
    per launch): N is found to need a power of two (the shape space offers only those, the drafts' N are
    rounded to them), and the odd draft, which the launcher's assertion refuses, is dropped with its reason.
    The task then passes its CPU check."""
    result = import_aka(FIX / "aka_pytest_pow2_rows", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_pytest_pow2_rows"
    assert result.ok, result.report()
    task = load_task(folder)
    assert task.shape_space["N"] == {"choices": [32, 64, 128, 256, 512, 1024]}
    assert task.shape_space["M"] == {"min": 16, "max": 512}
    held = {c.name: dict(c.params) for c in task.configs("heldout")}
    assert "draft-odd" not in held and len(held) >= 4
    assert all(p["N"] & (p["N"] - 1) == 0 and p["M"] % 2 == 0 for p in held.values())
    seen = [dict(c.params) for c in task.configs("seen")]
    assert seen == [{"M": 32, "N": 64}, {"M": 64, "N": 128}, {"M": 128, "N": 256}]
    assert not any(p in seen for p in held.values())
    report = result.report()
    assert "it needs N to be a power of two" in report
    assert "heldout:draft-odd (the starting kernel: AssertionError: rows come in pairs)" in report
    assert "rounded to a power of two" in (folder / "configs" / "heldout.yaml").read_text()
    capsys.readouterr()
    assert _only_too_small(tmp_path / "triton2triton" / "aka_pytest_pow2_rows")


def _group_ends(pgid: int, seconds: float = 10.0) -> bool:
    """Does process group ``pgid`` end within ``seconds`` (its processes killed, and reaped by whoever adopts them)?"""
    import time

    late = time.monotonic() + seconds
    while time.monotonic() < late:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_kernel_probe_runs_the_last_program_of_a_launch_told_the_grids_size(tmp_path):
    """The probe runs the first and the last program of each launch, each told the grid's true size: a kernel whose
    ``tl.multiple_of`` promise is false where the last program's block begins (a GPU's misaligned access) is refused
    on a config of three blocks, not on one of a single block, where the first program is all there is."""
    from arena.authoring.importers import kernel_probe

    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy", folder)
    (folder / "baseline.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def _k(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):\n"
        "    pid = tl.program_id(0)\n"
        "    tl.device_assert(tl.num_programs(0) == tl.cdiv(n, BLOCK), 'the grid as launched')\n"
        "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    row = tl.multiple_of(x_ptr + pid * 1001, (16,))   # 16-byte aligned for an even pid only\n"
        "    x = tl.load(row - pid * 1001 + offs, mask=mask)\n"
        "    y = tl.load(y_ptr + offs, mask=mask)\n"
        "    tl.store(out_ptr + offs, alpha * x + y, mask=mask)\n\n\n"
        "def axpy(x, y, out, n, alpha):\n"
        "    _k[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)\n")
    lines = kernel_probe.probe_configs(folder, [("probe", "one-block", {"n": 1000}),
                                                 ("probe", "three-blocks", {"n": 3000})])
    assert lines["probe:one-block"]["error"] is None, lines
    assert "tl.multiple_of promises the compiler multiples of 16" in lines["probe:three-blocks"]["error"], lines


def test_kernel_probe_tells_a_refused_config_from_one_out_of_time(tmp_path, monkeypatch):
    """The probe answers per config: an error the starting kernel raises, a config not refuted within its
    budget, and a config the folder does not hold."""
    import arena.authoring.importers.common as common
    from arena.authoring.importers import kernel_probe

    # a window of 30 MB, not 300: the same growth, at a tenth of the sizes (each config is probed in the interpreter)
    monkeypatch.setattr(common, "WINDOW_BYTES", 30 * 10**6)
    result = import_aka(FIX / "aka_pytest_pow2_rows", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_pytest_pow2_rows"
    assert result.folder == folder
    # its cases grown into the timing window by M alone (N sets the block), the held-out kinds the launcher
    # refuses on M (rows come in pairs) replaced by the same kind on N, a power of two
    held = [dict(c.params) for c in load_task(folder).configs("heldout")]
    assert result.ok and len(held) >= 4, result.report()
    assert all(p["N"] & (p["N"] - 1) == 0 and p["M"] % 2 == 0 for p in held), held
    assert "replaced by another of its kind the kernel runs on (draft-scale-down (N scaled down))" in result.report()
    lines = kernel_probe.probe_configs(folder, [("seen", "case0", None), ("probe", "odd", {"M": 32, "N": 65}),
                                                 ("heldout", "no-such", None)])
    case0 = dict(lines["seen:case0"])
    allocated = case0.pop("allocated", 0)     # what the call allocates outside its launches: its launcher's output
    assert case0 == {"config": "seen:case0", "error": None, "timeout": False,
                     "constexprs": [["row_sum_kernel", "N", 64]]}   # the launch's tl.arange size
    assert 0 <= allocated < 2**20, allocated
    assert "arange's range must be a power of 2" in lines["probe:odd"]["error"]
    assert lines["heldout:no-such"]["error"] == "no such config"
    late = kernel_probe.probe_configs(folder, [("heldout", "draft-aspect", None)], seconds=1e-4)
    assert {k: v for k, v in late["heldout:draft-aspect"].items() if k not in ("constexprs", "allocated")} == {
        "config": "heldout:draft-aspect", "error": None, "timeout": True}
    # the probes of one import share one budget of wall time: once it is spent, a probe answers for no config
    with kernel_probe.probes_within(60.0):
        assert kernel_probe.probe_configs(folder, [("seen", "case0", None)])["seen:case0"]["error"] is None
        assert kernel_probe._left[0] is not None and kernel_probe._left[0] < 60.0
        kernel_probe._left[0] = 0.0
        assert kernel_probe.probe_configs(folder, [("seen", "case0", None)]) == {}
    assert kernel_probe._left[0] is None
    # a config the interpreter dies under (here the entry's own SIGSEGV at N = 63) is not refuted, and the configs
    # after it are probed still: each runs in a child forked from the probe's process
    task = load_task(folder)
    baseline = folder / "baseline.py"
    baseline.write_text(baseline.read_text() + f"\n\n_probed = {task.entry}\n\n\ndef {task.entry}(*args):\n"
                        "    import os\n    import signal\n    if 63 in [a for a in args if type(a) is int]:\n"
                        "        os.kill(os.getpid(), signal.SIGSEGV)\n    return _probed(*args)\n")
    lines = kernel_probe.probe_configs(folder, [("probe", "dies", {"M": 32, "N": 63}), ("seen", "case0", None),
                                                 ("probe", "odd", {"M": 32, "N": 65})])
    assert lines["probe:dies"] == {"config": "probe:dies", "error": None, "timeout": False, "crashed": "SIGSEGV",
                                   "constexprs": []}
    assert lines["seen:case0"]["error"] is None and "crashed" not in lines["seen:case0"]
    assert "arange's range must be a power of 2" in lines["probe:odd"]["error"]
    # every probe of this process was a fork of one server's; one past its time of the clock ends it with all it
    # started, and the next probe starts another
    (server,) = kernel_probe._servers
    assert server.alive()
    baseline.write_text(baseline.read_text().replace("if 63 in", "if 67 in [a for a in args if type(a) is int]:\n"
                                                     "        import time\n        time.sleep(600)\n    if 63 in"))
    monkeypatch.setattr(kernel_probe, "PROCESS_SECONDS", 3.0)
    assert kernel_probe.probe_configs(folder, [("probe", "sleeps", {"M": 32, "N": 67})], seconds=60) == {}
    assert not server.alive()
    assert _group_ends(server.proc.pid)       # nothing of its process group is left (the sleeping config's fork)
    monkeypatch.setattr(kernel_probe, "PROCESS_SECONDS", 240.0)
    assert kernel_probe.probe_configs(folder, [("seen", "case0", None)])["seen:case0"]["error"] is None
    assert kernel_probe._servers[0] is not server and kernel_probe._servers[0].alive()


def test_aka_vllm_reference_reads_a_helper_of_the_kernel_module(tmp_path):
    """The runner loads the kernel's file by its path (``mod = load_module()``) and its reference reads a
    helper of that module (``.to(mod._out_dtype())``): reference.py copies the helper from the kernel's file
    and calls it by name, with no loader and no path of the source folder."""
    result = import_aka(FIX / "aka_vllm_module_helper", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_module_helper"
    assert result.ok, result.report()
    reference = (folder / "reference.py").read_text()
    assert "def _out_dtype():" in reference and ".to(_out_dtype())" in reference
    assert "load_module" not in reference and "SOURCE_FILE" not in reference and "mod." not in reference
    task = load_task(folder)
    assert [(o.name, o.dtype, list(o.shape)) for o in task.outputs] == [("result", "float32", ["K", "N"])]
    assert not _found(result), result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_comparison_of_the_same_transform_of_both_sides(tmp_path):
    """The runner compares ``result[mask]`` with ``ref[mask]`` (through a name bound after the call, with a
    wrapper), and the finite masks of both; after its loop over the cases it checks one more fixed case: the
    call read is the one in the loop, the kernel's output ``result`` is compared whole with ``ref``."""
    result = import_aka(FIX / "aka_vllm_masked_compare", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_masked_compare"
    assert result.ok, result.report()
    task = load_task(folder)
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("result", ["K", "N"])]
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"K": 64, "N": 128, "group_size": 32}, {"K": 128, "N": 256, "group_size": 64},
        {"K": 256, "N": 512, "group_size": 128}]
    reference = (folder / "reference.py").read_text()
    assert "return ref" in reference and "isfinite" not in reference
    assert not _found(result), result.report()
    # a comparison of two things of the kernel's side (its sum with a tensor made from it) is not one of these,
    # and leaves the case list as read: the test still runs up to its call for a case
    from arena.authoring.importers.aka import read_harness
    from arena.authoring.importers.observe import Observer

    runner = FIX / "aka_vllm_masked_compare" / "scripts" / "task_runner.py"
    h, why = read_harness(runner, {"group_scale"}, {"group_scale"})
    assert h is not None and h.item_of is not None, why
    seen = Observer(h).observe({"K": 64, "N": 128, "group_size": 32})
    assert [t for t, _ in seen.args] == ["q", "scales", "group_size"]


def test_kernelbench_tolerance_holds_the_references_own_fp32_rounding(tmp_path):
    """A long reduction over unscaled inputs rounds in fp32 close to the default tolerance against
    the harness's fp64 reference: the importer measures that rounding on the CPU and, where the
    default does not hold it with a margin, writes the tolerance that does, with its reason; an
    elementwise problem keeps the default."""
    result, task = _imported(tmp_path, "kb_long_matmul")
    tol = task.tolerance_for("float32")
    assert tol["rtol"] > 1e-4 and tol["atol"] >= 1e-4 and tol["norm"] == 1e-5, tol
    raw = yaml.safe_load((result.folder / "task.yaml").read_text())["tolerance"]
    assert "own fp32 rounding" in raw["reason"] and "fp32 against fp64" in raw["reason"]
    assert any(". tolerance: the reference's own fp32 rounding" in d for d in _decisions(result.report()))
    # the starting point, the reference in fp32, passes at that tolerance
    from arena.authoring.importers.common import ROUNDING_MARGIN
    from arena.check.compare import compare_output
    from arena.records import Status
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    config = max(task.configs("heldout"), key=lambda c: c.params["K"])
    env = task.env(config)
    ins = make_inputs(task, env, 0, "cpu")
    ref = import_file(task.reference_path, "kb_long_matmul_ref")
    scalars = [task.scalar_value(sc, env) for sc in task.scalars]
    got = ref.reference(*[t.clone() for t in ins.values()], *scalars)
    (want,) = run_reference(ref.reference, task, ins, scalars)
    assert compare_output("out", got, want, tol).status is Status.PASSED
    # its rounding, with the margin, is past the default (on an H100 the default failed such products outright)
    err = float(((got.double() - want).abs() / (1 + want.abs())).max())
    assert err * ROUNDING_MARGIN > DEFAULT_TOLERANCE["float32"]["rtol"] and tol["rtol"] >= err * ROUNDING_MARGIN

    _, plain = _imported(tmp_path, "kb_linear_gelu")
    assert "tolerance" not in yaml.safe_load((plain.path / "task.yaml").read_text())


def test_kernelbench_rounding_is_measured_at_the_longest_sums_on_a_config_shrunk_in_its_other_sizes(tmp_path,
                                                                                                   monkeypatch):
    """Where the configs with the longest sums need more work than the rounding's fp64 measure may
    take, the rounding is measured on one of them with its other sizes halved (a product's M and N,
    not its K): the reason names that config, and the tolerance holds the long product's rounding."""
    import arena.authoring.importers.common as common
    from arena.authoring.importers.common import _reduction_length

    result, task = _imported(tmp_path, "kb_long_matmul")
    configs = [*task.configs("seen"), *task.configs("heldout")]
    longest = max(configs, key=lambda c: _reduction_length(task, c))
    flops = task.roofline_for(longest)[0]
    monkeypatch.setattr(common, "ROUNDING_FLOPS", flops / 8)
    assert all(_reduction_length(task, c) < _reduction_length(task, longest) for c in configs
               if task.roofline_for(c)[0] <= flops / 8)
    tol, note, _ = common.measured_tolerance(result.folder)
    assert note is None and f"config {longest.name} with its other sizes shrunk" in tol["reason"], tol
    assert tol["float32"]["rtol"] > 1e-4
    shrunk = common._shrunk_for_rounding(task, longest)
    assert shrunk.params["K"] == longest.params["K"] and task.roofline_for(shrunk)[0] <= flops / 8
    monkeypatch.setattr(common, "ROUNDING_FLOPS", 1)        # no size but K's left to halve: nothing shrunk
    assert common._shrunk_for_rounding(task, longest) is None


def test_kernelbench_atol_is_scaled_to_small_outputs_and_the_task_is_then_not_degenerate(tmp_path):
    """A softmax over 32768 columns gives outputs near 3e-5: at the default atol (1e-4) all of them are
    below it and their spread (std 3e-5) is under the degeneracy check's 1e-2, so the task is refused
    on a GPU. The importer scales atol to the outputs' scale, with its reason; on every seen and
    held-out config the reference is then not degenerate, and a constant (1 / columns) fails."""
    from arena.check.compare import compare_output
    from arena.check.degeneracy import load_reference, reference_problems
    from arena.records import Status

    result, task = _imported(tmp_path, "kb_wide_softmax")
    tol = task.tolerance_for("float32")
    assert tol["atol"] <= 1e-7 and tol["rtol"] == 1e-4 and tol["norm"] == 1e-5, tol
    raw = yaml.safe_load((result.folder / "task.yaml").read_text())["tolerance"]
    assert "atol scaled to the outputs' scale" in raw["reason"], raw
    ref = load_reference(task)
    for config in [*task.configs("seen"), *task.configs("heldout")]:
        assert reference_problems(task, config, "cpu", ref) == [], config
    config = task.configs("seen")[0]
    env = task.env(config)
    ins = make_inputs(task, env, 0, "cpu")
    (want,) = run_reference(ref.reference, task, ins, [task.scalar_value(sc, env) for sc in task.scalars])
    constant = torch.full_like(want, 1.0 / want.shape[1]).float()
    assert compare_output("out", constant, want, tol).status is not Status.PASSED
    assert compare_output("out", torch.softmax(ins["x"], dim=1), want, tol).status is Status.PASSED


def test_a_starting_kernel_the_cpu_cannot_show_correct_is_left_to_a_gpu_for_what_a_cpu_build_of_torch_lacks():
    """A launcher that asks torch.cuda for a stream (``torch.cuda.current_stream``) raises on a CPU build of torch
    (the GPU's properties are a nominal GPU's there): that verdict says nothing of the kernel, and the import leaves
    it to a GPU, naming the call; so does a libdevice function the interpreter lacks (NOT_RUNNABLE). Any other error
    of such a file is the kernel's."""
    import types

    from arena.authoring.importers.aka import _cpu_cannot_tell
    from arena.records import Status

    task = types.SimpleNamespace(inputs=[types.SimpleNamespace(dtype="float32")], outputs=[])
    source = "stream = torch.cuda.current_stream(x.device)\n"

    def verdict(status, message):
        return types.SimpleNamespace(status=status, message=message)

    why = _cpu_cannot_tell(verdict(Status.RUNTIME_ERROR, "AssertionError: Torch not compiled with CUDA enabled"),
                           task, source)
    assert "torch.cuda.current_stream" in why and "CPU build" in why
    assert _cpu_cannot_tell(verdict(Status.RUNTIME_ERROR, "TypeError: unsupported operand"), task, source) == ""
    assert _cpu_cannot_tell(verdict(Status.INCORRECT_NUMERICAL, "3 of 8 elements"), task, source) == ""
    assert "cannot run it" in _cpu_cannot_tell(verdict(Status.NOT_RUNNABLE, "libdevice.round"), task, "")


def test_the_range_rule_is_read_on_the_tasks_own_sizes_where_a_narrow_output_can_overflow(tmp_path):
    """An fp16 output whose reference reaches past 65504 only at the task's sizes (the largest of a million draws is
    larger than that of a few thousand; for a grown matrix chain, a longer K): the range rule is read on the seen
    and held-out configs too, and says which; an fp32 output is not read (it holds what a reference reaches)."""
    from arena.authoring.importers.common import range_at_sizes

    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy", folder)
    assert range_at_sizes(folder) == []
    text = (folder / "task.yaml").read_text()
    (folder / "task.yaml").write_text(text.replace("{name: out, dtype: float32,", "{name: out, dtype: float16,"))
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 1.5e4 * x + y\n")
    found = range_at_sizes(folder)
    assert found and all("past what float16 holds" in f for f in found), found
    # the 7 values of held-out config tiny stay within it; a config of 123455 values or more does not
    assert not any("config tiny:" in f for f in found) and any(
        f.startswith(("on heldout config n-not-8: out: the reference's values reach", "on seen config n1M: out:"))
        for f in found), found


def test_the_range_rule_is_read_on_the_runs_that_read_a_test_tolerances_scale(tmp_path, monkeypatch):
    """Where the test gives a tolerance, the reference's runs that read the outputs' scale on the task's configs
    read the range rule too: what ``range_at_sizes`` finds, each config's reference run once, not once for each."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "SCALE_SECONDS", 60.0)     # every config read by both (5 CPU s here), under any load
    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy", folder)
    text = (folder / "task.yaml").read_text()
    (folder / "task.yaml").write_text(text.replace("{name: out, dtype: float32,", "{name: out, dtype: float16,"))
    calls = tmp_path / "calls"
    (folder / "reference.py").write_text(
        f"def reference(x, y, n, alpha):\n    open({str(calls)!r}, 'a').write('.')\n    return 1.5e4 * x + y\n")
    draft = types.SimpleNamespace(tolerance={"float16": {"atol": 1e-3, "rtol": 1e-3, "norm": 1e-3},
                                             "reason": "the test's"})
    found = common.scaled_test_tolerance(draft, folder, [])
    runs = len(calls.read_text())
    assert found == common.range_at_sizes(folder), found
    assert found and any(f.startswith("on seen config n1M: out:") for f in found), found
    task = load_task(folder)
    within = common.configs_within(task, common.SPREAD_FLOPS, common.SPREAD_BYTES)
    assert runs == 1 + len(within), (runs, [c.name for c in within])     # the smoke config, then each config once
    assert common.scaled_test_tolerance(types.SimpleNamespace(tolerance={}), folder, []) is None


def _small_products_task(tmp_path, precision: str, scale: float = 1e-3) -> Path:
    """A Triton task whose outputs are small sums of products that cancel (``scale * x @ w``, |out| about 8 times
    ``scale``), its starting kernel a ``tl.dot`` on the fp32 inputs with ``precision`` written after the operands
    ('' for none)."""
    folder = tmp_path / "triton2triton" / "products"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy", folder)
    text = (folder / "task.yaml").read_text()
    text = text.replace("{name: x, dtype: float32, shape: [n]}", "{name: x, dtype: float32, shape: [n, 64]}")
    text = text.replace("{name: y, dtype: float32, shape: [n], init: {kind: uniform, low: -2, high: 2}}",
                        "{name: y, dtype: float32, shape: [64, 64]}")
    text = text.replace("{name: out, dtype: float32, shape: [n]}", "{name: out, dtype: float32, shape: [n, 64]}")
    (folder / "task.yaml").write_text(text.replace("id: triton2triton/axpy", "id: triton2triton/products").replace(
        'flops: "2 * n", bytes: "12 * n"', 'flops: "128 * n * 64", bytes: "4 * (128 * n + 4096)"'))
    for split, sizes in (("seen", (1024, 4096, 2048)), ("heldout", (1000, 3001, 17, 4099))):
        (folder / "configs" / f"{split}.yaml").write_text("".join(f"- {{name: m{m}, n: {m}}}\n" for m in sizes))
    (folder / "configs" / "smoke.yaml").write_text("- {name: smoke, n: 64}\n")
    (folder / "reference.py").write_text(f"def reference(x, y, n, alpha):\n    return {scale!r} * (x @ y)\n")
    (folder / "baseline.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef kernel(x, y, out):\n"
        "    r = tl.arange(0, 64)\n    a = tl.load(x + r[:, None] * 64 + r[None, :])\n"
        "    b = tl.load(y + r[:, None] * 64 + r[None, :])\n"
        f"    tl.store(out + r[:, None] * 64 + r[None, :], {scale!r} * tl.dot(a, b{precision}))\n")
    return folder


@pytest.mark.parametrize("precision", ["", ", input_precision='ieee'"])
def test_a_tests_atol_is_not_scaled_below_the_rounding_of_the_starting_kernels_tf32_products(tmp_path, monkeypatch,
                                                                                          precision):
    """Four of AKA's FLA and KDA tasks failed on an H200 on every config: their starting kernels' ``tl.dot`` on fp32
    runs in TF32 there (Triton's default on NVIDIA), and the test's atol 0.05, scaled down to outputs of 1e-2, was
    1e-6 to 5e-6, past which TF32 rounds sums that cancel. The scaled atol is held to the reference's rounding with
    its products' operands cut to TF32 where the kernel's dots run at the default precision; not where they are
    'ieee'. Where the outputs are degenerate at the atol that holds, the import says what the author may do."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "write_configs", lambda d, folder: None)    # a draft's folder written again
    folder = _small_products_task(tmp_path, precision, 5e-3)
    assert common.tf32_dots(folder / "baseline.py") == ([] if precision else [10])

    found: list[str] = []

    def scaled(decisions: list[str]) -> dict:
        draft = types.SimpleNamespace(tolerance={"float32": {"atol": 0.05, "rtol": 0.05, "norm": 0.05},
                                                 "reason": "the test's"})
        found[:] = common.scaled_test_tolerance(draft, folder, decisions) or []
        return draft.tolerance

    decisions: list[str] = []
    tol = scaled(decisions)
    atol = tol["float32"]["atol"]
    if precision:
        assert atol <= 1e-4 and "TF32" not in tol["reason"], tol
        return
    assert 1e-4 <= atol < 0.05, tol
    assert "no lower than the reference's rounding" in tol["reason"]
    assert "cut to TF32 as the starting kernel's tl.dot (line 10)" in tol["reason"]
    # the atol holds the products as a GPU's tensor cores compute them: operands cut to TF32, summed in fp32
    task = load_task(folder)
    ins = make_inputs(task, task.env(task.configs("seen")[1]), 1, "cpu")
    want = 5e-3 * (ins["x"].double() @ ins["y"].double())
    got = 5e-3 * (common.tf32_cut(ins["x"]) @ common.tf32_cut(ins["y"]))
    assert bool(((got.double() - want).abs() <= atol + 0.05 * want.abs()).all())
    assert float((got.double() - want).abs().max()) > 5e-5      # which the atol scaled for fp32 dots would not hold
    # outputs that spread 0.04 are not degenerate at it; a fiftieth of them are, and the import says what to do
    assert not [d for d in decisions if "at it the outputs are degenerate" in d] and not found, decisions
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 1e-4 * (x @ y)\n")
    scaled(decisions)
    said = [d for d in decisions if "at it the outputs are degenerate" in d]
    assert said and "draw the inputs larger" in said[0] and "input_precision" in said[0], decisions
    # read so on a seen or held-out config at its own sizes, it is a problem of the task (the import is not
    # self-checked): vLLM's kda_gla_fwd_o was, and failed on an H200 on every config
    assert found and all(p.startswith("at atol ") and "the starting kernel's own rounding" in p
                         and re.search(r"(seen|heldout) config m\d+'s out: std", p) and "draw the inputs larger" in p
                         for p in found), found


@pytest.mark.parametrize("precision", ["", ", allow_tf32=False"])
def test_a_measured_tolerance_holds_the_starting_kernels_tf32_products(tmp_path, precision):
    """Where the source gives no tolerance, the one measured holds the starting kernel's rounding as a GPU computes
    it: a ``tl.dot`` at Triton's default precision rounds its products in TF32 there, and the norm bound is loosened
    to hold that (up to fp16's bounds, TF32's mantissa); a kernel that asks for fp32 dots keeps fp32's."""
    import arena.authoring.importers.common as common
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    folder = _small_products_task(tmp_path, precision)
    tol, _, _ = common.measured_tolerance(folder)
    base = DEFAULT_TOLERANCE["float32"]
    if precision:
        assert tol.get("float32", base)["norm"] == base["norm"] and "TF32" not in tol.get("reason", ""), tol
        return
    assert 1e-3 <= tol["float32"]["norm"] <= common.MAX_ROUNDING_TOL_TF32["norm"], tol
    assert "cut to TF32 as the starting kernel's tl.dot (line 10)" in tol["reason"], tol
    task = load_task(folder)
    ins = make_inputs(task, task.env(task.configs("seen")[1]), 2, "cpu")
    want = 1e-3 * (ins["x"].double() @ ins["y"].double())
    got = (1e-3 * (common.tf32_cut(ins["x"]) @ common.tf32_cut(ins["y"]))).double()
    assert float((got - want).norm() / want.norm()) <= tol["float32"]["norm"]
    assert float((got - want).norm() / want.norm()) > base["norm"]     # which fp32's bound does not hold


def _as_hip(folder: Path) -> Path:
    """A triton2triton task folder made a hip2hip one beside it: its starting kernel a HIP file."""
    hip = folder.parent.parent / "hip2hip" / folder.name
    shutil.copytree(folder, hip)
    (hip / "baseline.py").unlink()
    (hip / "baseline.hip").write_text("#include <hip/hip_runtime.h>\n")
    text = (hip / "task.yaml").read_text()
    (hip / "task.yaml").write_text(text.replace("triton2triton", "hip2hip"))
    return hip


def test_a_hip_starting_kernels_atol_holds_sums_taken_one_term_at_a_time_where_the_outputs_are_large(tmp_path):
    """AKA's SimpleMatmulModule (a HIP kernel that sums K = 4,096 products one at a time, outputs of std 128) failed
    on an H200 at the default atol 1e-4: 10,889 elements where the sums cancel were up to 5.6e-4 off, which the CPU's
    blocked fp32 product did not show. Where the starting kernel is HIP, the outputs' std is past 1 and they are sums
    of 64 terms or more, atol is the default rtol of that std, said with its reason; a Triton starting kernel keeps
    the rounding measured as it computes, outputs of std below 1 and an elementwise op keep the default."""
    import arena.authoring.importers.common as common
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    base = DEFAULT_TOLERANCE["float32"]
    folder = _small_products_task(tmp_path, ", input_precision='ieee'", 10.0)     # std 10 * 8 = 80
    triton = common.measured_tolerance(folder)[0]
    assert "the starting kernel is HIP" not in triton.get("reason", "")
    folder = _as_hip(folder)
    tol, _, problems = common.measured_tolerance(folder)
    task = load_task(folder)
    ref = import_reference(task.reference_path, "arena_test_sequential_atol")
    stds = [float(common.reference_on_cpu(task, ref, c)[0].std())
            for c in [*task.configs("seen"), *task.configs("heldout")]]
    assert min(stds) > 50 and 1e-4 * min(stds) / 2.5 <= tol["float32"]["atol"] <= 1e-4 * max(stds), (tol, stds)
    assert "the starting kernel is HIP" in tol["reason"] and problems == []
    assert tol["float32"]["atol"] > 10 * triton.get("float32", base)["atol"]
    assert {k: tol["float32"][k] for k in ("rtol", "norm")} == {k: triton.get("float32", base)[k]
                                                                for k in ("rtol", "norm")}
    small = _small_products_task(tmp_path / "small", ", input_precision='ieee'", 1e-2)   # std 0.08
    small = _as_hip(small)
    assert "the starting kernel is HIP" not in common.measured_tolerance(small)[0].get("reason", "")
    # an elementwise op of outputs as large (AKA's Sigmoid, times 10): no sums, its error is its value's (rtol's)
    wide = _as_hip(_small_products_task(tmp_path / "wide", ", input_precision='ieee'", 10.0))
    (wide / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 100.0 * x\n")
    (wide / "task.yaml").write_text((wide / "task.yaml").read_text().replace('flops: "128 * n * 64"',
                                                                             'flops: "n * 64"'))
    assert "the starting kernel is HIP" not in common.measured_tolerance(wide)[0].get("reason", "")


def test_tf32_products_cut_a_products_operands_and_not_what_it_is_added_to():
    """``TF32Products``: a matrix product's fp32 factors lose their 13 low mantissa bits (as tensor cores read
    them); the sum ``addmm`` adds them to, integers and fp64 are left as they are."""
    from arena.authoring.importers.common import TF32Products, tf32_cut

    a, b, c = torch.randn(8, 16), torch.randn(16, 4), torch.randn(8, 4)
    with TF32Products():
        prod, added, double = a @ b, torch.addmm(c, a, b), a.double() @ b.double()
    assert torch.equal(prod, tf32_cut(a) @ tf32_cut(b)) and not torch.equal(prod, a @ b)
    assert torch.equal(added, torch.addmm(c, tf32_cut(a), tf32_cut(b)))
    assert torch.equal(double, a.double() @ b.double())
    assert bool((tf32_cut(a).view(torch.int32) & 0x1FFF == 0).all())
    assert float(((tf32_cut(a) - a) / a).abs().max()) < 2.0 ** -10
    assert torch.equal(tf32_cut(a.t()), tf32_cut(a).t())


def test_tf32_dots_reads_each_dots_precision(tmp_path):
    """``tf32_dots`` finds the dots at Triton's default precision (a precision named by a variable may be TF32), not
    those asking for 'ieee' or refusing TF32."""
    from arena.authoring.importers.common import tf32_dots

    kernel = tmp_path / "k.py"
    kernel.write_text("import triton.language as tl\n"
                      "def k(a, b, acc, P: tl.constexpr):\n"
                      "    x = tl.dot(a, b)\n"
                      "    x = tl.dot(a, b, acc, 'ieee')\n"
                      "    x = tl.dot(a, b, input_precision='ieee')\n"
                      "    x = tl.dot(a, b, allow_tf32=False)\n"
                      "    x = tl.dot(a, b, input_precision='tf32x3')\n"
                      "    x = tl.dot(a, b, input_precision=P)\n"
                      "    x = tl.dot(a, b, allow_tf32=True)\n")
    assert tf32_dots(kernel) == [3, 7, 8, 9]
    kernel.write_text("def k(:\n")
    assert tf32_dots(kernel) == [] and tf32_dots(None) == [] and tf32_dots(tmp_path / "k.hip") == []


def test_a_tests_constant_is_written_into_the_reference_only_as_code_that_reads_back_as_its_value():
    """AKA's fused_qkv_rope test passes ``rotate_style = RotateStyle.GPTJ``, an enum member: its repr
    ``<RotateStyle.GPTJ: 1>`` written into reference.py made the import stop on a SyntaxError. A constant is
    written only as code that evaluates back to it (an IntEnum as its number, which compares equal to it; an
    infinity as ``float('inf')``); a plain enum member has none, and the reference says it cannot trace it."""
    import enum

    from arena.authoring.importers.common import literal

    class Style(enum.Enum):
        GPTJ = 1

    class Width(enum.IntEnum):
        WIDE = 4

    values = [3, 2.5, "x", None, True, (1,), [Width.WIDE, 2], {"a": (1, 2)}, float("inf"), -float("inf")]
    for v in values:
        code = literal(v)
        assert code is not None and eval(code) == v, (v, code)
    assert literal(Width.WIDE) == "4"
    assert literal(Style.GPTJ) is None and literal((1, Style.GPTJ)) is None and literal(object()) is None


def test_the_outputs_scale_is_the_smallest_of_the_configs_read_not_the_one_with_the_most_work():
    """A softmax's outputs are 1/N for rows of N: over 64 rows of 4096 they are smaller than over 4096 rows of 256,
    which has more work. The scale the atol is scaled to is read on every config, one run each, and the smallest
    stands, per dtype; a config that would run past what is left of the budget, at the CPU time a byte took on
    those before it, is not read."""
    from arena.authoring.importers.common import outputs_scale, smallest_scale

    configs = [{"rows": 64, "n": 4096}, {"rows": 4096, "n": 256}, {"rows": 8, "n": 1 << 16}]
    ran = []

    def run(c):
        import time

        ran.append(c)
        x = torch.randn(c["rows"], c["n"], generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        t0 = time.process_time()
        while time.process_time() - t0 < 0.05:     # a run long enough for the CPU clock to time it
            pass
        return [("float32", "y", torch.softmax(x, -1)), ("float16", "z", x[:, :8])]

    got = smallest_scale(configs, run, seconds=60.0)
    assert got["float32"][0] == configs[2] and got["float32"][1] == ["y"]
    assert got["float16"][0] in configs and len(ran) == 3
    assert outputs_scale(got["float32"][2]) < outputs_scale([torch.softmax(torch.randn(4096, 256), -1).double()])
    ran.clear()
    # the first config took its CPU time for its bytes; one that would take a thousand times the budget is not run
    got = smallest_scale(configs, run, seconds=1.0, nbytes=lambda c: 1e15 if c is configs[1] else c["rows"] * c["n"])
    assert configs[1] not in ran and ran[0] is configs[0]
    # a softmax over one column is ones: degenerate at any atol (the rules say so of that config); the smallest
    # scale is read on the others
    ones = {"rows": 64, "n": 1}
    got = smallest_scale([ones, *configs], run, seconds=60.0)
    assert got["float32"][0] == configs[2]


def test_kernelbench_outputs_scale_is_read_on_configs_too_large_to_measure_the_rounding(tmp_path, monkeypatch):
    """Where every config needs more work than the rounding's fp64 measure may take, the outputs'
    scale is still read, from one fp32 run on the largest config within its own bound: the wide
    softmax's atol is scaled, the reason says where it was read, and the rounding not measured is
    said. Past that bound too, nothing is read and the default stays."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "ROUNDING_FLOPS", 1)
    monkeypatch.setattr(common, "_shrunk_for_rounding", lambda task, config, count=None: None)   # nor a shrunk one
    result, task = _imported(tmp_path, "kb_wide_softmax")
    tol = task.tolerance_for("float32")
    assert tol["atol"] <= 1e-7 and tol["rtol"] == 1e-4, tol
    reason = yaml.safe_load((result.folder / "task.yaml").read_text())["tolerance"]["reason"]
    assert "atol scaled to the outputs' scale" in reason and "on the CPU, in fp32" in reason
    assert "fp32 against fp64" not in reason
    tol_, note, problems = common.measured_tolerance(result.folder)
    assert tol_["float32"]["atol"] == tol["atol"] and "was not measured" in note and problems == []
    monkeypatch.setattr(common, "SPREAD_FLOPS", 1)
    assert common.measured_tolerance(result.folder)[:1] == ({},)


def test_a_grown_configs_outputs_are_read_at_the_sizes_of_the_case_it_grew_from(tmp_path, monkeypatch):
    """A seen config grown from a source's case past what the CPU reads (a softmax's rows multiplied): the outputs'
    scale is read at the case's own sizes, whose rows are as long, and the atol scaled to it, the reason saying
    where; the degeneracy rules read there too say which grown config is degenerate as the source has it (rows of
    one column: ones), for ``drop_degenerate``."""
    from types import SimpleNamespace

    import arena.authoring.importers.common as common
    from arena.authoring.importers.aka import _degenerate_as_written
    from arena.taskdef.loader import load_task

    result, task = _imported(tmp_path, "kb_wide_softmax")
    monkeypatch.setattr(common, "SPREAD_FLOPS", 1)      # no config of the task is read
    monkeypatch.setattr(common, "ROUNDING_FLOPS", 1)
    monkeypatch.setattr(common, "_shrunk_for_rounding", lambda task, config, count=None: None)
    assert common.measured_tolerance(result.folder)[:1] == ({},)
    seen = task.configs("seen")
    d = SimpleNamespace(grown={seen[0].name: {"batch_size": 2}, seen[1].name: {"batch_size": 3, "dim": 1}})
    cases = common.as_written(result.folder, d)
    assert [dict(c.params) for c in cases] == [{**seen[0].params, "batch_size": 2},
                                                {**seen[1].params, "batch_size": 3, "dim": 1}]
    tol, _, _ = common.measured_tolerance(result.folder, cases)
    assert tol["float32"]["atol"] <= 1e-7, tol
    assert f"seen config {seen[0].name} at the sizes of the case it grew from (batch_size = 2" in tol["reason"]
    found = _degenerate_as_written(load_task(result.folder), d)
    assert found and all(p.startswith(f"on seen config {seen[1].name}: ") and p.endswith("before it grew)")
                         for p in found), found


def test_kernelbench_sizes_past_the_bound_are_scaled_down_for_the_drafts(tmp_path, monkeypatch):
    """A problem whose own sizes move more than a quarter of what a config may (the tests lower the
    bound): its sizes are scaled down, the drafts made around them, and no draft moves more than
    the bound; the shape space is around the scaled sizes."""
    import arena.authoring.importers.common as common
    import arena.authoring.importers.kernelbench as kb

    monkeypatch.setattr(common, "MAX_CONFIG_BYTES", 2**24)
    monkeypatch.setattr(kb, "MAX_CONFIG_BYTES", 2**24)
    monkeypatch.setattr(common, "SCALED_BYTES", 2**22)
    result, task = _imported(tmp_path, "kb_wide_sigmoid")
    seen = task.configs("seen")
    assert seen[0].name == "problem-scaled" and len(seen) >= 3, [c.name for c in seen]
    first = dict(seen[0].params)
    assert first["batch_size"] * first["dim"] * 8 <= 2**22 < 64 * 262144 * 8
    for c in [*seen, *task.configs("heldout")]:
        assert c.params["batch_size"] * c.params["dim"] * 8 <= 2**24, c
    assert len(task.configs("heldout")) >= 4
    assert task.shape_space["dim"]["max"] == 4 * first["dim"]
    notes = _decisions(result.report())
    assert any("own sizes need 0.12 GiB of inputs and outputs" in d and "scaled down" in d for d in notes), notes
    assert any("problem's own shapes (scaled down) first" in d for d in notes)

    # the same for the work a config needs (a convolution too slow for the timing window at the problem's sizes)
    monkeypatch.setattr(common, "MAX_CONFIG_BYTES", 2**40)
    monkeypatch.setattr(common, "SCALED_BYTES", 2**40)
    monkeypatch.setattr(common, "MAX_CONFIG_FLOPS", 8e7)
    monkeypatch.setattr(common, "SCALED_FLOPS", 2e7)
    result, task = _imported(tmp_path, "kb_long_matmul")
    assert task.configs("seen")[0].name == "problem-scaled"
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        assert task.roofline_for(c)[0] <= 8e7, c
    assert task.roofline_for(task.configs("seen")[0])[0] <= 2e7 < 2 * 32 * 32768 * 32
    assert any("GFLOP; drafts up to 4 times that" in d for d in _decisions(result.report()))


def test_aka_sizes_the_kernels_block_follows_are_kept_as_the_cases_have_them(tmp_path):
    """A kernel that holds a row in one block of ``triton.next_power_of_2(n_cols)``: growing n_cols into
    the timing window grows the block past a GPU's shared memory, which the CPU's interpreter does not
    see. The probe finds that n_cols sets a compile-time integer of the launch (n_rows does not), and the
    cases grow by n_rows alone, n_cols kept as written, with the reason."""
    from arena.authoring.importers import kernel_probe
    from arena.authoring.importers.common import WINDOW_BYTES

    result = import_aka(FIX / "aka_triton_row_rms", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    cases = [(16, 256), (64, 1000), (128, 2048)]
    seen = [(c.params["n_rows"], c.params["n_cols"]) for c in task.configs("seen")]
    assert [n for _, n in seen] == [n for _, n in cases], seen
    assert all(r * n * 8 >= WINDOW_BYTES and r % case_r == 0 for (r, n), (case_r, _) in zip(seen, cases)), seen
    assert any("n_cols kept as the cases have them: the starting kernel's compile-time block sizes follow them" in d
               for d in _decisions(result.report()))
    assert kernel_probe.block_fields(result.folder, {"n_rows": 16, "n_cols": 256}, ["n_rows", "n_cols"]) == ["n_cols"]


def test_aka_a_growth_refused_along_a_size_the_kernels_block_follows_is_tried_again_with_it_kept(tmp_path,
                                                                                                 monkeypatch):
    """FLA's fused recurrence grew its K (a size its kernel's blocks follow) beside T and V, and its reference's cost
    refused the growth before any case reached the window: nothing grew, so the block sizes were never looked at, and
    the import stayed below the window, where with K kept T and V grow into it. A growth refused before any case
    grew is now tried again with the sizes it tried that the blocks follow kept. Here the row kernel's block follows
    n_cols, and the reference's temporary is rows x cols x cols (a mean of squares through an outer product): grown
    by both, the temporaries pass the bound a config may hold before any case moves the floor; with n_cols kept, the
    rows grow into the (scaled) window."""
    import arena.authoring.importers.aka as aka
    import arena.authoring.importers.common as common

    for mod in (common, aka):
        monkeypatch.setattr(mod, "WINDOW_BYTES", 3 * 10**6)
        monkeypatch.setattr(mod, "MAX_CONFIG_BYTES", 2**27)
    src = _edited_fixture(tmp_path, "aka_triton_row_rms", "scripts/task_runner.py", (
        ("    (16, 256),\n    (64, 1000),\n    (128, 2048),\n", "    (16, 32),\n    (32, 64),\n    (64, 128),\n"),
        ("(x * x).mean(dim=-1, keepdim=True)",
         "(x[:, :, None] * x[:, None, :]).diagonal(dim1=1, dim2=2).mean(dim=-1, keepdim=True)")))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [(c.params["n_rows"], c.params["n_cols"]) for c in task.configs("seen")]
    assert {n for _, n in seen} <= {32, 64, 128}, seen
    assert all(r * n * 8 >= 10**6 for r, n in seen), seen
    assert all(r * n * 8 + r * n * n * 4 <= 2**27 for r, n in seen), seen
    assert any("n_cols kept as the cases have them: the starting kernel's compile-time block sizes follow them" in d
               for d in _decisions(result.report())), result.report()


def test_aka_a_case_used_whole_is_named_as_the_helper_that_makes_the_inputs_unpacks_it(tmp_path):
    """vLLM's layernorm runner loops ``for i, test_case in enumerate(TEST_CASES)``, uses ``test_case`` whole (in its
    message), and makes the inputs in ``gen_inputs(42 + i, i, device)``, which unpacks ``M, N, has_bias, ... =
    TEST_CASES[case_idx]``, draws ``b = ... if has_bias else None`` and returns ``(x, w, b), kwargs`` with kwargs a
    dict it builds: the importer refused it ("the loop variable test_case is used whole"). The fields are named as
    the helper unpacks them, the helper's statements read in place of its call without its reading of the case by
    the counter, and a tensor made under a flag the task fixes (the first case's) is made as that case makes it."""
    result = import_aka(FIX / "aka_vllm_case_helper", tmp_path)
    assert result.ok and result.checks and not _found(result), result.report()
    task = load_task(result.folder)
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("x", ["M", "N"]), ("w", ["N"]), ("b", ["N"])]
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("result", ["M", "N"])]
    text = task.reference_path.read_text()
    assert "TEST_CASES" not in text and "randn" not in text and "has_bias" not in text, text
    report = result.report()
    assert "has_bias takes the values [True, False, True]" in report and "gen_inputs(): its statements" in report
    ref = import_file(task.reference_path, "ref_case_helper")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 3, "cpu", ref)
    (out,) = run_reference(ref.reference, task, ins, [env["M"], env["N"]])
    want = ins["x"].double() * ins["w"].double() + ins["b"].double()
    assert torch.allclose(out.double(), want, atol=1e-6)


def test_aka_a_block_that_follows_a_size_up_to_a_bound_the_cases_reach_lets_that_size_grow(tmp_path):
    """vLLM's expert counts launch blocks of ``next_power_of_2(min(numel, 1024))``: the block follows the
    number of tokens from the smallest case, and the largest case has it at its bound already. Every grown
    seen config is compiled as that case is, so the cases grow by the tokens into the timing window (they
    stayed at the test's sizes, below it, with the tokens kept as a size a block follows)."""
    from arena.authoring.importers import kernel_probe
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN

    # its bincount does not run on the meta device: judged by its calls counted, a few at any size
    result = import_aka(FIX / "aka_vllm_expert_counts", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [c.params for c in task.configs("seen")]
    # into the window: past the check's own floor at least (a growth the reference's CPU seconds stop short of the
    # importer's 300 MB is kept past it, and those seconds rise on a machine other work keeps busy)
    assert all(c["num_tokens"] * c["topk"] * 4 >= WINDOW_BYTES / WINDOW_MARGIN for c in seen), seen
    assert any("num_tokens sets the starting kernel's compile-time block sizes up to a bound" in d
               for d in _decisions(result.report()))
    # the block follows the tokens below the bound: the size is one a block follows, at the smallest case
    assert kernel_probe.block_fields(result.folder, {"num_tokens": 32, "topk": 2, "num_experts": 8},
                                     ["num_tokens"]) == ["num_tokens"]


def test_aka_a_block_that_follows_a_size_to_a_bound_of_its_launchers_lets_that_size_grow_where_another_is_kept(
        tmp_path):
    """FLA's layer norm runs ``min(next_power_of_2(ceil(M / 128)), 4)`` rows a program and a block of
    ``next_power_of_2(N)``: at the smoke config both sizes move a compile-time integer of its launch, and the cases
    stayed as the test wrote them (0.3 MB), both kept. The rows' integer is at its bound at a grown config (doubled
    there, the launch is compiled as before), so only the columns are kept and the rows grow into the window. Here
    the row kernel runs ``min(next_power_of_2(cdiv(n_rows, 8)), 4)`` rows a program."""
    from arena.authoring.importers import kernel_probe
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN

    src = _edited_fixture(tmp_path, "aka_triton_row_rms", "source/row_rms.py", (
                 ("def _row_rms(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):\n"
                  "    row = tl.program_id(0).to(tl.int64)\n    offs = tl.arange(0, BLOCK)\n    mask = offs < n_cols\n",
                  "def _row_rms(x_ptr, y_ptr, n_rows, n_cols, eps, BLOCK: tl.constexpr, ROWS: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n    for i in tl.static_range(ROWS):\n"
                  "        row = tl.program_id(0).to(tl.int64) * ROWS + i\n"
                  "        mask = (offs < n_cols) & (row < n_rows)\n"),
                 ("    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)\n"
                  "    rms = tl.sqrt(tl.sum(v * v, axis=0) / n_cols + eps)\n"
                  "    tl.store(y_ptr + row * n_cols + offs, v / rms, mask=mask)\n",
                  "        v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)\n"
                  "        rms = tl.sqrt(tl.sum(v * v, axis=0) / n_cols + eps)\n"
                  "        tl.store(y_ptr + row * n_cols + offs, v / rms, mask=mask)\n"),
                 ("    _row_rms[(rows,)](x, y, cols, 1e-6, BLOCK=triton.next_power_of_2(cols))\n",
                  "    per = min(triton.next_power_of_2(triton.cdiv(rows, 8)), 4)\n"
                  "    _row_rms[(triton.cdiv(rows, per),)](x, y, rows, cols, 1e-6, BLOCK=triton.next_power_of_2(cols),"
                  " ROWS=per)\n")))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [(c.params["n_rows"], c.params["n_cols"]) for c in task.configs("seen")]
    assert [n for _, n in seen] == [256, 1000, 2048], seen
    assert all(r * n * 8 >= WINDOW_BYTES / WINDOW_MARGIN for r, n in seen), seen
    report = result.report()
    assert any(d.split(". ", 1)[1].startswith("n_rows sets the starting kernel's compile-time block sizes at the "
                                              "smoke config, and no longer at") for d in _decisions(report)), report
    assert "n_cols kept as the cases have them" in report
    assert kernel_probe.block_fields(result.folder, {"n_rows": 16, "n_cols": 256}, ["n_rows", "n_cols"]) == \
        ["n_rows", "n_cols"]
    assert kernel_probe.bounded_fields(result.folder, {"n_rows": 1 << 14, "n_cols": 256}, ["n_rows", "n_cols"]) == \
        ["n_rows"]


def test_the_block_params_of_a_kernel_are_those_a_blocks_shape_follows(tmp_path):
    """vLLM's causal conv1d update takes its sizes and strides as ``tl.constexpr`` (a specialisation): each value
    compiles anew, but its block (``BLOCK_N = 256``) stays. Counted as block sizes, its batch and dim were kept as
    the test has them, and the import stayed below the window. A block's shape follows a parameter where it is in a
    ``tl.arange``, a ``tl.zeros``, a ``tl.static_range`` or a reshape, through the locals computed from it, or
    through a ``@triton.jit`` helper it is passed to whose parameter is one; a call that cannot be followed counts
    its arguments."""
    from arena.authoring.importers.kernel_probe import _block_params

    (tmp_path / "kmod.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef _rows(x_ptr, row, n_cols: tl.constexpr, B: tl.constexpr, W: tl.constexpr):\n"
        "    offs = tl.arange(0, B)\n    acc = tl.zeros((B,), dtype=tl.float32)\n"
        "    for i in tl.static_range(W):\n"
        "        acc += tl.load(x_ptr + row * n_cols + offs + i, mask=offs < n_cols, other=0.0)\n"
        "    return acc\n\n\n"
        "@triton.jit\ndef kern(x_ptr, y_ptr, stride: tl.constexpr, n_cols: tl.constexpr, BLOCK: tl.constexpr,\n"
        "         WIDTH: tl.constexpr, TILE: tl.constexpr, HAS_BIAS: tl.constexpr):\n"
        "    row = tl.program_id(0)\n    HALF: tl.constexpr = TILE // 2\n"
        "    v = _rows(x_ptr, row * stride, n_cols, BLOCK, W=WIDTH)\n"
        "    t = tl.arange(0, HALF)\n"
        "    if HAS_BIAS:\n        v += 1.0\n"
        "    for start in range(0, n_cols, BLOCK):\n"
        "        tl.store(y_ptr + row * stride + start + tl.arange(0, BLOCK), v, mask=start + t < n_cols)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("kmod", tmp_path / "kmod.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(tmp_path))
    fn = mod.kern
    while hasattr(fn, "fn") and hasattr(fn, "run"):
        fn = fn.fn
    assert _block_params(fn) == {"BLOCK", "WIDTH", "TILE"}
    # a helper whose source could not be read (its answer None): every argument passed to it counts
    helper = mod._rows
    while hasattr(helper, "fn") and hasattr(helper, "run"):
        helper = helper.fn
    assert _block_params(fn, {helper: None}) == {"x_ptr", "stride", "n_cols", "BLOCK", "WIDTH", "TILE"}


def test_aka_sizes_that_grow_once_a_block_size_is_kept_are_probed_for_blocks_in_turn(tmp_path):
    """A kernel whose one program holds the whole of x, a block of every row and every column: its rows move more
    bytes (a weight of 16 a row), so the first growth doubled them alone; found a block size, they were kept, and
    the columns then grew unprobed, to blocks of 4 M elements, past the 1 M Triton compiles, and every draft was
    dropped (rocmbench's block-pointer products: seen.yaml empty). The sizes that grow in the draft made again are
    probed in turn: both are kept, and the import stops below the timing window with that reason."""
    result = import_aka(FIX / "aka_triton_whole_block", tmp_path)
    report = result.report()
    assert result.ok, report
    assert "they were not grown: n_rows, n_cols set the starting kernel's compile-time block sizes" in report, report
    assert "exceeds triton maximum tensor numel" not in report and "does not run on" not in report, report
    seen = load_task(result.folder).configs("seen")
    assert [(c.params["n_rows"], c.params["n_cols"]) for c in seen[:2]] == [(16, 64), (32, 128)], seen
    assert any("below the timing window" in p for p in result.check_problems), result.check_problems


def test_aka_a_size_a_kernel_takes_as_a_compile_time_integer_and_no_block_follows_grows(tmp_path):
    """The row kernel takes n_cols as a ``tl.constexpr`` (as vLLM's kernels take their strides) and walks the row
    in blocks of 256: each n_cols compiles anew, and no block grows with it. The probe no longer counts it among the
    block sizes, and the cases grow by both sizes; the kernel of the fixture as written (a block of
    ``next_power_of_2(n_cols)``) keeps it (the test above)."""
    from arena.authoring.importers import kernel_probe
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN

    src = _edited_fixture(tmp_path, "aka_triton_row_rms", "source/row_rms.py", (
        ("def _row_rms(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):\n"
         "    row = tl.program_id(0).to(tl.int64)\n    offs = tl.arange(0, BLOCK)\n    mask = offs < n_cols\n"
         "    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)\n"
         "    rms = tl.sqrt(tl.sum(v * v, axis=0) / n_cols + eps)\n"
         "    tl.store(y_ptr + row * n_cols + offs, v / rms, mask=mask)\n",
         "def _row_rms(x_ptr, y_ptr, n_cols: tl.constexpr, eps, BLOCK: tl.constexpr):\n"
         "    row = tl.program_id(0).to(tl.int64)\n    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n"
         "    for start in range(0, n_cols, BLOCK):\n"
         "        offs = start + tl.arange(0, BLOCK)\n"
         "        v = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)\n"
         "        acc += v * v\n"
         "    rms = tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)\n"
         "    for start in range(0, n_cols, BLOCK):\n"
         "        offs = start + tl.arange(0, BLOCK)\n"
         "        v = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)\n"
         "        tl.store(y_ptr + row * n_cols + offs, v / rms, mask=offs < n_cols)\n"),
        ("BLOCK=triton.next_power_of_2(cols))", "BLOCK=256)")))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [(c.params["n_rows"], c.params["n_cols"]) for c in task.configs("seen")]
    assert all(r * n * 8 >= WINDOW_BYTES / WINDOW_MARGIN for r, n in seen), seen
    assert any(n not in (256, 1000, 2048) for _, n in seen), seen
    assert "kept as the cases have them" not in result.report()
    assert kernel_probe.block_fields(result.folder, {"n_rows": 16, "n_cols": 256}, ["n_rows", "n_cols"]) == []


def test_a_probe_refuses_a_config_whose_call_allocates_past_the_candidates_working_allowance(tmp_path):
    """FLA's fused recurrence allocates a state of T x H x V x K floats in its launcher: its seen draft at T = 32,768
    asked 2.12 GiB in a call on an H200, past the 2 GiB the harness lets a candidate's call allocate beside its
    inputs and outputs, and the task failed there. The probe counts what the call allocates outside its launches
    (outputs of operators not aliased to an input: a view or an in-place write is none) and refuses the config, with
    the figures, as the GPU would; a call within the allowance is left as it was."""
    from arena.authoring.importers import kernel_probe
    from arena.authoring.importers.kernel_probe import _Allocations, _past_allowance

    x = torch.zeros(256)
    with _Allocations() as got:
        x.view(16, 16).add_(1.0)
        y = x.new_empty(1000)
        torch.zeros(10, dtype=torch.float64).clone()
    assert got.bytes == 4000 + 80 + 80 and y.numel() == 1000, got.bytes
    assert _past_allowance(2**31, 2**20) == ""
    assert _past_allowance(2**31 + 1, 2**20).startswith("it allocates 2.00 GiB in a call, past the 2.00 GiB")
    assert _past_allowance(2**31 + 1, 2**30) == ""          # 4 times the inputs and outputs: 4 GiB

    result = import_aka(FIX / "aka_triton_row_rms", tmp_path)
    assert result.ok, result.report()
    baseline = result.folder / "baseline.py"
    text = baseline.read_text()
    assert "    y = torch.empty_like(x)\n" in text
    # a scratch of n_rows GiB, never touched (an empty tensor's pages are not written)
    baseline.write_text(text.replace("    y = torch.empty_like(x)\n",
                                     "    y = torch.empty_like(x)\n    _state = x.new_empty(rows, 2**28)\n"))
    lines = kernel_probe.probe_configs(result.folder, [("probe", "small", {"n_rows": 1, "n_cols": 256}),
                                                       ("probe", "large", {"n_rows": 3, "n_cols": 256})])
    assert lines["probe:small"]["error"] is None and 2**30 < lines["probe:small"]["allocated"] < 2**30 + 2**20, lines
    assert lines["probe:large"]["error"].startswith("the starting kernel: it allocates 3.00 GiB in a call, past the "
                                                     "2.00 GiB the harness lets"), lines


def test_aka_seen_configs_the_kernel_probe_refuses_are_replaced_by_drafts_around_those_left(tmp_path):
    """FLA's fused recurrence allocates a state that grows with its sizes: its grown case was refused by the kernel
    probe (past the working allowance) and the import stopped with one seen config. Here the launcher allocates a
    scratch of n_cols / 64 floats an element beside its 0.5 GB of inputs and outputs: the cases grown at 1,000 and
    2,048 columns ask 4.1 and 8.3 GiB and are refused; the one left at 256 columns is topped up to 3 seen configs as
    the importer drafts them (its rows scaled), each probed, none a refused one's sizes."""
    src = tmp_path / "src" / "aka_triton_row_rms"
    shutil.copytree(FIX / "aka_triton_row_rms", src)
    kernel = src / "source" / "row_rms.py"
    line = "    y = torch.empty_like(x)\n"
    kernel.write_text(kernel.read_text().replace(line, line + "    _state = x.new_empty(rows, cols * cols // 64)\n"))
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    report = result.report()
    assert "seen:case1 (the starting kernel: it allocates 4.06 GiB in a call" in report, report
    assert "seen:case2 (the starting kernel: it allocates 8.25 GiB in a call" in report, report
    seen = load_task(result.folder).configs("seen")
    assert len(seen) == 3 and seen[0].name == "case0", [c.params for c in seen]
    assert all(c.params["n_cols"] == 256 for c in seen), [c.params for c in seen]
    assert len({tuple(sorted(c.params.items())) for c in seen}) == 3
    added = [c.name for c in seen[1:]]
    assert f"2 seen configs drafted around the seen configs left, as the importer drafts them, in place of those " \
           f"dropped, each probed: {added[0]} (" in report, report
    assert not any("write configs it runs on" in p for p in result.check_problems), result.check_problems


def test_aka_a_smoke_config_degenerate_where_it_is_shrunk_that_far_is_grown_back(tmp_path):
    """FLA's chunked k k^T writes each chunk's lower triangle into rows of 64: shrunk to 16 steps, a smoke config
    holds a few values beside the zeros, and one draw of its inputs left their spread under the degeneracy floor
    (the import stopped there, its seen and held-out configs fine). Here a difference with the row 16 steps
    before is all zeros at the 16 steps the smoke config shrinks to. As KernelBench's importer does, one of its
    sizes is doubled (or made four times as large), the smallest such config first, until its outputs are not
    degenerate; the starting kernel is then checked on that config."""
    result = import_aka(FIX / "aka_vllm_lag_diff", tmp_path)
    assert result.ok, result.report()
    assert result.check_problems == [], result.check_problems
    task = load_task(result.folder)
    smoke = task.configs("smoke")[0].params
    assert smoke["steps"] == 32 and smoke["batch"] == 4, smoke
    report = result.report()
    assert "gave degenerate outputs (result: std 0" in report and "with steps 2 times as large, 32, they are not" \
        in report, report
    assert "the starting kernel passes the smoke config on the CPU" in report
    assert "(the outputs degenerate there)" in (result.folder / "configs" / "smoke.yaml").read_text()


@pytest.mark.usefixtures("cases_as_written")
@pytest.mark.parametrize("why", ["stream", "bfloat16"])
def test_aka_a_kernel_the_cpu_cannot_run_is_left_to_a_gpu(tmp_path, why):
    """A launcher that asks torch.cuda for what a CPU build of torch has not (its current stream), or a kernel
    computing in bf16, which Triton's interpreter gets wrong (FACTS.md): the CPU cannot show whether it is correct,
    so its failure there is not a problem of the import's own check; the report says only a GPU shows it correct,
    and how. (The same file asking Triton's driver for its target where it loads, and torch.cuda for the number of
    SMs, is answered for the nominal GPU of the cpu backend: the launcher is reached.)"""
    src = tmp_path / "src" / "aka_triton_row_rms"
    shutil.copytree(FIX / "aka_triton_row_rms", src)
    if why == "stream":
        kernel = src / "source" / "row_rms.py"
        text = kernel.read_text().replace(
            "import triton.language as tl\n",
            "import triton.language as tl\n\nBACKEND = triton.runtime.driver.active.get_current_target().backend\n",
            1)
        kernel.write_text(text.replace("    y = torch.empty_like(x)\n", "    y = torch.empty_like(x)\n    assert "
                                       "torch.cuda.get_device_properties(x.device).multi_processor_count > 0\n"
                                       "    torch.cuda.current_stream()\n"))
        said = "its launcher asks torch.cuda for what a CPU build of torch has not (torch.cuda.current_stream)"
    else:
        runner = src / "scripts" / "task_runner.py"
        runner.write_text(runner.read_text().replace("dtype=torch.float32", "dtype=torch.bfloat16"))
        said = "its values are bfloat16, which Triton's interpreter computes wrongly: y: "
    result = import_aka(src, tmp_path / "out")
    assert result.ok and not any("starting kernel" in p for p in result.check_problems), result.report()
    assert any(d.startswith(f"the starting kernel does not run on the CPU ({said}")
               and "`arena tasks check triton2triton/aka_triton_row_rms --device cuda`" in d
               for d in result.decisions), result.decisions


@pytest.mark.usefixtures("cases_as_written")
def test_aka_the_entry_is_not_named_as_a_name_the_kernels_file_binds(tmp_path):
    """The entry is named as the task, unless the kernel's file binds that name (``layernorm =
    LayerNorm.apply``): an entry of that name would replace what it calls, and call itself."""
    src = tmp_path / "src" / "aka_triton_row_rms"
    shutil.copytree(FIX / "aka_triton_row_rms", src)
    kernel = src / "source" / "row_rms.py"
    kernel.write_text(kernel.read_text() + "\n\naka_triton_row_rms = row_rms\n")
    result = import_aka(src, tmp_path / "out")
    assert result.ok and "the starting kernel passes the smoke config" in result.report(), result.report()
    task = load_task(result.folder)
    assert task.entry == "aka_triton_row_rms_entry"
    assert "\ndef aka_triton_row_rms_entry(" in (result.folder / "baseline.py").read_text()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_a_copy_the_kernel_changes_in_place_is_the_tensor_the_reference_reads(tmp_path):
    """The test hands the kernel a copy (``x_gpu = x.clone()``), which it changes in place, and computes the
    reference from the tensor it copied: the copy is an inout input made as that tensor is, and the reference reads
    it as made (the harness hands the reference the inputs before the kernel runs)."""
    src = tmp_path / "src" / "aka_vllm_row_floor"
    shutil.copytree(FIX / "aka_vllm_row_floor", src)
    runner = src / "scripts" / "task_runner.py"
    text = runner.read_text()
    old = "            ref = x.clone()\n            mod.row_floor(x, scratch, noise, BASE)\n"
    assert old in text
    text = text.replace(old, "            x_gpu = x.clone()\n            mod.row_floor(x_gpu, scratch, noise, BASE)\n"
                             "            ref = x.clone()\n")
    runner.write_text(text.replace("torch.allclose(x, ref,", "torch.allclose(x_gpu, ref,"))
    result = import_aka(src, tmp_path / "out")
    assert result.ok and "the starting kernel passes the smoke config" in result.report(), result.report()
    assert all("100 MB" in p for p in result.check_problems), result.check_problems    # the cases as written
    task = load_task(result.folder)
    assert [(i.name, i.inout) for i in task.inputs][0] == ("x_gpu", True)
    text = task.reference_path.read_text()
    assert "    x = x_gpu\n" in text and "NotImplementedError" not in text, text


def test_smoke_config_is_shrunk_from_the_smallest_case_even_where_the_probe_refuses_every_size():
    """The smoke config starts from the source's smallest case, not from the (grown) largest: where the
    reference's probe refuses every other size (its CPU budget spent on a slow machine), the smallest case
    as written is the smoke config, with no note that it could not be shrunk."""
    from arena.authoring.importers.common import draft_configs

    def size(c):
        return c["M"] * c["N"]

    grown, small = {"M": 4096, "N": 65536}, {"M": 8, "N": 64}
    _, _, smoke, notes, _ = draft_configs(grown, ["M", "N"], lambda c: False, size, "largest", smoke_from=small)
    assert [{k: v for k, v in smoke[0].items() if k in small} for _ in smoke] == [small]
    assert "smallest case" in smoke[0]["#"] and not any("smoke config still has" in n for n in notes), notes
    # without a case, it is halved from the base: a refusing probe leaves it as large, and says so
    _, _, smoke, notes, _ = draft_configs(grown, ["M", "N"], lambda c: False, size, "largest")
    assert size(smoke[0]) == size(grown) and any("smoke config still has" in n for n in notes), notes


def test_aka_cases_below_the_timing_window_are_grown_into_it(tmp_path, monkeypatch):
    """A test's cases check correctness at sizes far below the timing window (`tasks check` refuses a
    baseline under 20 us, and a memory-bound task none of whose configs moves 100 MB): each case's
    sizes are doubled in turn until it moves WINDOW_BYTES (each size accepted by the reference), the
    seen configs are the cases grown, the held-out drafts are around the largest of them, and the
    smallest case stays the smoke config."""
    import arena.authoring.importers.common as common

    # a window of 100 MB, not 300: the same growth (every case is below it), at a quarter of the sizes (the
    # starting kernel is probed on every config in Triton's interpreter, the rounding measured on the CPU)
    monkeypatch.setattr(common, "WINDOW_BYTES", 100 * 10**6)
    from arena.authoring.importers.common import MAX_CONFIG_BYTES, WINDOW_BYTES

    result = import_aka(FIX / "aka_triton_scaled_softmax", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    cases = [{"n_rows": 8, "n_cols": 64}, {"n_rows": 64, "n_cols": 1000}, {"n_rows": 256, "n_cols": 4096},
             {"n_rows": 1024, "n_cols": 8192}]

    def moved(c) -> int:
        return 2 * 4 * c["n_rows"] * c["n_cols"]     # x and y, fp32

    seen = [dict(c.params) for c in task.configs("seen")]
    assert len(seen) >= 3 and all(moved(c) >= WINDOW_BYTES for c in seen), seen
    assert seen[1] == {"n_rows": 1024, "n_cols": 16000}            # the second case, each size doubled in turn
    assert all(c in [{"n_rows": r * 2**i, "n_cols": n * 2**j} for r, n in (x.values() for x in cases)
                     for i in range(12) for j in range(12)] for c in seen[:2])
    held = [dict(c.params) for c in task.configs("heldout")]
    assert len(held) >= 4 and all(moved(c) <= MAX_CONFIG_BYTES for c in held)
    assert [dict(c.params) for c in task.configs("smoke")] == [cases[0]]
    notes = _decisions(result.report())
    assert any("the cases of task_runner.py move at most 67.1 MB" in d and "grown into it" in d for d in notes), notes
    assert not any("production shapes" in d for d in notes)

    # sizes the original ties together (a matrix's rows to its groups): the held-out kinds go to a free size
    result = import_aka(FIX / "aka_vllm_group_scale", tmp_path)
    task = load_task(result.folder)
    assert result.ok and len(task.configs("heldout")) >= 4, result.report()
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        assert c.params["K"] % c.params["group_size"] == 0, c


def test_a_growth_stopped_short_of_the_window_is_kept_where_it_passed_the_floor():
    """``grown_cases``: a case whose growth the original stops short of the window (a size past the reference's cost)
    is kept where what it reached passes ``floor`` (the check's own 100 MB, a third of the window), and left out
    where it does not; without a floor, as before, only a case that reaches the window is."""
    from arena.authoring.importers.common import grown_cases

    def nbytes(c: dict) -> int:
        return 8 * c["T"]

    def enough(c: dict) -> bool:
        return nbytes(c) >= 3000

    def floor(c: dict) -> bool:
        return nbytes(c) >= 1000

    cases = [{"T": 10}, {"T": 12}]
    # the second case's doubling to 192 is refused: it steps by 3/2 to 144, past the floor
    assert grown_cases(cases, ["T"], lambda c: c["T"] <= 160, nbytes, enough, floor) == [(0, {"T": 10}, {"T": 160}),
                                                                                         (1, {"T": 12}, {"T": 144})]
    assert grown_cases(cases, ["T"], lambda c: c["T"] <= 160, nbytes, enough) == []
    assert grown_cases(cases, ["T"], lambda c: c["T"] <= 80, nbytes, enough, floor) == []
    assert grown_cases(cases, ["T"], lambda c: True, nbytes, enough, floor) == [(0, {"T": 10}, {"T": 640}),
                                                                               (1, {"T": 12}, {"T": 384})]


def test_aka_a_reference_that_loops_over_chunks_on_the_cpu_is_grown_by_its_cost_there(tmp_path, monkeypatch):
    """vLLM's FLA runners' references copy the inputs to the CPU and loop over chunks there. On the meta device each
    of their operations costs tens of times what it does on the CPU (its shapes worked out in Python: 3.4 s against
    0.08 s for one at 16,384 steps), and a draft was refused wherever its meta run took past REFERENCE_PROBE_SECONDS,
    so their cases were never grown (FLA's chunked cumsum at 67 MB). Now a meta run is cut there and the reference
    judged by its run on the CPU, grown while that takes a third of the limit at most (the held-out drafts around it
    go to twice its sizes); and where that stops the growth short of the window but past the check's own floor (a
    third of it, the 100 MB rule), the cases grown that far are the seen configs."""
    import arena.authoring.importers.common as common

    # the window scaled down (30 MB): the same growth at a tenth of the sizes; with the limit at 1.5 s, on the meta
    # device it stops near 4 MB, on the CPU (held to a third of the limit) at 25-50 MB, or at 12 MB where the machine
    # is four times slower: past the floor of 10 MB either way
    result, task = _chunked_grown(tmp_path, monkeypatch, meta_seconds=1.5, cpu_seconds=1.5)
    seen = [dict(c.params) for c in task.configs("seen")]
    assert all(2 * 4 * c["B"] * c["T"] * c["H"] <= common.MAX_CONFIG_BYTES for c in seen)
    _computes_chunked_cumsum(task)


def _chunked_grown(tmp_path: Path, monkeypatch, meta_seconds: float, cpu_seconds: float):
    """aka_vllm_seed_chunks imported with its accumulator made like the CPU copy, as FLA's are
    (`torch.zeros_like(g_c)`), so that its reference runs on the meta device; the timing window scaled down to 30 MB,
    the meta device's and the CPU's limits as given. Asserts it grew its 3 seen configs past the floor (10 MB: g and
    the result, fp32); returns the import and its task."""
    import arena.authoring.importers.aka as aka
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "WINDOW_BYTES", 30 * 10**6)
    monkeypatch.setattr(aka, "WINDOW_BYTES", 30 * 10**6)
    monkeypatch.setattr(aka, "REFERENCE_PROBE_SECONDS", meta_seconds)
    monkeypatch.setattr(aka, "CPU_REFERENCE_SECONDS", cpu_seconds)
    src = _seed_chunks_with(tmp_path, '    out = torch.empty_like(g, device="cpu")\n    gc = g.float().cpu()\n',
                            "    gc = g.float().cpu()\n    out = torch.empty_like(gc)\n")
    result = import_aka(src, tmp_path / "out")
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [dict(c.params) for c in task.configs("seen")]
    assert len(seen) >= 3 and all(2 * 4 * c["B"] * c["T"] * c["H"] >= 10 * 10**6 for c in seen), result.report()
    assert any("grown into it" in d for d in _decisions(result.report())), result.report()
    return result, task


def test_aka_a_chunked_reference_judged_on_the_cpu_has_a_limit_of_its_own(tmp_path, monkeypatch):
    """A meta run is cut at ``REFERENCE_PROBE_SECONDS`` for what an operation costs there (tens of times the CPU's);
    the reference then judged by its run on the CPU is held to ``CPU_REFERENCE_SECONDS``, a limit of its own (on an
    H200 such references took 1.1-2 times their CPU seconds). Held to the meta device's 2 s, FLA's chunked
    references (a cumsum, 16x16 triangular solves and merges) stopped growing at 0.7-1.2 s, below the window. Here
    the meta device's limit is a hundredth of a second, and the growth still reaches the (scaled) window on the
    CPU's."""
    _chunked_grown(tmp_path, monkeypatch, meta_seconds=0.01, cpu_seconds=1.5)


def test_aka_the_seen_configs_top_up_has_a_budget_the_drafts_did_not_spend(tmp_path, monkeypatch):
    """With a reference that runs on the host (vLLM's per-token quantisation loops over rows there), the held-out
    drafts' checks spend the CPU budget the probes share (80 CPU seconds where it was 60), and the seen configs'
    top-up, after them, had each of its candidates refused for the budget alone: it fell back to the test's cases as
    written, below the window (a GPU's check fails them), or to a config doubled that the reference never ran. The
    top-up has a budget of its own: the seen configs are the case grown and drafts beside it the reference ran."""
    import arena.authoring.importers.aka as aka
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "WINDOW_BYTES", 30 * 10**6)
    monkeypatch.setattr(aka, "WINDOW_BYTES", 30 * 10**6)
    # a run's limit well past what the case grown to the window takes: the top-up's candidates are that case with a
    # size times 5/4 to 2, and at 1.5 s a run too few of them passed under a full suite's load on 2 cores (what is
    # asserted is the top-up's budget, not where a run's limit falls)
    monkeypatch.setattr(aka, "REFERENCE_PROBE_SECONDS", 4.0)
    monkeypatch.setattr(aka, "CPU_REFERENCE_SECONDS", 4.0)
    monkeypatch.setattr(aka, "GROWN_BUDGET", 1e-6)      # the drafts' checks find their budget spent
    # and the top-up's own is ample: beside a full suite on 2 cores, one of its candidates was refused for it (what is
    # asserted is that the top-up has a budget of its own, not how large it is)
    monkeypatch.setattr(aka, "TOP_UP_SECONDS", 4 * aka.TOP_UP_SECONDS)
    # the runner as written: its reference makes its accumulator on the CPU, so it does not run on the meta device
    result = import_aka(FIX / "aka_vllm_seed_chunks", tmp_path)   # no held-out draft is checked: not a task to load
    text = (result.folder / "configs" / "seen.yaml").read_text()
    seen = yaml.safe_load(text)

    def moved(c) -> int:
        return 2 * 4 * c["B"] * c["T"] * c["H"]     # g and the result, fp32

    assert len(seen) >= 3 and all(moved(c) >= 10 * 10**6 for c in seen), seen
    assert "grown from" in text and "the config before it doubled" not in text, text


def test_the_importers_probe_on_one_thread(tmp_path, monkeypatch):
    """The importers' budgets are the process's CPU seconds, which count every thread's: both run torch's operators
    on one thread (an operator split over two cores beside other work took 16.5 CPU seconds where it took 0.95 at
    half the size), and give the caller's setting back."""
    import arena.authoring.importers.aka as aka
    import arena.authoring.importers.kernelbench as kb

    seen: list[int] = []

    def stop(*_args, **_kwargs):
        seen.append(torch.get_num_threads())
        raise ArenaError("stopped here")

    monkeypatch.setattr(aka.AkaFolder, "read", staticmethod(stop))
    monkeypatch.setattr(kb, "ModuleProblem", stop)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(ArenaError):
            import_aka(FIX / "aka_triton_scaled_softmax", tmp_path)
        with pytest.raises(ArenaError):
            import_kernelbench(FIX / "kb_gru.py", tmp_path)
        assert seen == [1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_aka_cases_partly_inside_the_timing_window_grow_the_ones_below_it(tmp_path, monkeypatch):
    """Where some of a test's cases are inside the timing window and some below it, the ones below are grown into
    it (the harness could not time them as they are), the ones inside kept as they are; the report names the cases
    grown, and the smallest case stays the smoke config."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "WINDOW_BYTES", 5 * 10**6)   # the fixture's cases move 4 KB, 512 KB, 8.4 MB, 67 MB
    result = import_aka(FIX / "aka_triton_scaled_softmax", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)

    def moved(c) -> int:
        return 2 * 4 * c["n_rows"] * c["n_cols"]     # x and y, fp32

    seen = task.configs("seen")
    assert [c.name for c in seen] == ["case0", "case1", "case2", "case3"], seen
    assert all(moved(dict(c.params)) >= 5 * 10**6 for c in seen), seen
    assert [dict(c.params) for c in seen[2:]] == [{"n_rows": 256, "n_cols": 4096}, {"n_rows": 1024, "n_cols": 8192}]
    text = (result.folder / "configs" / "seen.yaml").read_text()
    assert text.count("grown from") == 2, text
    assert [dict(c.params) for c in task.configs("smoke")] == [{"n_rows": 8, "n_cols": 64}]
    notes = _decisions(result.report())
    assert any("the cases of task_runner.py case0, case1 move at most 0.5 MB" in d and "grown into it" in d
               for d in notes), notes


def test_aka_the_references_temporaries_bound_the_cases_growth_and_drafts(tmp_path, monkeypatch):
    """A test's reference that holds an attention's scores (heads x n_ctx x n_ctx, which no input or output shows):
    measured on the meta device, they count with the inputs and outputs against the bytes bound, so a case of the
    test past it is no seen config (the report says how much it holds), and no case grown and no draft goes past it."""
    import arena.authoring.importers.common as common
    from arena.authoring.importers.common import MAX_CONFIG_BYTES, peak_bytes_mode

    # a window of 20 MB or 2 GFLOP, not 300 MB or 20: the same growth, at smaller sizes (the starting kernel is
    # probed on every config in Triton's interpreter)
    monkeypatch.setattr(common, "WINDOW_BYTES", 20 * 10**6)
    monkeypatch.setattr(common, "WINDOW_FLOPS", 2 * 10**9)
    result = import_aka(FIX / "aka_triton_attention_rows", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    reference = import_file(result.folder / "reference.py", "attention_reference").reference

    def held(c: dict) -> int:      # the bytes alive at once: q, k, v and out, and the reference's temporaries
        q = torch.empty(c["heads"], c["n_ctx"], c["d"], device="meta")
        with peak_bytes_mode() as live:
            out = reference(q, q, q, *c.values())
        return 4 * q.nbytes + live.peak - out.nbytes

    seen = [dict(c.params) for c in task.configs("seen")]
    assert {"heads": 64, "n_ctx": 8192, "d": 32} not in seen and len(seen) >= 3, seen
    assert held({"heads": 64, "n_ctx": 8192, "d": 32}) > MAX_CONFIG_BYTES
    for c in [*seen, *(dict(c.params) for c in task.configs("heldout"))]:
        assert held(c) <= MAX_CONFIG_BYTES, c
    notes = _decisions(result.report())
    assert any("1 of the cases of task_runner.py are past the 4 GB a config may move, the reference's temporaries "
               "counted (the reference has 32.2 GiB alive at once at heads = 64, n_ctx = 8192, d = 32)" in d
               for d in notes), notes


def test_the_tail_of_errors_near_zero_grows_with_the_elements_compared():
    """Errors of the terms, not of the values (a sum that cancels): those of the outputs below the median |ref| are
    read as a normal tail over every element the check compares, sqrt(2 ln N) times their RMS; fewer than 16 of them
    say nothing."""
    from arena.authoring.importers.common import TAIL_MIN_SAMPLE, _tail_error

    g = torch.Generator().manual_seed(0)
    w = torch.randn(4096, generator=g, dtype=torch.float64) * 1000
    d = torch.randn(4096, generator=g, dtype=torch.float64).abs() * 0.01
    rms = float(d[w.abs() <= w.abs().median()].pow(2).mean().sqrt())
    for n in (1_000, 1_000_000):
        assert _tail_error(d, w, n) == pytest.approx(rms * (2 * torch.log(torch.tensor(float(n)))).sqrt().item())
    assert _tail_error(d, w, 10**6) > _tail_error(d, w, 10**3) > float(d.max()) / 2
    assert _tail_error(d[: TAIL_MIN_SAMPLE], w[: TAIL_MIN_SAMPLE], 10**6) == 0.0


def test_kernelbench_row_sums_that_cancel_get_an_atol_for_their_small_values(tmp_path):
    """Row sums of a product are thousands where they cancel little and near 0 where they cancel, with the error of
    their terms either way: the tolerance's atol holds that error at the small values (on an H100 rtol alone let
    2-5 of 1024 such sums fail the task's own starting point), with its reason, and the starting point passes on
    every seen and held-out config at seeds the importer did not draw."""
    from arena.check.compare import compare_output
    from arena.records import Status

    result, task = _imported(tmp_path, "kb_row_sum_matmul")
    tol = task.tolerance_for("float32")
    raw = yaml.safe_load((result.folder / "task.yaml").read_text())["tolerance"]
    assert "as a normal tail over the" in raw["reason"] and tol["atol"] >= 1e-2, raw
    ref = import_file(task.reference_path, "kb_row_sum_matmul_ref")
    for config in [*task.configs("seen"), *task.configs("heldout")]:
        env = task.env(config)
        for seed in (11, 12):
            ins = make_inputs(task, env, seed, "cpu")
            scalars = [task.scalar_value(sc, env) for sc in task.scalars]
            got = ref.reference(*[t.clone() for t in ins.values()], *scalars)
            (want,) = run_reference(ref.reference, task, ins, scalars)
            assert compare_output("out", got, want, tol).status is Status.PASSED, (config.name, seed)


def test_a_convolutions_flops_count_twenty_times_against_the_bounds():
    """fp32 convolutions ran at 2.3-16 TFLOP/s on an H100, matrix products at 46-52: a reference calling one has each
    FLOP counted 20 times against the bounds, the call named; a module type or a function."""
    from arena.authoring.importers.common import work_factor

    assert work_factor(["Model", "Conv2d", "GroupNorm"]) == (20.0, "Conv2d")
    assert work_factor(["torch.nn.functional.conv_transpose3d"]) == (20.0, "torch.nn.functional.conv_transpose3d")
    assert work_factor(["ConvTranspose1d"])[0] == 20.0
    assert work_factor(["Linear", "torch.matmul", "torch.nn.functional.gelu"]) == (1.0, None)


def test_a_hip_starting_kernels_flops_count_six_times_against_the_bounds():
    """A gpumode module imported as a hip2hip task has the source's hand-written HIP as its starting kernel (AKA's
    SimpleMatmulModule ran at 8 TFLOP/s on an H200, a sixth of what the bounds assume; ``build_module_task`` lists
    it among the calls for hip2hip): its FLOPs count 6 times; a convolution's 20 still win."""
    from arena.authoring.importers.common import HIP_STARTING_KERNEL, work_factor

    assert work_factor(["Linear", HIP_STARTING_KERNEL]) == (6.0, HIP_STARTING_KERNEL)
    assert work_factor([HIP_STARTING_KERNEL, "Conv2d"]) == (20.0, "Conv2d")


def test_kernelbench_a_convolutions_drafts_stay_within_the_bound_at_its_rate(tmp_path, monkeypatch):
    """A convolution whose drafts fit the FLOP bound at a matrix product's rate, not at a convolution's: they are
    made around its sizes scaled down until 20 times their FLOPs fit, and the note says why."""
    import arena.authoring.importers.common as common

    result, task = _imported(tmp_path / "plain", "kb_conv_groupnorm")
    flops = task.roofline_for(task.configs("seen")[0])[0]      # the problem's own sizes
    bound = flops * 4        # the problem fits it, and drafts twice as large; 20 times them do not
    monkeypatch.setattr(common, "MAX_CONFIG_FLOPS", bound)
    monkeypatch.setattr(common, "SCALED_FLOPS", bound / 4)
    result, task = _imported(tmp_path / "bounded", "kb_conv_groupnorm")
    configs = [*task.configs("seen"), *task.configs("heldout")]
    assert configs[0].name == "problem-scaled"
    assert all(task.roofline_for(c)[0] * 20 <= bound for c in configs)
    assert any("TFLOP of Conv2d, counted 20 times" in d for d in _decisions(result.report())), result.report()


def test_kernelbench_the_references_temporaries_count_against_the_bytes_bound(tmp_path, monkeypatch):
    """An attention's score matrix is many times its inputs' and outputs' bytes: measured on the meta device, it
    counts with them against the bytes bounds, so drafts that fit by their tensors alone are scaled down, and the
    note names the temporaries."""
    import arena.authoring.importers.common as common
    from arena.authoring.importers.kernelbench import ModuleProblem

    result, task = _imported(tmp_path / "plain", "kb_attention_scores")
    assert not any("temporaries" in d for d in _decisions(result.report()))
    problem = ModuleProblem(FIX / "kb_attention_scores.py")
    base = problem.run(problem.constants, "meta")
    io = sum(t.nbytes for t in base.inputs) + base.output.nbytes
    assert base.peak - base.output.nbytes >= 2 * io        # the 4 x 2048 x 2048 scores, and the softmax's
    bound = 2 * io
    monkeypatch.setattr(common, "MAX_CONFIG_BYTES", bound)
    monkeypatch.setattr(common, "SCALED_BYTES", bound // 4)
    result, task = _imported(tmp_path / "bounded", "kb_attention_scores")
    assert any("GiB of the reference's temporaries" in d for d in _decisions(result.report())), result.report()
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        run = problem.run({**problem.constants, **c.params}, "meta")
        assert sum(t.nbytes for t in run.inputs) + run.peak <= bound, c.name


@pytest.mark.usefixtures("cases_as_written")
def test_kernelbench_recurrent_weights_are_drawn_as_pytorch_draws_them(tmp_path):
    """A GRU's weights and biases: uniform in +-1/sqrt(hidden_size), the size read off weight_hh's columns (the
    problem's sizes as written: the draws do not depend on them)."""
    result, task = _imported(tmp_path, "kb_gru")
    inits = {i.name: dict(i.init) for i in task.inputs if i.name.startswith("gru_")}
    assert len(inits) == 8
    bound = "1 / sqrt(hidden_size)"
    assert all(v == {"kind": "uniform", "low": f"-{bound}", "high": bound} for v in inits.values()), inits
    assert not any("its initialisation is not known" in d for d in _decisions(result.report()))


def test_aka_cases_not_grown_say_where_growth_stopped_and_why(tmp_path, monkeypatch):
    """A reference that reads each value on the host (`.item()` in a loop over a size) does not run on the meta
    device, and on the CPU only until the probes' budget is spent, or until one run's estimate passes what the drafts
    around a grown config leave room for (which comes first depends on the CPU seconds the test's statements take,
    which the machine's load moves: the full suite on 2 cores met the second): the cases stay below the timing window,
    and the report says how far growth got and why it stopped (vectorise the reference), not only that they are
    small."""
    import arena.authoring.importers.aka as aka

    monkeypatch.setattr(aka, "CPU_PROBE_SECONDS", 2.0)
    result = import_aka(FIX / "aka_vllm_repeat_items", tmp_path)
    task = load_task(result.folder)
    assert [dict(c.params) for c in task.configs("seen")] == [
        {"batch": 4, "per_item": 3}, {"batch": 16, "per_item": 8}, {"batch": 64, "per_item": 16}]
    (note,) = [d for d in _decisions(result.report()) if "production shapes" in d]
    stop = re.search(r"they were not grown: the largest growth refused is batch = (\d+), per_item = (\d+) "
                     r"\(([\d.]+) MB\): (?:the reference does not run on the meta device \(RuntimeError: "
                     r"Tensor.item\(\) cannot be called on meta tensors\), and its runs on the CPU had taken the 2 CPU "
                     r"seconds|the reference would take an estimated [\d.]+ s there on a GPU \(its calls of torch "
                     r"counted at a fixed pace: it reads values on the host, a value at a time\))", note)
    assert stop and "vectorise it" in note, note
    batch, per_item = int(stop[1]), int(stop[2])
    assert batch * per_item * 4 + batch * 4 > 64 * 16 * 4 + 64 * 4     # past the largest case, not at a case


def test_aka_a_reference_that_reads_values_on_the_host_is_judged_by_its_calls_for_growth_and_drafts(tmp_path):
    """A reference that reads each row's scale on the host (`.item()` in a loop over the rows) does not run on the
    meta device. Its runs on the CPU for growth and the drafts were watched by the FLOP counter and the memory mode,
    which cost tens of microseconds an operation: vLLM's bincount took 33 CPU seconds at its largest case, 1.2 alone,
    and fourteen such imports stopped below the timing window with the probes' budget spent. Run with its calls of
    torch counted alone, and judged by the seconds a GPU's run of those calls and reads takes, the rows grow into the
    window and the held-out drafts are made around them."""
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN

    result = import_aka(FIX / "aka_vllm_item_rows", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    seen = [c.params for c in task.configs("seen")]
    assert all(c["cols"] == 1024 and c["rows"] * 1024 * 8 >= WINDOW_BYTES / WINDOW_MARGIN for c in seen), seen
    assert len(task.configs("heldout")) >= 4
    # the limit that judges it is the GPU's estimate: a row loop of a few operations a row, not the budget's end
    assert not any("had taken the" in d for d in _decisions(result.report())), result.report()


def test_the_bytes_read_of_a_tensor_are_what_its_operations_read_of_it():
    """An operation handed a view of a watched tensor reads the view; one that picks by index (or ``.item()``) reads
    what it picks; one that writes by index writes its values; a view, or a tensor made like another, reads
    nothing; a tensor read twice counts twice; a copy's reads are the tensor's, and a copy copied back whole counts
    nothing. On the meta device as on the CPU (its storages told apart without data)."""
    from arena.authoring.importers.common import read_bytes_mode

    for dev in ("cpu", "meta"):
        table = torch.zeros(64, 1024, dtype=torch.int32, device=dev)
        rows = torch.arange(8, device=dev)
        cache = torch.zeros(10, 16, 8, 64, device=dev)
        key = torch.ones(5, 8, 64, device=dev)
        kept = torch.ones(100, device=dev)
        logits = torch.zeros(4, 1000, device=dev)
        with read_bytes_mode({"table": table, "rows": rows, "cache": cache, "key": key, "kept": kept,
                              "logits": logits}) as m:
            table[rows, rows]                               # 8 int32 values picked, the indices read twice
            table[3, 7:9].sum()                             # a view of 2 values
            for i in range(5):
                cache[i, 3] = key[i]                        # a token's slot written, its row read
            key.double()                                    # read whole, again
            torch.empty_like(table)
            kept.view(10, 10)
            ref = logits.clone()                            # a copy changed at 3 values, then copied back
            ref[torch.tensor([0, 1, 2], device=dev), torch.tensor([5, 6, 7], device=dev)] = -1.0
            logits.copy_(ref)
            if dev == "cpu":
                table[1, 2].item()
        assert m.read == {"table": 8 * 4 + 2 * 4 + (4 if dev == "cpu" else 0), "rows": 2 * rows.nbytes,
                          "cache": 5 * 8 * 64 * 4, "key": 2 * key.nbytes, "kept": 0, "logits": 3 * 4}, dev


def test_aka_a_buffer_the_reference_reads_a_part_of_is_counted_by_what_it_reads(tmp_path):
    """A paged cache's block table is as long as the longest context a request may have; a token reads one entry of
    it. Counted whole, the table dominated the roofline's bytes, and the cases grew along it into a window that their
    GPU runs (4 us, vLLM's slot mappings and index conversion) were far below. Counted by what the reference reads,
    the cases grow by the tokens, and the table keeps the test's length."""
    from arena.authoring.importers.common import WINDOW_BYTES, WINDOW_MARGIN
    from arena.taskdef import formula

    result = import_aka(FIX / "aka_vllm_block_lookup", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    assert task.roofline["bytes"].endswith("min(4 * num_reqs * max_blocks, 4 * (num_reqs * query_len))"), task.roofline
    assert any("roofline.bytes counts block_table by what the reference reads of it" in d
               for d in _decisions(result.report()))
    seen = [c.params for c in task.configs("seen")]
    assert all(c["max_blocks"] in (512, 1024) for c in seen), seen           # not grown
    assert all(formula.evaluate(task.roofline["bytes"], c) >= WINDOW_BYTES / WINDOW_MARGIN for c in seen), seen
    assert all(c["num_reqs"] * c["query_len"] >= 2**20 for c in seen), seen    # grown by the tokens


def test_aka_output_shapes_that_miss_the_tests_cases_are_fitted_again_around_the_smallest(tmp_path):
    """Fitted around the largest case, an output's size misses a size whose doubled probe fails there: vLLM's slot
    mappings (a reference reading values on the host) ran out of time with the query length doubled, and the
    output came out as ``512 * num_reqs``, 16 times too large at the smallest case, where the starting kernel then
    failed the self-check. Here the reference's table is as long as the largest query. The formulas are checked at
    the test's cases, and fitted again around the smallest where they miss one."""
    result = import_aka(FIX / "aka_vllm_slot_offsets", tmp_path)
    assert result.ok, result.report()
    task = load_task(result.folder)
    (out,) = task.outputs
    assert [str(d).replace(" ", "") for d in out.shape] in (["num_reqs*query_len"], ["query_len*num_reqs"]), out.shape
    assert any("fitted around the smallest" in d and "case 0" in d for d in _decisions(result.report()))
    assert "starting kernel passes the smoke config" in result.report()


def test_kernelbench_a_forward_slow_on_the_meta_device_is_probed_on_the_cpu(tmp_path, monkeypatch):
    """A recurrence runs step by step through Python on the meta device (a 6-layer GRU over 512 steps: 12 s a
    probe): past META_SLOW_S, where one run fits the CPU's memory bound and takes less CPU time there, every probe
    runs on the CPU, and the report says so."""
    import arena.authoring.importers.kernelbench as kb

    monkeypatch.setattr(kb, "META_SLOW_S", 0.0)
    monkeypatch.setattr(kb, "CPU_PROBE_SHARE", 100.0)    # this small GRU's first CPU run has one-time costs
    result, task = _imported(tmp_path, "kb_gru")
    assert any("on the meta device, so every probe ran on the CPU at full size" in d
               for d in _decisions(result.report()))
    monkeypatch.setattr(kb, "CPU_PROBE_SHARE", 0.0)      # the CPU no faster than the meta device: probed there
    result, task = _imported(tmp_path / "meta", "kb_gru")
    assert not any("every probe ran on the CPU" in d for d in _decisions(result.report()))


def test_kernelbench_a_recurrences_drafts_are_held_to_the_time_its_steps_take_one_after_another(tmp_path, monkeypatch):
    """A recurrence's time is its steps one after another, not its FLOPs: KernelBench's six-layer
    LSTMs and GRUs over 512 steps took 48-107 ms on an H200, past the timing window, at a few
    GFLOP. The steps each config runs (sequence length x layers x directions) are counted as the
    forward runs; a problem past a quarter of ``MAX_SERIAL_S`` is scaled down by its sequence
    length (not its larger hidden size, which the steps do not follow), and no draft is past it."""
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "MAX_SERIAL_S", 2e-3)      # 80 steps of 25 us: the problem's 16 x 2 layers is past
    result, task = _imported(tmp_path, "kb_gru")           # a quarter of it
    seen, held = task.configs("seen"), task.configs("heldout")
    first = seen[0].params
    assert seen[0].name == "problem-scaled" and first["seq_len"] == 8
    assert (first["hidden_size"], first["input_size"], first["batch_size"]) == (32, 16, 4)
    for c in seen + held:
        assert c.params["seq_len"] * 2 * common.RECURRENT_STEP_S <= 2e-3, (c.name, c.params)
    assert any("recurrent steps one after another" in d for d in _decisions(result.report()))


def test_kernelbench_sizes_assigned_in_one_chain_are_constants_of_their_own(tmp_path):
    """``height = width = 24`` (15 of KernelBench level 2's problems): two constants, each varied, so the held-out
    drafts change the image's aspect and the FLOPs follow both."""
    result, task = _imported(tmp_path, "kb_conv_chained_sizes")
    assert {"height", "width"} <= set(task.shape_space)
    assert task.inputs[0].shape == ("batch_size", "in_channels", "height", "width")
    assert "height" in task.roofline["flops"] and "width" in task.roofline["flops"]
    held = task.configs("heldout")
    assert any(c.params["height"] != c.params["width"] for c in held)


def test_kernelbench_chained_sizes_stay_one_constant_where_apart_no_formula_writes_a_shape(tmp_path):
    """A convolution's output pooled (floor of a floor): with height and width apart, the output's height follows
    height, kernel_size and pool_kernel_size in a way the importer cannot write, so the chain is kept as the problem
    wrote it (one constant), every shape a formula, and the report says why."""
    result, task = _imported(tmp_path, "kb_conv_pool_chained")
    decisions = _decisions(result.report())
    assert any("height = width stay as the problem chains them, one constant" in d for d in decisions), decisions
    assert not any("kept as the number" in d and re.search(r"changes with .*\b(height|width)\b", d) for d in decisions)
    assert "height" not in task.shape_space and "width" not in task.shape_space
    result, task = _imported(tmp_path / "apart", "kb_conv_chained_sizes")     # a convolution alone: kept apart
    assert {"height", "width"} <= set(task.shape_space)


def test_a_count_per_output_element_is_fitted_with_the_kernel_the_problem_writes_as_numbers():
    """A convolution with a 5 x 7 kernel written as numbers: its FLOPs are no product of the constants (the output
    is (h - 4) x (w - 6)), but per output element they are 70 * cin; a count that is neither stays the number."""
    from arena.authoring.importers.common import Fitter
    from arena.taskdef import formula

    def probe(q):
        out = q["n"] * (q["h"] - 4) * (q["w"] - 6)
        return {"flops": 2 * 5 * 7 * q["cin"] * out, "out": out, "odd": out + q["cin"] ** 2}

    base = {"n": 8, "cin": 64, "h": 64, "w": 128}
    per = [(["n", "h - 4", "w - 6"], lambda r: r["out"])]
    text, ok = Fitter(base, probe).number_formula(lambda r: r["flops"], per)
    assert ok and text == "70 * cin * n * (h - 4) * (w - 6)", text
    q = {"n": 3, "cin": 5, "h": 17, "w": 40}
    assert formula.evaluate(text, q) == probe(q)["flops"]
    value, ok = Fitter(base, probe).number_formula(lambda r: r["odd"], per)
    assert not ok and value == probe(base)["odd"]


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_launcher_returning_several_tensors_compared_in_a_zip_loop(tmp_path):
    """AKA's KDA and WY runners compare what the launcher returns with their reference's tuple in ``for idx, (r,
    ref) in enumerate(zip(results, refs))`` (refused before: "the comparison after the kernel call does not name
    its result"): each value is one output of the task, its reference the reference's value at that place. The
    test's atol (0.05) is far above these outputs (about 1e-3): it is scaled down to their scale, the test's rtol
    kept, with its reason."""
    result = import_aka(FIX / "aka_vllm_pair_outputs", tmp_path)
    folder = tmp_path / "triton2triton" / "aka_vllm_pair_outputs"
    assert result.ok and result.checks and not _found(result), result.report()
    task = load_task(folder)
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("out0", ["B", "T", "D"]), ("out1", ["B", "T"])]
    assert [(i.name, list(i.shape)) for i in task.inputs] == [("x", ["B", "T", "D"]), ("w", ["D"])]
    tol = dict(task.tolerance["float32"])
    assert tol["rtol"] == 0.05 and 1e-8 <= tol["atol"] <= 1e-5, tol
    assert "atol scaled to the outputs' scale (float32 0.05 ->" in (folder / "task.yaml").read_text()
    ref = import_file(task.reference_path, "ref_pair_outputs")
    env = task.env(task.configs("smoke")[0])
    ins = make_inputs(task, env, 5, "cpu", ref)
    y, s = run_reference(ref.reference, task, ins, [env["B"], env["T"], env["D"]])
    want = ins["x"].double() * ins["w"].double() * 1e-3
    assert torch.allclose(y.double(), want, atol=1e-9) and torch.allclose(s.double(), want.sum(-1), atol=1e-7)
    assert _only_too_small(folder)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_whole_numbers_a_tests_atol_lets_be_off_by_one_keep_it_as_their_own_tolerance(tmp_path):
    """vLLM's int8 quantisation runners compare the quantised values (whole numbers, as float32) and the scales with
    one atol of 1, which lets a value be off by one (a tie rounded the other way). The importer scaled that atol to
    the scales' size (1 -> 2e-06), and a tolerance was one per dtype: the whole numbers were held exact, and on an
    H200 the starting kernel (ties away from zero) failed on 0.01% of them. The whole numbers now keep the test's
    tolerance as their own (the signature's per-output ``tolerance``), and the dtype's atol is scaled to the others."""
    src = tmp_path / "src" / "aka_vllm_pair_outputs"
    shutil.copytree(FIX / "aka_vllm_pair_outputs", src)
    runner = src / "scripts" / "task_runner.py"
    text = runner.read_text()
    for old, new in (("    return (y, y.sum(-1))", "    return (torch.round(y * 1000), y.sum(-1))"),
                     ("atol=5e-2, rtol=5e-2", "atol=1, rtol=5e-2"),
                     ('def reference(x, w, scale=1e-3):\n', 'def reference(x, w, scale=1e-3):\n    import torch\n')):
        assert old in text
        text = text.replace(old, new)
    runner.write_text(text)
    kernel = src / "source" / "pair_scale.py"
    old = "    tl.store(y_ptr + row * D + d, y, mask=m)"
    assert old in kernel.read_text()
    rounded = "    tl.store(y_ptr + row * D + d, tl.floor(y * 1000 + 0.5), mask=m)"
    kernel.write_text(kernel.read_text().replace(old, rounded))
    result = import_aka(src, tmp_path / "out")
    folder = tmp_path / "out" / "triton2triton" / "aka_vllm_pair_outputs"
    task = load_task(folder)
    assert task.tolerance["float32"]["atol"] < 1e-2, task.tolerance
    out0, out1 = task.outputs
    assert task.tolerance_of(out0)["atol"] == 1 and task.tolerance_of(out0)["rtol"] == 5e-2
    assert task.tolerance_of(out1) == task.tolerance_for("float32")
    notes = _decisions(result.report())
    assert any("out0 (whole numbers, as float32) keeps the test's atol 1 as its own tolerance" in d
               and "atol scaled to the outputs' scale" in d for d in notes), notes
    assert result.checks and not _found(result), result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_vllm_result_taken_first_where_the_launcher_returns_a_tuple(tmp_path):
    """AKA's FLA recurrence runner compares ``result = result_tuple[0] if isinstance(result_tuple, tuple) else
    result_tuple``: the entry takes the launcher's result the same way, and the task has that one output."""
    src = tmp_path / "src" / "aka_vllm_pair_outputs"
    shutil.copytree(FIX / "aka_vllm_pair_outputs", src)
    runner = src / "scripts" / "task_runner.py"
    text = runner.read_text()
    loop = text[text.index("            results = mod.pair_scale"):text.index("        except Exception")]
    runner.write_text(text.replace(loop, """            result_tuple = mod.pair_scale(*args, **kwargs)
            result = result_tuple[0] if isinstance(result_tuple, tuple) else result_tuple
            ref = reference(*args_cpu, **kwargs)[0]
            r_cpu = result.float().cpu()
            if not torch.allclose(r_cpu, ref.float(), atol=1e-4, rtol=1e-4):
                return False, f"seed {seed}: mismatch"
"""))
    result = import_aka(src, tmp_path / "a")
    folder = tmp_path / "a" / "triton2triton" / "aka_vllm_pair_outputs"
    assert result.ok and result.checks and not _found(result), result.report()
    task = load_task(folder)
    assert [(o.name, list(o.shape)) for o in task.outputs] == [("out0", ["B", "T", "D"])]
    entry = (folder / "baseline.py").read_text()
    assert "out0.copy_(_returned[0] if isinstance(_returned, tuple) else _returned)" in entry
    assert _only_too_small(folder)


@pytest.mark.usefixtures("cases_as_written")
def test_aka_pytest_dtype_default_gpu_literals_and_a_size_every_case_has_alike(tmp_path):
    """ROCm's Triton tests take their dtype from a parameter's default (``dtype=torch.float16``), build tensors
    of their reference on ``device="cuda"``, and keep a size that their kernel asserts the same in every case (a
    head size): the inputs are float16, the reference makes its tensors on its inputs' device (it runs on the
    CPU here), and the smoke config keeps that size (halved, the kernel's assertion failed on the CPU)."""
    src = tmp_path / "src" / "rows"
    src.mkdir(parents=True)
    (src / "config.yaml").write_text(
        "source_file_path:\n  - test_rows.py\ntarget_kernel_functions:\n  - rows_kernel\n"
        "compile_command:\n  - pytest test_rows.py\ncorrectness_command:\n  - pytest test_rows.py\n"
        "performance_command:\n  - pytest test_rows.py\ntask_type: triton2triton\n")
    (src / "test_rows.py").write_text('''import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def rows_kernel(x_ptr, s_ptr, out_ptr, D: tl.constexpr):
    r = tl.program_id(0)
    d = tl.arange(0, D)
    x = tl.load(x_ptr + r * D + d).to(tl.float32)
    tl.store(out_ptr + r * D + d, (x * tl.load(s_ptr + r).to(tl.float32)).to(out_ptr.dtype.element_ty))


def rows(x, s):
    M, N, D = x.shape
    assert D in (16, 32, 64)
    out = torch.empty_like(x)
    rows_kernel[(M * N,)](x, s, out, D=D)
    return out


@pytest.mark.parametrize("M, N, D", [(16, 40, 32), (48, 96, 32)])
def test_rows(M, N, D, dtype=torch.float16):
    x = torch.randn((M, N, D), dtype=dtype, device="cuda")
    s = torch.randn((M, N), dtype=dtype, device="cuda")
    got = rows(x, s)
    ones = torch.ones(D, device="cuda")
    want = (x.float() * s.float()[:, :, None] * ones).to(dtype)
    torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)
''')
    result = import_aka(src, tmp_path / "a")
    folder = tmp_path / "a" / "triton2triton" / "rows"
    assert result.ok and not _found(result), result.report()
    assert any("starting kernel passes the smoke config" in c for c in result.checks), result.report()
    task = load_task(folder)
    assert [(i.name, i.dtype) for i in task.inputs] == [("x", "float16"), ("s", "float16")]
    assert task.configs("smoke")[0].params["D"] == 32
    reference = (folder / "reference.py").read_text()
    assert "'cuda'" not in reference and "device=x.device" in reference


@pytest.mark.usefixtures("cases_as_written")
def test_aka_drafts_a_reference_runs_too_slowly_for_are_not_kept(tmp_path, monkeypatch):
    """A test's reference that loops in Python over a size (AKA's KDA references: over every time step) grows
    slower with the drafts; each call of it is a launch on a GPU, where the harness runs it for every config.
    Drafts where its run on the meta device passes ``REFERENCE_PROBE_SECONDS`` are not kept, and the import says
    why (at -1 seconds here: every draft; this machine's CPU clock can read a short run as 0 seconds)."""
    import arena.authoring.importers.aka as aka

    monkeypatch.setattr(aka, "REFERENCE_PROBE_SECONDS", -1.0)
    result = import_aka(FIX / "aka_vllm_pair_outputs", tmp_path)
    said = [d for d in result.decisions
            if f"the reference took {aka._too_slow()}" in d]
    assert said and any("vectorise it" in d for d in said), result.report()
    assert any(d.startswith("0 held-out configs could be drafted: at the sizes tried, the reference took more") and
               "make it vectorised" in d for d in said), result.report()
    assert not result.ok and "heldout.yaml" in str(result.problems), result.report()


def test_kernelbench_module_level_list_of_sizes_is_one_constant_per_width(tmp_path):
    """Level 3's MLPs keep their hidden widths in a module-level list (``layer_sizes = [16384, 16384]``): fixed,
    they kept 2 GiB of weights however the batch was scaled. Each width is a constant of its own, varied like the
    problem's named sizes; a list with a count among its elements (``repeats = [1, 2]``) stays as written."""
    result, task = _imported(tmp_path, "kb_mlp_widths")
    assert {"layer_sizes_0", "layer_sizes_1"} <= set(task.shape_space), task.shape_space
    assert not any(k.startswith("repeats") for k in task.shape_space)
    seen = [dict(c.params) for c in task.configs("seen")]
    assert seen[0]["layer_sizes_0"] == 96 and seen[0]["layer_sizes_1"] == 48
    assert any(c.params["layer_sizes_0"] != 96 for c in task.configs("heldout"))
    weight = next(i for i in task.inputs if list(i.shape) == ["layer_sizes_0", "input_size"])
    assert weight.dtype == "float32"
    assert result.checks and not _found(result), result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_the_importers_own_check_reads_the_rule_of_the_sizes(tmp_path, monkeypatch):
    """A memory-bound import whose configs all move less than 100 MB fails `arena tasks check` on a GPU whatever its
    kernel does (on an H100, 18 of 53 AKA imports the importer had called self-checked): the importer's own check
    reads that rule on the CPU and says what to do; grown into the timing window, the import passes it."""
    result = import_aka(FIX / "aka_vllm_pair_outputs", tmp_path)
    small = [p for p in result.check_problems if TOO_SMALL in p]
    assert len(small) == 1 and "make them larger" in small[0], result.report()
    assert not _found(result) and any(TOO_SMALL in d for d in result.decisions), result.report()
    # the same import with its cases grown into the timing window: the rule holds, the check says nothing of it
    import arena.authoring.importers.common as common

    monkeypatch.setattr(common, "WINDOW_BYTES", 300 * 10**6)
    result = import_aka(FIX / "aka_vllm_pair_outputs", tmp_path / "grown")
    assert result.ok and not result.check_problems, result.report()


@pytest.mark.usefixtures("cases_as_written")
def test_aka_host_code_that_reads_the_environment_reads_it_unset(tmp_path):
    """gpumode host code tunes its launch from environment variables (getenv, then atoi), which a
    candidate's build may not read: each read becomes an unset variable, the original's default path, and
    the import says so; the numbers' parsing stays (the object check allows it)."""
    src = tmp_path / "src" / "aka_gpumode_leaky"
    shutil.copytree(FIX / "aka_gpumode_leaky", src)
    hip = src / "hip" / "leaky.hip"
    text = hip.read_text().replace(
        "static void check_input(",
        "static int env_int(const char* name, int def) {\n    const char* v = std::getenv(name);\n"
        "    return v ? std::atoi(v) : def;\n}\n\nstatic void check_input(")
    hip.write_text(text.replace("const int threads = 128;", 'const int threads = env_int("LEAKY_TPB", 128);'))
    result = import_aka(src, tmp_path / "out")
    folder = tmp_path / "out" / "hip2hip" / "aka_gpumode_leaky"
    assert result.ok, result.report()
    baseline = (folder / "baseline.hip").read_text()
    built = baseline.split("// ---- the original PyTorch host code")[0]
    assert "getenv(" not in built.replace("/* getenv(", "") and "((const char*)nullptr" in built
    assert "std::atoi(v)" in built
    assert "the host code read the environment (getenv(name))" in result.report()


@pytest.mark.usefixtures("cases_as_written")
@pytest.mark.parametrize("in_eval", [True, False])
def test_aka_a_module_run_in_eval_mode_keeps_its_dropouts_off(tmp_path, in_eval):
    """gpumode's harness runs the module in eval mode (`kernel_modu.eval()`), where a dropout module, and a dropout
    told the module's mode, are the identity: such a module imports (its reference without them); where the folder's
    harness does not call `.eval()`, the dropout draws random numbers and the module is refused."""
    src = tmp_path / "src" / "aka_gpumode_rowscale"
    shutil.copytree(FIX / "aka_gpumode_rowscale", src)
    module = src / "pytorch_code_module" / "py_rowscale.py"
    module.write_text(module.read_text().replace(
        "    def forward(self, x, w):\n        return x * w * 0.5",
        "    def __init__(self):\n        super().__init__()\n        self.dropout = nn.Dropout(0.25)\n\n"
        "    def forward(self, x, w):\n        y = self.dropout(x * w)\n"
        "        return nn.functional.dropout(y, 0.1, training=self.training) * 0.5"))
    check = src / "eval_tools" / "correctness_check.py"
    check.write_text(check.read_text() + ("model.eval()\n" if in_eval else ""))
    result = import_aka(src, tmp_path / "out")
    if not in_eval:
        assert "RowScale.forward draws random numbers (self.dropout, line" in result.report()
        return
    assert result.ok, result.report()
    task = load_task(result.folder)
    assert [i.name for i in task.inputs] == ["x", "w"]
    ref = import_file(task.reference_path, "arena_test_eval_mode_reference")
    x, w = torch.randn(2, 64, 256), torch.randn(256)
    torch.testing.assert_close(ref.reference(x, w, 2, 64, 256), x * w * 0.5)
    body = task.reference_path.read_text().split("def reference", 1)[1]
    assert "dropout(x * w)" not in body and "training=False" in body     # the module's is gone, F's told eval


def test_growth_doubles_the_size_that_moves_the_most_bytes_and_keeps_a_matrix_s_aspect():
    """``grown`` doubles, each time, the size whose doubling moves the most bytes: a histogram's tokens grow, its
    count of experts (which only makes a reference that loops over them slower) stays; sizes alike in that (a
    matrix's rows and columns) take turns, so its aspect stays."""
    from arena.authoring.importers.common import WINDOW_BYTES, grown, in_window

    probed = []

    def valid(c):
        probed.append(c)
        return True

    def hist(c):
        return 4 * (2 * c["tokens"] + c["experts"])

    out = grown({"tokens": 32, "experts": 8}, ["tokens", "experts"], valid, hist, in_window(hist, lambda c: 0.0))
    assert out["experts"] == 8 and hist(out) >= WINDOW_BYTES and all(c["experts"] == 8 for c in probed)

    def matrix(c):
        return 4 * c["rows"] * c["cols"]

    out = grown({"rows": 64, "cols": 128}, ["rows", "cols"], valid, matrix, in_window(matrix, lambda c: 0.0))
    assert matrix(out) >= WINDOW_BYTES and 1 <= out["cols"] / out["rows"] <= 4, out
    # a doubling the original refuses freezes that size; the others go on
    out = grown({"rows": 64, "cols": 128}, ["rows", "cols"], lambda c: c["rows"] <= 256, matrix,
                in_window(matrix, lambda c: 0.0))
    assert out["rows"] == 256 and matrix(out) >= WINDOW_BYTES
    # a size three dimensions follow (a softmax over [n, n, n]): doubled from 256 it moves eight times the bytes,
    # past the bound of a config the drafts are made around; a step of 3/2 reaches the window below it
    from arena.authoring.importers.common import SCALED_BYTES

    def cube(c):
        return 2 * 4 * c["n"] ** 3

    out = grown({"n": 4}, ["n"], valid, cube, in_window(cube, lambda c: 0.0))
    assert out == {"n": 384} and WINDOW_BYTES <= cube(out) <= SCALED_BYTES < cube({"n": 512})


def test_a_probe_keeps_its_run_for_the_shapes_only():
    """A probe on the CPU runs at full size, and the Fitter and the drafts' checks keep every probe's run: kept, its
    tensors are on the meta device (the same shapes and dtypes, no memory), the module's parameters, buffers and
    plain tensor attributes too, in lists, tuples and dicts alike; other values as they were."""
    import torch

    from arena.authoring.importers.common import shapes_only

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3, 4))
            self.register_buffer("b", torch.zeros(4, dtype=torch.float16))
            self.plain = torch.arange(5)
            self.scale = 0.5

    m = shapes_only(M())
    assert [(t.device.type, tuple(t.shape)) for t in (m.w, m.b, m.plain)] == [("meta", (3, 4)), ("meta", (4,)),
                                                                              ("meta", (5,))]
    assert m.b.dtype == torch.float16 and m.scale == 0.5
    kept = shapes_only([torch.ones(2, 3), (torch.ones(1, dtype=torch.int64), 7), {"o": torch.ones(6)}, "x"])
    assert isinstance(kept[1], tuple) and kept[1][1] == 7 and kept[3] == "x"
    assert [(t.device.type, tuple(t.shape), t.dtype) for t in (kept[0], kept[1][0], kept[2]["o"])] == [
        ("meta", (2, 3), torch.float32), ("meta", (1,), torch.int64), ("meta", (6,), torch.float32)]


def test_a_reference_imports_only_what_it_reads():
    """A test script imports the kernel it checks, and libraries only the kernel needs (aiter's topk): the reference
    written from it keeps the imports whose names it reads (a name at a time), torch and __future__'s, not the rest,
    so that it runs where the kernel's library is not installed."""
    from arena.authoring.importers.common import without_unused_imports

    text = ("from __future__ import annotations\nimport types\nimport math, os.path\nimport torch\n"
            "from aiter.ops.triton.topk import topk as triton_topk, other\nfrom x import (a,\n    b)\n\n\n"
            "def reference(x):\n    return math.sqrt(other(b))\n")
    assert without_unused_imports(text) == (
        "from __future__ import annotations\nimport math\nimport torch\nfrom aiter.ops.triton.topk import other\n"
        "from x import b\n\n\ndef reference(x):\n    return math.sqrt(other(b))\n")


def test_one_probe_is_stopped_past_its_cpu_seconds():
    """A reference that loops in Python over every element runs for hours at the sizes a probe tries: one run is
    interrupted once it has used the CPU seconds it was given (the budgets are counted between runs), and the
    timer is gone after the block."""
    import signal
    import time

    from arena.authoring.importers.common import ProbeTimeout, probe_limits

    t0 = time.process_time()
    with pytest.raises(ProbeTimeout, match="more than 0.2 CPU seconds"):
        with probe_limits(0.2):
            while True:
                pass
    assert time.process_time() - t0 < 2.0
    with probe_limits(5.0):
        sum(range(1000))
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    with pytest.raises(ProbeTimeout):
        with probe_limits(0):
            pass


def test_a_reference_judged_on_the_cpu_is_counted_and_stopped_at_the_same_call_whatever_its_time(monkeypatch):
    """A reference judged by its run on the CPU (its operations a chunk or a value at a time) is judged by its calls
    of torch counted at a fixed pace, not by the seconds the run took, which move by a third from run to run: the
    count is the same however slow the run, metadata reads are not counted, a value read on the host is, and the run
    is stopped at the call that passes its limit, through the reference's own ``except Exception``."""
    import threading

    import arena.authoring.importers.common as common
    from arena.authoring.importers.common import ProbeTimeout, counted_calls

    def reference(x: torch.Tensor, slow: bool) -> torch.Tensor:
        out = torch.empty_like(x)
        for s in range(0, x.shape[0], 4):
            if slow:
                sum(range(20000))            # Python's own work, which no count sees
            out[s:s + 4] = x[s:s + 4].cumsum(0) * x.size(1)
        return out + x[0, 0].item()

    x = torch.randn(64, 8)
    with counted_calls() as fast:
        reference(x, False)
    stop = threading.Event()
    busy = threading.Thread(target=lambda: [sum(range(1000)) for _ in iter(stop.is_set, True)], daemon=True)
    busy.start()            # the process's CPU time doubled beside the run, as on a loaded machine
    try:
        with counted_calls() as slow:
            reference(x, True)
    finally:
        stop.set()
        busy.join()
    # empty_like; per chunk of 4 rows: a slice, cumsum, mul, setitem (x.shape and x.size(1) are metadata); then the
    # value's index and the add; and one value read on the host
    assert (fast.calls, fast.host_reads) == (slow.calls, slow.host_reads) == (1 + 16 * 4 + 2, 1)
    assert fast.bytes == slow.bytes and fast.seconds == slow.seconds > 0

    monkeypatch.setattr(common, "CALL_SECONDS", 1.0)
    reached = []

    def swallowing() -> None:
        for i in range(100):
            try:
                reached.append(i)
                torch.zeros(1) + 1
            except Exception:  # noqa: BLE001 - a reference that goes on past its own errors
                pass

    for _ in range(2):
        reached.clear()
        with pytest.raises(ProbeTimeout, match=r"an estimated 12 s of a GPU's run \(12 calls"):
            with counted_calls(limit=11.5):
                swallowing()
        assert reached[-1] == 5      # zeros and add: the 12th call, in the 6th pass, every time


def test_a_probes_host_memory_is_bounded_and_a_run_past_it_is_refused(monkeypatch):
    """A probe's run that asks for more host memory than its bound (a reference run on the CPU unwatched, whose
    temporaries nothing counts) is refused with ``ProbeOverMemory`` instead of growing the import's process until
    the kernel's OOM killer takes it; within the bound it runs, and the process's limit is put back after."""
    import resource

    import arena.authoring.importers.common as common
    from arena.authoring.importers.common import ProbeOverMemory, probe_limits

    monkeypatch.setattr(common, "probe_memory_bytes", lambda: 256 * 2**20)
    before = resource.getrlimit(resource.RLIMIT_DATA)
    with probe_limits(30.0):
        torch.ones(32 * 2**20, dtype=torch.uint8)          # within it
    with pytest.raises(ProbeOverMemory, match="GB of host memory"):
        with probe_limits(30.0):
            torch.ones(512 * 2**20, dtype=torch.uint8)
    with pytest.raises(ProbeOverMemory):
        with probe_limits(30.0):
            bytearray(512 * 2**20)                          # Python's own allocations too
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    assert torch.ones(512 * 2**20, dtype=torch.uint8).sum() == 512 * 2**20     # no bound outside it


def test_a_probes_host_memory_bound_is_a_share_of_what_the_machine_has_free_as_it_starts(monkeypatch):
    """The bound is read off the memory the machine has free as the probe starts, not its whole memory: the suite's
    workers each took a quarter of the whole, and two of them with a test's import beside them overran a 24 GB
    machine (a worker killed by the OOM killer). With 1 GB free, a run of 512 MB is refused that 4 GB free lets
    run."""
    import arena.authoring.importers.common as common
    from arena.authoring.importers.common import MAX_CONFIG_BYTES, ProbeOverMemory, probe_limits, probe_memory_bytes

    monkeypatch.setattr(common, "available_memory_bytes", lambda default: 2**30)
    assert probe_memory_bytes() == 2**28
    with pytest.raises(ProbeOverMemory, match="free as it started"):
        with probe_limits(30.0):
            torch.ones(512 * 2**20, dtype=torch.uint8)
    monkeypatch.setattr(common, "available_memory_bytes", lambda default: 4 * 2**30)
    with probe_limits(30.0):
        assert torch.ones(512 * 2**20, dtype=torch.uint8)[-1] == 1
    monkeypatch.setattr(common, "available_memory_bytes", lambda default: 2**50)
    assert probe_memory_bytes() == 2 * MAX_CONFIG_BYTES                     # and never past twice a config's bytes


def test_a_refused_configs_kept_result_holds_none_of_its_runs_tensors():
    """A config a probe refused is kept as its exception (asked again, it is not run again), without the frames
    its traceback passed through: they held the run's tensors, gigabytes at a draft's config, for as long as the
    import kept the result (a test worker stayed at 7.8 GB after the import that refused them ended)."""
    import gc
    import weakref

    from arena.authoring.importers.common import ProbeOverMemory, once_per_config

    made: list[weakref.ref] = []
    runs = []

    def probe(cfg: dict) -> None:
        runs.append(cfg)
        inputs = torch.ones(cfg["n"], dtype=torch.uint8)
        made.append(weakref.ref(inputs))
        try:
            raise MemoryError("the allocator refused it")
        except MemoryError as exc:
            raise ProbeOverMemory("past the bound") from exc

    at = once_per_config(probe)
    first = at({"n": 2**20})
    gc.collect()
    assert isinstance(first, ProbeOverMemory) and made[0]() is None
    assert first.__traceback__ is None and first.__cause__ is not None and first.__cause__.__traceback__ is None
    assert at({"n": 2**20}) is first and len(runs) == 1


def test_a_probes_time_limit_that_the_code_swallows_comes_again():
    """An interruption raised where Python only prints it (a weakref's finalizer: the importer's byte-counting mode
    keeps them) or that the code catches does not leave the run unbounded: the signal comes again until the block
    ends (a meta run cut at 2 s ran 48 s when the first landed in a finalizer)."""
    import time
    import weakref

    from arena.authoring.importers.common import ProbeTimeout, probe_limits
    from arena.errors import Interruption, interrupted_after

    class Wall(Interruption):
        pass

    swallowed = []
    t0 = time.process_time()
    with interrupted_after(20, Wall):   # the test's own bound, on the wall clock
        with pytest.raises(ProbeTimeout):
            with probe_limits(0.2):
                while True:
                    try:
                        while True:
                            sum(range(1000))
                    except ProbeTimeout:
                        if swallowed:
                            raise
                        swallowed.append(time.process_time() - t0)
    assert len(swallowed) == 1 and time.process_time() - t0 < 5.0

    class Held:
        pass

    t0 = time.process_time()
    with interrupted_after(20, Wall):
        with pytest.raises(ProbeTimeout):
            with probe_limits(0.2):
                while True:   # finalizers run all the time: a signal may land in one
                    weakref.finalize(Held(), lambda: sum(range(200)))
                    sum(range(2000))
    assert time.process_time() - t0 < 5.0


def test_seen_configs_are_topped_up_inside_the_timing_window():
    """Cases that grow into one set of sizes leave fewer than 3 seen configs, and the drafts around the largest may
    all be below the window or the same as a case: a seen config with one size times 3/2 (the power-of-two grid
    has few sizes between the window and the bound) fills the place, inside the window and accepted by the
    original; where nothing fits, the cases as written do."""
    from arena.authoring.importers.common import WINDOW_BYTES, topped_up

    def nbytes(c):
        return 8 * c["rows"] * c["cols"] ** 2

    def enough(c):
        return nbytes(c) >= WINDOW_BYTES

    grown = [{"name": "case0", "rows": 16, "cols": 2048}, {"name": "case3", "rows": 32, "cols": 2048}]
    below = {"name": "draft-half", "rows": 32, "cols": 1024}
    seen = topped_up(grown, [below, dict(grown[1], name="draft-x2")], ["rows", "cols"], lambda c: True, nbytes,
                     enough)
    assert [config for config in seen[:2]] == grown and len(seen) == 3
    assert {k: seen[2][k] for k in ("rows", "cols")} == {"rows": 24, "cols": 2048} and "x 3/2" in seen[2]["#"]
    written = [{"name": "case0", "rows": 1, "cols": 4}, {"name": "case1", "rows": 1, "cols": 8}]
    seen = topped_up(grown, [], ["rows", "cols"], lambda c: False, nbytes, enough, fallback=written)
    assert seen == grown + written[1:]     # case0 is a seen config already, grown: its name is not used twice


def test_seen_configs_are_topped_up_within_the_drafts_bound_on_their_work():
    """AKA's SimpleMatmulModule, one size for M, N and K grown to 4,096: its top-ups at 3/2 and twice that size took
    57 and 134 ms on an H200 (its HIP starting kernel at 8 TFLOP/s), past the timing window. A top-up is held to the
    drafts' bound on their work (``fits``), and 3/4 of a size is tried too: a product of one size in three
    dimensions has fewer sizes between the window and the bound."""
    from arena.authoring.importers.common import WINDOW_FLOPS, topped_up

    def work(c):
        return 2 * c["n"] ** 3

    grown = [{"name": "case0", "n": 4096}]
    free = topped_up(grown, [], ["n"], lambda c: True, lambda c: 12 * c["n"] ** 2, lambda c: work(c) >= WINDOW_FLOPS)
    assert [c["n"] for c in free] == [4096, 6144, 8192]
    held = topped_up(grown, [], ["n"], lambda c: True, lambda c: 12 * c["n"] ** 2, lambda c: work(c) >= WINDOW_FLOPS,
                     fits=lambda c: work(c) <= 3.4e11)
    assert [c["n"] for c in held] == [4096, 5120, 3072] and "x 3/4" in held[2]["#"]
    assert all(WINDOW_FLOPS <= work(c) <= 3.4e11 for c in held)
