"""The arena command: one clear error line for user mistakes, tasks new/validate, eval --json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from arena.cli import main
from arena.records import Status
from arena.taskdef.loader import validate_task_dir

FIX = Path(__file__).parent / "fixtures" / "tasks"


def test_validate_names_file_and_key(tmp_path, capsys):
    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(FIX / "triton2triton" / "axpy", folder)
    text = (folder / "task.yaml").read_text().replace("entry: axpy\n", "")
    (folder / "task.yaml").write_text(text)
    (folder / "configs" / "seen.yaml").write_text("- {name: a, n: [1, 2]}\n")
    rc = main(["tasks", "validate", str(folder)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "task.yaml" in err and "entry" in err


def test_bad_yaml_is_one_line_without_traceback(tmp_path):
    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(FIX / "triton2triton" / "axpy", folder)
    (folder / "task.yaml").write_text("id: [unclosed\n")
    proc = subprocess.run([sys.executable, "-m", "arena", "eval", str(folder), "--device", "cpu"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "task.yaml" in proc.stderr and "line" in proc.stderr


def fill_skeleton(folder: Path) -> None:
    """What an author writes first into `arena tasks new`'s skeleton: a title, a description,
    tags, the reference's docstring."""
    yml = folder / "task.yaml"
    yml.write_text(yml.read_text().replace('"TODO: one line"', '"Leaky ReLU"').replace(
        "TODO: what the kernel computes", "y = x where x > 0, else 0.1 x; what the kernel computes").replace(
        "tags: [todo]", "tags: [elementwise]"))
    ref = folder / "reference.py"
    ref.write_text(ref.read_text().replace("TODO: the PyTorch reference", "The PyTorch reference"))


def test_tasks_new_writes_a_valid_skeleton(tmp_path, capsys):
    for tid in ("hip2hip/my_op", "triton2triton/my_op", "torch2hip/my_op"):
        assert main(["--tasks-dir", str(tmp_path), "tasks", "new", tid]) == 0
        # left as written, its placeholders are refused, each naming its key
        keys = {(Path(e.path).name, e.key) for e in validate_task_dir(tmp_path / tid)}
        assert keys == {("task.yaml", "title"), ("task.yaml", "description"), ("task.yaml", "tags"),
                        ("reference.py", None)}, keys
        fill_skeleton(tmp_path / tid)
        assert validate_task_dir(tmp_path / tid) == []
    assert main(["--tasks-dir", str(tmp_path), "tasks", "new", "hip2hip/my_op"]) == 2
    assert main(["--tasks-dir", str(tmp_path), "tasks", "new", "cuda2cuda/x"]) == 2


def test_eval_json_record(capsys):
    rc = main(["--tasks-dir", str(FIX), "eval", "triton2triton/axpy", "--device", "cpu", "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    rec = json.loads(out[-1])
    assert rc == 0
    assert rec["status"] == "PASSED" and rec["split"] == "smoke" and rec["reward"] == 0.0
    assert rec["candidate"]["language"] == "triton" and len(rec["candidate"]["sha256"]) == 64


def test_unknown_task_and_device(capsys):
    assert main(["--tasks-dir", str(FIX), "eval", "triton2triton/nope", "--device", "cpu"]) == 2
    assert "no task matches" in capsys.readouterr().err


# -- bad task files: one line per problem, naming the file and the key; the others go on ------------------


def _broken_tasks(root: Path) -> dict[str, Path]:
    """Under root: the axpy and scale fixtures, and copies of axpy broken in one way each."""
    for category in ("triton2triton", "hip2hip"):
        shutil.copytree(FIX / category, root / category, dirs_exist_ok=True)
    folders = {}
    for name in ("no_entry", "bad_yaml", "unknown_key", "no_reference", "no_seen", "binary_yaml"):
        folder = root / "triton2triton" / name
        shutil.copytree(FIX / "triton2triton" / "axpy", folder)
        yml = folder / "task.yaml"
        yml.write_text(yml.read_text().replace("triton2triton/axpy", f"triton2triton/{name}"))
        folders[name] = folder
    yml = folders["no_entry"] / "task.yaml"
    yml.write_text(yml.read_text().replace("entry: axpy\n", ""))
    (folders["bad_yaml"] / "task.yaml").write_text("id: [unclosed\n")
    yml = folders["unknown_key"] / "task.yaml"
    yml.write_text(yml.read_text() + "colour: blue\n")
    (folders["no_reference"] / "reference.py").unlink()
    (folders["no_seen"] / "configs" / "seen.yaml").unlink()
    (folders["binary_yaml"] / "task.yaml").write_bytes(b"id: \xff\xfe\x00\n")
    return folders


def _problem_lines(folders: dict[str, Path]) -> list[str]:
    return [f"error: {folders['no_entry'] / 'task.yaml'}: entry: required key is missing",
            f"error: {folders['bad_yaml'] / 'task.yaml'}: not valid YAML (line 2, column 1)",
            f"error: {folders['unknown_key'] / 'task.yaml'}: colour: unknown key",
            f"error: {folders['no_reference'] / 'reference.py'}: reference.py is missing",
            f"error: {folders['no_seen'] / 'configs' / 'seen.yaml'}: file not found",
            f"error: {folders['binary_yaml'] / 'task.yaml'}: cannot read the file"]


def _assert_lines(text: str, expected: list[str]) -> None:
    lines = text.splitlines()
    for want in expected:
        assert any(line.startswith(want) for line in lines), f"no line starts with {want!r} in:\n{text}"


def test_broken_tasks_are_listed_shown_and_validated_without_hiding_the_others(tmp_path, capsys):
    folders = _broken_tasks(tmp_path)
    root = ["--tasks-dir", str(tmp_path)]

    assert main([*root, "tasks", "list"]) == 1
    out, err = capsys.readouterr()
    assert "triton2triton/axpy" in out and "hip2hip/scale" in out
    assert out.count("broken: 1 problem") == len(folders)
    _assert_lines(err, _problem_lines(folders))
    assert "Traceback" not in out + err

    assert main([*root, "tasks", "show", "all"]) == 1
    out, err = capsys.readouterr()
    assert "triton2triton/axpy — Fixture: out = alpha * x + y" in out and "hip2hip/scale — " in out
    _assert_lines(err, _problem_lines(folders))

    assert main([*root, "tasks", "validate"]) == 1
    out, err = capsys.readouterr()
    assert "2 of 8 tasks valid" in out
    _assert_lines(err, _problem_lines(folders))

    # a selector of the task root's, as the other commands take: ids, a comma list (longer than a file name may be)
    ids = ["triton2triton/axpy", "hip2hip/scale"] * 80
    assert main([*root, "tasks", "validate", ",".join(ids)]) == 0
    assert "2 of 2 tasks valid" in capsys.readouterr().out
    assert main([*root, "tasks", "validate", "triton2triton/axpy,triton2triton/no_such_task"]) == 2
    out, err = capsys.readouterr()
    assert "no task matches 'triton2triton/no_such_task'" in err and "Traceback" not in out + err

    for name, line in zip(folders, _problem_lines(folders)):       # eval names every problem too
        assert main([*root, "eval", f"triton2triton/{name}", "--device", "cpu"]) == 2
        _assert_lines(capsys.readouterr().err, [line])


def test_broken_tasks_are_checked_and_run_beside_the_others(tmp_path, capsys):
    folders = _broken_tasks(tmp_path / "tasks")
    root = ["--tasks-dir", str(tmp_path / "tasks")]
    selection = ",".join(["triton2triton/axpy", "hip2hip/scale", *(f"triton2triton/{n}" for n in folders)])

    assert main([*root, "tasks", "check", selection, "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "triton2triton/axpy: ok" in out
    for want in _problem_lines(folders):
        name = Path(want.split(": ")[1]).relative_to(tmp_path / "tasks").parts[1]
        assert f"triton2triton/{name}: {want[len('error: '):]}" in out
        # the row says why as it is finished, not only in the summary after the last one
        assert f"  triton2triton/{name}: FAIL\n      {want[len('error: '):]}" in out

    # several at once (each in a process of its own): the same rows, in the selection's order
    one, several = tmp_path / "one.json", tmp_path / "several.json"
    assert main([*root, "tasks", "check", selection, "--device", "cpu", "--json", str(one)]) == 1
    assert main([*root, "tasks", "check", selection, "--device", "cpu", "--jobs", "3", "--json", str(several)]) == 1
    out = capsys.readouterr().out
    rows = [(r["task"], r["ok"], r["problems"]) for r in json.loads(one.read_text())]
    assert [(r["task"], r["ok"], r["problems"]) for r in json.loads(several.read_text())] == rows
    assert len(rows) == len(folders) + 2 and rows[0][:2] == ("triton2triton/axpy", True)
    for name, want in zip(folders, _problem_lines(folders)):
        assert f"  triton2triton/{name}: FAIL\n      {want[len('error: '):]}" in out

    assert main([*root, "run", "--agent", "baseline", "--tasks", selection, "--device", "cpu", "--no-prebuild",
                 "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("  baseline ")}
    assert "PASSED" in rows["triton2triton/axpy"]
    assert "NOT_RUNNABLE" in rows["hip2hip/scale"] and rows["hip2hip/scale"].rstrip().endswith("not run: no GPU")
    for name, want in zip(folders, _problem_lines(folders)):
        assert "TASK_ERROR" in rows[f"triton2triton/{name}"]
        assert want[len("error: "):] in rows[f"triton2triton/{name}"]
    # the bar counts no failure of a candidate: the HIP row is not runnable here, the rest are the tasks'
    assert "0 not passed, 1 not runnable here (not scored), 6 infrastructure failures (not scored)" in out
    assert "1 passed, 0 not passed" in out


# -- why a row is NOT_RUNNABLE; what the device has ------------------------------------------------------


def _verdict(status, *, build=None, message="", configs=3, task="hip2hip/scale"):
    from arena.records import ConfigResult, Verdict

    return Verdict(task_id=task, category=task.split("/")[0], split="smoke", status=Status(status),
                   candidate={"origin": "baseline"}, device={"kind": "cpu"}, agent="baseline", message=message,
                   build=build or {}, configs=[ConfigResult(f"c{i}", {"n": i}, Status(status)) for i in range(configs)])


COMPILED = {"builds": [{"target": "cuda", "arch": "sm_90", "ok": True},
                      {"target": "rocm", "arch": "gfx90a", "ok": True}]}
NO_COMPILER = {
    "builds": [
        {"target": "cuda", "arch": "sm_90", "ok": None, "skipped": "nvcc not found on PATH"},
        {"target": "rocm", "arch": "gfx90a", "ok": None, "skipped": "hipcc not found on PATH"},
    ]
}


def test_the_summary_says_why_a_row_is_not_runnable_and_does_not_count_it_as_a_failure(capsys):
    from arena.cli import print_run_summary, tally

    verdicts = [
        _verdict("NOT_RUNNABLE", build=COMPILED),
        _verdict("NOT_RUNNABLE", build=NO_COMPILER),
        _verdict("PASSED", task="triton2triton/axpy"),
        _verdict("INCORRECT_NUMERICAL", task="triton2triton/x"),
        _verdict(
            "TASK_ERROR",
            message="tasks/x/task.yaml: entry: required key is missing\nmore",
            task="triton2triton/y",
            configs=0,
        ),
    ]
    assert tally(verdicts) == {
        "passed": 1,
        "not passed": 1,
        "not runnable here": 2,
        "infrastructure failures": 1,
        "agents not served": 0,
    }
    print_run_summary(verdicts, "records")
    out = capsys.readouterr().out
    lines = {tuple(c.strip() for c in line.split("│")[1:-1]): line for line in out.splitlines() if "│" in line}
    cells = list(lines)
    assert cells[0][3:5] == ("NOT_RUNNABLE", "-") and cells[0][-1] == "compiled for sm_90 and gfx90a; not run: no GPU"
    assert cells[1][-1] == "not compiled: no nvcc or hipcc; not run: no GPU"
    assert cells[2][3:5] == ("PASSED", "3/3") and cells[2][-1] == ""
    assert cells[3][3:5] == ("INCORRECT_NUMERICAL", "0/3")
    assert cells[4][-1] == "tasks/x/task.yaml: entry: required key is missing"
    assert "1 passed, 1 not passed, 2 not runnable here (not scored), 1 infrastructure failure (not scored)" in out


def _fake_compiler(path: Path, version_text: str) -> str:
    path.write_text(f"#!/bin/sh\ncat <<'END'\n{version_text}\nEND\n")
    path.chmod(0o755)
    return str(path)


def test_device_names_the_compilers_it_found(tmp_path, monkeypatch, capsys):
    from arena.toolchain import hip

    fake = {
        "cuda": _fake_compiler(tmp_path / "nvcc", "Cuda compilation tools, release 12.4, V12.4.131"),
        "rocm": _fake_compiler(tmp_path / "hipcc", "HIP version: 6.1.40091\nAMD clang version 17.0.0 (x)"),
    }
    monkeypatch.setattr(hip, "_find_compiler", lambda target: fake[target])
    assert main(["device", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"{fake['cuda']} (12.4.131)" in out and f"{fake['rocm']} (HIP 6.1.40091, clang 17.0.0)" in out
    assert "cuda sm_90, rocm gfx90a (compile-only" in out

    monkeypatch.setattr(hip, "_find_compiler", lambda target: fake[target] if target == "cuda" else None)
    assert main(["device", "--device", "cpu", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["compilers"]["hipcc"] == {"path": None, "version": None, "problem": "hipcc not found on PATH"}
    assert d["compilers"]["nvcc"]["version"] == "12.4.131"
    assert d["hip_builds"].startswith("cuda sm_90 (compile-only") and d["hip_builds"].endswith(
        "not rocm gfx90a: no hipcc"
    )


def test_device_claims_no_hip_build_without_a_compiler(monkeypatch, capsys):
    from arena.cli import hip_builds
    from arena.devices import Device
    from arena.toolchain import hip

    monkeypatch.setattr(hip, "_find_compiler", lambda target: None)
    assert main(["device", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    rows = {
        c[0]: c[1]
        for c in (tuple(x.strip() for x in line.split("│")[1:-1]) for line in out.splitlines())
        if len(c) == 2
    }
    assert rows["nvcc"] == "not found" and rows["hipcc"] == "not found"
    assert rows["HIP builds"].startswith("none: no nvcc or hipcc")
    compilers = {t: hip.compiler_found(t) for t in hip.TARGETS}
    gpu = Device(kind="cuda", name="H100", vendor="nvidia", arch="sm_90")
    assert hip_builds(gpu, compilers).startswith("none: cuda sm_90 needs nvcc") and "HARNESS_ERROR" in hip_builds(
        gpu, compilers
    )


# -- text from task files, messages and schemas is printed as it is ---------------------------------------


def test_task_text_and_schema_patterns_print_literally(tmp_path, capsys):
    from arena.cli import print_configs

    assert main(["tasks", "show", "triton2triton/rms_norm"]) == 0
    assert "y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps)" in capsys.readouterr().out

    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(FIX / "triton2triton" / "axpy", folder)
    yml = folder / "task.yaml"
    yml.write_text(
        yml.read_text()
        .replace("tags: [fixture, elementwise]", "tags: [Fixture]")
        .replace("  A tiny task", "  [bold]not bold[/bold] [red] y[r, :] A tiny task")
    )
    assert main(["tasks", "validate", str(folder)]) == 1
    assert "tags.0: 'Fixture' does not match '^[a-z0-9][a-z0-9_-]*$'" in capsys.readouterr().err
    yml.write_text(yml.read_text().replace("tags: [Fixture]", "tags: [fixture]"))
    assert main(["--tasks-dir", str(tmp_path), "tasks", "show", "triton2triton/axpy"]) == 0
    assert "[bold]not bold[/bold] [red] y[r, :] A tiny task" in capsys.readouterr().out

    v = _verdict("INCORRECT_NUMERICAL", message="out[3, :] differs: [red]", task="triton2triton/axpy")
    print_configs(v)
    out = capsys.readouterr().out
    assert "triton2triton/axpy [smoke] baseline: INCORRECT_NUMERICAL" in out and "out[3, :] differs: [red]" in out


def test_eval_exits_with_a_code_of_its_own_where_nothing_failed_but_nothing_ran():
    """`arena eval`'s exit code tells "not runnable here" (3) from a failure (1) and a pass (0)."""
    from arena.cli import EXIT_NOT_RUNNABLE, eval_exit_code

    passed, failed, nr = _verdict("PASSED"), _verdict("INCORRECT_NUMERICAL"), _verdict("NOT_RUNNABLE", build=COMPILED)
    assert eval_exit_code([passed]) == 0
    assert eval_exit_code([nr]) == eval_exit_code([passed, nr]) == EXIT_NOT_RUNNABLE == 3
    assert eval_exit_code([failed, nr]) == eval_exit_code([failed]) == 1


def test_an_interrupted_tasks_check_keeps_the_rows_it_finished(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the second of two tasks: the first row is in the files asked for, and the
    console says how far the check got."""
    import arena.authoring.check as authoring

    real = authoring.check_task
    calls = []

    def check_task(folder, device, ev):
        calls.append(folder.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(folder, device, ev)

    monkeypatch.setattr(authoring, "check_task", check_task)
    out_json, out_md = tmp_path / "check.json", tmp_path / "check.md"
    code = main(
        [
            "--tasks-dir",
            str(FIX),
            "tasks",
            "check",
            "triton2triton/axpy,hip2hip/scale",
            "--device",
            "cpu",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert code == 130
    assert "interrupted after 1 of 2 tasks; the rows finished are in" in capsys.readouterr().err
    rows = json.loads(out_json.read_text())
    assert [r["task"] for r in rows] == ["triton2triton/axpy"] and rows[0]["ok"]
    assert "(1 of the 2 asked for checked so far)" in out_md.read_text()
