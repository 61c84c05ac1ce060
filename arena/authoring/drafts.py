"""The drafts an importer marks in a task's config files, read back: each config one line, as
``arena.authoring.importers.common.configs_yaml`` writes it (``- {name: ..., ...}   # DRAFT: why``), a config the
importer drafted marked DRAFT. ``arena tasks check --drop-failing-drafts`` (``arena.authoring.check.check_and_fit``)
takes the drafts the starting kernel fails out of the files, the rest kept as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import yaml

DRAFT_NOTE = re.compile(r"\s#\s*DRAFT\b")


def _config_lines(path: Path) -> list[tuple[str, str | None, bool]]:
    """The lines of a config file as ``configs_yaml`` writes it: (line, the config's name where the line is one
    config, whether the importer marked it a draft: ``- {name: ...}   # DRAFT: ...``)."""
    out: list[tuple[str, str | None, bool]] = []
    for line in path.read_text().splitlines(keepends=True):
        name = None
        if line.startswith("- {"):
            try:
                item = yaml.safe_load(line)
            except yaml.YAMLError:
                item = None
            if isinstance(item, list) and item and isinstance(item[0], dict) and item[0].get("name") is not None:
                name = str(item[0]["name"])
        out.append((line, name, name is not None and bool(DRAFT_NOTE.search(line))))
    return out


def draft_config_names(folder: Path, split: str) -> tuple[list[str], list[str]]:
    """The names of the configs of a task folder's ``configs/SPLIT.yaml``, and of those among them the importer marked
    drafts."""
    path = folder / "configs" / f"{split}.yaml"
    lines = _config_lines(path) if path.is_file() else []
    return [n for _, n, _ in lines if n is not None], [n for _, n, draft in lines if draft and n is not None]


def drop_draft_configs(folder: Path, split: str, names: Iterable[str], own: Iterable[str] = ()) -> list[str]:
    """Take the configs ``names`` of a task folder's ``configs/SPLIT.yaml`` out of it where the importer marked them
    drafts (``_config_lines``), and those of ``own`` whether marked or not (a source's case the device cannot time);
    any other config of the source's own (no DRAFT mark), or a file not in that form, is left as it is. The rest of
    the file is kept as written. Returns the names taken out."""
    path = folder / "configs" / f"{split}.yaml"
    wanted, anyway = set(names), set(own)
    if not (wanted or anyway) or not path.is_file():
        return []
    kept, dropped = [], []
    for line, name, draft in _config_lines(path):
        if name is not None and ((draft and name in wanted) or name in anyway):
            dropped.append(str(name))
        else:
            kept.append(line)
    if dropped:
        if not any(line.startswith("- ") for line in kept):
            kept.append("[]   # DRAFT: every config was dropped (the starting kernel failed them); write them\n")
        path.write_text("".join(kept))
    return dropped
