"""Workers keep the interpreter's bytecode in the harness's cache when Python would otherwise
compile the same sources again in every process (arena.evaluation.processes.bytecode_prefix)."""

from __future__ import annotations

import importlib.util
import py_compile

from arena.evaluation import processes


def _source(tmp_path, text="X = 1\n"):
    src = tmp_path / "pkg" / "mod.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text(text)
    return src


def test_no_bytecode_beside_the_sources_and_none_written_there_needs_the_prefix(tmp_path):
    src = _source(tmp_path)
    assert processes.needs_bytecode_prefix(src, dont_write=True)
    # Python writes it beside the source on the first import: nothing to do
    assert not processes.needs_bytecode_prefix(src, dont_write=False)


def test_bytecode_python_would_load_needs_no_prefix(tmp_path):
    src = _source(tmp_path)
    py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)))
    assert not processes.needs_bytecode_prefix(src, dont_write=True)


def test_stale_bytecode_counts_as_none(tmp_path):
    src = _source(tmp_path)
    py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)))
    src.write_text("X = 12345\n")        # another size: Python would compile the source again
    assert processes.needs_bytecode_prefix(src, dont_write=True)
    cached = importlib.util.cache_from_source(str(src))
    with open(cached, "r+b") as f:        # and a file of another Python's magic number likewise
        f.write(b"\0\0\0\0")
    assert processes.needs_bytecode_prefix(src, dont_write=True)


def test_a_workers_environment_carries_the_prefix_and_lets_bytecode_be_written(tmp_path, monkeypatch):
    prefix = tmp_path / "pycache"
    monkeypatch.setattr(processes, "bytecode_prefix", lambda: prefix)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    env = processes.child_env(tmp_path, tmp_path / "triton", interpret=True)
    assert env["PYTHONPYCACHEPREFIX"] == str(prefix) and "PYTHONDONTWRITEBYTECODE" not in env
    # a prefix of the user's own is kept
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "mine"))
    env = processes.child_env(tmp_path, tmp_path / "triton", interpret=True)
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "mine")
    # no prefix where Python's own place works
    monkeypatch.setattr(processes, "bytecode_prefix", lambda: None)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX")
    env = processes.child_env(tmp_path, tmp_path / "triton", interpret=True)
    assert "PYTHONPYCACHEPREFIX" not in env and env["PYTHONDONTWRITEBYTECODE"] == "1"
