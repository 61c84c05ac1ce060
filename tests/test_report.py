"""Report end to end on CPU records: every file written, the HTML renders (headless
Chromium screenshot not blank) and holds its tables; arena compare on two runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from arena import records
from arena.cli import main
from arena.records import ConfigResult, Status, Verdict
from arena.report import build_report
from arena.report.compare import compare_runs

REQUIRE = os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1"


def _write_run(path: Path, rows):
    for agent, task, split, status, sp in rows:
        records.append(path / "records.jsonl", Verdict(
            task_id=task, category=task.split("/")[0], split=split, status=Status(status), candidate={},
            device={"kind": "cpu", "name": "test"}, configs=[ConfigResult("c", {"n": 1}, Status(status))],
            speedup=sp, agent=agent, run_id=path.name, roofline_fraction=0.4 if sp else None))


RUN_A = [("baseline", "hip2hip/a", "seen", "PASSED", 1.0), ("baseline", "hip2hip/a", "heldout", "PASSED", 1.0),
         ("baseline", "triton2triton/b", "seen", "PASSED", 1.0), ("baseline", "triton2triton/b", "heldout", "PASSED", 1.0),
         ("special", "hip2hip/a", "seen", "PASSED", 3.0), ("special", "hip2hip/a", "heldout", "INCORRECT_NUMERICAL", None),
         ("special", "triton2triton/b", "seen", "PASSED", 2.0), ("special", "triton2triton/b", "heldout", "PASSED", 2.0)]


def test_report_files_and_contents(tmp_path):
    _write_run(tmp_path / "runA", RUN_A)
    files = build_report([tmp_path / "runA"], tmp_path / "rep", title="test report")
    for f in files.values():
        assert f.is_file() and f.stat().st_size > 0
    summary = json.loads(files["summary_json"].read_text())["summary"]
    special_all = next(r for r in summary if r["agent"] == "special" and r["category"] == "all")
    assert special_all["drop_heldout"] == pytest.approx(0.5)
    md = files["md"].read_text()
    assert "| special | all |" in md and "drop held-out" in md
    html = files["html"].read_text()
    assert html.count("<table") == 2 and 'id="per-task"' in html and html.count("data:image/png;base64,") == 4


def test_report_html_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if REQUIRE:
            pytest.fail("chromium is required (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("chromium not installed")
    from PIL import Image

    _write_run(tmp_path / "runA", RUN_A)
    files = build_report([tmp_path / "runA"], tmp_path / "rep")
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2400",
                    f"--screenshot={shot}", files["html"].as_uri()], check=True, capture_output=True, timeout=120)
    img = Image.open(shot).convert("L")
    hist = img.histogram()
    white = hist[255] / sum(hist)
    assert white < 0.97, "the screenshot is (nearly) blank"
    assert len(img.getcolors(maxcolors=1 << 16) or range(1000)) > 20


def test_compare_two_runs(tmp_path, capsys):
    _write_run(tmp_path / "runA", RUN_A)
    better = [(a, t, s, st, (sp * 2 if sp else sp)) for a, t, s, st, sp in RUN_A]
    better[5] = ("special", "hip2hip/a", "heldout", "PASSED", 5.0)
    _write_run(tmp_path / "runB", better)
    rows = {r.split: r for r in compare_runs(tmp_path / "runA", tmp_path / "runB", agent_a="special",
                                             agent_b="special")}
    seen, held = rows["seen"], rows["heldout"]
    assert seen.n_common == 2 and seen.speedup_ratio == pytest.approx(2.0)
    assert seen.correct_diff == 0
    assert held.correct_diff == pytest.approx(0.5)
    assert held.changed == [("hip2hip/a", "INCORRECT_NUMERICAL", "PASSED")]
    assert main(["compare", str(tmp_path / "runA"), str(tmp_path / "runB")]) == 0
    assert "INCORRECT_NUMERICAL -> PASSED" in " ".join(capsys.readouterr().out.split())   # wrapped or not


def test_infrastructure_failures_are_reported_apart_and_not_scored(tmp_path):
    (tmp_path / "runA").mkdir()
    (tmp_path / "runA" / "run.json").write_text(json.dumps({"run_id": "runA", "infra_retries": 1}))
    rows = RUN_A + [("special", "torch2hip/c", "seen", "HARNESS_ERROR", None),
                    ("special", "torch2hip/c", "heldout", "TASK_ERROR", None),
                    ("special", "hip2hip/d", "seen", "NOT_RUNNABLE", None)]
    _write_run(tmp_path / "runA", rows)
    files = build_report([tmp_path / "runA"], tmp_path / "rep")
    summary = json.loads(files["summary_json"].read_text())["summary"]
    special_all = next(r for r in summary if r["agent"] == "special" and r["category"] == "all")
    assert special_all["attempts"] == 2 and special_all["correct_seen"] == 1.0     # as without c and d
    assert "torch2hip" not in {r["category"] for r in summary}
    md = files["md"].read_text()
    infra = md.split("## Infrastructure failures (not scored)")[1].split("## ")[0]
    assert "2 verdicts" in infra and "special: 1 HARNESS_ERROR; special: 1 TASK_ERROR" in infra
    assert "2 of them can still be redone" in infra and "torch2hip/c heldout TASK_ERROR (attempt 1)" in infra
    assert "## Not run on this machine (not scored)" in md and "hip2hip/d seen NOT_RUNNABLE" in md
    assert "torch2hip/c" not in files["per_task_csv"].read_text()
    assert "Infrastructure failures (not scored)</h2>" in files["html"].read_text()
    # a redone split counts once, as redone; with the retries spent the report says so
    records.append(tmp_path / "runA" / "records.jsonl", Verdict(
        task_id="torch2hip/c", category="torch2hip", split="seen", status=Status.HARNESS_ERROR, candidate={},
        device={"kind": "cpu", "name": "test"}, agent="special", run_id="runA", attempt=2))
    records.append(tmp_path / "runA" / "records.jsonl", Verdict(
        task_id="torch2hip/c", category="torch2hip", split="heldout", status=Status.TASK_ERROR, candidate={},
        device={"kind": "cpu", "name": "test"}, agent="special", run_id="runA", attempt=2))
    md = build_report([tmp_path / "runA"], tmp_path / "rep2")["md"].read_text()
    infra = md.split("## Infrastructure failures (not scored)")[1].split("## ")[0]
    assert "2 verdicts" in infra and "None has a retry left" in infra and "(attempt 2)" in infra


def test_compare_leaves_unscored_verdicts_out_and_counts_correct_pairs(tmp_path, capsys):
    untimed = [(a, t, s, st, None) for a, t, s, st, _ in RUN_A]
    _write_run(tmp_path / "runA", untimed + [("special", "torch2hip/c", "seen", "HARNESS_ERROR", None)])
    _write_run(tmp_path / "runB", untimed + [("special", "torch2hip/c", "seen", "PASSED", None)])
    rows = {r.split: r for r in compare_runs(tmp_path / "runA", tmp_path / "runB", agent_a="special",
                                             agent_b="special")}
    seen = rows["seen"]
    assert seen.n_common == 2 and seen.n_both_correct == 2 and seen.n_both_timed == 0   # c is not common
    assert seen.changed == [] and seen.correct_diff == 0
    assert main(["compare", str(tmp_path / "runA"), str(tmp_path / "runB")]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out
