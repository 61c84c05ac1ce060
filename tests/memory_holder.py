"""Another process holding memory in a GPU's account (arena.evaluation.memory), as another evaluation on the
same GPU would: ``hold(key, capacity, nbytes)`` returns once it holds them (``stand=n``: its
processes stand for n of ``PROCESS_BYTES`` first; ``wait=False``: returns at once, ``held(p)``
then waits until it holds); ``go_exclusive(p)`` makes it ask, holding its work, to run beside
no other work (``MemoryAccount.exclusive``; ``alone(p)`` waits until it does); ``release(p)`` lets
the work go and ends the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOLDER = """
import sys
from arena.evaluation.memory import MemoryAccount, open_account
acct = MemoryAccount(open_account(sys.argv[1]), int(sys.argv[2]), poll_s=0.01)
if int(sys.argv[4]):
    acct.stand(int(sys.argv[4]), "another evaluation's processes")
    print("standing", flush=True)
with acct.reserve(int(sys.argv[3]), "a config of another worker"):
    print("held", acct.waits, flush=True)
    while sys.stdin.readline().strip() == "exclusive":
        acct.exclusive("another worker's retry")
        print("alone", flush=True)
print("released", flush=True)
"""


def hold(key: str, capacity: int, nbytes: int, *, stand: int = 0, wait: bool = True) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    p = subprocess.Popen([sys.executable, "-c", HOLDER, key, str(capacity), str(nbytes), str(stand)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    if stand:
        assert p.stdout.readline().strip() == "standing"
    if wait:
        held(p)
    return p


def held(p: subprocess.Popen) -> int:
    """Wait until the holder holds its work; how many times it waited for room."""
    line = p.stdout.readline().split()
    assert line and line[0] == "held", line
    return int(line[1])


def go_exclusive(p: subprocess.Popen) -> None:
    p.stdin.write("exclusive\n")
    p.stdin.flush()


def alone(p: subprocess.Popen) -> None:
    assert p.stdout.readline().strip() == "alone"


def release(p: subprocess.Popen) -> None:
    """Let it go and wait until it has (its process ends: its standing memory goes with it)."""
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.readline().strip() == "released"
    assert p.wait(30) == 0
