"""One agent run as a self-contained HTML page (``arena transcript RUN TASK --out F.html``).

Reads the artifacts the runner keeps per (agent, task, repeat): the raw output
(transcript.raw: JSON events or text), the program's own record of the session where its
adapter names one (transcript.json or .jsonl: mini-swe-agent's trajectory, Codex's
rollout), agent.json,
prompt.md, feedback.jsonl and the collected kernel, plus the records. Shows the run's badges
(program version, wall time, exit reason, tokens, cost, feedback calls, verdicts), the
prompt, every event as a collapsible turn with its text, tool calls (commands, with what
they printed) and token counts, edits of files as diffs, the feedback calls, and the diff
of the collected kernel against the starting one. No script, no external resource.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from pathlib import Path
from typing import Any, Iterable

from arena import records
from arena.errors import ArenaError
from arena.taskdef.loader import load_task, select_tasks

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1b1b1b}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em}
.badge{display:inline-block;border-radius:9px;padding:1px 8px;margin:2px;background:#eef;font-size:12px}
.badge.ok{background:#dfd}.badge.bad{background:#fdd}
details{border:1px solid #ddd;border-radius:6px;margin:4px 0;padding:4px 8px}
summary{cursor:pointer} summary .kind{font-weight:600;margin-right:.5em}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:6px;border-radius:4px;font-size:12px}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#6a737d}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 8px;font-size:13px}
"""

EDIT_KEYS = (("old_string", "new_string"), ("old_str", "new_str"), ("search", "replace"))
CONTENT_KEYS = ("content", "file_text", "contents", "new_content", "patch", "diff")


def _e(x: Any) -> str:
    return html.escape(str(x))


def _diff_html(a: str, b: str, name_a: str = "before", name_b: str = "after") -> str:
    rows = []
    for line in difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, lineterm=""):
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else ""
        rows.append(f'<span class="{cls}">{_e(line)}</span>')
    return "<pre>" + ("\n".join(rows) or "(no change)") + "</pre>"


TEXT_KEYS = ("text", "result", "response", "thinking", "content", "output", "aggregated_output", "message")


def _texts(obj: Any) -> Iterable[str]:
    """Human text in an event (what was said, what a command printed), depth first; not the
    arguments of tool calls, which are shown as calls."""
    if isinstance(obj, dict):
        skip = {"input", "arguments", "args", "parameters", "command", "extra"}
        for k, v in obj.items():
            if k in TEXT_KEYS and isinstance(v, str) and v.strip():
                yield v
            elif isinstance(v, (dict, list)) and k not in skip:
                yield from _texts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _texts(v)


def _tool_calls(obj: Any) -> Iterable[tuple[str, Any]]:
    """(name, input) of tool calls in an event, whatever the CLI calls them: Claude Code's
    tool_use blocks, OpenAI's function calls, OpenCode's tool parts, Gemini CLI's tool_use
    events, Codex's command and file-change items."""
    if isinstance(obj, dict):
        if obj.get("type") == "command_execution" and isinstance(obj.get("command"), str):
            yield "command", {"command": obj["command"]}
            return
        if obj.get("type") == "file_change" and isinstance(obj.get("changes"), list):
            yield "file_change", {"changes": obj["changes"]}
            return
        name = obj.get("name") or obj.get("tool") or obj.get("tool_name")
        state = obj.get("state") if isinstance(obj.get("state"), dict) else {}
        args = next((obj[k] for k in ("input", "arguments", "args", "parameters") if k in obj), state.get("input"))
        if isinstance(name, str) and args is not None:
            yield name, args
            return
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and k != "extra":     # mini-swe-agent's copy of the reply
                yield from _tool_calls(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _tool_calls(v)


def _usage_badges(obj: Any) -> str:
    if not isinstance(obj, dict):
        return ""
    usage = obj.get("usage")
    for holder in ("message", "part"):       # Claude Code's assistant events; OpenCode's step parts
        if not isinstance(usage, dict) and isinstance(obj.get(holder), dict):
            usage = obj[holder].get("usage") or obj[holder].get("tokens")
    extra = obj.get("extra")
    if not isinstance(usage, dict) and isinstance(extra, dict) and isinstance(extra.get("response"), dict):
        usage = extra["response"].get("usage")       # a mini-swe-agent reply
    if not isinstance(usage, dict):
        return ""
    return "".join(f'<span class="badge">{_e(k)} {_e(v)}</span>' for k, v in usage.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool))


def _tool_html(name: str, args: Any) -> str:
    out = f'<div><span class="badge">tool</span> <b>{_e(name)}</b>'
    if isinstance(args, str) and args.lstrip().startswith("*** Begin Patch"):    # Codex's apply_patch
        return out + _patch_html(args) + "</div>"
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return out + f"<pre>{_e(args)}</pre></div>"
    if isinstance(args, dict) and isinstance(args.get("changes"), list):        # Codex reports no content
        return out + "".join(f" <code>{_e(c.get('path'))}</code> ({_e(c.get('kind'))})" for c in args["changes"]
                             if isinstance(c, dict)) + "</div>"
    shell = next((k for k in ("command", "cmd")
                  if isinstance(args, dict) and isinstance(args.get(k), (str, list))), None)
    if shell is not None and len(args) <= 4:
        cmd = args[shell] if isinstance(args[shell], str) else " ".join(map(str, args[shell]))
        if "<<" in cmd and "\n" in cmd:  # a file written through the shell: shown as an edit
            return (
                out
                + f"<pre>{_e(cmd.splitlines()[0])}</pre>"
                + _diff_html("", "\n".join(cmd.splitlines()[1:-1]), "/dev/null", "written")
                + "</div>"
            )
        return out + f"<pre>$ {_e(cmd)}</pre></div>"
    if isinstance(args, dict):
        path = args.get("file_path") or args.get("path") or args.get("filePath") or args.get("filename") or ""
        if path:
            out += f" <code>{_e(path)}</code>"
        for old, new in EDIT_KEYS:
            if isinstance(args.get(old), str) and isinstance(args.get(new), str):
                return out + _diff_html(args[old], args[new], "old", "new") + "</div>"
        for key in CONTENT_KEYS:
            if isinstance(args.get(key), str):
                return out + _diff_html("", args[key], "/dev/null", str(path or key)) + "</div>"
    return out + f"<pre>{_e(json.dumps(args, indent=1)[:6000])}</pre></div>"


def _patch_html(patch: str) -> str:
    rows = []
    for line in patch.splitlines():
        cls = (
            "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "hunk"
            if line.startswith(("@@", "***"))
            else ""
        )
        rows.append(f'<span class="{cls}">{_e(line)}</span>')
    return "<pre>" + "\n".join(rows) + "</pre>"


def _event_html(i: int, ev: Any) -> str:
    if not isinstance(ev, dict):
        return f"<details><summary>{i}</summary><pre>{_e(ev)}</pre></details>"
    kind = " / ".join(str(ev[k]) for k in ("type", "subtype", "role") if isinstance(ev.get(k), str))
    item = next((ev[k] for k in ("item", "part", "payload") if isinstance(ev.get(k), dict)), None)
    if isinstance(item, dict) and isinstance(item.get("type"), str):  # Codex items and rollout, OpenCode parts
        kind += f" / {item['type']}"
    texts = list(_texts(ev))
    first = next((ln.strip()[:140] for t in texts[:1] for ln in t.splitlines() if re.search(r"\w", ln)), "")
    calls = list(_tool_calls(ev))
    if calls:
        first = "→ " + ", ".join(n for n, _ in calls) + (f": {first}" if first else "")
    body = "".join(f"<pre>{_e(t[:20000])}</pre>" for t in texts)
    body += "".join(_tool_html(n, a) for n, a in calls)
    body += f"<details><summary>raw event</summary><pre>{_e(json.dumps(ev, indent=1)[:20000])}</pre></details>"
    return (
        f'<details><summary><span class="kind">{_e(kind or "event")}</span>{_e(first)} '
        f"{_usage_badges(ev)}</summary>{body}</details>"
    )


def _events(raw: str) -> list[Any] | None:
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    evs: list[Any] = []
    for ln in lines:
        try:
            evs.append(json.loads(ln))
        except json.JSONDecodeError:
            evs.append(ln)
    if lines and sum(isinstance(e, dict) for e in evs) >= max(1, len(evs) // 2):
        return evs
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):  # a trajectory: one turn a message
        return [m for m in doc["messages"]] + [{k: v for k, v in doc.items() if k != "messages"}]
    return [doc] if isinstance(doc, dict) else None


def find_run_artifacts(run: Path, task_id: str, agent: str | None = None, repeat: int | None = None) -> Path:
    base = Path(run) / "artifacts"
    found = sorted(
        p
        for p in base.glob(f"*/{task_id}/*")
        if p.is_dir()
        and p.name.isdigit()
        and (agent is None or p.parts[-4] == agent)
        and (repeat is None or int(p.name) == repeat)
    )
    if not found:
        raise ArenaError(f"no artifacts of {task_id} in this run" + (f" for agent {agent}" if agent else ""), path=base)
    if len(found) > 1 and agent is None and len({p.parts[-4] for p in found}) > 1:
        raise ArenaError(
            f"{task_id} was run by several agents here ({', '.join(sorted({p.parts[-4] for p in found}))});"
            " name one with --agent",
            path=base,
        )
    return found[0]


def _why(v: records.Verdict) -> str:
    """A verdict's message, and its first failing config's message and traceback (in the
    candidate's file, as ``arena eval`` prints it)."""
    from arena.evaluation.tracebacks import render

    lines = [v.message] if v.message else []
    bad = next((c for c in v.configs if not c.status.passed), None)
    if bad is not None:
        if bad.message and bad.message != v.message:
            lines.append(f"config {bad.name}: {bad.message}")
        lines += render(bad.traceback)
    return "\n".join(lines)[:20000]


def render_transcript(art: Path, *, tasks_dir: Path | None = None) -> str:
    art = Path(art)
    repeat = int(art.name)
    task_id = "/".join(art.parts[-3:-1])
    agent = art.parts[-4]
    run = art.parents[4]
    meta = json.loads((art / "agent.json").read_text()) if (art / "agent.json").is_file() else {}
    verdicts = [
        v
        for v in records.read(run / "records.jsonl")
        if v.task_id == task_id and v.agent == agent and v.repeat == repeat
    ]
    info = next((v.agent_run for v in verdicts if v.agent_run), {})
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(agent)} on {_e(task_id)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>{_e(agent)} on {_e(task_id)} <small>(repeat {repeat}, run {_e(run.name)})</small></h1><div>",
    ]
    for k in (
        "version",
        "exit_reason",
        "message",
        "wall_s",
        "feedback_calls",
        "turns",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "sandbox",
    ):
        if info.get(k) is not None:
            parts.append(f'<span class="badge">{_e(k)} {_e(info[k])}</span>')
    for v in verdicts:
        ok = v.counts_as_pass
        sp = f" {v.speedup:.2f}x" if v.speedup else ""
        parts.append(f'<span class="badge {"ok" if ok else "bad"}">{_e(v.split)}: {_e(v.status.value)}{sp}</span>')
    parts.append("</div>")
    failed = [v for v in verdicts if not v.counts_as_pass]
    if failed:
        parts.append("<h2>Why it did not pass</h2>")
        for v in failed:
            parts.append(f"<h3>{_e(v.split)}: {_e(v.status.value)}</h3><pre>{_e(_why(v))}</pre>")
    if (art / "prompt.md").is_file():
        parts.append(
            f"<h2>Prompt</h2><details><summary>the prompt the agent got</summary>"
            f"<pre>{_e((art / 'prompt.md').read_text())}</pre></details>"
        )
    raw = (art / "transcript.raw").read_text(errors="replace") if (art / "transcript.raw").is_file() else ""
    own_file = next((art / n for n in ("transcript.json", "transcript.jsonl") if (art / n).is_file()), None)
    own = own_file.read_text(errors="replace") if own_file is not None else ""
    parts.append("<h2>Transcript</h2>")
    evs = _events(own) if own else None
    if evs is not None:  # the program's own record of the session; then what it printed
        parts += [_event_html(i, ev) for i, ev in enumerate(evs)]
        if raw.strip():
            parts.append(
                f"<details><summary>what the program printed</summary><pre>{_e(raw[-200000:])}</pre></details>"
            )
    else:
        evs = _events(raw)
        if evs is None:
            parts.append(f"<pre>{_e(raw[-200000:])}</pre>")
        else:
            parts += [_event_html(i, ev) for i, ev in enumerate(evs)]
    if (art / "agent.stderr").is_file() and (art / "agent.stderr").stat().st_size:
        parts.append(
            f"<details><summary>stderr</summary><pre>{_e((art / 'agent.stderr').read_text(errors='replace')[-50000:])}"
            "</pre></details>"
        )
    fb = art / "feedback.jsonl"
    if fb.is_file():
        rows = [json.loads(x) for x in fb.read_text().splitlines() if x.strip()]
        parts.append(
            "<h2>Feedback calls</h2><table><tr><th>#</th><th>status</th><th>speedup (median)</th>"
            "<th>reward</th><th>seconds</th></tr>"
        )
        parts += [
            f"<tr><td>{r['index']}</td><td>{_e(r['status'])}</td><td>{_e(r.get('speedup_median'))}</td>"
            f"<td>{_e(r.get('reward'))}</td><td>{_e(r.get('seconds'))}</td></tr>"
            for r in rows
        ]
        parts.append("</table>")
    kernel = next((p for p in art.iterdir() if p.name in ("kernel.py", "kernel.hip")), None)
    if kernel is not None:
        start = ""
        try:
            task = load_task(select_tasks(task_id, tasks_dir)[0])
            base = task.kernel_file("baseline")
            if base is not None:
                start = base.read_text()
            else:
                from arena.taskdef.skeleton import hip_skeleton

                start = hip_skeleton(task)
        except ArenaError:
            pass
        parts.append(f"<h2>Collected {kernel.name} against the starting kernel</h2>")
        parts.append(_diff_html(start, kernel.read_text(), "starting kernel", kernel.name))
    if meta:
        parts.append(f"<details><summary>agent.json</summary><pre>{_e(json.dumps(meta, indent=1))}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)
