"""What the tests that need a tool share (the HIP compilers, Chromium): skip a test whose tool is
missing, unless CI asks for every toolchain (``ARENA_REQUIRE_TOOLCHAINS=1``: then a missing one
fails the test)."""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_TOOLCHAINS = os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1"
ARCHS = {"cuda": "sm_90", "rocm": "gfx90a"}


def need(reason: str | None) -> None:
    """Skip (or, where every toolchain is required, fail) for ``reason``; nothing if None."""
    if reason is None:
        return
    if REQUIRE_TOOLCHAINS:
        pytest.fail(f"{reason} (ARENA_REQUIRE_TOOLCHAINS=1)")
    pytest.skip(reason)


def chromium() -> str:
    """Chromium's path, for the rendering tests (skipped or failed, as ``need``, without it)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    need(None if found else "chromium not installed")
    return found
