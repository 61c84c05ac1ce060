"""The counts the README states are the counts of the repository: tasks per category and
torch2hip's difficulty mix, shipped solutions and specialised kernels, the exploit catalogue,
the shipped agent configurations. A number that goes stale fails here, naming the true one."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from arena.taskdef.loader import CATEGORIES, discover_tasks, load_task

REPO = Path(__file__).resolve().parents[1]
README = " ".join((REPO / "README.md").read_text().split())      # line breaks anywhere


@pytest.fixture(scope="module")
def tasks():
    return [load_task(f, validate=False) for f in discover_tasks(REPO / "tasks")]


def stated(pattern: str) -> tuple[int, ...]:
    found = re.findall(pattern, README)
    assert len(found) == 1, f"the README should state this once: {pattern!r} (found {len(found)})"
    values = found[0] if isinstance(found[0], tuple) else (found[0],)
    return tuple(int(v) for v in values)


def test_task_counts_per_category(tasks):
    total, t2t, h2h, t2h = stated(r"There are (\d+) tasks: (\d+) triton2triton, (\d+) hip2hip, (\d+) torch2hip")
    by_category = Counter(t.category for t in tasks)
    assert set(by_category) == set(CATEGORIES)
    actual = (len(tasks), by_category["triton2triton"], by_category["hip2hip"], by_category["torch2hip"])
    assert (total, t2t, h2h, t2h) == actual, f"write: There are {actual[0]} tasks: {actual[1]} triton2triton, " \
                                             f"{actual[2]} hip2hip, {actual[3]} torch2hip"


def test_torch2hip_difficulty_mix(tasks):
    single, fused, blocks = stated(r"torch2hip \((\d+) single operators, (\d+) fused patterns, (\d+) model blocks\)")
    mix = Counter(t.difficulty for t in tasks if t.category == "torch2hip")
    assert (single, fused, blocks) == (mix[1], mix[2], mix[3])


def test_solution_and_specialised_counts(tasks):
    solutions, specialised = stated(r"(\d+) ship a solution and (\d+) a specialised kernel")
    actual = (sum(t.kernel_file("solution") is not None for t in tasks),
              sum(t.kernel_file("specialised") is not None for t in tasks))
    assert (solutions, specialised) == actual, (
        f"write: {actual[0]} ship a solution and {actual[1]} a specialised kernel"
    )


def test_exploit_catalogue_counts(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "tests" / "exploits"))
    sys.modules.pop("catalogue", None)
    from catalogue import CATALOGUE

    entries, files = stated(r"\((\d+) entries over (\d+) candidate files")
    (on_cpu,) = stated(r"runs the (\d+) that can run on the CPU backend")
    assert (entries, files, on_cpu) == (
        len(CATALOGUE),
        len({e.file for e in CATALOGUE}),
        sum(e.where == "cpu" for e in CATALOGUE),
    )
    assert files == len(list((REPO / "tests" / "exploits" / "candidates").iterdir()))


def test_shipped_agents_are_the_agent_files():
    found = re.findall(r"Shipped: ((?:`[\w.-]+`, )*`[\w.-]+`) and `([\w.-]+)`", README)
    assert len(found) == 1
    named = set(re.findall(r"`([\w.-]+)`", found[0][0])) | {found[0][1]}
    assert named == {p.stem for p in (REPO / "configs" / "agents").glob("*.yaml")}


def test_what_ci_installs_is_what_the_readme_says():
    """.ci/run installs hipcc, chromium, bubblewrap, libseccomp2 and make (nvcc is on the CI
    machine); the README says exactly that and no more."""
    ci = (REPO / ".ci" / "run").read_text()
    installed = set(re.findall(r"need\+=\(([\w-]+)\)", ci))
    assert installed == {"hipcc", "chromium", "bubblewrap", "libseccomp2", "make"}
    assert "nvcc" not in installed
    m = re.search(r"`\.ci/run`, the CI script, installs (.*?) with apt", README)
    assert m, "the README should say what .ci/run installs"
    assert set(re.findall(r"`([\w-]+)`", m.group(1))) == installed
    assert "does not install `nvcc`" in README
