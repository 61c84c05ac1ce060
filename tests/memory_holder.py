"""Another process holding memory in a GPU's account (arena.memory), as another evaluation on the
same GPU would: ``hold(key, capacity, nbytes)`` returns once it holds them; ``release(p)``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOLDER = """
import sys
from arena.memory import MemoryAccount, open_account
acct = MemoryAccount(open_account(sys.argv[1]), int(sys.argv[2]), poll_s=0.01)
with acct.reserve(int(sys.argv[3]), "a config of another worker"):
    print("held", acct.waits, flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def hold(key: str, capacity: int, nbytes: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    p = subprocess.Popen([sys.executable, "-c", HOLDER, key, str(capacity), str(nbytes)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().split()[0] == "held"
    return p


def release(p: subprocess.Popen) -> None:
    """Let it go and wait until it has."""
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.readline().strip() == "released"
    assert p.wait(30) == 0
