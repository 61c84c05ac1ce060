"""Agent workspaces: only what an agent may see, and harvesting the file it edits.

A workspace holds a README rendered from the task (description, signature, tolerances,
rules, the seen configs), the editable kernel file (the starting kernel, or for torch2hip
a skeleton generated from the signature), the reference, and the seen configs. Never:
held-out or smoke configs, the shape space, seeds, solutions, the harness.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import yaml

from arena.errors import ArenaError
from arena.taskdef.loader import Task
from arena.taskdef.skeleton import hip_parameters, hip_skeleton

EDITABLE = {"hip2hip": "kernel.hip", "torch2hip": "kernel.hip", "triton2triton": "kernel.py"}


def editable_name(task: Task) -> str:
    return EDITABLE[task.category]


def render_readme(task: Task) -> str:
    lines = [f"# {task.title}", "", task.description.strip(), "",
             f"Category: {task.category}. Edit `{editable_name(task)}`: it must export `{task.entry}`.", ""]
    if task.category == "triton2triton":
        args = [s.name for s in (*task.inputs, *task.outputs, *task.scalars)]
        lines += [f"Signature: `def {task.entry}({', '.join(args)}) -> None` — write into the outputs, launch on "
                  "the current stream.", ""]
    else:
        lines += [f"Signature: `extern \"C\" int {task.entry}({', '.join(hip_parameters(task))})` — return the "
                  "hipError_t of your launches.", ""]
    lines += ["| tensor | role | dtype | shape |", "|---|---|---|---|"]
    lines += [f"| {t.name} | {input_role(t)} | {t.dtype} | {list(t.shape)} |" for t in task.inputs]
    lines += [f"| {t.name} | output | {t.dtype} | {list(t.shape)} |" for t in task.outputs]
    lines += ["", "Scalars: " + ", ".join(f"{s.name} ({s.type}{'' if s.value is None else ' = ' + str(s.value)})"
                                          for s in task.scalars), ""]
    tol = {o.name: task.tolerance_of(o) for o in task.compared}
    inout = [i.name for i in task.inout_inputs]
    lines += ["Correctness: every output" + (" and every input updated in place (its value after your call)"
                                             if inout else "") +
              " is compared with `reference.py` (computed in higher precision) elementwise and normwise: " +
              "; ".join(f"{k}: {v if v else 'exact'}" for k, v in tol.items()) + ".",
              "Outputs are allocated by the harness and pre-filled with NaN: write every element; never write to "
              "inputs" + (f" other than {', '.join(inout)} (updated in place)" if inout else "") +
              ". Your kernel is also run on shapes you do not see here: it must be correct for any shape the "
              "signature allows.", ""]
    if task.forbidden:
        lines += ["Forbidden calls: " + ", ".join(f"`{f}`" for f in task.forbidden), ""]
    baseline = "the eager PyTorch reference" if task.category == "torch2hip" else "the starting kernel"
    lines += [f"Speed is measured against {baseline} on the configs in `configs/seen.yaml`.", ""]
    return "\n".join(lines)


def input_role(spec) -> str:
    """An input's role as the workspace's table and ``arena tasks show`` say it."""
    role = "input, updated in place" if spec.inout else "input"
    if spec.optional:
        role += f", optional (None / nullptr where {spec.presence} is false)"
    if spec.stride is not None:
        role += f", strided view (element strides {list(spec.stride)})"
    return role


def make_workspace(task: Task, dest: Path) -> Path:
    """Create a fresh workspace for ``task`` in ``dest`` (which must not exist or be empty)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ArenaError("the workspace folder is not empty", path=dest)
    (dest / "configs").mkdir(parents=True, exist_ok=True)
    (dest / "README.md").write_text(render_readme(task))
    shutil.copy2(task.reference_path, dest / "reference.py")
    for header in task.headers:          # the task's headers, which the kernel may include as they are
        shutil.copy2(header, dest / header.name)
    seen = [{"name": c.name, **c.params} for c in task.configs("seen")]
    (dest / "configs" / "seen.yaml").write_text(yaml.safe_dump(seen, sort_keys=False))
    editable = dest / editable_name(task)
    baseline = task.kernel_file("baseline")
    if baseline is not None:
        shutil.copy2(baseline, editable)
    else:
        editable.write_text(hip_skeleton(task))
    return dest


def harvest(task: Task, workspace: Path) -> Path:
    """The file the agent edited; nothing else of the workspace is used."""
    path = Path(workspace) / editable_name(task)
    if not path.is_file():
        raise ArenaError(f"the agent left no {path.name}", path=workspace)
    return path


@contextlib.contextmanager
def scratch_root(prefix: str = "arena-ws-") -> Iterator[Path]:
    """A fresh folder for an agent's workspace and private HOME, removed afterwards (short,
    under $TMPDIR: the feedback socket's path must stay under the Unix limit)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
