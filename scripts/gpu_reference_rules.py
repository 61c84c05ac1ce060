"""The degeneracy rules of `arena tasks check` alone (``arena.check.degeneracy.reference_problems``, the reference
on every seen and held-out config), on a device, without evaluating any kernel:
    python3 scripts/gpu_reference_rules.py [--device cuda] [--tasks-dir DIR] [--few] SELECTOR [OUT.md]
``--few``: only the configs where a compared output has at most ``FEW_VALUES`` values (the rule read over several
draws). ``--once``: no rules; the seconds of one run of the reference on the config's inputs (its second run: the
first pays for the device's warm-up), what each of an evaluation's seeds and each draw of the rules costs. One row per
config: the task, the split, the config, the seconds and what the rules found."""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("selector")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tasks-dir", default="tasks")
    ap.add_argument("--few", action="store_true")
    ap.add_argument("--once", action="store_true")
    a = ap.parse_args()

    from arena.check.degeneracy import has_few_values, load_reference, reference_problems
    from arena.check.inputs import make_inputs, run_reference
    from arena.taskdef.loader import load_task, select_tasks

    root = Path(a.tasks_dir)
    rows = []
    for folder in select_tasks(a.selector, root):
        task = load_task(folder)
        ref = load_reference(task)
        for split in ("seen", "heldout"):
            for c in task.configs(split):
                if a.few and not has_few_values(task, c):
                    continue
                t0 = time.perf_counter()
                try:
                    if a.once:
                        env = task.env(c)
                        ins = make_inputs(task, env, 0, a.device, ref)
                        scalars = [task.scalar_value(sc, env) for sc in task.scalars]
                        for _ in range(2):
                            if a.device == "cuda":
                                torch.cuda.synchronize()
                            t0 = time.perf_counter()
                            run_reference(ref.reference, task, ins, scalars)
                            if a.device == "cuda":
                                torch.cuda.synchronize()
                        found = []
                    else:
                        found = reference_problems(task, c, a.device, ref)
                    if a.device == "cuda":
                        torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - a row, not a crash
                    found = [f"{type(exc).__name__}: {exc}"[:300]]
                rows.append((task.id, split, c.name, time.perf_counter() - t0, found))
                print(f"{task.id} {split} {c.name}: {'; '.join(found) or 'ok'}", flush=True)
                if a.device == "cuda":
                    torch.cuda.empty_cache()
    name = torch.cuda.get_device_name() if a.device == "cuda" else platform.processor()
    what = "One run of the reference" if a.once else "The reference's degeneracy rules"
    lines = [f"# {what}, {a.selector} ({datetime.date.today()})", "",
             f"- device: {name}, python {platform.python_version()}, torch {torch.__version__}", "",
             f"{sum(1 for r in rows if not r[4])} of {len(rows)} configs pass", "",
             "| task | split | config | seconds | found |", "|---|---|---|---|---|",
             *[f"| {t} | {s} | {c} | {sec:.3f} | {'; '.join(f) or 'ok'} |" for t, s, c, sec, f in rows]]
    text = "\n".join(lines) + "\n"
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
