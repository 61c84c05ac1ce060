"""The records of real GPU runs committed under reports/validation are test data: each one is
reported and compared as a reader would, and what a reader sees holds up (every file reports,
its HTML has a plot wherever its summary has data, no number is NaN or infinite, rates lie in
[0, 1], no interval leaves out its own point estimate, a run compared with itself shows no
change)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for p in (ROOT / "reports" / "validation").glob("*records*.jsonl*"))
RATE = ("compile_rate", "correct_", "p_", "drop_", "fast_")


def test_there_are_committed_runs():
    assert len(FILES) >= 50


def _numbers(row: dict) -> dict[str, float]:
    return {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


@pytest.mark.parametrize("path", FILES, ids=[p.name.split(".")[0] for p in FILES])
def test_a_committed_run_reports_and_compares_soundly(path, tmp_path):
    from arena.report import build_report
    from arena.report.compare import compare_runs

    files = build_report([path], tmp_path / "report")
    text = files["summary_json"].read_text()
    assert "NaN" not in text and "Infinity" not in text       # a value that does not exist is null
    summary = json.loads(text)["summary"]
    assert summary, f"{path.name}: nothing scored"
    for row in summary:
        nums = _numbers(row)
        where = f"{path.name} {row.get('agent')} {row.get('category')}"
        for k, v in nums.items():
            assert math.isfinite(v), f"{where}: {k} = {v}"
            if k.startswith(RATE) and not k.endswith("_std"):
                assert 0.0 <= v <= 1.0, f"{where}: {k} = {v}"
            if k.startswith(("speedup_", "roofline_")) and k.endswith(("_geomean", "_mean")):
                assert v > 0, f"{where}: {k} = {v}"
            if k.startswith("n_") or k in ("attempts", "tasks"):
                assert v >= 0 and float(v).is_integer(), f"{where}: {k} = {v}"
        for s in ("heldout", "random"):
            d, lo, hi = row.get(f"drop_{s}"), row.get(f"drop_{s}_lo"), row.get(f"drop_{s}_hi")
            if d is not None:
                assert lo is not None and hi is not None and lo <= d <= hi, f"{where}: drop_{s} {lo} {d} {hi}"
    html = files["html"].read_text()
    assert html.count('src="data:image/png;base64,') >= 1, f"{path.name}: no plot"
    if any(r.get("n_seen_correct_heldout") for r in summary):
        assert 'alt="drop"' in html, f"{path.name}: a held-out drop to show, and no plot of it"
    for comp in compare_runs(path, path):
        assert not comp.changed and comp.correct_diff == 0, f"{path.name} {comp.split}"
        if comp.n_both_timed:
            assert comp.log_speedup_diff == 0 and comp.log_speedup_ci[0] <= 0 <= comp.log_speedup_ci[1]
