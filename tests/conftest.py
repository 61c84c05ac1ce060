"""What the tests of one session share across xdist workers.

A session fixture that starts builds (``builds`` in test_build_hip.py, ``bad_builds`` in
test_objcheck.py: a few dozen cold nvcc / hipcc builds into a cache of the session's) would run
once in every xdist worker that runs one of its tests. The tests that use one are put in one
xdist group, so with ``--dist loadgroup`` (pyproject.toml) its builds are made once a session.
"""

from __future__ import annotations

import gc
import os
import signal
import tempfile

import pytest

# torch's inductor sets $TORCHINDUCTOR_CACHE_DIR in its process where it is unset: set for the whole session,
# so that no test is found to have changed the environment for being the first in its process to compile
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), "arena-tests-inductor"))

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
def _process_state_as_found():
    """A test that leaves the test process's environment, its signal mask or its collector
    changed fails (all restored): the processes later tests start inherit the first two, and
    one that cannot take SIGTERM or SIGINT (a run a test stops) hangs."""
    env, mask, collecting = dict(os.environ), signal.pthread_sigmask(signal.SIG_BLOCK, []), gc.isenabled()
    yield
    envs = sorted(k for k in {*env, *os.environ} if env.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST")
    for k in envs:
        if k in env:
            os.environ[k] = env[k]
        else:
            del os.environ[k]
    signals = sorted(s.name for s in signal.pthread_sigmask(signal.SIG_SETMASK, mask) ^ mask)
    switched = gc.isenabled() != collecting
    (gc.enable if collecting else gc.disable)()
    left = [f"the environment's {envs}" if envs else "", f"the mask of signals {signals}" if signals else "",
            f"the collector {'off' if collecting else 'on'}" if switched else ""]
    assert not any(left), f"the test changed {', '.join(x for x in left if x)} (restored now)"


@pytest.fixture
def environment_restored():
    """For a test whose library sets variables of the process's environment as it works (Ray's
    init): they are put back after it."""
    env = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(env)


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
