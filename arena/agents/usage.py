"""Reading tokens, cost and turns from an agent's raw output, by the rules of its YAML.

Formats: ``jsonl`` (one JSON event a line; a rule matches events whose dotted keys equal
``match`` and takes the ``last`` value, the ``sum`` or the ``count``; a list in ``match``
accepts any of its values), ``json`` (one document), ``text`` (a regular expression per
line, fields are group numbers; 12k / 1.2M are understood). A dotted path may hold ``*`` to
sum over every value of a mapping (a per-model breakdown) or every item of a list (the
replies of a trajectory). Lines that are not what the format says are skipped, never fatal.

``input_tokens`` is the prompt tokens not read from a cache, as Anthropic's API counts
them; a program that counts cached tokens in its input (OpenAI's and Gemini's APIs) says
``input_includes_cache: true`` and the cached ones are taken off.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping

FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd", "turns", "error")


def _get(obj: Any, path: str) -> Any:
    parts = path.split(".")
    for i, key in enumerate(parts):
        if key == "*":
            if isinstance(obj, Mapping):
                items = list(obj.values())
            elif isinstance(obj, list):
                items = obj
            else:
                return None
            vals = [_get(v, ".".join(parts[i + 1:])) if i + 1 < len(parts) else v for v in items]
            nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
            return sum(nums) if nums else None
        if not isinstance(obj, Mapping) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.fullmatch(r"([0-9.]+)\s*([kKmM]?)", text.strip())
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    value *= {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}[m.group(2)]
    return round(value) if m.group(2) and abs(value - round(value)) < 1e-6 else value


def _events(fmt: str, raw: str) -> list[Any]:
    if fmt == "json":
        try:
            return [json.loads(raw)]
        except json.JSONDecodeError:
            # some CLIs print log lines before the document: take the last parsable {...} block
            start = raw.rfind("\n{")
            try:
                return [json.loads(raw[start + 1:])] if start >= 0 else []
            except json.JSONDecodeError:
                return []
    out = []
    for line in raw.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def _matches(event: Any, match: Mapping[str, Any]) -> bool:
    return isinstance(event, Mapping) and all(_get(event, k) in v if isinstance(v, list) else _get(event, k) == v
                                              for k, v in match.items())


def _combine(take: str, values: Iterable[Any]) -> Any:
    values = [v for v in values if v is not None]
    if take == "count":
        return len(values)
    if not values:
        return None
    if take == "sum":
        nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return sum(nums) if nums else None
    return values[-1]


def parse_usage(spec: Mapping[str, Any] | None, raw: str) -> dict[str, Any]:
    """The usage fields found in ``raw`` (only those the rules name and the output holds)."""
    out = _parse(spec, raw)
    if spec and spec.get("input_includes_cache") and isinstance(out.get("input_tokens"), (int, float)):
        out["input_tokens"] -= out.get("cache_read_tokens") or 0
    return out


def _parse(spec: Mapping[str, Any] | None, raw: str) -> dict[str, Any]:
    if not spec or spec.get("format", "none") == "none":
        return {}
    fmt = spec["format"]
    out: dict[str, Any] = {}
    if fmt == "text":
        lines = raw.splitlines()
        for rule in spec.get("rules", []):
            rx = re.compile(rule["pattern"])
            found = [m for m in (rx.search(ln) for ln in lines) if m]
            take = rule.get("take", "last")
            for name, group in rule.get("fields", {}).items():
                if take == "count":
                    out[name] = len(found)
                    continue
                vals = [_number(m.group(int(group))) for m in found]
                v = _combine(take, vals)
                if v is not None:
                    out[name] = v
        return out
    events = _events(fmt, raw)
    for rule in spec.get("rules", []):
        chosen = [e for e in events if _matches(e, rule.get("match", {}))]
        take = rule.get("take", "last")
        for name, path in rule.get("fields", {}).items():
            if take == "count":
                out[name] = len(chosen)
                continue
            v = _combine(take, (_get(e, str(path)) for e in chosen))
            if v is not None:
                out[name] = v
    return out
