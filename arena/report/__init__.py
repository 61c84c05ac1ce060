"""Reports over run directories: metrics (pandas), plots (matplotlib), CSV / JSON / MD / HTML.

``build_report(runs, out)`` reads only records.jsonl files and writes summary.csv,
summary.json, per_task.csv, verdicts.csv, report.md and one self-contained report.html
(plots inlined as PNG, a per-task table that sorts on click). Tables show their key columns
first and fold the rest (``table_layout``); a plot without data is a "no data" note; a run of
the smoke split alone says so at its head.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from arena import records
from arena.devices.ceilings import SOL_MARGIN
from arena.errors import ArenaError
from arena.records import Status, Verdict
from arena.report import metrics

SUMMARY_COLUMNS = [
    ("agent", "agent"),
    ("category", "category"),
    ("attempts", "n"),
    ("compile_rate", "compiled"),
    ("correct_seen", "correct seen"),
    ("correct_heldout", "correct held-out"),
    ("correct_random", "correct random"),
    ("correct_smoke", "correct smoke"),
    ("n_random", "n random"),
    ("n_seen_correct_heldout", "n seen-correct"),
    ("drop_heldout", "drop held-out"),
    ("drop_random", "drop random"),
    ("speedup_seen_geomean", "speedup seen (geo)"),
    ("sol_seen_mean", "SOL seen"),
    ("sol_seen_cover", "SOL seen covers"),
    ("speedup_seen_mean", "speedup seen (mean)"),
    ("n_speedup_seen", "n timed"),
    ("speedup_heldout_geomean", "speedup held-out (geo)"),
    ("speedup_compiled_seen_geomean", "vs torch.compile (geo)"),
    ("fast_1", "fast_1"),
    ("fast_1.5", "fast_1.5"),
    ("fast_2", "fast_2"),
    ("roofline_seen_geomean", "roofline (geo)"),
    ("reward_seen_mean", "reward"),
    ("agent_wall_s_mean", "agent s/task"),
    ("cost_usd_mean", "$/task"),
    ("feedback_calls_mean", "checks/task"),
    ("no_edit", "no edit"),
    ("speedup_per_usd", "(speedup-1)/$"),
    ("speedup_per_hour", "(speedup-1)/h"),
]
# The columns a reader needs first, in this order, where the frame has them. A table shows these,
# then the rest of its column list behind a toggle (HTML) or in a folded section (Markdown), so it
# fits a 1400 px window whatever columns the metrics add; a column without data in any row is
# left out and named under the table (``table_layout``).
KEY_SUMMARY_COLUMNS = (
    "agent",
    "category",
    "attempts",
    "correct_seen",
    "correct_heldout",
    "correct_random",
    "correct_smoke",
    "drop_heldout",
    "speedup_seen_geomean",
    "sol_seen_mean",
)
KEY_PER_TASK_COLUMNS = (
    "agent",
    "task_id",
    "repeat",
    "status_seen",
    "status_heldout",
    "status_random",
    "status_smoke",
    "speedup_seen",
    "sol_seen",
)
PER_TASK_FOLD = 9  # a per-task table of more columns than this shows its key columns first, the rest folded
AGENT_RUN_COLUMNS = [
    ("agent", "agent"),
    ("outcome", "outcome"),
    ("attempts", "attempts"),
    ("message", "the program's words (most frequent)"),
]
AGENT_RUNS_NOTE = (
    "How each agent's runs ended (agents driven through a program): finished; no_edit, finished "
    "without changing the kernel (scored as the starting kernel: the summary's 'no edit'); budget, "
    "stopped at its budget and judged on the kernel it left; crashed and not_started, the agent's "
    "failure on every split (AGENT_FAILED), whatever the file it left; auth and unreachable, refused "
    "by or cut off from its model service (AGENT_UNAVAILABLE: not scored; --resume asks the agent "
    "again); no_file, the kernel file deleted."
)


def load_runs(runs: Sequence[Path | str]) -> list[Verdict]:
    """The verdicts that stand in each run's records.jsonl (``records.current``: a split redone
    by ``arena run --resume`` counts once, as redone)."""
    out: list[Verdict] = []
    for r in runs:
        p = Path(r)
        path = p / "records.jsonl" if p.is_dir() else p
        if not path.is_file():
            raise ArenaError("no records.jsonl here", path=p)
        out.extend(records.current(records.read(path)))
    if not out:
        raise ArenaError("the runs hold no records", path=", ".join(str(r) for r in runs))
    return out


def _fmt(v, kind: str = "f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if kind == "pct":
        return f"{v * 100:.0f}%"
    if kind == "x":
        return f"{v:.2f}x"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _kind_of(col: str) -> str:
    if col.startswith(("correct", "compile", "drop", "fast", "roofline", "p_", "sol_")):
        return "pct"
    if col.startswith("speedup"):
        return "x"
    return "f"


def _drop_cell(row) -> str:
    d = row.get("drop_heldout")
    if d is None or (isinstance(d, float) and math.isnan(d)):
        return "-"
    return f"{d * 100:.0f}% [{row['drop_heldout_lo'] * 100:.0f}-{row['drop_heldout_hi'] * 100:.0f}]"


def _cell(row, col: str) -> str:
    return _drop_cell(row) if col == "drop_heldout" else _fmt(row.get(col), _kind_of(col))


def _no_data(rows: list[dict], col: str) -> bool:
    """Nothing to show in any row (``df.to_dict("records")``): every cell '-' (or blank), or a count (n_...)
    that is 0 everywhere."""
    cells = [_cell(row, col) for row in rows]
    if all(c in ("-", "") for c in cells):
        return True
    return col.startswith("n_") and all(c == "0" for c in cells)


Columns = list[tuple[str, str]]


def table_layout(df: pd.DataFrame, columns: Columns, key: Sequence[str]) -> tuple[Columns, Columns, Columns]:
    """(key, more, empty): the columns of ``columns`` (name, title) that ``df`` has, in three
    parts: those named in ``key`` that hold data, in ``key``'s order; the others that hold data,
    in the list's order; those without data in any row (``_no_data``). A column ``df`` lacks is
    in none of them, so a table follows whatever columns the metrics compute."""
    present = [(c, t) for c, t in columns if c in df.columns]
    rows = df.to_dict("records")    # once: a row of iterrows() is a Series built anew for every column asked
    empty = [(c, t) for c, t in present if _no_data(rows, c)]
    filled = [ct for ct in present if ct not in empty]
    rank = {c: i for i, c in enumerate(key)}
    first = sorted((ct for ct in filled if ct[0] in rank), key=lambda ct: rank[ct[0]])
    return first, [ct for ct in filled if ct[0] not in rank], empty


NOTHING_SCORED = "No scored attempts: every verdict of these runs is left out of the scores (see below)."


def _no_data_line(empty: Columns) -> str:
    return f"No data in this report for: {', '.join(t for _, t in empty)}." if empty else ""


def summary_table_md(summ: pd.DataFrame) -> str:
    """The key columns as a table; the other columns with data in a second one (agent and
    category repeated), folded in <details>; the columns without data named in one line."""
    if summ.empty:
        return NOTHING_SCORED
    first, more, empty = table_layout(summ, SUMMARY_COLUMNS, KEY_SUMMARY_COLUMNS)
    out = [_md_table(summ, first)]
    if more:
        ids = [ct for ct in first if ct[0] in ("agent", "category")]
        titles = ", ".join(t for _, t in more)
        out += [
            "",
            f"<details><summary>{len(more)} more column{'s' if len(more) > 1 else ''}: {titles}</summary>",
            "",
            _md_table(summ, ids + more),
            "",
            "</details>",
        ]
    if empty:
        out += ["", _no_data_line(empty)]
    return "\n".join(out)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


@dataclass
class Plot:
    """One figure of the report: a PNG (base64), or where the runs give it nothing to draw, no
    PNG and a note that says why (the report prints "no data" and the note, not empty axes)."""

    name: str
    title: str
    png: str | None
    note: str = ""


def _finite(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v)


_SPLIT_LABEL = {"seen": "seen", "heldout": "held-out", "random": "random", "smoke": "smoke"}


def plots(pt: pd.DataFrame, summ: pd.DataFrame) -> list[Plot]:
    """Speedups, correctness per split, drop per category, roofline fractions; each figure is
    drawn only where the runs have data for it (a ``Plot`` without a PNG otherwise)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Plot] = []
    agents = sorted(pt["agent"].unique()) if not pt.empty else []
    cats = sorted(pt["category"].unique()) if not pt.empty else []

    title = "Speedup per task, correct attempts"
    labels, data = [], []
    for a in agents:
        for c in cats:
            g = pt[(pt.agent == a) & (pt.category == c)]
            labels.append(f"{a}\n{c}")
            data.append([v for v in g.get("speedup_seen", []) if _finite(v) and v > 0])
    if any(data):
        fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(agents) * max(len(cats), 1)), 3.8))
        for i, vals in enumerate(data):
            if vals:
                ax.scatter([i + 1] * len(vals), vals, alpha=0.7, s=18)
                ax.hlines(math.exp(sum(math.log(v) for v in vals) / len(vals)), i + 0.7, i + 1.3, colors="k")
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("speedup on seen (log; bar = geomean)")
        ax.set_title(title)
        out.append(Plot("speedup", title, _png(fig)))
    else:
        out.append(Plot("speedup", title, None, "no attempt was correct and timed on the seen split"))

    allrows = summ[summ.category == metrics.ALL] if not summ.empty else summ

    def rate(a: str, s: str) -> float:
        r = allrows[allrows.agent == a]
        v = r[f"correct_{s}"].iloc[0] if len(r) and f"correct_{s}" in r else math.nan
        return float(v) if _finite(v) else math.nan

    splits = [s for s in metrics.SPLITS if any(not math.isnan(rate(a, s)) for a in agents)]
    title = "Correctness per split"
    if splits:
        title = "Correctness: " + " vs ".join(_SPLIT_LABEL.get(s, s) for s in splits)
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(agents)), 3.6))
        width = 0.75 / len(splits)
        for j, s in enumerate(splits):
            bars = [(i + (j - (len(splits) - 1) / 2) * width, rate(a, s)) for i, a in enumerate(agents)]
            bars = [(x, v) for x, v in bars if not math.isnan(v)]
            ax.bar([x for x, _ in bars], [v for _, v in bars], width, label=_SPLIT_LABEL.get(s, s))
        ax.set_xticks(range(len(agents)), agents)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("fraction of attempts correct")
        ax.legend()
        ax.set_title(title)
        out.append(Plot("correctness", title, _png(fig)))
    else:
        out.append(Plot("correctness", title, None, "no split has a scored verdict"))

    title = "Correctness drop on held-out shapes (95% Wilson interval)"
    sub = summ[summ.category != metrics.ALL] if not summ.empty else summ
    width = 0.8 / max(len(agents), 1)
    series = []
    for j, a in enumerate(agents):
        xs, ys, lo, hi = [], [], [], []
        for i, c in enumerate(cats):
            r = sub[(sub.agent == a) & (sub.category == c)]
            if len(r) and "drop_heldout" in r and _finite(r["drop_heldout"].iloc[0]):
                d = float(r["drop_heldout"].iloc[0])
                xs.append(i + (j - (len(agents) - 1) / 2) * width)
                ys.append(d)
                lo.append(d - float(r["drop_heldout_lo"].iloc[0]))
                hi.append(float(r["drop_heldout_hi"].iloc[0]) - d)
        if xs:
            series.append((a, xs, ys, lo, hi))
    if series:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cats) + 2), 3.6))
        for a, xs, ys, lo, hi in series:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=a)
        ax.set_xticks(range(len(cats)), cats)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("1 - P(held-out ok | seen ok)")
        ax.set_title(title)
        ax.legend()
        out.append(Plot("drop", title, _png(fig)))
    else:
        out.append(Plot("drop", title, None, "no attempt was correct on the seen split with a scored held-out verdict"))

    title = "Roofline fractions"
    data = [[v for v in pt[pt.agent == a].get("roofline_seen", []) if _finite(v)] for a in agents]
    if any(data):
        fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(agents)), 3.4))
        for i, vals in enumerate(data):
            ax.scatter([i] * len(vals), vals, alpha=0.7, s=18)
        ax.set_xticks(range(len(agents)), agents)
        ax.axhline(1.0, color="red", lw=0.8, ls="--")
        ax.set_ylabel("fraction of roofline (seen)")
        ax.set_title(title)
        out.append(Plot("roofline", title, _png(fig)))
    else:
        out.append(Plot("roofline", title, None, "no correct, timed attempt on the seen split has a roofline fraction"))
    return out


_HTML_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f0f0f0;cursor:pointer}
td:first-child,th:first-child,td.l,th.l{text-align:left}
.PASSED{color:#1a7f37}.fail{color:#b3261e}
img{max-width:100%;border:1px solid #eee;margin:6px 0}
td{white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}
.more-toggle:not(:checked)~.wide .more{display:none}
.cols label,.note{font-size:13px;color:#555}
.cols label{cursor:pointer}
.nodata{border:1px dashed #bbb;background:#fafafa;color:#555;padding:16px;margin:6px 0;max-width:640px}
.smoke{border-left:4px solid #d4a72c;background:#fff8e1;padding:8px 12px}
"""

_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th, idx){
  th.addEventListener('click', function(){
    var table = th.closest('table'); var body = table.tBodies[0];
    var rows = Array.from(body.rows); var asc = th.dataset.asc !== '1'; th.dataset.asc = asc ? '1' : '0';
    rows.sort(function(a, b){
      var x = a.cells[idx].dataset.v || a.cells[idx].textContent, y = b.cells[idx].dataset.v ||
      b.cells[idx].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""


def _html_table(
    df: pd.DataFrame,
    columns: list[tuple[str, str]],
    sortable: bool = False,
    table_id: str = "",
    more: Sequence[str] = (),
) -> str:
    """A table of these columns; those named in ``more`` carry the class "more" (hidden until
    their toggle is checked: ``_html_columns``)."""
    cls = ' class="sortable"' if sortable else ""

    def css(col: str, *names: str) -> str:
        names = names + (("more",) if col in more else ())
        return f' class="{" ".join(names)}"' if names else ""

    text_cols = {c for c, _ in columns if c in df.columns and any(isinstance(v, str) for v in df[c])}
    parts = [
        f'<table id="{table_id}"{cls}><thead><tr>'
        + "".join(f"<th{css(c, *(('l',) if c in text_cols else ()))}>{html.escape(t)}</th>" for c, t in columns)
        + "</tr></thead><tbody>"
    ]
    for _, row in df.iterrows():
        cells = []
        for col, _ in columns:
            v = row.get(col)
            text = _cell(row, col)
            num = (
                ""
                if v is None or isinstance(v, str) or (isinstance(v, float) and math.isnan(v))
                else f' data-v="{float(v) if not isinstance(v, bool) else int(v)}"'
            )
            names: tuple[str, ...] = ()
            if isinstance(v, str) and col.startswith("status"):
                names = ("l", "PASSED") if v == "PASSED" else ("l", "fail")
            elif isinstance(v, str):
                names = ("l",)
            cells.append(f"<td{css(col, *names)}{num}>{html.escape(text)}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def per_task_columns(pt: pd.DataFrame) -> list[tuple[str, str]]:
    cols = [("agent", "agent"), ("task_id", "task"), ("category", "category"), ("repeat", "repeat")]
    for s in ("seen", "heldout", "random", "smoke"):
        if f"status_{s}" in pt:
            cols += [(f"status_{s}", f"{s}"), (f"speedup_{s}", f"speedup {s}")]
    if "roofline_seen" in pt:
        cols.append(("roofline_seen", "roofline seen"))
    if "sol_seen" in pt:
        cols.append(("sol_seen", "SOL seen"))
    if "exit_reason" in pt:  # how the agent's run ended (agents driven through a program)
        cols.append(("exit_reason", "agent run"))
    return cols


def per_task_layout(pt: pd.DataFrame) -> tuple[Columns, Columns, Columns]:
    """``table_layout`` of the per-task table: folded only where it has more than PER_TASK_FOLD
    columns with data; otherwise every column with data is shown, in the list's order."""
    columns = per_task_columns(pt)
    first, more, empty = table_layout(pt, columns, KEY_PER_TASK_COLUMNS)
    if len(first) + len(more) <= PER_TASK_FOLD:
        first, more = [ct for ct in columns if ct in first or ct in more], []
    return first, more, empty


def _html_columns(
    df: pd.DataFrame, layout: tuple[Columns, Columns, Columns], table_id: str, sortable: bool = False
) -> str:
    """A table laid out by ``table_layout``: its key columns shown, the others behind a checkbox
    (pure CSS: no script needed), the columns without data named under it. The table sits in a
    box that scrolls sideways, so even unfolded it never runs off the page."""
    if df.empty:
        return '<p class="nodata">No scored attempts.</p>'
    first, more, empty = layout
    parts = ['<div class="cols">']
    if more:
        parts.append(
            f'<input type="checkbox" id="{table_id}-more" class="more-toggle">'
            f'<label for="{table_id}-more"> show {len(more)} more column{"s" if len(more) > 1 else ""}: '
            f"{html.escape(', '.join(t for _, t in more))}</label>"
        )
    parts.append(
        '<div class="wide">'
        + _html_table(df, first + more, sortable=sortable, table_id=table_id, more=[c for c, _ in more])
        + "</div>"
    )
    if empty:
        parts.append(f'<p class="note">{html.escape(_no_data_line(empty))}</p>')
    return "".join(parts) + "</div>"


def smoke_note(verdicts: Sequence[Verdict]) -> str:
    """For a report whose verdicts are all of the smoke split, the sentence that says so at its
    head; '' for any other."""
    if not verdicts or {v.split for v in verdicts} != {"smoke"}:
        return ""
    kinds = sorted({str(v.device.get("kind")) for v in verdicts})
    where = "the cpu backend" if kinds == ["cpu"] else ", ".join(kinds)
    return (
        f"Smoke results on {where}: every verdict here is of the smoke split, the tiny configs that check that "
        "a kernel builds and computes the right output. These are not seen, held-out or random results: they "
        "give no speedup, no correctness drop on held-out shapes and no roofline fraction, and they are a check, "
        "not a benchmark score. "
        + (
            "The seen, heldout and random splits run on a GPU (--device cuda or rocm)."
            if kinds == ["cpu"]
            else "Those come from the seen, heldout and random splits."
        )
    )


def build_report(runs: Sequence[Path | str], out: Path | str, title: str | None = None) -> dict[str, Path]:
    verdicts = load_runs(runs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vf = metrics.verdict_frame(verdicts)
    pt = metrics.per_task(vf)
    summ = metrics.summary(pt)
    files = {
        "summary_csv": out / "summary.csv",
        "summary_json": out / "summary.json",
        "per_task_csv": out / "per_task.csv",
        "verdicts_csv": out / "verdicts.csv",
        "md": out / "report.md",
        "html": out / "report.html",
    }
    summ.to_csv(files["summary_csv"], index=False)
    pt.to_csv(files["per_task_csv"], index=False)
    vf.to_csv(files["verdicts_csv"], index=False)
    meta = _meta(verdicts, runs)
    files["summary_json"].write_text(
        json.dumps({"meta": meta, "summary": json.loads(summ.to_json(orient="records"))}, indent=1)
    )
    title = title or "kernel-arena report"
    flagged = metrics.flagged(vf)
    smoke = smoke_note(verdicts)
    md = (
        [f"# {title}", "", _meta_md(meta), ""]
        + ([f"**{smoke}**", ""] if smoke else [])
        + [
            "## Summary (per agent x category; 'all' = every category)",
            "",
            summary_table_md(summ),
            "",
            "n = attempts (task x repeat); correctness rates over attempts (correct smoke: on the smoke split, the "
            "tiny configs of the cpu backend); drop = 1 - P(held-out ok | seen ok) with a "
            "95% Wilson interval, over n seen-correct attempts; speedups over correct attempts (geometric and "
            "arithmetic means); fast_p = share of all attempts correct on seen and > p x faster; reward = "
            "KernelBench environment reward on seen; SOL = speed of light, the share of the gap between the baseline's "
            "time and the roofline time that a kernel closes (a failure 0, no correct kernel below 0), over attempts, "
            "on the configs "
            f"whose baseline takes at least {SOL_MARGIN:g}x the roofline time (SOL covers: the share of a correct "
            "attempt's configs that have one; the record says why a config has none); agent s/task, $/task, "
            "checks/task = the agent's wall time, cost (where its CLI "
            "reports it) and feedback-tool calls per attempt; (speedup-1)/$ and (speedup-1)/h = the seen geometric "
            "mean speedup gained per dollar and per agent hour; no edit = attempts whose agent left the kernel as "
            "it found it (scored as the starting kernel). Verdicts that are not the candidate's to answer for "
            "(infrastructure failures, NOT_RUNNABLE, agents their model service did not serve) are not scored; they "
            "are listed in sections of their own, with counts per agent.",
            "",
        ]
    )
    if not flagged.empty:
        md += (
            ["## Flagged (not scored)", ""]
            + [f"- {r.agent} {r.task_id} {r.split}: above roofline" for r in flagged.itertuples()]
            + [""]
        )
    unscored = not_scored_sections(vf, _retry_limits(runs))
    for head, intro, rows in unscored:
        md += [f"## {head}", "", intro, ""] + [f"- {' '.join(r)}" for r in rows] + [""]
    runs_of_agents = metrics.agent_runs(vf)
    if not runs_of_agents.empty:
        md += ["## Agent runs", "", AGENT_RUNS_NOTE, "", _md_table(runs_of_agents, AGENT_RUN_COLUMNS), ""]
    first, more, empty = per_task_layout(pt)
    md += (
        ["## Per task", ""]
        + (["No scored attempts."] if pt.empty else [_md_table(pt, first + more)])
        + (["", _no_data_line(empty)] if empty and not pt.empty else [])
    )
    files["md"].write_text("\n".join(md) + "\n")
    figures = plots(pt, summ)
    body = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(_meta_md(meta))}</p>"]
    if smoke:
        body.append(f'<p class="smoke" id="smoke"><strong>{html.escape(smoke)}</strong></p>')
    body += [
        "<h2>Summary</h2>",
        _html_columns(summ, table_layout(summ, SUMMARY_COLUMNS, KEY_SUMMARY_COLUMNS), "summary")
        if not summ.empty
        else f'<p class="nodata">{NOTHING_SCORED}</p>',
        "<p>n = attempts (task x repeat). Correct smoke: on the smoke split, the tiny configs of the cpu backend. "
        "Drop = 1 - P(held-out ok | seen ok), 95% Wilson interval. Speedups over "
        "correct attempts; fast_p over all attempts. Denominators never shrink: crashes, timeouts and flagged "
        "results count as failures. Infrastructure failures and NOT_RUNNABLE verdicts are not the candidate's: "
        "they are not scored, and are listed in sections of their own.</p>",
        "<h2>Plots</h2>",
    ] + [
        f'<img alt="{f.name}" title="{html.escape(f.title)}" src="data:image/png;base64,{f.png}">'
        if f.png
        else f'<div class="nodata" id="nodata-{f.name}"><strong>{html.escape(f.title)}: no data</strong> '
        f"({html.escape(f.note)})</div>"
        for f in figures
    ]
    for head, intro, rows in unscored:
        body += (
            [f"<h2>{html.escape(head)}</h2><p>{html.escape(intro)}</p><ul>"]
            + [f"<li>{html.escape(' '.join(r))}</li>" for r in rows]
            + ["</ul>"]
        )
    if not runs_of_agents.empty:
        body += [
            '<h2 id="agent-runs">Agent runs</h2>',
            f"<p>{html.escape(AGENT_RUNS_NOTE)}</p>",
            _html_table(runs_of_agents, AGENT_RUN_COLUMNS),
        ]
    if not flagged.empty:
        body += (
            ["<h2>Flagged (not scored)</h2><ul>"]
            + [
                f"<li>{html.escape(r.agent)} {html.escape(r.task_id)} {r.split}: above roofline</li>"
                for r in flagged.itertuples()
            ]
            + ["</ul>"]
        )
    body += [
        "<h2>Per task (click a column to sort)</h2>",
        _html_columns(pt, per_task_layout(pt), "per-task", sortable=True),
    ]
    files["html"].write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        + html.escape(title)
        + f"</title><style>{_HTML_STYLE}</style></head><body>"
        + "\n".join(body)
        + f"<script>{_SORT_JS}</script></body></html>\n"
    )
    return files


def _retry_limits(runs: Sequence[Path | str]) -> dict[str, int]:
    """Each run's limit on redoing infrastructure failures, as its run.json states."""
    out = {}
    for r in runs:
        p = Path(r)
        folder = p if p.is_dir() else p.parent
        if (folder / "run.json").is_file():
            try:
                out[folder.name] = records.stated_retry_limit(folder)
            except ArenaError:
                pass
    return out


def not_scored_sections(vf: pd.DataFrame, limits: dict[str, int]) -> list[tuple[str, str, list[tuple[str, ...]]]]:
    """(heading, what it means, rows) for the verdicts kept out of the scores: per agent, how
    many and why; attempts whose agent its model service did not serve; infrastructure
    failures, with counts per agent and status and how many ``arena run --resume`` would redo;
    and NOT_RUNNABLE verdicts with the reason each gives."""
    out = []
    ns = metrics.not_scored(vf)
    if not ns.empty:  # per agent first: how many of its verdicts the scores leave out, and why
        words = {
            "infra": "infrastructure failures",
            "not_runnable": "not runnable here",
            "service": "refused or unreached by the agent's model service",
        }
        rows = []
        for agent, g in ns.groupby("agent", sort=True):
            n_all = int((vf["agent"] == agent).sum())
            parts = [f"{n} {words.get(k, k)}" for k, n in g["kind"].value_counts().sort_index().items()]
            rows.append((f"{agent}:", f"{len(g)} of its {n_all} verdicts not scored ({', '.join(parts)})"))
        out.append(
            (
                "Not scored, per agent",
                "Each agent's rates, speedups and drops are over its scored verdicts "
                "only; these are the ones left out. Agents compared over different numbers of scored verdicts "
                "are compared over different task sets.",
                rows,
            )
        )
    svc = ns[ns["kind"] == "service"]
    if not svc.empty:
        left = sum(
            records.redoable(Status(r.status), int(r.attempt), limits.get(r.run_id, records.INFRA_RETRIES))
            for r in svc.itertuples()
        )
        intro = (
            f"{len(svc)} verdicts of attempts whose agent was refused by its model service or could not reach "
            "it: nothing was asked of the agent, so they are not scored. "
            + (
                f"{left} of them can be redone: run the same `arena run` command with --resume (the agent is asked "
                "again)."
                if left
                else "None has a retry left."
            )
        )
        rows = [(r.agent, r.task_id, r.split, r.status + ":", r.message or "") for r in svc.itertuples()]
        out.append(("Agents not served (not scored)", intro, rows))
    infra = ns[ns["kind"] == "infra"]
    if not infra.empty:
        counts = infra.groupby(["agent", "status"]).size()
        per = "; ".join(f"{a}: {n} {st}" for (a, st), n in counts.items())
        left = sum(
            records.redoable(Status(r.status), int(r.attempt), limits.get(r.run_id, records.INFRA_RETRIES))
            for r in infra.itertuples()
        )
        intro = (
            f"{len(infra)} verdicts failed for a reason that is the harness's or the task's, not the "
            f"candidate's ({per}). They are not scored: no rate, speedup, drop or reward counts them. "
            + (
                f"{left} of them can still be redone: run the same `arena run` command with --resume."
                if left
                else "None has a retry left (run.json states the limit; --infra-retries raises it)."
            )
        )
        rows = [
            (r.agent, r.task_id, r.split, r.status, f"(attempt {r.attempt}):", r.message or "")
            for r in infra.itertuples()
        ]
        out.append(("Infrastructure failures (not scored)", intro, rows))
    nr = ns[ns["kind"] == "not_runnable"]
    if not nr.empty:
        intro = (
            f"{len(nr)} verdicts could not be run on this machine (HIP on the cpu backend). They are neither "
            "passes nor failures and are not scored."
        )
        rows = [(r.agent, r.task_id, r.split, r.status + ":", r.message or "") for r in nr.itertuples()]
        out.append(("Not run on this machine (not scored)", intro, rows))
    return out


def _md_table(df: pd.DataFrame, columns: list[tuple[str, str]]) -> str:
    lines = ["| " + " | ".join(t for _, t in columns) + " |", "|" + "---|" * len(columns)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_cell(row, c) for c, _ in columns) + " |")
    return "\n".join(lines)


def _meta(verdicts: list[Verdict], runs: Iterable) -> dict:
    devices = sorted({f"{v.device.get('kind')} {v.device.get('name')}" for v in verdicts})
    return {
        "runs": sorted({v.run_id for v in verdicts}),
        "devices": devices,
        "records": len(verdicts),
        "splits": [s for s in metrics.SPLITS if any(v.split == s for v in verdicts)],
        "agents": sorted({v.agent for v in verdicts}),
        "tasks": len({v.task_id for v in verdicts}),
        "generated_at": records.utc_now(),
        "versions": verdicts[0].versions if verdicts else {},
    }


def _meta_md(meta: dict) -> str:
    return (
        f"runs: {', '.join(meta['runs'])}; devices: {', '.join(meta['devices'])}; "
        f"splits: {', '.join(meta.get('splits', []))}; {meta['records']} records; "
        f"{meta['tasks']} tasks; agents: {', '.join(meta['agents'])}; generated {meta['generated_at']}"
    )
