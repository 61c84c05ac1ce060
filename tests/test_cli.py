"""The arena command: one clear error line for user mistakes, tasks new/validate, eval --json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from arena.cli import main
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


def test_tasks_new_writes_a_valid_skeleton(tmp_path, capsys):
    for tid in ("hip2hip/my_op", "triton2triton/my_op", "torch2hip/my_op"):
        assert main(["--tasks-dir", str(tmp_path), "tasks", "new", tid]) == 0
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
