"""Files generated from a task's signature: the torch2hip starting skeleton an agent
edits, and the folder ``arena tasks new`` writes."""

from __future__ import annotations

from pathlib import Path

from arena.errors import ArenaError
from arena.taskdef.loader import CATEGORIES, PLACEHOLDERS, Task

HIP_TYPES = {
    "float32": "float", "float16": "__half", "bfloat16": "__hip_bfloat16", "int8": "int8_t", "uint8": "uint8_t",
    "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "bool": "bool",
    "float8_e4m3fn": "uint8_t", "float8_e5m2": "uint8_t",
}
SCALAR_TYPES = {"int64": "int64_t", "int32": "int32_t", "float32": "float", "bool": "bool"}


def hip_parameters(task: Task) -> list[str]:
    """The entry's parameters: inputs (const, but for those updated in place), outputs,
    scalars, the stream."""
    params = [f"{'' if i.inout else 'const '}{HIP_TYPES[i.dtype]}* {i.name}" for i in task.inputs]
    params += [f"{HIP_TYPES[o.dtype]}* {o.name}" for o in task.outputs]
    params += [f"{SCALAR_TYPES[s.type]} {s.name}" for s in task.scalars]
    return params + ["hipStream_t stream"]


def hip_skeleton(task: Task) -> str:
    """A HIP file with the entry's exact ABI and an empty body that compiles."""
    includes = ["#include <hip/hip_runtime.h>", "#include <cstdint>"]
    dtypes = {t.dtype for t in (*task.inputs, *task.outputs)}
    if "float16" in dtypes:
        includes.append("#include <hip/hip_fp16.h>")
    if "bfloat16" in dtypes:
        includes.append("#include <hip/hip_bf16.h>")
    shapes = "\n".join(f"//   {t.name}: {t.dtype} [{', '.join(str(d) for d in t.shape)}]{_form_note(t)}"
                       for t in (*task.inputs, *task.outputs))
    params = ",\n    ".join(hip_parameters(task))
    return f"""{chr(10).join(includes)}

// {task.title}
// Tensors (contiguous, row-major unless a stride is given; outputs are allocated by the harness):
{shapes}
// Write every element of every output; do not write to the inputs (but those updated in place).

extern "C" int {task.entry}(
    {params}) {{
    // Launch your kernels on `stream`, e.g.
    //   hipLaunchKernelGGL(my_kernel, dim3(blocks), dim3(threads), 0, stream, ...);
    return (int)hipGetLastError();
}}
"""


def _form_note(spec) -> str:
    """What a tensor's comment says beyond its dtype and shape: updated in place, optional, strides."""
    notes = []
    if getattr(spec, "inout", False):
        notes.append("updated in place")
    if getattr(spec, "optional", False):
        notes.append(f"optional: nullptr when {spec.presence} is false")
    if getattr(spec, "stride", None) is not None:
        notes.append(f"element strides [{', '.join(str(s) for s in spec.stride)}]")
    return f" ({'; '.join(notes)})" if notes else ""


def write_new_task(root: Path, task_id: str) -> Path:
    """Write a skeleton task folder that validates; returns the folder."""
    if task_id.count("/") != 1:
        raise ArenaError("expected CATEGORY/NAME", key="task id")
    category, name = task_id.split("/")
    if category not in CATEGORIES:
        raise ArenaError(f"unknown category {category!r}; choose one of {', '.join(CATEGORIES)}", key="task id")
    if not name.replace("_", "").isalnum() or not name.islower():
        raise ArenaError("task names are lower_snake_case", key="task id")
    folder = root / category / name
    if folder.exists():
        raise ArenaError("already exists", path=folder)
    (folder / "configs").mkdir(parents=True)
    (folder / "task.yaml").write_text(f"""schema_version: 1
id: {category}/{name}
category: {category}
title: "{PLACEHOLDERS['title']}"
description: |
  {PLACEHOLDERS['description']}, precisely (formula, accumulation precision).
tags: [{PLACEHOLDERS['tags']}]
difficulty: 1
entry: {name}
signature:
  inputs:
    - {{name: x, dtype: float32, shape: [rows, cols]}}
  outputs:
    - {{name: y, dtype: float32, shape: [rows, cols]}}
  scalars:
    - {{name: rows, type: int64}}
    - {{name: cols, type: int64}}
roofline: {{bound: memory, flops: "rows * cols", bytes: "8 * rows * cols"}}
shape_space:
  rows: {{min: 1, max: 65536}}
  cols: {{min: 1, max: 65536}}
  constraint: "rows * cols <= 2**28"
forbidden: []
""")
    (folder / "reference.py").write_text(f'''import torch


def reference(x, rows, cols):
    """{PLACEHOLDERS['reference.py']}; dtype-agnostic (called with upcast inputs). The example,
    a leaky ReLU, passes `arena tasks check --device cpu`; a plain ReLU would not: half its
    outputs are 0, below the tolerance (the degeneracy rules in CONTRIBUTING.md)."""
    return torch.where(x > 0, x, 0.1 * x)
''')
    (folder / "configs" / "seen.yaml").write_text(
        "- {name: a, rows: 4096, cols: 4096}\n- {name: b, rows: 8192, cols: 4096}\n"
        "- {name: c, rows: 16384, cols: 8192}\n"
    )
    (folder / "configs" / "heldout.yaml").write_text(
        "- {name: odd, rows: 4093, cols: 4099}\n- {name: skinny, rows: 131071, cols: 129}\n"
        "- {name: wide, rows: 3, cols: 1000003}\n- {name: big, rows: 30000, cols: 8190}\n"
    )
    (folder / "configs" / "smoke.yaml").write_text("- {name: tiny, rows: 3, cols: 37}\n")
    if category == "triton2triton":
        (folder / "baseline.py").write_text(f"""import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.1 * x), mask=mask)


def {name}(x, y, rows, cols):
    n = rows * cols
    _kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
""")
    elif category == "hip2hip":
        (folder / "baseline.hip").write_text(f"""#include <hip/hip_runtime.h>
#include <cstdint>

__global__ void leaky_relu_kernel(const float* x, float* y, int64_t n) {{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.1f * x[i];
}}

extern "C" int {name}(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {{
    int64_t n = rows * cols;
    hipLaunchKernelGGL(leaky_relu_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n);
    return (int)hipGetLastError();
}}
""")
    return folder
