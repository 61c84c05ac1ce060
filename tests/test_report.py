"""Report end to end on CPU records: every file written, the HTML renders (headless
Chromium screenshot not blank) and holds its tables; arena compare on two runs."""

from __future__ import annotations

import html as htmllib
import json
import math
import re
import subprocess
import warnings
from pathlib import Path

import pytest
from toolchains import chromium  # tests/ is on the path

from arena import records
from arena.cli import main
from arena.records import ConfigResult, Status, Verdict
from arena.report import build_report
from arena.report.compare import compare_runs


def _write_run(path: Path, rows):
    for agent, task, split, status, sp in rows:
        records.append(path / "records.jsonl", Verdict(
            task_id=task, category=task.split("/")[0], split=split, status=Status(status), candidate={},
            device={"kind": "cpu", "name": "test"}, configs=[ConfigResult("c", {"n": 1}, Status(status))],
            speedup=sp, agent=agent, run_id=path.name, roofline_fraction=0.4 if sp else None))


RUN_A = [
    ("baseline", "hip2hip/a", "seen", "PASSED", 1.0),
    ("baseline", "hip2hip/a", "heldout", "PASSED", 1.0),
    ("baseline", "triton2triton/b", "seen", "PASSED", 1.0),
    ("baseline", "triton2triton/b", "heldout", "PASSED", 1.0),
    ("special", "hip2hip/a", "seen", "PASSED", 3.0),
    ("special", "hip2hip/a", "heldout", "INCORRECT_NUMERICAL", None),
    ("special", "triton2triton/b", "seen", "PASSED", 2.0),
    ("special", "triton2triton/b", "heldout", "PASSED", 2.0),
]


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
    browser = chromium()
    from PIL import Image

    _write_run(tmp_path / "runA", RUN_A)
    files = build_report([tmp_path / "runA"], tmp_path / "rep")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1400,2400",
            f"--screenshot={shot}",
            files["html"].as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
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
    rows = {
        r.split: r for r in compare_runs(tmp_path / "runA", tmp_path / "runB", agent_a="special", agent_b="special")
    }
    seen, held = rows["seen"], rows["heldout"]
    assert seen.n_common == 2 and seen.speedup_ratio == pytest.approx(2.0)
    assert seen.correct_diff == 0
    assert held.correct_diff == pytest.approx(0.5)
    assert held.changed == [("hip2hip/a", "INCORRECT_NUMERICAL", "PASSED")]
    assert main(["compare", str(tmp_path / "runA"), str(tmp_path / "runB")]) == 0
    assert "INCORRECT_NUMERICAL -> PASSED" in " ".join(capsys.readouterr().out.split())  # wrapped or not


def test_infrastructure_failures_are_reported_apart_and_not_scored(tmp_path):
    (tmp_path / "runA").mkdir()
    (tmp_path / "runA" / "run.json").write_text(json.dumps({"run_id": "runA", "infra_retries": 1}))
    rows = RUN_A + [
        ("special", "torch2hip/c", "seen", "HARNESS_ERROR", None),
        ("special", "torch2hip/c", "heldout", "TASK_ERROR", None),
        ("special", "hip2hip/d", "seen", "NOT_RUNNABLE", None),
    ]
    _write_run(tmp_path / "runA", rows)
    files = build_report([tmp_path / "runA"], tmp_path / "rep")
    summary = json.loads(files["summary_json"].read_text())["summary"]
    special_all = next(r for r in summary if r["agent"] == "special" and r["category"] == "all")
    assert special_all["attempts"] == 2 and special_all["correct_seen"] == 1.0  # as without c and d
    assert "torch2hip" not in {r["category"] for r in summary}
    md = files["md"].read_text()
    infra = md.split("## Infrastructure failures (not scored)")[1].split("## ")[0]
    assert "2 verdicts" in infra and "special: 1 HARNESS_ERROR; special: 1 TASK_ERROR" in infra
    assert "2 of them can still be redone" in infra and "torch2hip/c heldout TASK_ERROR (attempt 1)" in infra
    assert "## Not run on this machine (not scored)" in md and "hip2hip/d seen NOT_RUNNABLE" in md
    assert "torch2hip/c" not in files["per_task_csv"].read_text()
    assert "Infrastructure failures (not scored)</h2>" in files["html"].read_text()
    # a redone split counts once, as redone; with the retries spent the report says so
    records.append(
        tmp_path / "runA" / "records.jsonl",
        Verdict(
            task_id="torch2hip/c",
            category="torch2hip",
            split="seen",
            status=Status.HARNESS_ERROR,
            candidate={},
            device={"kind": "cpu", "name": "test"},
            agent="special",
            run_id="runA",
            attempt=2,
        ),
    )
    records.append(
        tmp_path / "runA" / "records.jsonl",
        Verdict(
            task_id="torch2hip/c",
            category="torch2hip",
            split="heldout",
            status=Status.TASK_ERROR,
            candidate={},
            device={"kind": "cpu", "name": "test"},
            agent="special",
            run_id="runA",
            attempt=2,
        ),
    )
    md = build_report([tmp_path / "runA"], tmp_path / "rep2")["md"].read_text()
    infra = md.split("## Infrastructure failures (not scored)")[1].split("## ")[0]
    assert "2 verdicts" in infra and "None has a retry left" in infra and "(attempt 2)" in infra


def test_compare_leaves_unscored_verdicts_out_and_counts_correct_pairs(tmp_path, capsys):
    untimed = [(a, t, s, st, None) for a, t, s, st, _ in RUN_A]
    _write_run(tmp_path / "runA", untimed + [("special", "torch2hip/c", "seen", "HARNESS_ERROR", None)])
    _write_run(tmp_path / "runB", untimed + [("special", "torch2hip/c", "seen", "PASSED", None)])
    rows = {
        r.split: r for r in compare_runs(tmp_path / "runA", tmp_path / "runB", agent_a="special", agent_b="special")
    }
    seen = rows["seen"]
    assert seen.n_common == 2 and seen.n_both_correct == 2 and seen.n_both_timed == 0  # c is not common
    assert seen.changed == [] and seen.correct_diff == 0
    assert main(["compare", str(tmp_path / "runA"), str(tmp_path / "runB")]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out


# --- how a report reads: the summary fits a 1400 px window, plots without data say so, a smoke run says it is one

# injected into a copy of the report: measures the page once loaded, with every column toggle
# off (as a reader first sees it), then on, then off again (so the screenshot shows it folded),
# and writes what it found into the title, which --dump-dom prints
_MEASURE = """<script>
window.addEventListener('load', function () {
  function box(e) { var r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top + scrollY, bottom: r.bottom + scrollY}; }
  function table(id) {
    var t = document.getElementById(id); if (!t) return null;
    var out = box(t); out.box = box(t.parentElement); out.width = t.scrollWidth;
    out.shown = Array.from(t.tHead.rows[0].cells).filter(function (c) {
      return getComputedStyle(c).display !== 'none'; }).map(function (c) { return c.textContent; });
    return out; }
  function state() { return {summary: table('summary'), perTask: table('per-task'),
                             page: document.documentElement.scrollWidth}; }
  var out = {width: innerWidth, folded: state()};
  var toggles = Array.from(document.querySelectorAll('input.more-toggle'));
  toggles.forEach(function (b) { b.click(); }); out.unfolded = state(); toggles.forEach(function (b) { b.click(); });
  out.noData = Array.from(document.querySelectorAll('.nodata')).map(function (e) {
    var b = box(e); b.id = e.id; b.text = e.textContent; return b; });
  out.images = Array.from(document.images).map(function (i) { var b = box(i); b.alt = i.alt; b.natural = i.naturalWidth;
    return b; });
  var smoke = document.getElementById('smoke'); out.smoke = smoke ? smoke.textContent : null;
  document.title = JSON.stringify(out);
});
</script>"""


def _render(report: Path, tmp_path: Path, width: int = 1400, height: int = 2400):
    """(what _MEASURE found, the screenshot in grey levels) of the report in a window of this size."""
    from PIL import Image

    page = tmp_path / "measured.html"
    page.write_text(report.read_text().replace("</body>", _MEASURE + "</body>"))
    shot = tmp_path / "measured.png"
    dom = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={width},{height}",
            "--force-device-scale-factor=1",
            f"--screenshot={shot}",
            "--dump-dom",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title and title.group(1).startswith("{"), "the measuring script did not run"
    return json.loads(htmllib.unescape(title.group(1))), Image.open(shot).convert("L")


def _crop(img, b: dict):
    return img.crop((int(b["left"]), int(b["top"]), int(math.ceil(b["right"])), int(math.ceil(b["bottom"]))))


def _build_quietly(runs, out: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = build_report(runs, out)
    assert [str(w.message) for w in caught] == []  # no matplotlib (or other) warning printed
    return files


def _wide_run(path: Path) -> None:
    """A run with data in nearly every summary column: three agents with long names, three
    categories, every GPU split, timings, roofline fractions, torch.compile, agent costs."""
    tasks = [
        "hip2hip/softmax_online_fused",
        "hip2hip/layer_norm_backward_welford",
        "triton2triton/rms_norm",
        "triton2triton/llama_mlp_decode_block",
        "torch2hip/cross_entropy_backward",
        "torch2hip/fused_adamw_step",
    ]
    agents = ["baseline", "claude-code-sonnet-long-agent-name", "codex-cli-high-reasoning-agent"]
    for i, agent in enumerate(agents):
        for j, task in enumerate(tasks):
            for split in ("seen", "heldout", "random"):
                ok = (i + j + len(split)) % 4 != 0
                status = Status.PASSED if ok else Status.INCORRECT_NUMERICAL
                sp = 1.0 + 0.37 * i + 0.11 * j if ok else None
                records.append(
                    path / "records.jsonl",
                    Verdict(
                        task_id=task,
                        category=task.split("/")[0],
                        split=split,
                        status=status,
                        candidate={},
                        device={"kind": "cuda", "name": "test"},
                        configs=[ConfigResult("c", {"n": 1}, status)],
                        speedup=sp,
                        roofline_fraction=0.2 + 0.05 * j if ok else None,
                        speedup_compiled=0.9 * sp if ok and task.startswith("torch2hip") else None,
                        agent=agent,
                        run_id=path.name,
                        agent_run={"wall_s": 400.0 + 37 * j, "cost_usd": 0.8 + 0.1 * i, "feedback_calls": 3 + j},
                    ),
                )


KEY_TITLES = [
    "agent",
    "category",
    "n",
    "correct seen",
    "correct held-out",
    "correct random",
    "drop held-out",
    "speedup seen (geo)",
]


def test_summary_table_fits_1400px_key_columns_first_the_rest_behind_a_toggle(tmp_path):
    _wide_run(tmp_path / "wide")
    files = _build_quietly([tmp_path / "wide"], tmp_path / "rep")
    m, shot = _render(files["html"], tmp_path)
    width, folded, unfolded = m["width"], m["folded"], m["unfolded"]
    assert width == 1400
    summ = folded["summary"]
    # as first seen: the key columns, in order, nothing cut off, the page does not scroll sideways
    assert summ["shown"][: len(KEY_TITLES)] == KEY_TITLES
    assert "compiled" not in summ["shown"] and "$/task" not in summ["shown"]
    assert summ["right"] <= min(width, summ["box"]["right"]) and summ["width"] <= summ["box"]["right"] - summ["left"]
    assert folded["page"] <= width
    per_task = folded["perTask"]
    assert per_task["shown"][:4] == ["agent", "task", "repeat", "seen"] and "category" not in per_task["shown"]
    assert per_task["right"] <= width
    # the table's right border is on the screenshot: a grey line where the DOM says the table ends
    edge = _crop(shot, {**summ, "left": summ["right"] - 3})
    assert any(
        sum(edge.getpixel((x, y)) < 250 for y in range(edge.height)) > 0.9 * edge.height for x in range(edge.width)
    )
    # unfolded: every column with data, wider than the window, so it scrolls in its box, not the page
    shown = unfolded["summary"]["shown"]
    for title in ("compiled", "$/task", "vs torch.compile (geo)", "agent s/task", "reward", "fast_1.5"):
        assert title in shown
    assert unfolded["summary"]["width"] > width, "the test run is too narrow to need folding"
    assert unfolded["page"] <= width
    assert "category" in unfolded["perTask"]["shown"] and "speedup random" in unfolded["perTask"]["shown"]
    # a column without data takes no room: the smoke split was not run here
    assert "correct smoke" not in shown
    html = files["html"].read_text()
    assert "No data in this report for:" in html and "correct smoke" in html.split("No data in this report for:")[1]
    md = files["md"].read_text()
    assert "| " + " | ".join(KEY_TITLES) in md and "<details><summary>" in md


def test_smoke_run_is_reported_as_smoke_and_empty_plots_say_no_data(tmp_path):
    rows = [
        ("baseline", "triton2triton/rms_norm", "smoke", "PASSED", None),
        ("baseline", "torch2hip/cross_entropy", "smoke", "INCORRECT_NUMERICAL", None),
        ("baseline", "hip2hip/softmax", "smoke", "NOT_RUNNABLE", None),
        ("solution", "triton2triton/rms_norm", "smoke", "PASSED", None),
        ("solution", "torch2hip/cross_entropy", "smoke", "PASSED", None),
        ("solution", "hip2hip/softmax", "smoke", "NOT_RUNNABLE", None),
    ]
    _write_run(tmp_path / "quick", rows)
    files = _build_quietly([tmp_path / "quick"], tmp_path / "rep")
    summary = json.loads(files["summary_json"].read_text())
    assert summary["meta"]["splits"] == ["smoke"]
    rates = {(r["agent"], r["category"]): (r["correct_smoke"], r["n_smoke"]) for r in summary["summary"]}
    assert rates[("baseline", "all")] == (0.5, 2) and rates[("solution", "all")] == (1.0, 2)
    assert rates[("baseline", "torch2hip")] == (0.0, 1)
    md = files["md"].read_text()
    assert "Smoke results on the cpu backend" in md and "not seen, held-out or random results" in md
    assert "| agent | category | n | correct smoke |\n" in md and "| baseline | all | 2 | 50% |" in md
    m, shot = _render(files["html"], tmp_path, height=1800)
    assert m["smoke"] and m["smoke"].startswith("Smoke results on the cpu backend")
    assert m["folded"]["summary"]["shown"] == ["agent", "category", "n", "correct smoke"]
    assert m["folded"]["perTask"]["shown"] == ["agent", "task", "category", "repeat", "smoke"]
    # speedup, drop and roofline have nothing to draw: a "no data" box each, with its text on the screenshot
    assert sorted(b["id"] for b in m["noData"]) == ["nodata-drop", "nodata-roofline", "nodata-speedup"]
    for b in m["noData"]:
        assert "no data" in b["text"]
        assert b["bottom"] <= shot.height and _crop(shot, b).getextrema()[0] < 100  # dark text drawn
    # correctness has data (smoke): one image, drawn, not blank
    assert [(i["alt"], i["natural"] > 0) for i in m["images"]] == [("correctness", True)]
    img = _crop(shot, m["images"][0])
    assert sum(img.histogram()[:200]) > 0.03 * img.width * img.height


def test_a_report_of_nothing_scored_draws_no_empty_plot(tmp_path):
    _write_run(tmp_path / "hip", [("baseline", "hip2hip/softmax", "smoke", "NOT_RUNNABLE", None)])
    files = _build_quietly([tmp_path / "hip"], tmp_path / "rep")
    html = files["html"].read_text()
    assert "data:image/png" not in html and html.count('class="nodata" id="nodata-') == 4
    assert html.count("No scored attempts") == 2 and "<table" not in html
    md = files["md"].read_text()
    assert "Smoke results on the cpu backend" in md and md.count("No scored attempts") == 2
