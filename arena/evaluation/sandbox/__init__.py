"""What confines the processes that run code the harness does not trust, at the kernel.

- ``confine``: a process of its own uid and group, its own PID, mount, network, IPC and UTS
  namespaces, a private /proc and /dev/shm, no new privileges, resource limits, and last a
  seccomp filter (``seccomp``), all before any of its job's code runs;
- ``landlock``: what it may read and write on disk, applied when its job says which files it
  needs (before any candidate code loads).

Where the kernel (or the harness's own privileges) lacks a defence, the process runs without it
and the evaluation's record says which one is missing and why.
"""

from arena.evaluation.sandbox.landlock import abi_version, plan, restrict

__all__ = ["abi_version", "plan", "restrict"]
