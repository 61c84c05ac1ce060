"""arena tasks check (the author's validator) on the cpu backend."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from arena.authoring.check import Evaluations, check_task, check_tasks
from arena.devices import detect
from arena.runner import run
from arena.units import RunPlan

FIX = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"


def _copy(tmp_path) -> Path:
    dest = tmp_path / "tasks" / "triton2triton" / "axpy"
    shutil.copytree(FIX, dest)
    return dest


def test_fixture_passes(tmp_path):
    row = check_task(_copy(tmp_path), detect("cpu"))
    assert row.ok, row.problems
    assert row.baseline == "smoke 2/2"


def test_degenerate_and_insensitive_references_fail(tmp_path):
    folder = _copy(tmp_path)
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 1e-4 * y\n")
    row = check_task(folder, detect("cpu"))
    assert not row.ok
    text = "\n".join(row.problems)
    assert "std" in text and "do not depend on input x" in text


def test_an_input_the_outputs_depend_on_in_few_draws_is_drawn_again_before_it_is_called_ignored(tmp_path,
                                                                                                 monkeypatch):
    """Outputs that depend on an input in a few places only (here through whether its sum passes a threshold; a
    position that matters where it is below a length drawn beside it) can come out alike for one draw of it and
    another: the input is drawn again, up to REDRAWS times, before the check says the outputs do not depend on it."""
    import arena.check.degeneracy as degeneracy

    folder = _copy(tmp_path)
    (folder / "reference.py").write_text(
        "def reference(x, y, n, alpha):\n    return y + alpha * (x.sum() > -30).to(y.dtype)\n")
    monkeypatch.setattr(degeneracy, "REDRAWS", 1)
    row = check_task(folder, detect("cpu"))
    assert any("do not depend on input x" in p for p in row.problems), row.problems
    monkeypatch.setattr(degeneracy, "REDRAWS", 4)
    row = check_task(folder, detect("cpu"))
    assert not any("do not depend on input" in p for p in row.problems), row.problems


def _weighted_axpy(tmp_path, body: str):
    """The axpy fixture with four more inputs (w1..w4), its reference ``body``; the task, its smoke config and
    the reference loaded."""
    from arena.check.degeneracy import load_reference
    from arena.taskdef.loader import load_configs, load_task

    folder = _copy(tmp_path)
    yaml = (folder / "task.yaml").read_text()
    more = "".join(f"    - {{name: w{k}, dtype: float32, shape: [n]}}\n" for k in range(1, 5))
    (folder / "task.yaml").write_text(yaml.replace("  outputs:\n", more + "  outputs:\n"))
    (folder / "reference.py").write_text(f"def reference(x, y, w1, w2, w3, w4, n, alpha):\n    return {body}\n")
    task = load_task(folder)
    return task, load_configs(folder / "configs" / "smoke.yaml", "smoke", task)[0], load_reference(task)


def test_the_inputs_a_backward_pass_shows_the_outputs_move_with_are_not_drawn_again(tmp_path, monkeypatch):
    """A network's hundreds of weights each took a run of the reference to show the outputs depend on it (ResNet-101:
    314 runs on the CPU, most of its import): one backward pass shows it for every input whose gradient moves the
    outputs by more than their rounding. An input the outputs move with by less than that (1e-30 of it beside
    values near 1), or only through a comparison (no gradient), is still drawn again, and still found ignored."""
    import arena.check.degeneracy as degeneracy

    runs = []
    real = degeneracy._run
    monkeypatch.setattr(degeneracy, "_run", lambda *a: runs.append(1) or real(*a))
    task, smoke, ref = _weighted_axpy(tmp_path, "alpha * x + y + w1 * w2 + w3.sin() + w4")
    assert degeneracy.reference_problems(task, smoke, "cpu", ref) == []
    assert len(runs) == 2          # the outputs, then one backward pass for all six inputs
    monkeypatch.setattr(degeneracy, "GRADIENT_FROM", 100)
    runs.clear()
    assert degeneracy.reference_problems(task, smoke, "cpu", ref) == []
    assert len(runs) == 7          # the outputs, then a run for each input drawn again

    monkeypatch.setattr(degeneracy, "GRADIENT_FROM", 3)
    task, smoke, ref = _weighted_axpy(tmp_path / "b", "alpha * x + y + w1 + w2 + 1e-30 * w3 + (w4 > 100).to(y.dtype)")
    found = degeneracy.reference_problems(task, smoke, "cpu", ref)
    assert found == ["the outputs do not depend on input w3", "the outputs do not depend on input w4"], found


def test_a_reference_past_what_its_output_dtype_holds_fails(tmp_path):
    """A correct kernel that writes the declared dtype overflows where the reference (on upcast inputs)
    goes past that dtype's range: the task is at fault, and the check says so."""
    folder = _copy(tmp_path)
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 1e5 * x + y\n")
    yaml = (folder / "task.yaml").read_text()
    (folder / "task.yaml").write_text(yaml.replace("{name: out, dtype: float32", "{name: out, dtype: float16"))
    row = check_task(folder, detect("cpu"))
    assert not row.ok
    assert any("past what float16 holds" in p for p in row.problems), row.problems


FP32 = {"atol": 1e-4, "rtol": 1e-4, "norm": 1e-5}


def test_small_outputs_are_degenerate_at_the_default_atol_and_not_at_one_scaled_to_them():
    """A softmax over 32768 columns (outputs near 3e-5): at the default atol its spread and every
    element are below what the comparison tells apart; with atol scaled to its outputs the
    spread it needs is 100 times that atol, and it has it."""
    from arena.check.degeneracy import spread_problems

    g = torch.Generator().manual_seed(0)
    out = torch.softmax(torch.randn(8, 32768, generator=g), dim=1)
    found = spread_problems("out", out, FP32)
    assert any("std" in p for p in found) and any("below atol" in p for p in found), found
    assert spread_problems("out", out, {**FP32, "atol": 5e-9}) == []


def test_a_constant_the_comparison_passes_is_degenerate_whatever_the_spread():
    """Outputs whose spread is above 1e-2 but small beside their mean, under a loose tolerance: their
    mean, written everywhere, passes elementwise and normwise."""
    from arena.check.degeneracy import spread_problems

    g = torch.Generator().manual_seed(0)
    out = 10 + torch.randn(4096, generator=g)
    found = spread_problems("out", out, {"atol": 1e-4, "rtol": 1.0, "norm": 0.5})
    assert found and all("a constant (its mean" in p for p in found), found
    assert spread_problems("out", out, FP32) == []


def test_exact_zeros_are_structure_not_outputs_below_atol():
    """A strided transposed convolution never writes some positions (exact zeros, 75% here), a ReLU
    zeroes its negative half: the other elements are what is compared, and they are far above atol.
    Elements that are small but not zero still count."""
    from arena.check.degeneracy import spread_problems

    g = torch.Generator().manual_seed(0)
    out = torch.zeros(512, 512)
    out[::2, ::2] = torch.randn(256, 256, generator=g)
    assert spread_problems("out", out, FP32) == []
    assert spread_problems("out", torch.relu(torch.randn(4096, generator=g)), FP32) == []
    tiny = out.clone()
    tiny[1::2, :] = 1e-6
    assert any("of its nonzero |ref| below atol" in p for p in spread_problems("out", tiny, FP32))


def test_a_broken_starting_kernel_fails_the_check(tmp_path):
    folder = _copy(tmp_path)
    src = (folder / "baseline.py").read_text().replace("alpha * x + y", "alpha * x - y")
    (folder / "baseline.py").write_text(src)
    row = check_task(folder, detect("cpu"))
    assert not row.ok and any("INCORRECT_NUMERICAL" in p for p in row.problems)


def test_a_memory_bound_task_too_small_to_time_fails_the_check_on_the_cpu_too(tmp_path):
    """The rule that a memory-bound task has a config moving >= 100 MB reads the sizes alone: the
    CPU check applies it to the seen and held-out configs, as a GPU's does (the fixture's largest,
    50M elements, moves 600 MB)."""
    folder = _copy(tmp_path)
    for name in ("seen", "heldout"):
        f = folder / "configs" / f"{name}.yaml"
        f.write_text(f.read_text().replace("n: 50000017", "n: 5000017").replace("n: 16777216", "n: 1677721"))
    row = check_task(folder, detect("cpu"))
    assert not row.ok and any("memory-bound but no config moves >= 100 MB (largest 60 MB)" in p
                              for p in row.problems), row.problems


def test_recorded_verdicts_of_the_same_files_are_reused(tmp_path):
    cpu = detect("cpu")
    folder = _copy(tmp_path)
    out = tmp_path / "run"
    run(RunPlan(agents=("baseline",), tasks=(folder,), splits=("smoke",)), cpu, out)
    from arena import records

    recorded = list(records.read(out / "records.jsonl"))
    rows = check_tasks([folder], cpu, recorded=recorded)
    assert rows[0].ok
    ev = Evaluations(cpu, recorded)
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    assert ev.get(task, "baseline", ["smoke"], timing=False) == recorded and ev.reused == 1
    # a changed file is evaluated again, not taken from the records
    (folder / "baseline.py").write_text((folder / "baseline.py").read_text() + "\n# changed\n")
    ev2 = Evaluations(cpu, recorded)
    fresh = ev2.get(load_task(folder), "baseline", ["smoke"], timing=False)
    assert ev2.reused == 0 and fresh[0].candidate["sha256"] != recorded[0].candidate["sha256"]


def test_recorded_verdicts_of_other_configs_are_not_reused(tmp_path):
    cpu = detect("cpu")
    folder = _copy(tmp_path)
    out = tmp_path / "run"
    run(RunPlan(agents=("baseline",), tasks=(folder,), splits=("smoke",)), cpu, out)
    from arena import records
    from arena.taskdef.loader import load_task

    recorded = list(records.read(out / "records.jsonl"))
    smoke = folder / "configs" / "smoke.yaml"
    smoke.write_text(smoke.read_text() + "- {name: added-later, n: 77}\n")
    ev = Evaluations(cpu, recorded)
    fresh = ev.get(load_task(folder), "baseline", ["smoke"], timing=False)
    assert ev.reused == 0 and "added-later" in [c.name for c in fresh[0].configs]


def test_a_task_whose_reference_checks_ran_out_of_device_memory_beside_others_is_checked_again_alone(tmp_path):
    """``arena tasks check --jobs 8`` on an H200: each process keeps the device memory its largest reference check
    needed, and the reference checks of 8 level 1 and 2 imports ran out of it beside the others' (a row FAIL
    "reference: OutOfMemoryError"). Such a row is checked again after the others, alone, and says so; checked
    alone in the first place (``jobs`` 1), running out is the task's own failure. The fixture's reference runs out
    the first time it is called (a marker file beside it remembers)."""
    cpu = detect("cpu")
    plain = _copy(tmp_path)
    hungry = tmp_path / "tasks" / "triton2triton" / "axpy_hungry"
    shutil.copytree(FIX, hungry)
    text = (hungry / "task.yaml").read_text()
    (hungry / "task.yaml").write_text(text.replace("id: triton2triton/axpy", "id: triton2triton/axpy_hungry"))
    (hungry / "reference.py").write_text(
        "from pathlib import Path\n\nimport torch\n\n\n"
        "def reference(x, y, n, alpha):\n"
        "    marker = Path(__file__).with_name('ran-out-once')\n"
        "    if not marker.exists():\n"
        "        marker.write_text('')\n"
        "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 12.21 GiB')\n"
        "    return alpha * x + y\n")
    rows = check_tasks([plain, hungry], cpu, jobs=2)
    assert [r.task_id for r in rows] == ["triton2triton/axpy", "triton2triton/axpy_hungry"]
    assert rows[0].ok and rows[1].ok, [r.problems for r in rows]
    assert "out of device memory" in rows[1].details["checked_alone"] and "checked_alone" not in rows[0].details
    (hungry / "ran-out-once").unlink()
    (row,) = check_tasks([hungry], cpu, jobs=1)
    assert not row.ok and row.out_of_memory and row.problems[0].startswith("reference: OutOfMemoryError")
