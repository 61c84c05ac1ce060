"""The examples of README.md and CONTRIBUTING.md run as written on the machine they name.

Every command line of their shell code blocks is collected (a line that starts with arena,
python, pip or bash; ``\\`` continuations joined, ``&&`` chains split, comments dropped). Each
``arena`` command must parse with the CLI's own parser, placeholders filled (``FILL``; a
placeholder this file does not know fails the test, so the docs and this file change
together). One that names a GPU (``--device cuda|rocm``, ``--gpus``, a suite whose device is a
GPU) is only parsed, and its suite loaded. Every other one runs on the cpu backend through
``arena.cli.main`` (what the ``arena`` script calls), in a scratch folder that sees the
checkout's tasks/ and configs/, with the smallest arguments that still exercise it.

Not run as written, said here: the first line's ``pip install`` (its pins and extra are
checked against pyproject.toml); the quickstart suite, which takes minutes on a CPU (3 tasks x
2 agents): it runs on one task with one agent, with its own device and split (and its line as
written is parsed and its suite loaded); ``arena tasks new`` gets ``--tasks-dir`` so the
checkout's tasks/ stay untouched; ``python -m pytest -q`` is this suite (its target is
checked).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from toolchains import REQUIRE_TOOLCHAINS

from arena.cli import build_parser, main
from arena.taskdef.loader import load_suite, validate_task_dir

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "CONTRIBUTING.md")
PROGRAMS = ("arena", "python", "python3", "pip", "bash")
TASK = "triton2triton/rms_norm"            # the task the docs' examples use

# placeholder (a whole argument, or one part of a path) -> what a run here uses
FILL = {
    "SELECTOR": TASK,
    "PATH...": f"tasks/{TASK}",
    "<category>/<name>": TASK,
    "NAME": "quickstart",                  # the one run this test makes (runs/quickstart)
    "A": "quickstart",
    "B": "quickstart",
    "X": "baseline",
    "Y": "baseline",
    "claude-1": "quickstart",              # the transcript example reads the run made above it, on a GPU
    "PROBLEM.py": str(ROOT / "tests" / "fixtures" / "importers" / "kb_linear_gelu.py"),
    "AKA_TASK_DIR": str(ROOT / "tests" / "fixtures" / "importers" / "aka_triton_scaled_softmax"),
    "DIR": "imported",                     # the importers write into the scratch folder
}
# an `arena run` on the cpu is narrowed to this (unless the line sets it): one task, one agent
NARROW_RUN = {"--tasks": TASK, "--agent": "baseline"}


def shell_blocks(text: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
            if m.group(1) in ("", "bash", "sh", "shell")]


def doc_commands(doc: str) -> list[list[str]]:
    """The command lines of a document's shell blocks, as argument lists, in order."""
    out = []
    for block in shell_blocks((ROOT / doc).read_text()):
        for line in re.sub(r"\\\n[ \t]*", " ", block).splitlines():
            words = line.split()
            if not words or words[0] not in PROGRAMS:
                continue
            command: list[str] = []
            for token in shlex.split(line, comments=True):
                if token == "&&":
                    out.append(command)
                    command = []
                else:
                    command.append(token)
            out.append(command)
    return [c for c in out if c]


def _fill_one(token: str) -> str:
    if token in FILL:
        return FILL[token]
    token = token.replace("<category>/<name>", FILL["<category>/<name>"])
    parts = [FILL.get(p, p) for p in token.split("/")]
    for p in parts:
        if re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?", p) or "<" in p or "[" in p or "]" in p:
            raise AssertionError(f"placeholder {p!r} in {token!r}: add it to FILL in {__file__}")
    return "/".join(parts)


def fill(args: list[str]) -> list[str]:
    """Optional groups ``[...]`` kept (but a repetition, ``[runs/OTHER ...]``, dropped) and
    placeholders filled."""
    out: list[str] = []
    group: list[str] | None = None
    for token in args:
        if group is None and token.startswith("["):
            group, token = [], token[1:]
        if group is None:
            out.append(_fill_one(token))
            continue
        end = token.endswith("]")
        token = token[:-1] if end else token
        if token:
            group.append(token)
        if end:
            if "..." not in group:
                out += [_fill_one(t) for t in group]
            group = None
    assert group is None, f"an unclosed [ in {args}"
    return out


def machine(argv: list[str]) -> str:
    """The machine an arena command names: cuda / rocm / cpu, or "default"."""
    if "--gpus" in argv:
        return "gpu"
    if "--device" in argv:
        return argv[argv.index("--device") + 1]
    if "--config" in argv:
        return load_suite(ROOT / argv[argv.index("--config") + 1]).get("device") or "default"
    return "default"


def _examples() -> list[tuple[str, list[str]]]:
    return [(doc, c) for doc in DOCS for c in doc_commands(doc)]


def test_the_docs_have_examples_of_each_kind():
    cmds = [" ".join(c) for _, c in _examples()]
    assert any(c.startswith("arena eval") and "--device cpu" in c for c in cmds)
    assert any(c.startswith("arena tasks check") and "--device cpu" in c for c in cmds)
    assert any(c.startswith("pip install") for c in cmds) and "python -m pytest -q" in cmds


def test_every_arena_example_parses_and_names_a_machine_that_exists():
    parser = build_parser()
    for doc, cmd in _examples():
        if cmd[0] != "arena":
            continue
        argv = fill(cmd[1:])
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{doc}: `{' '.join(cmd)}` does not parse as {argv}")
        assert machine(argv) in ("cuda", "rocm", "gpu", "cpu", "default"), (doc, cmd)


def test_the_first_line_installs_what_pyproject_declares():
    """`pip install torch==X triton==Y -e ".[dev]"`: the pins satisfy pyproject's dependencies
    and the extra exists (the install itself is not run here)."""
    try:
        import tomllib
    except ImportError:                     # Python 3.10
        tomllib = pytest.importorskip("tomli")
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {Requirement(r).name: Requirement(r) for r in project["dependencies"]}
    pips = [c for _, c in _examples() if c[:2] == ["pip", "install"]]
    assert pips
    for cmd in pips:
        args = cmd[2:]
        editable = args[args.index("-e") + 1]
        extras = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", editable)
        assert extras, editable
        for extra in (extras.group(1) or "").split(","):
            assert not extra or extra in project["optional-dependencies"], extra
        for pin in (a for a in args if "==" in a):
            req = Requirement(pin)
            version = next(iter(req.specifier)).version
            assert req.name in declared and declared[req.name].specifier.contains(version), pin
    tests = [c for _, c in _examples() if c[:3] == ["python", "-m", "pytest"]]
    assert tests
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["tests"]


def test_every_file_the_package_reads_is_installed_with_it():
    """A non-editable install (`pip install .`, a wheel) carries only the Python modules and what
    pyproject's package-data names: every other file under arena/ (schemas, headers, the HIP
    recorder's source) must match one of its globs, or an installed harness misses it."""
    try:
        import tomllib
    except ImportError:                     # Python 3.10
        tomllib = pytest.importorskip("tomli")
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["arena"]
    package = ROOT / "arena"
    data = [p.relative_to(package) for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert data, "the package has data files (schemas, headers, the recorder's source)"
    missing = [str(p) for p in data if not any(p.match(g) and len(p.parts) == len(Path(g).parts) for g in globs)]
    assert not missing, f"not installed by pyproject's package-data {globs}: {missing}"
    for g in globs:
        assert any(package.glob(g)), f"package-data glob {g!r} matches no file under arena/"


MODULE_DOCSTRING_LINES = 25


def test_every_module_says_what_it_is_for_in_a_few_lines():
    """Each module of the package opens with a docstring that says what it owns; the reasoning
    behind its choices lives next to the code it explains, not in an essay at the top."""
    import ast

    long, missing = [], []
    for path in sorted((ROOT / "arena").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        rel = str(path.relative_to(ROOT))
        if not doc:
            missing.append(rel)
        elif len(doc.splitlines()) > MODULE_DOCSTRING_LINES:
            long.append(f"{rel}: {len(doc.splitlines())} lines")
    assert not missing, f"modules without a docstring: {missing}"
    assert not long, f"module docstrings over {MODULE_DOCSTRING_LINES} lines: {long}"


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A folder that sees the checkout's tasks/ and configs/ and where what the examples write
    lands; a candidate file named as in the README; the cpu backend, GPU or not."""
    import torch

    (tmp_path / "tasks").symlink_to(ROOT / "tasks")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    shutil.copy(ROOT / "tasks" / TASK / "solution.py", tmp_path / "my_rms_norm.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return tmp_path


def test_the_cpu_examples_run(scratch, capsys):
    ran = []
    for doc, cmd in _examples():
        if cmd[0] != "arena":
            continue
        argv = fill(cmd[1:])
        if machine(argv) not in ("cpu", "default"):
            continue
        if argv[0] == "run":
            argv += [x for k, v in NARROW_RUN.items() if k not in argv for x in (k, v)]
        if argv[:2] == ["tasks", "new"]:
            argv = ["--tasks-dir", str(scratch / "new-tasks"), *argv]
        rc = main(argv)
        out = capsys.readouterr()
        assert "Traceback" not in out.out + out.err, (doc, argv, out.err[-2000:])
        assert rc == 0, f"{doc}: `{' '.join(cmd)}` ran as `arena {' '.join(argv)}`: exit {rc}\n{out.err[-2000:]}"
        ran.append(" ".join(argv[:2]))
        if argv[:2] == ["tasks", "new"]:
            assert validate_task_dir(scratch / "new-tasks" / argv[-1]) == []
    # what the README's later lines read was made by the earlier ones
    from arena import records

    recs = list(records.read(scratch / "runs" / "quickstart" / "records.jsonl"))
    assert [(v.agent, v.task_id, v.split, v.status.value) for v in recs] == [("baseline", TASK, "smoke", "PASSED")]
    assert (scratch / "rms_norm.html").is_file() and any((scratch / "reports" / "quickstart").iterdir())
    for expected in ("run --config", "device", "eval triton2triton/rms_norm", "report runs/quickstart",
                     "compare runs/quickstart", "transcript runs/quickstart", "tasks check"):
        assert any(r.startswith(expected) for r in ran), f"no cpu example of `arena {expected}` ran: {ran}"


def test_gpu_splits_on_the_cpu_are_one_line_that_names_the_split_that_runs(scratch, capsys):
    """The README's GPU eval line, run on a machine without a GPU: one line, before anything
    runs, and no verdict (never a TIMEOUT blaming the kernel)."""
    line = next(c for _, c in _examples() if c[:2] == ["arena", "eval"] and "seen,heldout,random" in c)
    argv = fill(line[1:])
    argv[argv.index("--device") + 1] = "cpu"
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 2 and out.out == ""
    assert len(out.err.strip().splitlines()) == 1, out.err
    assert "need a GPU" in out.err and "--split smoke" in out.err and "Traceback" not in out.err


def test_a_new_task_passes_the_cpu_check(tmp_path, capsys):
    """CONTRIBUTING's path for a new task: `arena tasks new`, then validate, then the check on
    the cpu backend, for each category, as the command itself advises."""
    from arena.toolchain.hip import toolchain_available

    ids = ["triton2triton/my_op", "torch2hip/my_op"]
    missing = [m for m in (toolchain_available("cuda"), toolchain_available("rocm")) if m]
    if not missing or REQUIRE_TOOLCHAINS:        # hip2hip's starting kernel is compiled for both vendors
        ids.append("hip2hip/my_op")
    root = ["--tasks-dir", str(tmp_path)]
    from test_cli import fill_skeleton

    for tid in ids:
        assert main([*root, "tasks", "new", tid]) == 0
        advice = capsys.readouterr().out
        assert f"arena tasks check {tid} --device cpu" in " ".join(advice.split())
        assert main([*root, "tasks", "validate", str(tmp_path / tid)]) != 0     # its TODOs are refused
        fill_skeleton(tmp_path / tid)
    assert main([*root, "tasks", "validate", str(tmp_path)]) == 0
    rc = main([*root, "tasks", "check", "all", "--device", "cpu"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert out.count(": ok") == len(ids), out[-3000:]
