"""arena tasks check (the author's validator) on the cpu backend."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from arena.authoring.check import Evaluations, check_task, check_tasks
from arena.devices import detect
from arena.records import Status
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


def test_a_reference_that_asks_tritons_driver_where_it_loads_is_checked_on_the_cpu(tmp_path):
    """A reference that asks Triton's driver for its GPU where it loads (rocmbench's gemm test chooses its fp8 types
    by is_cdna4()) loads on a GPU; on the cpu backend it failed with "0 active drivers", in the trusted process
    (TASK_ERROR: reference.py failed to import) and in the check's own reference checks. Wherever a reference is
    imported it gets the cpu backend's nominal GPU, as the candidate's process has it."""
    folder = _copy(tmp_path)
    (folder / "reference.py").write_text(
        "import triton\n\n"
        "ARCH = triton.runtime.driver.active.get_current_target().arch   # asked where it loads\n\n\n"
        "def reference(x, y, n, alpha):\n    return alpha * x + y\n")
    row = check_task(folder, detect("cpu"))
    assert row.ok, row.problems
    assert row.reference == "ok" and row.baseline == "smoke 2/2"


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


def test_a_backward_pass_slower_than_the_draws_it_saves_is_let_go(tmp_path, monkeypatch):
    """A reference whose backward pass costs far more than its forward (one that writes its output a slice at a time
    in a Python loop: each slice's node copies the whole output's gradient; FLA's chunk_fwd_o ran the check past 17
    minutes so) is given as long as the draws would take, then let go: every input is drawn again, and the problems
    are those the draws find. Here ten nodes of 0.15 s each against a budget of 0.05 s."""
    import arena.check.degeneracy as degeneracy
    from arena.check.degeneracy import load_reference

    task, smoke, _ = _weighted_axpy(tmp_path, "x")
    task.reference_path.write_text(
        "import time\nimport torch\n\n\n"
        "class Slow(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, t):\n        return t.clone()\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        time.sleep(0.15)\n        return g\n\n\n"
        "def reference(x, y, w1, w2, w3, w4, n, alpha):\n"
        "    out = alpha * x + y + w1 * w2 + w3.sin() + w4\n"
        "    for _ in range(10):\n        out = Slow.apply(out)\n    return out\n")
    ref = load_reference(task)
    runs = []
    real = degeneracy._run
    monkeypatch.setattr(degeneracy, "_run", lambda *a: runs.append(1) or real(*a))
    monkeypatch.setattr(degeneracy, "GRADIENT_MIN_S", 100.0)
    assert degeneracy.reference_problems(task, smoke, "cpu", ref) == []
    assert len(runs) == 2          # the outputs, then the backward pass, given its 1.5 s
    monkeypatch.setattr(degeneracy, "GRADIENT_MIN_S", 0.05)
    runs.clear()
    assert degeneracy.reference_problems(task, smoke, "cpu", ref) == []
    assert len(runs) == 8          # the outputs, the forward of the pass let go, then a run for each input drawn again


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


def test_an_fp8_reference_output_is_read_for_its_range():
    """The range rule read an fp8 output's values with ``torch.isfinite``, which torch has not for its fp8 types:
    `arena tasks check` raised on the corpus's two fp8-output tasks (hip2hip/rms_norm_dynamic_fp8_quant on an
    H200, "reference: NotImplementedError"). Such an output is read upcast: in range it passes, past it the
    rule names the dtype's range."""
    import torch

    from arena.check.degeneracy import range_problems

    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        assert range_problems("q", (torch.randn(64) * 100).to(dtype), dtype) == []
    wide = range_problems("q", torch.tensor([1.0, 1e6]), torch.float8_e4m3fn)
    assert len(wide) == 1 and "past what float8_e4m3fn holds (-448 to 448)" in wide[0], wide


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


def _four_blocks() -> str:
    """The fixture's starting kernel launching 4 programs at most: right up to n = 4096, the rest of the output never
    written."""
    text = (FIX / "baseline.py").read_text()
    grid = "[(triton.cdiv(n, BLOCK),)]"
    assert grid in text
    return text.replace(grid, "[(min(triton.cdiv(n, BLOCK), 4),)]")


def _drafted(tmp_path, seen: str, heldout: str) -> Path:
    """The axpy fixture with the four-block starting kernel and config files as an importer writes them (its drafts
    marked DRAFT); read as compute-bound, so that the sizes' rule (a memory-bound task moves 100 MB somewhere) does not
    fail it at these sizes."""
    folder = _copy(tmp_path)
    (folder / "baseline.py").write_text(_four_blocks())
    yaml_path = folder / "task.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("bound: memory", "bound: compute"))
    (folder / "configs" / "seen.yaml").write_text("# Seen configs. Entries marked DRAFT were drafted.\n" + seen)
    (folder / "configs" / "heldout.yaml").write_text("# DRAFT held-out configs.\n" + heldout)
    return folder


def _names(folder: Path, split: str) -> list[str]:
    import yaml

    return [c["name"] for c in yaml.safe_load((folder / "configs" / f"{split}.yaml").read_text()) or []]


def test_drafts_the_starting_kernel_fails_are_taken_out_and_the_task_checked_again(tmp_path):
    """An importer's drafts are guesses the CPU's probes could not refute (here: sizes past the four blocks the
    starting kernel launches). ``check_and_fit`` takes out those that fail on their own, keeps every other line of the
    files, and checks the task again: the row is the last check's."""
    from arena.authoring.check import check_and_fit

    folder = _drafted(
        tmp_path,
        "- {name: s1, n: 3000}\n- {name: s2, n: 4000}\n"
        "- {name: s3, n: 2048}   # DRAFT: grown from n 256\n- {name: draft-x2, n: 8000}   # DRAFT: n doubled\n",
        "- {name: h1, n: 1037}\n- {name: draft-odd, n: 3001}   # DRAFT: odd\n"
        "- {name: draft-prime, n: 2003}   # DRAFT: prime\n- {name: draft-scale-up, n: 6001}   # DRAFT: scaled up\n"
        "- {name: draft-not-mult-8, n: 1001}   # DRAFT: not a multiple of 8\n")
    cpu = detect("cpu")
    assert not check_task(folder, cpu, splits=["seen", "heldout"]).ok
    row = check_and_fit(folder, cpu, splits=["seen", "heldout"])
    assert row.ok, row.problems
    assert [d.split(":")[0] for d in row.dropped] == ["seen/draft-x2", "heldout/draft-scale-up"]
    assert all("OUTPUT_UNWRITTEN" in d for d in row.dropped), row.dropped
    assert _names(folder, "seen") == ["s1", "s2", "s3"]
    assert _names(folder, "heldout") == ["h1", "draft-odd", "draft-prime", "draft-not-mult-8"]
    text = (folder / "configs" / "heldout.yaml").read_text()
    assert text.startswith("# DRAFT held-out configs.\n") and "# DRAFT: prime" in text


def test_a_config_of_the_sources_own_the_kernel_computes_wrong_is_never_taken_out(tmp_path):
    """A failing config the importer did not draft (no DRAFT mark), the starting kernel wrong there, stays, and the row
    fails on it; the drafts that fail beside it are taken out still."""
    from arena.authoring.check import check_and_fit

    folder = _drafted(
        tmp_path,
        "- {name: s1, n: 3000}\n- {name: s2, n: 9000}\n- {name: s3, n: 2048}\n"
        "- {name: draft-x2, n: 8000}   # DRAFT: n doubled\n",
        "- {name: h1, n: 1037}\n- {name: h2, n: 3001}\n- {name: h3, n: 2003}\n- {name: h4, n: 1001}\n")
    row = check_and_fit(folder, detect("cpu"), splits=["seen", "heldout"])
    assert not row.ok
    assert any(p.startswith("baseline seen: OUTPUT_UNWRITTEN") for p in row.problems), row.problems
    assert [d.split(":")[0] for d in row.dropped] == ["seen/draft-x2"]
    assert _names(folder, "seen") == ["s1", "s2", "s3"]


def test_a_config_of_the_sources_own_timed_outside_the_window_is_taken_out(tmp_path):
    """A source's case the importer could not grow is kept as written; where the device times it outside the window
    (here 18.6 us; four of AKA's ItemQueryAttention's cases take 7.4-13.0 us on an H200), the fit takes it out as it
    does a draft, where the split keeps the configs the rules ask for; a case wrong there, or one whose leaving would
    leave too few, is not taken out."""
    from arena.authoring.check import CheckRow, _droppable
    from arena.authoring.drafts import drop_draft_configs
    from arena.devices import Device
    from arena.records import ConfigResult, SideTiming, Verdict

    folder = _drafted(
        tmp_path, "- {name: case0, n: 64}\n- {name: case1, n: 3000}\n- {name: case2, n: 4000}\n"
                  "- {name: case3, n: 2048}\n",
        "- {name: h1, n: 1037}\n- {name: draft-odd, n: 3001}   # DRAFT: odd\n"
        "- {name: draft-prime, n: 2003}   # DRAFT: prime\n- {name: draft-not-mult-8, n: 1001}   # DRAFT: not 8\n"
        "- {name: draft-aspect, n: 1501}   # DRAFT: aspect\n")
    gpu = Device("cuda", "NVIDIA H200", "nvidia", "sm_90")

    def row(times: dict[str, float], wrong: str = "") -> CheckRow:
        def config(name: str) -> ConfigResult:
            if name == wrong:
                return ConfigResult(name, {}, Status.INCORRECT_NUMERICAL, "3 of 64 elements outside atol")
            t = SideTiming(times.get(name, 150.0), 1.0, 20)
            return ConfigResult(name, {}, Status.PASSED, baseline=t, candidate=t, speedup=1.0, speedup_ci=(0.98, 1.02))

        return CheckRow("triton2triton/axpy", verdicts=[
            Verdict("triton2triton/axpy", "triton2triton", split, Status.PASSED, {"origin": "baseline"}, {},
                    configs=[config(n) for n in _names(folder, split)]) for split in ("seen", "heldout")])

    take, why_not, failing = _droppable(folder, row({"case0": 18.6}), gpu)
    assert take == {"seen": ["case0"]} and why_not == "", (take, why_not)
    assert failing[("seen", "case0")] == "baseline time 18.6 us, outside 20-50000 us"
    assert _droppable(folder, row({"case0": 18.6}), detect("cpu"))[0] == {}     # no times on the CPU
    # wrong there: its failure stays the row's (as for any of the source's own configs)
    assert _droppable(folder, row({}, wrong="case0"), gpu)[0] == {}
    # two below the window of four seen: the one left would be too few
    take, why_not, _ = _droppable(folder, row({"case0": 18.6, "case3": 19.0}), gpu)
    assert take == {} and "the configs that fail on their own (seen/case0, seen/case3) were left in" in why_not
    # a draft below the window beside it: both go, each by what it is
    take, _, _ = _droppable(folder, row({"case0": 18.6, "draft-odd": 12.0}), gpu)
    assert take == {"seen": ["case0"], "heldout": ["draft-odd"]}
    assert drop_draft_configs(folder, "seen", [], own=take["seen"]) == ["case0"]
    assert _names(folder, "seen") == ["case1", "case2", "case3"]
    assert drop_draft_configs(folder, "heldout", ["h1"]) == []      # not a draft, not named as the source's own


def test_drafts_are_left_in_where_taking_them_out_would_leave_fewer_configs_than_the_rules_ask(tmp_path):
    """Where the drafts left would be fewer than the rules ask (4 held-out), none is taken out: the row fails on the
    configs themselves, and says which drafts failed and why they stay."""
    from arena.authoring.check import check_and_fit

    folder = _drafted(
        tmp_path, "- {name: s1, n: 3000}\n- {name: s2, n: 4000}\n- {name: s3, n: 2048}\n",
        "- {name: draft-odd, n: 3001}   # DRAFT: odd\n- {name: draft-prime, n: 2003}   # DRAFT: prime\n"
        "- {name: draft-scale-up, n: 6001}   # DRAFT: scaled up\n- {name: draft-big, n: 9001}   # DRAFT: larger\n")
    before = (folder / "configs" / "heldout.yaml").read_text()
    row = check_and_fit(folder, detect("cpu"), splits=["seen", "heldout"])
    assert not row.ok and row.dropped == []
    assert any(p.startswith("baseline heldout: OUTPUT_UNWRITTEN") for p in row.problems), row.problems
    assert any("heldout/draft-scale-up, heldout/draft-big) were left in: taking them out would leave 2 heldout "
               "configs, fewer than the 4" in p for p in row.problems), row.problems
    assert (folder / "configs" / "heldout.yaml").read_text() == before


def test_a_starting_kernel_wrong_on_every_config_has_no_draft_taken_out(tmp_path):
    """A kernel that fails every config is wrong as a whole, not at its sizes: nothing is taken out."""
    from arena.authoring.check import check_and_fit

    folder = _drafted(
        tmp_path, "- {name: s1, n: 5000}\n- {name: s2, n: 6000}\n- {name: s3, n: 7000}\n"
                  "- {name: draft-x2, n: 9000}   # DRAFT: doubled\n",
        "- {name: h1, n: 5001}\n- {name: h2, n: 6003}\n- {name: h3, n: 7001}\n"
        "- {name: draft-a, n: 9001}   # DRAFT: a\n")
    row = check_and_fit(folder, detect("cpu"), splits=["seen", "heldout"])
    assert not row.ok and row.dropped == []
    assert _names(folder, "seen")[-1] == "draft-x2" and _names(folder, "heldout")[-1] == "draft-a"


def test_a_config_never_run_or_a_death_its_split_shares_names_no_config():
    """A timeout names its config only where it is its own: the configs after it, never run (their process was lost
    at it), and configs that all say one death of their evaluation, are none of them a config's failure."""
    from arena.authoring.check import CheckRow, failing_configs
    from arena.records import NOT_RUN, ConfigResult, Verdict

    def verdict(split, *configs):
        return Verdict("triton2triton/axpy", "triton2triton", split, Status.TIMEOUT, {"origin": "baseline"}, {},
                       configs=[ConfigResult(n, {}, Status[s], m) for n, s, m in configs])

    lost = f"{NOT_RUN} the candidate process was killed after a call did not finish in time (at seen/c0)"
    died = "no progress for the correctness time limit; the evaluation was killed"
    row = CheckRow("triton2triton/axpy", verdicts=[
        verdict("seen", ("c0", "PASSED", ""), ("draft-a", "TIMEOUT", "no progress within 120 s"),
                ("draft-b", "TIMEOUT", lost)),
        verdict("heldout", ("h0", "TIMEOUT", died), ("draft-c", "TIMEOUT", died)),
    ])
    assert list(failing_configs(row, detect("cpu"))) == [("seen", "draft-a")]


def test_a_failure_of_the_whole_task_takes_out_no_draft(tmp_path):
    """A starting kernel that fails everywhere (here it does not compile) names no config: nothing is taken out."""
    from arena.authoring.check import check_and_fit

    folder = _drafted(
        tmp_path, "- {name: s1, n: 3000}\n- {name: s2, n: 4000}\n- {name: draft-x2, n: 2048}   # DRAFT: doubled\n",
        "- {name: draft-odd, n: 3001}   # DRAFT: odd\n- {name: draft-prime, n: 2003}   # DRAFT: prime\n"
        "- {name: draft-a, n: 1001}   # DRAFT: a\n- {name: draft-b, n: 1501}   # DRAFT: b\n")
    before = {s: (folder / "configs" / f"{s}.yaml").read_text() for s in ("seen", "heldout")}
    (folder / "baseline.py").write_text(_four_blocks().replace("def axpy(", "def axpy(:"))
    row = check_and_fit(folder, detect("cpu"), splits=["seen", "heldout"])
    assert not row.ok and row.dropped == []
    assert {s: (folder / "configs" / f"{s}.yaml").read_text() for s in ("seen", "heldout")} == before


def test_a_split_whose_every_config_is_taken_out_is_left_empty_for_the_rules_to_refuse(tmp_path):
    from arena.authoring.drafts import drop_draft_configs
    from arena.taskdef.loader import validate_task_dir

    folder = _drafted(tmp_path, "- {name: s1, n: 3000}\n- {name: s2, n: 4000}\n- {name: s3, n: 2048}\n",
                      "- {name: draft-a, n: 3001}   # DRAFT: a\n- {name: h2, n: 2003}\n")
    assert drop_draft_configs(folder, "heldout", ["h2"]) == []          # not a draft: kept
    assert drop_draft_configs(folder, "heldout", ["draft-a", "nothing"]) == ["draft-a"]
    assert _names(folder, "heldout") == ["h2"]
    assert drop_draft_configs(folder, "seen", ["s1"]) == []
    (folder / "configs" / "heldout.yaml").write_text("# held-out\n- {name: draft-a, n: 3001}   # DRAFT: a\n")
    assert drop_draft_configs(folder, "heldout", ["draft-a"]) == ["draft-a"]
    assert _names(folder, "heldout") == []
    assert any("should be non-empty" in str(e) for e in validate_task_dir(folder))


def test_the_check_table_says_which_drafts_were_taken_out():
    from arena.authoring.check import CheckRow
    from arena.cli import check_markdown

    row = CheckRow("triton2triton/axpy", dropped=["heldout/draft-big: OUTPUT_UNWRITTEN out: 10 of 20 never written"])
    text = check_markdown([row], detect("cpu"))
    assert "## Configs taken out" in text and "- triton2triton/axpy: heldout/draft-big: OUTPUT_UNWRITTEN" in text


def test_an_evaluation_that_died_at_one_config_names_that_config_alone():
    """An evaluation killed at one config (its correctness ran past its limit) records the end there; the configs it
    never reached, in its split and in the next (whose first config carries the end for the record), are said never
    run (``NOT_RUN``, with where it stopped): ``failing_configs`` names the one config."""
    from arena.authoring.check import CheckRow, failing_configs
    from arena.evaluation.decision import assemble
    from arena.evaluation.protocol import CorrectnessFrame, CorrectnessResult, StageFrame
    from arena.records import NOT_RUN
    from arena.taskdef.loader import load_task

    task = load_task(FIX)
    cfgs = {"seen": task.configs("seen"), "heldout": task.configs("heldout")}
    first, stuck, never = (c.name for c in cfgs["seen"])
    frames = [StageFrame(stage="correctness", split="seen", config=first),
              CorrectnessFrame(split="seen", config=first, result=CorrectnessResult(status=Status.PASSED)),
              StageFrame(stage="correctness", split="seen", config=stuck)]
    exit_info = {"timed_out": "correctness", "returncode": -9, "log_tail": ""}
    base = {"task_id": task.id, "category": task.category, "candidate": {"origin": "baseline"}, "device": {}}
    seen, held = assemble(task, cfgs, frames, exit_info, base, {}, detect("cpu"))
    by = {(v.split, c.name): c for v in (seen, held) for c in v.configs}
    assert by[("seen", stuck)].status is Status.TIMEOUT and not by[("seen", stuck)].message.startswith(NOT_RUN)
    assert by[("seen", never)].message == f"{NOT_RUN} the evaluation stopped earlier, at seen/{stuck}"
    lead = by[("heldout", cfgs["heldout"][0].name)].message
    assert lead.startswith(f"{NOT_RUN} the evaluation stopped at seen/{stuck}: ") and "correctness" in lead
    assert list(failing_configs(CheckRow(task.id, verdicts=[seen, held]), detect("cpu"))) == [("seen", stuck)]
