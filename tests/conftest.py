"""What the tests of one session share across xdist workers.

A session fixture that starts builds (``builds`` in test_build_hip.py, ``bad_builds`` in
test_objcheck.py: a few dozen cold nvcc / hipcc builds into a cache of the session's) would run
once in every xdist worker that runs one of its tests. The tests that use one are put in one
xdist group, so with ``--dist loadgroup`` (pyproject.toml) its builds are made once a session.
"""

from __future__ import annotations

import pytest

# (module, session fixture that builds) -> the xdist group of the tests that use it
SHARED_BUILDS = {("test_build_hip.py", "builds"): "hip-build-cases",
                 ("test_objcheck.py", "bad_builds"): "objcheck-build-cases"}


@pytest.hookimpl(tryfirst=True)       # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for (module, fixture), group in SHARED_BUILDS.items():
            if item.path.name == module and fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _wide_cli_console(monkeypatch):
    """The CLI's tables and lines as a wide terminal shows them, whatever $COLUMNS the test
    process inherited (xdist workers may get a narrow one): tests read whole cells and lines."""
    import arena.cli as cli

    for console in (cli.console, cli.err_console):
        monkeypatch.setattr(console, "_width", 200)


@pytest.fixture(scope="module")
def cpu():
    """The cpu backend (Triton's interpreter, PyTorch on the CPU, HIP compiled only)."""
    from arena.devices import detect

    return detect("cpu")


@pytest.fixture(scope="module")
def axpy():
    """The fixture task most status tests provoke: tests/fixtures/tasks/triton2triton/axpy."""
    from pathlib import Path

    from arena.taskdef.loader import load_task

    return load_task(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy")
