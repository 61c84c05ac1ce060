"""Loading and validating task folders (arena/taskdef/loader.py)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from arena.errors import ArenaError
from arena.taskdef.loader import (
    DEFAULT_TASKS_DIR,
    DEFAULT_TOLERANCE,
    Config,
    ScalarSpec,
    discover_tasks,
    load_configs,
    load_task,
    select_tasks,
    validate_task_dir,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE_ROOT = REPO / "tests" / "fixtures" / "tasks"
AXPY = FIXTURE_ROOT / "triton2triton" / "axpy"
REAL_TASKS = discover_tasks(REPO / "tasks")


# -- every shipped task validates ------------------------------------------------------------

def test_there_are_real_tasks_in_every_category():
    assert {p.parent.name for p in REAL_TASKS} == {"hip2hip", "triton2triton", "torch2hip"}


@pytest.mark.parametrize("path", REAL_TASKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_task_validates(path):
    assert validate_task_dir(path) == []
    task = load_task(path)
    assert task.id == f"{path.parent.name}/{path.name}"
    for split in ("seen", "heldout", "smoke"):
        for config in task.configs(split):
            env = task.env(config)
            for spec in (*task.inputs, *task.outputs):
                assert all(isinstance(d, int) and d >= 0 for d in task.shape(spec, env))


FIXTURE_TASKS = discover_tasks(FIXTURE_ROOT)


def test_the_axpy_fixture_is_discovered():
    assert AXPY in FIXTURE_TASKS


@pytest.mark.parametrize("path", FIXTURE_TASKS, ids=lambda p: f"fixture-{p.parent.name}/{p.name}")
def test_fixture_task_validates(path):
    assert validate_task_dir(path) == []


# -- broken copies of the fixture ----------------------------------------------------------------

@pytest.fixture
def broken(tmp_path):
    """A fresh copy of the axpy fixture under tmp_path/<category>/axpy."""

    def make(category: str = "triton2triton") -> Path:
        dst = tmp_path / category / "axpy"
        shutil.copytree(AXPY, dst)
        return dst

    return make


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def only_error(errors: list[ArenaError], *, file: Path, key: str | None) -> ArenaError:
    """The errors are about `file` (and `key`), and str() names both."""
    assert errors, "the broken task validated"
    for e in errors:
        assert isinstance(e, ArenaError)
        assert str(file) in str(e), str(e)
        assert e.path == str(file)
        if key is not None:
            assert e.key == key
            assert key in str(e)
    return errors[0]


def test_invalid_yaml_names_the_line(broken):
    d = broken()
    lines = (d / "task.yaml").read_text().splitlines()
    lineno = next(i for i, line in enumerate(lines, 1) if line.startswith("entry:"))
    edit(d / "task.yaml", "entry: axpy", "entry: axpy: oops")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key=None)
    assert "not valid YAML" in str(err)
    assert f"line {lineno}," in str(err)


def test_missing_required_key(broken):
    d = broken()
    edit(d / "task.yaml", "entry: axpy\n", "")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="entry")
    assert "required key is missing" in str(err)


def test_unvalidated_load_of_a_malformed_task_names_the_key_not_a_keyerror(broken):
    d = broken()
    edit(d / "task.yaml", "entry: axpy\n", "")
    with pytest.raises(ArenaError) as info:
        load_task(d, validate=False)
    assert (info.value.path, info.value.key) == (str(d / "task.yaml"), "entry")
    (d / "task.yaml").write_text("- just\n- a list\n")
    with pytest.raises(ArenaError, match="is not of type 'object'"):
        load_task(d, validate=False)


def test_every_problem_is_named_with_its_key(broken):
    d = broken()
    edit(d / "task.yaml", "entry: axpy\n", "colour: blue\nsize: 3\n")
    edit(d / "task.yaml", "title: ", "titel: ")
    errors = validate_task_dir(d)
    assert sorted((e.key, e.detail.split(" (")[0]) for e in errors) == [
        ("colour", "unknown key"), ("entry", "required key is missing"), ("size", "unknown key"),
        ("titel", "unknown key"), ("title", "required key is missing")]
    with pytest.raises(ArenaError) as info:          # loading names the first; it carries them all
        load_task(d)
    assert [str(e) for e in info.value.problems] == [str(e) for e in errors]


def test_unknown_dtype(broken):
    d = broken()
    edit(d / "task.yaml", "{name: x, dtype: float32", "{name: x, dtype: float64")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="signature.inputs.0.dtype")
    assert "float64" in str(err)


def test_unknown_output_dtype(broken):
    d = broken()
    edit(d / "task.yaml", "{name: out, dtype: float32", "{name: out, dtype: bool")   # bool is for inputs only
    only_error(validate_task_dir(d), file=d / "task.yaml", key="signature.outputs.0.dtype")


def test_unknown_init_kind(broken):
    d = broken()
    edit(d / "task.yaml", "kind: uniform", "kind: gaussian")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="signature.inputs.1.init")
    assert "gaussian" in str(err)


def test_unknown_init_kind_as_string(broken):
    d = broken()
    edit(d / "task.yaml", "shape: [n]}", "shape: [n], init: zeros}")
    only_error(validate_task_dir(d), file=d / "task.yaml", key="signature.inputs.0.init")


def test_id_not_matching_the_folder(broken):
    d = broken()
    edit(d / "task.yaml", "id: triton2triton/axpy", "id: triton2triton/saxpy")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="id")
    assert "triton2triton/saxpy" in str(err) and "triton2triton/axpy" in str(err)


def test_category_not_matching_the_folder(broken):
    d = broken()
    edit(d / "task.yaml", "category: triton2triton", "category: hip2hip")
    errors = validate_task_dir(d)
    only_error(errors[:1], file=d / "task.yaml", key="category")
    assert "hip2hip kernels are .hip files" in str(errors[1])      # and the baseline is now the wrong language


def test_unknown_name_in_a_shape_formula(broken):
    d = broken()
    edit(d / "task.yaml", "shape: [n], init", "shape: [m], init")
    errors = validate_task_dir(d)
    first = errors[0]
    assert first.path == str(d / "task.yaml")
    assert first.key == "signature.inputs.y.shape" and "'m'" in str(first)


def test_unknown_name_in_a_shape_formula_names_the_signature_key(broken):
    d = broken()
    edit(d / "task.yaml", "shape: [n], init", "shape: [m], init")
    err = validate_task_dir(d)[0]
    assert "task.yaml" in str(err) and "signature" in str(err)


def test_math_error_in_a_shape_is_reported_not_raised(broken):
    d = broken()
    edit(d / "task.yaml", "{name: out, dtype: float32, shape: [n]}",
         "{name: out, dtype: float32, shape: [n]}\n    - {name: out2, dtype: float32, shape: [\"int(sqrt(n - 10))\"]}")
    errors = validate_task_dir(d)     # the heldout config n=7 makes sqrt fail
    assert any("heldout.yaml" in str(e) for e in errors)


def test_config_file_not_a_list(broken):
    d = broken()
    (d / "configs" / "seen.yaml").write_text("name: n1M\nn: 1048576\n")
    err = only_error(validate_task_dir(d), file=d / "configs" / "seen.yaml", key="(top level)")
    assert "array" in str(err)


def test_config_value_not_a_number(broken):
    d = broken()
    edit(d / "configs" / "seen.yaml", "n: 4194304", "n: big")
    only_error(validate_task_dir(d), file=d / "configs" / "seen.yaml", key="1.n")


def test_duplicate_config_names(broken):
    d = broken()
    edit(d / "configs" / "seen.yaml", "name: n4M", "name: n1M")
    err = only_error(validate_task_dir(d), file=d / "configs" / "seen.yaml", key="[1]")
    assert "'n1M' used twice" in str(err)


def test_a_key_written_twice_is_refused_where_it_is(broken):
    """YAML leaves a repeated key to the loader, and PyYAML's keeps the last: a second
    ``difficulty:`` replaced the first without a word. Now it is the file's error, with its line."""
    d = broken()
    yml = d / "task.yaml"
    yml.write_text(yml.read_text() + "difficulty: 3\n")
    err = only_error(validate_task_dir(d), file=yml, key=None)
    assert "the key 'difficulty' appears twice" in str(err) and "line" in str(err)


def test_a_formula_naming_what_is_not_there_is_reported_once(broken):
    """At the formula (task.yaml and its key), not again for each of the configs it is evaluated on."""
    d = broken()
    edit(d / "task.yaml", 'flops: "2 * n"', 'flops: "2 * nn"')
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="roofline.flops")
    assert "names nn" in str(err)


def test_fewer_than_3_seen_configs(broken):
    d = broken()
    (d / "configs" / "seen.yaml").write_text("- {name: a, n: 1000}\n- {name: b, n: 2000}\n")
    err = only_error(validate_task_dir(d), file=d / "configs" / "seen.yaml", key=None)
    assert "2 configs" in str(err) and "at least 3" in str(err)


def test_fewer_than_4_heldout_configs(broken):
    d = broken()
    (d / "configs" / "heldout.yaml").write_text("- {name: a, n: 1}\n- {name: b, n: 2}\n- {name: c, n: 3}\n")
    err = only_error(validate_task_dir(d), file=d / "configs" / "heldout.yaml", key=None)
    assert "3 configs" in str(err) and "at least 4" in str(err)


def test_missing_config_file(broken):
    d = broken()
    (d / "configs" / "smoke.yaml").unlink()
    err = only_error(validate_task_dir(d), file=d / "configs" / "smoke.yaml", key=None)
    assert "not found" in str(err)


def test_config_missing_a_shape_space_parameter(broken):
    d = broken()
    edit(d / "configs" / "heldout.yaml", "{name: tiny, n: 7}", "{name: tiny, m: 7}")
    errors = validate_task_dir(d)
    assert errors and all(e.path == str(d / "configs" / "heldout.yaml") for e in errors)
    assert any("'n'" in str(e) for e in errors)          # the scalar n has no value there


def test_missing_reference(broken):
    d = broken()
    (d / "reference.py").unlink()
    err = only_error(validate_task_dir(d), file=d / "reference.py", key=None)
    assert "reference.py is missing" in str(err)


def test_triton2triton_without_baseline(broken):
    d = broken()
    (d / "baseline.py").unlink()
    errors = validate_task_dir(d)
    assert len(errors) == 1
    assert str(d) in str(errors[0]) and "baseline.py is missing" in str(errors[0])


def test_triton2triton_with_a_hip_kernel(broken):
    d = broken()
    (d / "solution.hip").write_text("// not a triton file\n")
    only_error(validate_task_dir(d), file=d / "solution.hip", key=None)


def test_torch2hip_with_a_baseline_file(broken):
    d = broken("torch2hip")
    for old in ("id: triton2triton/axpy", "category: triton2triton"):
        edit(d / "task.yaml", old, old.replace("triton2triton", "torch2hip"))
    (d / "baseline.py").unlink()
    assert validate_task_dir(d) == []           # the same task without a baseline is fine
    (d / "baseline.hip").write_text("// the eager reference is the baseline\n")
    err = only_error(validate_task_dir(d), file=d / "baseline.hip", key=None)
    assert "torch2hip tasks have no baseline file" in str(err)


def test_tolerance_override_without_reason(broken):
    d = broken()
    edit(d / "task.yaml", "roofline:", "tolerance:\n  float32: {atol: 1.0e-3, rtol: 1.0e-3}\nroofline:")
    err = only_error(validate_task_dir(d), file=d / "task.yaml", key="tolerance.reason")
    assert "required key is missing" in str(err)


def test_randint_on_a_float_input_of_integer_values(broken):
    """Labels kept as floats are drawn by randint (hinge targets: scale 2, offset -1)."""
    d = broken()
    edit(d / "task.yaml", "kind: uniform, low: -2, high: 2", "kind: randint, low: 0, high: 2, scale: 2, offset: -1")
    assert validate_task_dir(d) == []


def test_randint_on_an_fp8_input(broken):
    d = broken()
    edit(d / "task.yaml", "{name: y, dtype: float32, shape: [n], init: {kind: uniform, low: -2, high: 2}}",
         "{name: y, dtype: float8_e4m3fn, shape: [n], init: {kind: randint, low: 0, high: n}}")
    assert any(e.key == "signature.inputs.y.init" and "randint is for integer inputs" in str(e)
               for e in validate_task_dir(d))


def test_shape_space_min_greater_than_max(broken):
    d = broken()
    edit(d / "task.yaml", "n: {min: 1, max: 100000000}", "n: {min: 1000, max: 10}")
    only_error(validate_task_dir(d), file=d / "task.yaml", key="shape_space.n")


# -- load_task -------------------------------------------------------------------------------------

def test_load_task_raises_the_first_error(broken):
    d = broken()
    edit(d / "task.yaml", "id: triton2triton/axpy", "id: triton2triton/saxpy")
    (d / "reference.py").unlink()
    errors = validate_task_dir(d)
    assert len(errors) == 2
    with pytest.raises(ArenaError) as info:
        load_task(d)
    assert str(info.value) == str(errors[0])
    assert info.value.key == "id"
    # without validation the folder still loads
    assert load_task(d, validate=False).id == "triton2triton/saxpy"


def test_load_task_accepts_the_yaml_path():
    a = load_task(AXPY)
    b = load_task(AXPY / "task.yaml")
    assert a.id == b.id == "triton2triton/axpy"
    assert a.path == b.path == AXPY.resolve()
    assert a.category == "triton2triton" and a.language == "triton" and a.entry == "axpy"
    assert [i.name for i in a.inputs] == ["x", "y"]
    assert a.inputs[0].init == {"kind": "normal"}               # the default init
    assert a.inputs[1].init == {"kind": "uniform", "low": -2, "high": 2}
    assert a.kernel_file("baseline") == AXPY.resolve() / "baseline.py"
    assert a.kernel_file("solution") is None


def test_load_configs_of_the_fixture():
    task = load_task(AXPY)
    seen = task.configs("seen")
    assert [c.name for c in seen] == ["n1M", "n4M", "n16M"]
    assert seen[1] == Config("seen", 1, "n4M", {"n": 4194304})
    assert seen[1].as_dict() == {"split": "seen", "index": 1, "name": "n4M", "params": {"n": 4194304}}


def test_config_without_a_name_gets_one(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("- {rows: 4, cols: 8}\n")
    assert load_configs(p, "seen")[0].name == "rows4-cols8"


# -- Task helpers ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def softmax():
    return load_task(REPO / "tasks" / "hip2hip" / "softmax")


def cfg(**params) -> Config:
    return Config("seen", 0, "c", params)


def test_env(axpy):
    env = axpy.env(cfg(n=1000))
    assert env == {"n": 1000, "alpha": 1.5}
    assert isinstance(env["n"], int) and isinstance(env["alpha"], float)


def test_shape(axpy):
    env = axpy.env(cfg(n=1000))
    assert axpy.shape(axpy.inputs[0], env) == (1000,)
    assert axpy.shape(axpy.outputs[0], env) == (1000,)


def test_shape_formulas_and_non_integer_dims(axpy):
    spec = dataclasses.replace(axpy.inputs[0], shape=("n // 2", "2 * 3", 4, "n / 4"))
    assert axpy.shape(spec, {"n": 1000}) == (500, 6, 4, 250)
    assert all(type(d) is int for d in axpy.shape(spec, {"n": 1000}))
    with pytest.raises(ArenaError) as info:
        axpy.shape(spec, {"n": 1002})        # 1002 / 4 = 250.5
    assert info.value.key == "signature.x.shape" and "250.5" in str(info.value)


def test_scalar_value(axpy):
    n_spec, alpha_spec = axpy.scalars
    assert axpy.scalar_value(n_spec, {"n": 77}) == 77                       # from the config
    assert type(axpy.scalar_value(n_spec, {"n": 77.0})) is int
    assert axpy.scalar_value(alpha_spec, {"n": 77}) == 1.5                  # constant
    half = ScalarSpec("half", "int64", "n // 2")
    assert axpy.scalar_value(half, {"n": 77}) == 38                         # formula
    ratio = ScalarSpec("inv", "float32", "1 / n")
    assert axpy.scalar_value(ratio, {"n": 4}) == 0.25
    as_int = ScalarSpec("q", "int32", "n / 4")
    assert axpy.scalar_value(as_int, {"n": 10}) == 2 and type(axpy.scalar_value(as_int, {"n": 10})) is int
    with pytest.raises(ArenaError) as info:
        axpy.scalar_value(n_spec, {"m": 3})
    assert info.value.key == "signature.scalars.n"


def test_env_scalars_may_use_earlier_scalars(axpy):
    task = dataclasses.replace(axpy, scalars=axpy.scalars + (ScalarSpec("two_alpha", "float32", "2 * alpha"),
                                                             ScalarSpec("half", "int64", "n // 2")))
    assert task.env(cfg(n=9)) == {"n": 9, "alpha": 1.5, "two_alpha": 3.0, "half": 4}


def test_tolerance_defaults_by_dtype(axpy):
    assert axpy.tolerance_for("float32") == {"atol": 1e-4, "rtol": 1e-4, "norm": 1e-5}
    assert axpy.tolerance_for("float16") == {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-2}
    assert axpy.tolerance_for("bfloat16") == {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-2}
    assert axpy.tolerance_for("float8_e4m3fn") == {"atol": 1e-1, "rtol": 1e-1, "norm": 1e-1}
    assert axpy.tolerance_for("float8_e5m2") == {"atol": 1e-1, "rtol": 1e-1, "norm": 1e-1}


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_tolerance_none_for_integers(axpy, dtype):
    assert axpy.tolerance_for(dtype) is None


def test_tolerance_override(softmax):
    assert softmax.tolerance_for("float32") == {"atol": 1e-30, "rtol": 1e-4, "norm": 1e-5}
    assert softmax.tolerance_for("float16") == DEFAULT_TOLERANCE["float16"]
    assert "reason" not in softmax.tolerance


def test_tolerance_partial_override_keeps_the_default_norm(broken):
    d = broken()
    edit(d / "task.yaml", "roofline:",
         "tolerance:\n  float32: {atol: 1.0e-3, rtol: 2.0e-3}\n  reason: a test of a partial override\nroofline:")
    task = load_task(d)
    tol = task.tolerance_for("float32")
    assert tol == {"atol": 1e-3, "rtol": 2e-3, "norm": 1e-5}
    tol["atol"] = 99.0                     # a copy: neither the task nor the defaults change
    assert task.tolerance_for("float32")["atol"] == 1e-3
    assert DEFAULT_TOLERANCE["float32"]["atol"] == 1e-4


def test_roofline_for(axpy, softmax):
    assert axpy.roofline_for(cfg(n=1000)) == (2000.0, 12000.0)
    flops, nbytes = softmax.roofline_for(cfg(rows=4, cols=1024))
    assert (flops, nbytes) == (5.0 * 4 * 1024, 8.0 * 4 * 1024)
    assert isinstance(flops, float)


# -- select_tasks ------------------------------------------------------------------------------------

def ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


def test_select_all():
    assert select_tasks("all") == REAL_TASKS
    assert select_tasks(None) == REAL_TASKS
    assert DEFAULT_TASKS_DIR == REPO / "tasks"


def test_select_category():
    assert ids(select_tasks("hip2hip")) == [i for i in ids(REAL_TASKS) if i.startswith("hip2hip/")]
    assert len(select_tasks("hip2hip")) >= 2


def test_select_id():
    assert ids(select_tasks("hip2hip/softmax")) == ["hip2hip/softmax"]


def test_select_glob():
    assert ids(select_tasks("*/softmax*")) == [i for i in ids(REAL_TASKS) if i.split("/")[1].startswith("softmax")]
    assert "hip2hip/softmax" in ids(select_tasks("*/softmax*"))
    assert ids(select_tasks("*/*norm*")) == [i for i in ids(REAL_TASKS) if "norm" in i.split("/")[1]]


def test_select_comma_list_keeps_order_and_drops_duplicates():
    got = ids(select_tasks("triton2triton/rms_norm, hip2hip/softmax,hip2hip"))
    assert got[:2] == ["triton2triton/rms_norm", "hip2hip/softmax"]
    assert sorted(got[2:]) == sorted(i for i in ids(REAL_TASKS) if i.startswith("hip2hip/") and i != "hip2hip/softmax")
    assert len(got) == len(set(got))
    assert ids(select_tasks(["hip2hip/softmax", "triton2triton/rms_norm"])) == \
        ["hip2hip/softmax", "triton2triton/rms_norm"]


def test_select_a_folder_and_another_root():
    assert select_tasks(str(AXPY)) == [AXPY.resolve()]
    assert select_tasks("triton2triton/axpy", root=FIXTURE_ROOT) == [AXPY]


@pytest.mark.parametrize("selector", ["nope", "hip2hip/nope", "*/nope*", "hip2hip/softmax,nope"])
def test_select_unknown(selector):
    with pytest.raises(ArenaError) as info:
        select_tasks(selector)
    assert info.value.key == "selector" and "nope" in str(info.value)
