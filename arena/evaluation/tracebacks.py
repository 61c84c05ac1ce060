"""A candidate's traceback: where in its own file a failure of its code was raised.

The candidate process (``arena.evaluation.candidate.process``) turns an exception that candidate code raised,
while it was imported or called (a Triton kernel's compile error included), into a short
list of ``TraceEntry``s (``arena.records``): each frame in the candidate's file, named as the
candidate knows it (the file's name in its workspace), with its line, function and source
line; the harness's frames left out; a run of frames in a library collapsed into one entry
("3 frames in triton"). For a Triton compile error the kernel line the compiler points at
is added as a frame of the file. The list crosses to the trusted process in the failure's
reply; that process takes it as data only: ``bounded`` keeps a few entries of short,
printable strings, and nothing in it decides a status. ``render`` gives the lines that
``arena eval`` and the feedback tool print.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import re
import traceback as _tb
from typing import Any, Iterable, Mapping, Sequence

from arena.records import TraceEntry

MAX_ENTRIES = 16          # entries kept: the first HEAD and the last ones, the middle counted in one entry
HEAD = 3
MAX_CHAIN = 4             # exceptions followed along __cause__ / __context__
FILE_CHARS, FUNCTION_CHARS, CODE_CHARS, WHERE_CHARS = 120, 120, 240, 40
MAX_COUNT = 10**7
OMITTED = "(omitted)"     # ``elsewhere`` of the entry standing for the frames cut from the middle

# the arena package (this file is arena/evaluation/tracebacks.py)
_HARNESS = {os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}
_STDLIB = {os.path.dirname(os.path.abspath(os.__file__)), os.path.dirname(os.path.realpath(os.__file__))}
_LIBRARY_DIRS = ("site-packages", "dist-packages")
_COMPILE_ERROR = "CompilationError"       # Triton's front end: its subclasses carry the kernel's source and node


def candidate_traceback(exc: BaseException, own_files: Iterable[str], shown: str) -> list[TraceEntry]:
    """The traceback of ``exc`` as the candidate should see it: frames in one of ``own_files``
    (the paths its file was imported under) named ``shown``; the harness's frames left out;
    runs of other frames collapsed. Never raises: an exception of candidate code may do
    anything when looked at."""
    try:
        return bounded(_entries(exc, frozenset(own_files), shown))
    except BaseException:  # noqa: BLE001 - a traceback is a help, never a reason to fail
        return []


def describe(exc: BaseException) -> str:
    """``Type: message`` of a failure of candidate code; for a Triton compile error raised at a
    call of a ``@triton.jit`` helper, the error inside the helper too (the outer one names only
    the call). Never raises."""
    def one(e: BaseException) -> str:
        try:
            return f"{type(e).__name__}: {e}"
        except BaseException:  # noqa: BLE001 - a message that cannot be made
            return type(e).__name__
    text = one(exc)
    if _is_compile_error(exc):
        e, seen = exc, {id(exc)}
        while isinstance(e.__cause__, BaseException) and id(e.__cause__) not in seen and len(seen) < MAX_CHAIN:
            e = e.__cause__
            seen.add(id(e))
        if e is not exc:
            text += "\n" + one(e)
    return text


def _entries(exc: BaseException, own: frozenset[str], shown: str) -> list[TraceEntry]:
    out: list[TraceEntry] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    last: tuple[str, str] | None = None          # the frame the previous exception of the chain was raised in
    while e is not None and id(e) not in seen and len(seen) < MAX_CHAIN:
        seen.add(id(e))
        compile_error = _is_compile_error(e)
        if len(seen) == 1 or not compile_error:
            # extract_tb: the traceback module's own walk (the audit hook lets it read frames)
            frames = list(_tb.extract_tb(e.__traceback__))
            if frames and last == (frames[0].filename, frames[0].name):
                frames = frames[1:]              # a cause starts in the frame that raised again: counted once
            for fs in frames:
                _add_frame(out, fs.filename, fs.lineno or 0, fs.name, fs.line or "", own, shown)
            if frames:
                last = (frames[-1].filename, frames[-1].name)
        if compile_error:
            site = _compile_site(e, own)
            if site is not None:
                _add_frame(out, site[0], site[1], site[2], site[3], own, shown)
        nxt = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)
        # a cause is followed where the failure surfaced outside the candidate's file (a library wrapped it, as
        # Triton's interpreter and compiler do), not where the candidate's own code raised again
        if nxt is None or (out and not out[-1].elsewhere and not _is_compile_error(nxt)):
            break
        e = nxt
    return out


def _add_frame(out: list[TraceEntry], filename: str, line: int, function: str, code: str,
               own: frozenset[str], shown: str) -> None:
    if filename in own:
        last = out[-1] if out else None
        if last is not None and not last.elsewhere and last.line == line and last.function == function:
            last.frames += 1                      # recursion: one entry, counted
        else:
            out.append(TraceEntry(file=shown, line=line, function=function, code=code.strip()))
        return
    where = _library(filename)
    if where is None:
        return                                    # the harness's own frame
    if out and out[-1].elsewhere == where:
        out[-1].frames += 1
    else:
        out.append(TraceEntry(elsewhere=where))


def _library(filename: str) -> str | None:
    """Where a frame outside the candidate's file is, in one word; None for the harness's own."""
    if filename.startswith("<"):
        return "python"                           # <frozen importlib._bootstrap>, <string>
    d = os.path.dirname(filename)
    for h in _HARNESS:
        if d == h or d.startswith(h + os.sep):
            return None
    parts = filename.replace("\\", "/").split("/")
    for marker in _LIBRARY_DIRS:
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            if i + 1 < len(parts):
                name = parts[i + 1]
                return name[:-3] if name.endswith(".py") else name
    for s in _STDLIB:
        if d == s or d.startswith(s + os.sep):
            return "python"
    return "other files"


def _is_compile_error(e: BaseException) -> bool:
    return any(c.__name__ == _COMPILE_ERROR for c in type(e).__mro__)


def _compile_site(e: BaseException, own: frozenset[str]) -> tuple[str, int, str, str] | None:
    """The kernel line a Triton compile error points at, in the candidate's file: the error
    carries the kernel's source (from its ``def``) and the node's line within it."""
    src = getattr(e, "src", None)
    lineno = getattr(getattr(e, "node", None), "lineno", None)
    if not isinstance(src, str) or not isinstance(lineno, int) or lineno < 1:
        return None
    src_lines = [ln.strip() for ln in src.split("\n")]
    if not src_lines or not src_lines[0].startswith("def "):
        return None
    head = src_lines[:lineno]
    for path in sorted(own):
        lines = linecache.getlines(path)
        for i, ln in enumerate(lines):
            if ln.strip() != head[0]:
                continue
            if all(i + j < len(lines) and lines[i + j].strip() == s for j, s in enumerate(head)):
                m = re.match(r"def\s+(\w+)", head[0])
                at = i + lineno
                return path, at, m.group(1) if m else "", lines[at - 1] if at <= len(lines) else ""
    return None


# ------------------------------------------------------------------------------------------
# The trusted side: what the candidate process said, bounded, and its rendering


def _text(value: Any, n: int) -> str:
    s = value if isinstance(value, str) else ""
    s = s[: n + 1].replace("\t", " ").strip()
    s = "".join(c if c.isprintable() else "?" for c in s)
    return s if len(s) <= n else s[: n - 1] + "…"


def _count(value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return low
    return max(low, min(value, MAX_COUNT))


def _clean(e: Any) -> TraceEntry:
    if isinstance(e, Mapping):
        e = TraceEntry.from_dict(dict(e))
    return TraceEntry(
        file=_text(e.file, FILE_CHARS),
        line=_count(e.line, 0),
        function=_text(e.function, FUNCTION_CHARS),
        code=_text(e.code, CODE_CHARS),
        elsewhere=_text(e.elsewhere, WHERE_CHARS),
        frames=_count(e.frames, 1),
    )


def bounded(entries: Sequence[Any]) -> list[TraceEntry]:
    """At most ``MAX_ENTRIES`` entries, each of short printable strings and sane counts: the
    first ``HEAD`` and the last ones, the frames between counted in one ``OMITTED`` entry.
    The form in which an untrusted process's traceback is kept."""
    entries = list(entries) if not isinstance(entries, list) else entries
    if len(entries) <= MAX_ENTRIES:
        return [_clean(e) for e in entries]
    tail = MAX_ENTRIES - HEAD - 1
    cut = entries[HEAD : len(entries) - tail]
    n = sum(_count(getattr(e, "frames", None) if not isinstance(e, Mapping) else e.get("frames"), 1) for e in cut)
    return (
        [_clean(e) for e in entries[:HEAD]]
        + [TraceEntry(elsewhere=OMITTED, frames=min(n, MAX_COUNT))]
        + [_clean(e) for e in entries[len(entries) - tail :]]
    )


def render(entries: Sequence[TraceEntry | Mapping[str, Any]], indent: str = "") -> list[str]:
    """The traceback as text lines (most recent call last), or no lines for an empty one."""
    if not entries:
        return []
    lines = [f"{indent}traceback in the candidate's file (most recent call last; the harness's frames left out):"]
    for raw in bounded(list(entries)):
        if raw.elsewhere == OMITTED:
            lines.append(f"{indent}  ... {raw.frames} frames omitted")
        elif raw.elsewhere:
            lines.append(f"{indent}  ... {raw.frames} frame{'s' if raw.frames != 1 else ''} in {raw.elsewhere}")
        else:
            again = f" (repeated {raw.frames} times)" if raw.frames > 1 else ""
            lines.append(f"{indent}  {raw.file}:{raw.line} in {raw.function}{again}")
            if raw.code:
                lines.append(f"{indent}    {raw.code}")
    return lines


def as_dicts(entries: Sequence[TraceEntry]) -> list[dict[str, Any]]:
    """The entries as plain dicts (a summary's JSON)."""
    return [dataclasses.asdict(e) for e in entries]
