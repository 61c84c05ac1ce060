"""Reports over run directories: metrics (pandas), plots (matplotlib), CSV / JSON / MD / HTML.

``build_report(runs, out)`` reads only records.jsonl files and writes summary.csv,
summary.json, per_task.csv, verdicts.csv, report.md and one self-contained report.html
(plots inlined as PNG, a per-task table that sorts on click).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from arena import records
from arena.errors import ArenaError
from arena.records import Verdict
from arena.report import metrics

SUMMARY_COLUMNS = [
    ("agent", "agent"), ("category", "category"), ("attempts", "n"), ("compile_rate", "compiled"),
    ("correct_seen", "correct seen"), ("correct_heldout", "correct held-out"), ("correct_random", "correct random"), ("n_random", "n random"),
    ("n_seen_correct_heldout", "n seen-correct"), ("drop_heldout", "drop held-out"),
    ("drop_random", "drop random"), ("speedup_seen_geomean", "speedup seen (geo)"),
    ("speedup_seen_mean", "speedup seen (mean)"), ("n_speedup_seen", "n timed"), ("speedup_heldout_geomean", "speedup held-out (geo)"),
    ("speedup_compiled_seen_geomean", "vs torch.compile (geo)"), ("fast_1", "fast_1"), ("fast_1.5", "fast_1.5"), ("fast_2", "fast_2"),
    ("roofline_seen_geomean", "roofline (geo)"), ("reward_seen_mean", "reward"),
    ("agent_wall_s_mean", "agent s/task"), ("cost_usd_mean", "$/task"), ("feedback_calls_mean", "checks/task"),
    ("speedup_per_usd", "(speedup-1)/$"), ("speedup_per_hour", "(speedup-1)/h"),
]


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
    if col.startswith(("correct", "compile", "drop", "fast", "roofline", "p_")):
        return "pct"
    if col.startswith("speedup"):
        return "x"
    return "f"


def _drop_cell(row) -> str:
    d = row.get("drop_heldout")
    if d is None or (isinstance(d, float) and math.isnan(d)):
        return "-"
    return f"{d * 100:.0f}% [{row['drop_heldout_lo'] * 100:.0f}-{row['drop_heldout_hi'] * 100:.0f}]"


def summary_table_md(summ: pd.DataFrame) -> str:
    head = "| " + " | ".join(t for _, t in SUMMARY_COLUMNS) + " |"
    lines = [head, "|" + "---|" * len(SUMMARY_COLUMNS)]
    for _, row in summ.iterrows():
        cells = []
        for col, _ in SUMMARY_COLUMNS:
            if col == "drop_heldout":
                cells.append(_drop_cell(row))
            else:
                cells.append(_fmt(row.get(col), _kind_of(col)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def plots(pt: pd.DataFrame, summ: pd.DataFrame) -> dict[str, str]:
    """Base64 PNGs: speedups, correctness per split, drop per category, roofline fractions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    agents = sorted(pt["agent"].unique()) if not pt.empty else []
    cats = sorted(pt["category"].unique()) if not pt.empty else []

    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(agents) * max(len(cats), 1)), 3.8))
    labels, data = [], []
    for a in agents:
        for c in cats:
            g = pt[(pt.agent == a) & (pt.category == c)]
            vals = [v for v in g.get("speedup_seen", []) if v is not None and not math.isnan(v) and v > 0]
            labels.append(f"{a}\n{c}")
            data.append(vals)
    for i, vals in enumerate(data):
        if vals:
            ax.scatter([i + 1] * len(vals), vals, alpha=0.7, s=18)
            ax.hlines(math.exp(sum(math.log(v) for v in vals) / len(vals)), i + 0.7, i + 1.3, colors="k")
    ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("speedup on seen (log; bar = geomean)")
    ax.set_title("Speedup per task, correct attempts")
    out["speedup"] = _png(fig)

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(agents)), 3.6))
    allrows = summ[summ.category == metrics.ALL] if not summ.empty else summ
    width = 0.25
    for j, s in enumerate(("seen", "heldout", "random")):
        vals = [float(allrows[allrows.agent == a][f"correct_{s}"].iloc[0]) if len(allrows[allrows.agent == a]) else 0
                for a in agents]
        vals = [0 if math.isnan(v) else v for v in vals]
        ax.bar([i + (j - 1) * width for i in range(len(agents))], vals, width, label=s)
    ax.set_xticks(range(len(agents)), agents)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of attempts correct")
    ax.legend()
    ax.set_title("Correctness: seen vs held-out vs random")
    out["correctness"] = _png(fig)

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cats) + 2), 3.6))
    sub = summ[summ.category != metrics.ALL] if not summ.empty else summ
    width = 0.8 / max(len(agents), 1)
    for j, a in enumerate(agents):
        xs, ys, lo, hi = [], [], [], []
        for i, c in enumerate(cats):
            r = sub[(sub.agent == a) & (sub.category == c)]
            if len(r) and not math.isnan(r["drop_heldout"].iloc[0]):
                d = float(r["drop_heldout"].iloc[0])
                xs.append(i + (j - (len(agents) - 1) / 2) * width)
                ys.append(d)
                lo.append(d - float(r["drop_heldout_lo"].iloc[0]))
                hi.append(float(r["drop_heldout_hi"].iloc[0]) - d)
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=a)
    ax.set_xticks(range(len(cats)), cats)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("1 - P(held-out ok | seen ok)")
    ax.set_title("Correctness drop on held-out shapes (95% Wilson interval)")
    if agents:
        ax.legend()
    out["drop"] = _png(fig)

    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(agents)), 3.4))
    for i, a in enumerate(agents):
        vals = [v for v in pt[pt.agent == a].get("roofline_seen", []) if v is not None and not math.isnan(v)]
        ax.scatter([i] * len(vals), vals, alpha=0.7, s=18)
    ax.set_xticks(range(len(agents)), agents)
    ax.axhline(1.0, color="red", lw=0.8, ls="--")
    ax.set_ylabel("fraction of roofline (seen)")
    ax.set_title("Roofline fractions")
    out["roofline"] = _png(fig)
    return out


_HTML_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f0f0f0;cursor:pointer}
td:first-child,th:first-child,td.l{text-align:left}
.PASSED{color:#1a7f37}.fail{color:#b3261e}
img{max-width:100%;border:1px solid #eee;margin:6px 0}
"""

_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th, idx){
  th.addEventListener('click', function(){
    var table = th.closest('table'); var body = table.tBodies[0];
    var rows = Array.from(body.rows); var asc = th.dataset.asc !== '1'; th.dataset.asc = asc ? '1' : '0';
    rows.sort(function(a, b){
      var x = a.cells[idx].dataset.v || a.cells[idx].textContent, y = b.cells[idx].dataset.v || b.cells[idx].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""


def _html_table(df: pd.DataFrame, columns: list[tuple[str, str]], sortable: bool = False, table_id: str = "") -> str:
    cls = ' class="sortable"' if sortable else ""
    parts = [f'<table id="{table_id}"{cls}><thead><tr>' +
             "".join(f"<th>{html.escape(t)}</th>" for _, t in columns) + "</tr></thead><tbody>"]
    for _, row in df.iterrows():
        cells = []
        for col, _ in columns:
            v = row.get(col)
            if col == "drop_heldout":
                text = _drop_cell(row)
            else:
                text = _fmt(v, _kind_of(col))
            num = "" if v is None or isinstance(v, str) or (isinstance(v, float) and math.isnan(v)) else \
                f' data-v="{float(v) if not isinstance(v, bool) else int(v)}"'
            css = ""
            if isinstance(v, str) and col.startswith("status"):
                css = ' class="l PASSED"' if v == "PASSED" else ' class="l fail"'
            elif isinstance(v, str):
                css = ' class="l"'
            cells.append(f"<td{css}{num}>{html.escape(text)}</td>")
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
    return cols


def build_report(runs: Sequence[Path | str], out: Path | str, title: str | None = None) -> dict[str, Path]:
    verdicts = load_runs(runs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vf = metrics.verdict_frame(verdicts)
    pt = metrics.per_task(vf)
    summ = metrics.summary(pt)
    files = {
        "summary_csv": out / "summary.csv", "summary_json": out / "summary.json", "per_task_csv": out / "per_task.csv",
        "verdicts_csv": out / "verdicts.csv", "md": out / "report.md", "html": out / "report.html",
    }
    summ.to_csv(files["summary_csv"], index=False)
    pt.to_csv(files["per_task_csv"], index=False)
    vf.to_csv(files["verdicts_csv"], index=False)
    meta = _meta(verdicts, runs)
    files["summary_json"].write_text(json.dumps({"meta": meta, "summary": json.loads(summ.to_json(orient="records"))},
                                                indent=1))
    title = title or "kernel-arena report"
    flagged = metrics.flagged(vf)
    md = [f"# {title}", "", _meta_md(meta), "", "## Summary (per agent x category; 'all' = every category)", "",
          summary_table_md(summ), "",
          "n = attempts (task x repeat); correctness rates over attempts; drop = 1 - P(held-out ok | seen ok) with a "
          "95% Wilson interval, over n seen-correct attempts; speedups over correct attempts (geometric and "
          "arithmetic means); fast_p = share of all attempts correct on seen and > p x faster; reward = KernelBench "
          "environment reward on seen; agent s/task, $/task, checks/task = the agent's wall time, cost (where its CLI "
          "reports it) and feedback-tool calls per attempt; (speedup-1)/$ and (speedup-1)/h = the seen geometric "
          "mean speedup gained per dollar and per agent hour. Verdicts that are not the candidate's to answer for "
          "(infrastructure failures, NOT_RUNNABLE) are not scored; they are listed in sections of their own.", ""]
    if not flagged.empty:
        md += ["## Flagged (not scored)", ""] + [f"- {r.agent} {r.task_id} {r.split}: above roofline"
                                                for r in flagged.itertuples()] + [""]
    unscored = not_scored_sections(vf, _retry_limits(runs))
    for head, intro, rows in unscored:
        md += [f"## {head}", "", intro, ""] + [f"- {' '.join(r)}" for r in rows] + [""]
    md += ["## Per task", "", _md_table(pt, per_task_columns(pt))]
    files["md"].write_text("\n".join(md) + "\n")
    imgs = plots(pt, summ)
    body = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(_meta_md(meta))}</p>",
            "<h2>Summary</h2>", _html_table(summ, SUMMARY_COLUMNS, table_id="summary"),
            "<p>n = attempts (task x repeat). Drop = 1 - P(held-out ok | seen ok), 95% Wilson interval. Speedups over "
            "correct attempts; fast_p over all attempts. Denominators never shrink: crashes, timeouts and flagged "
            "results count as failures. Infrastructure failures and NOT_RUNNABLE verdicts are not the candidate's: "
            "they are not scored, and are listed in sections of their own.</p>",
            "<h2>Plots</h2>"] + [f'<img alt="{k}" src="data:image/png;base64,{v}">' for k, v in imgs.items()]
    for head, intro, rows in unscored:
        body += [f"<h2>{html.escape(head)}</h2><p>{html.escape(intro)}</p><ul>"] + [
            f"<li>{html.escape(' '.join(r))}</li>" for r in rows] + ["</ul>"]
    if not flagged.empty:
        body += ["<h2>Flagged (not scored)</h2><ul>"] + [
            f"<li>{html.escape(r.agent)} {html.escape(r.task_id)} {r.split}: above roofline</li>"
            for r in flagged.itertuples()] + ["</ul>"]
    body += ["<h2>Per task (click a column to sort)</h2>",
             _html_table(pt, per_task_columns(pt), sortable=True, table_id="per-task")]
    files["html"].write_text("<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(title) +
                             f"</title><style>{_HTML_STYLE}</style></head><body>" + "\n".join(body) +
                             f"<script>{_SORT_JS}</script></body></html>\n")
    return files


def _retry_limits(runs: Sequence[Path | str]) -> dict[str, int]:
    """Each run's limit on redoing infrastructure failures, as its run.json states."""
    from arena.runner import retry_limit

    out = {}
    for r in runs:
        p = Path(r)
        folder = p if p.is_dir() else p.parent
        if (folder / "run.json").is_file():
            try:
                out[folder.name] = retry_limit(folder, None)
            except ArenaError:
                pass
    return out


def not_scored_sections(vf: pd.DataFrame, limits: dict[str, int]) -> list[tuple[str, str, list[tuple[str, ...]]]]:
    """(heading, what it means, rows) for the verdicts kept out of the scores: infrastructure
    failures, with counts per agent and status and how many ``arena run --resume`` would redo,
    and NOT_RUNNABLE verdicts with the reason each gives."""
    from arena.runner import INFRA_RETRIES

    out = []
    ns = metrics.not_scored(vf)
    infra = ns[ns["kind"] == "infra"]
    if not infra.empty:
        counts = infra.groupby(["agent", "status"]).size()
        per = "; ".join(f"{a}: {n} {st}" for (a, st), n in counts.items())
        left = sum(int(r.attempt) <= limits.get(r.run_id, INFRA_RETRIES) for r in infra.itertuples())
        intro = (f"{len(infra)} verdicts failed for a reason that is the harness's or the task's, not the "
                 f"candidate's ({per}). They are not scored: no rate, speedup, drop or reward counts them. "
                 + (f"{left} of them can still be redone: run the same `arena run` command with --resume."
                    if left else "None has a retry left (run.json states the limit; --infra-retries raises it)."))
        rows = [(r.agent, r.task_id, r.split, r.status, f"(attempt {r.attempt}):", r.message or "")
                for r in infra.itertuples()]
        out.append(("Infrastructure failures (not scored)", intro, rows))
    nr = ns[ns["kind"] == "not_runnable"]
    if not nr.empty:
        intro = (f"{len(nr)} verdicts could not be run on this machine (HIP on the cpu backend). They are neither "
                 "passes nor failures and are not scored.")
        rows = [(r.agent, r.task_id, r.split, r.status + ":", r.message or "") for r in nr.itertuples()]
        out.append(("Not run on this machine (not scored)", intro, rows))
    return out


def _md_table(df: pd.DataFrame, columns: list[tuple[str, str]]) -> str:
    lines = ["| " + " | ".join(t for _, t in columns) + " |", "|" + "---|" * len(columns)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_fmt(row.get(c), _kind_of(c)) for c, _ in columns) + " |")
    return "\n".join(lines)


def _meta(verdicts: list[Verdict], runs: Iterable) -> dict:
    devices = sorted({f"{v.device.get('kind')} {v.device.get('name')}" for v in verdicts})
    return {"runs": sorted({v.run_id for v in verdicts}), "devices": devices, "records": len(verdicts),
            "agents": sorted({v.agent for v in verdicts}), "tasks": len({v.task_id for v in verdicts}),
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": verdicts[0].versions if verdicts else {}}


def _meta_md(meta: dict) -> str:
    return (f"runs: {', '.join(meta['runs'])}; devices: {', '.join(meta['devices'])}; {meta['records']} records; "
            f"{meta['tasks']} tasks; agents: {', '.join(meta['agents'])}; generated {meta['generated_at']}")
