"""What the worker process may read and write on disk, enforced by the kernel (Landlock).

Before any candidate code is loaded, the candidate process restricts itself: the task folders, the
build and Triton caches, the run directory and the rest of the repository are hidden
(neither readable nor writable), except the few files this evaluation needs (task.yaml,
reference.py, the baseline and candidate files, the built libraries). Writes are allowed
only in the process's own scratch directories and /dev. So a candidate cannot read held-out
configs, solutions or other candidates' builds, and cannot rewrite harness files for a
later evaluation. Landlock also keeps the process from ptrace-ing processes outside its
domain (the trusted process and the parent); where the kernel has Landlock ABI 4 it can
neither bind nor connect TCP sockets, and from ABI 6 it can send no signal to a process
outside its domain (it cannot kill the trusted process to turn its own failure into a
harness error).

Landlock needs Linux >= 5.13 with the LSM enabled; where it is missing, ``restrict``
returns a reason and the evaluation records that the filesystem was not sandboxed.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Iterable

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446   # the same on x86_64 and aarch64
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (
    1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12)
REFER, TRUNCATE = 1 << 13, 1 << 14

_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
_READ = EXECUTE | READ_FILE | READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


# Landlock ABI 4: TCP bind and connect (handled with no rule: refused); ABI 6: signals to and abstract
# Unix sockets of processes outside the sandbox (the trusted process that started this one)
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 if unavailable."""
    try:
        r = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(r), 0)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def plan(hide: Iterable[Path], read: Iterable[Path], write: Iterable[Path]) -> list[tuple[Path, int]]:
    """The (path, rights) rules that grant read everywhere except beneath ``hide`` (the
    directories on the way to a hidden path may only be listed), read of the ``read`` paths
    even inside hidden ones, and write beneath ``write``."""
    hidden = [Path(os.path.realpath(h)) for h in hide]
    hidden = [h for h in hidden if h != Path("/")]
    rules: dict[Path, int] = {}

    def add(p: Path, rights: int) -> None:
        rules[p] = rules.get(p, 0) | rights

    def grant(directory: Path) -> None:
        try:
            children = sorted(directory.iterdir())
        except OSError:
            return
        for child in children:
            if child.is_symlink():
                real = Path(os.path.realpath(child))
                if any(_is_within(real, h) or real in h.parents for h in hidden):
                    continue                              # a link into (or above) a hidden path
            if any(_is_within(child, h) for h in hidden):
                continue                                  # hidden (or beneath a hidden one)
            if any(child in h.parents for h in hidden):
                add(child, READ_DIR)                      # on the way to a hidden path: list only
                grant(child)
            else:
                add(child, _READ)

    if hidden:
        add(Path("/"), READ_DIR)
        grant(Path("/"))
    else:
        add(Path("/"), _READ)
    for p in read:
        p = Path(os.path.realpath(p))
        if p.exists():
            add(p, _READ)
    for p in write:
        p = Path(os.path.realpath(p))
        if p.exists():
            add(p, _READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO |
                MAKE_SYM | REFER | TRUNCATE)
    return sorted(rules.items())


def restrict(hide: Iterable[Path], read: Iterable[Path], write: Iterable[Path]) -> str | None:
    """Restrict this process (and its future children) for good. Returns None on success,
    else why the filesystem could not be sandboxed (nothing is restricted then)."""
    abi = abi_version()
    if abi < 1:
        return "Landlock is not available on this kernel"
    handled = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | \
        MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
    if abi >= 2:
        handled |= REFER
    if abi >= 3:
        handled |= TRUNCATE
    libc = _libc()
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8       # the struct as this kernel's ABI knows it
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        for path, rights in plan(hide, read, write):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                allowed = rights & handled
                if not path.is_dir():
                    allowed &= _FILE_ONLY
                rule = _PathBeneathAttr(allowed, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(ruleset)
    return None
