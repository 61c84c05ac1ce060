"""Agent workspaces hold only what an agent may see: never held-out or smoke configs,
the shape space, seeds or solutions."""

from __future__ import annotations

import pytest
import yaml

from arena.taskdef.loader import discover_tasks, load_task
from arena.workspace import editable_name, harvest, make_workspace

FOLDERS = discover_tasks()


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{f.parent.name}/{f.name}" for f in FOLDERS])
def test_workspace_hides_what_agents_must_not_see(folder, tmp_path):
    task = load_task(folder)
    ws = make_workspace(task, tmp_path / "ws")
    files = sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*") if p.is_file())
    # a HIP task's headers go with it (CONTRIBUTING: the agent's workspace has them)
    assert files == sorted(["README.md", "reference.py", "configs/seen.yaml", editable_name(task)]
                           + [h.name for h in task.headers])
    text = "\n".join((ws / f).read_text() for f in files)
    seen = task.configs("seen")
    shown = yaml.safe_load((ws / "configs" / "seen.yaml").read_text())
    assert shown == [{"name": c.name, **c.params} for c in seen]
    for c in task.configs("heldout") + task.configs("smoke"):
        # a specific name (with a digit or a dash) that no seen name contains would only be there by a leak;
        # plain words ("odd", "square") may be in the task's own description
        specific = any(ch.isdigit() or ch == "-" for ch in c.name)
        if specific and not any(c.name in s.name for s in seen):
            assert c.name not in text, f"held-out/smoke config {c.name} leaked"
    assert "shape_space" not in text and "constraint" not in text
    for role in ("solution", "specialised"):
        f = task.kernel_file(role)
        if f is not None:
            assert f.read_text() not in text
    assert harvest(task, ws) == ws / editable_name(task)
    if task.category == "torch2hip":
        assert f'extern "C" int {task.entry}(' in (ws / "kernel.hip").read_text()
