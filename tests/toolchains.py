"""What the HIP build tests share: skip a test whose compiler is missing, unless CI asks for
every toolchain (``ARENA_REQUIRE_TOOLCHAINS=1``: then a missing one fails the test)."""

from __future__ import annotations

import os

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
