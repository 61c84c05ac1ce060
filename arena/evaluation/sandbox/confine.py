"""A process that runs untrusted code, confined by the kernel before that code can run.

The process that starts it (the evaluation's trusted process) decides a ``Plan`` and, where it
can, starts it as the first process of a PID namespace of its own (``pid_namespace``). The
started process then confines itself (``enter``), first thing, in this order:

- its own mount namespace, with a /proc of its PID namespace (it lists only its own processes;
  CUDA needs /proc to match the namespace) and a /dev/shm of its own (a tmpfs of 1 GiB:
  filling it fills nothing of the machine's), its $TMPDIR, $HOME and working folder
  (``_private_mounts``). Its own network (no interface but a down loopback), IPC and UTS
  namespaces;
- the kernel's OOM killer takes it first (``oom_score_adj`` 1000, which it cannot lower);
- an unprivileged uid of its own and the group every confined process shares (the caches they
  may write), keeping the groups of the device nodes; of the capabilities only
  CAP_DAC_READ_SEARCH (it may read what Landlock lets it read, wherever the interpreter and its
  packages live, /root included), dropped for good where Landlock is missing (``landlock_missing``);
  its parent's death kills it;
- resource limits of its own (``_limits``);
- no new privileges, and last a seccomp filter (``arena.evaluation.sandbox.seccomp``), whose listener it
  hands to the process that started it over ``ctl`` with a report of what was applied.

The trusted process, still root, is the only one that can undo any of it, and runs none of the
untrusted code. Where a defence cannot be had here (not root, the kernel lacks a feature), the
report names it and says why; the evaluation's record carries it, and ``arena device`` lists
what this machine offers (``features``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import resource
import signal
import socket
import stat
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from arena.errors import machine_memory_bytes, process_data_bytes

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = (
    0x00020000, 0x04000000, 0x08000000, 0x20000000, 0x40000000)
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_KEEPCAPS, _PR_CAPBSET_DROP = 1, 4, 8, 24
_PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 2, 4
_CAP_VERSION_3 = 0x20080522
CAP_DAC_READ_SEARCH = 2

# every confined process's uid is its own (UID_BASE + its starter's pid and role); its group is shared
UID_BASE = 1_800_000_000
CONFINED_GID = UID_BASE - 1
ROLES = ("candidate", "replay")
PRIVATE_TMP = "/dev/shm"        # its own tmpfs there, in its own mount namespace: its temporary files
TMP_BYTES = 2**30               # ... held in memory, so bounded
CPU_SECONDS = 4 * 3600          # CPU time over its whole life (an evaluation's deadlines end hangs far sooner)
NOFILE = 4096
FSIZE_BYTES = 2**30             # the largest file it may write
DEFENCES = ("uid", "pid namespace", "mount namespace", "network namespace", "no new privileges", "seccomp",
            "resource limits", "landlock", "device memory allowance")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(r: int, what: str) -> None:
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def data_headroom() -> int:
    """Host memory a confined process may take beyond what it holds when confined (RLIMIT_DATA:
    its heap and private writable mappings; its device allocations are not counted there): an
    eighth of the machine's memory, between 4 and 16 GiB."""
    total = machine_memory_bytes(32 * 2**30)
    return int(min(16 * 2**30, max(4 * 2**30, total // 8)))


def nproc_limit() -> int:
    """Processes and threads of a confined process's uid: enough for torch's and the compilers'
    threads on this machine's cores."""
    return max(1024, 16 * (os.cpu_count() or 1))


@dataclass
class Plan:
    """What the starting process decided for one confined process. ``uid`` None: it keeps the
    starter's identity; ``namespaces``: it is started in a PID namespace of its own and makes
    the others; ``missing``: the defences it goes without, and why."""

    role: str
    uid: int | None = None
    gid: int | None = None
    groups: list[int] = field(default_factory=list)
    namespaces: bool = False
    seccomp: bool = True
    data_headroom: int = 0
    missing: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        return cls(**json.loads(text))


def device_groups() -> tuple[list[int], str | None]:
    """The groups through which the GPU's device nodes are usable by an unprivileged uid (none
    where they are open to all), or why they are not usable (a node only root may open)."""
    paths = [f"/dev/{n}" for n in _listdir("/dev") if n.startswith(("nvidia", "kfd"))]
    paths += [f"/dev/dri/{n}" for n in _listdir("/dev/dri") if n.startswith("renderD")]
    groups: set[int] = set()
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        if not stat.S_ISCHR(st.st_mode) or st.st_mode & 0o006 == 0o006:
            continue
        if st.st_mode & 0o060 == 0o060 and st.st_gid != 0:
            groups.add(st.st_gid)
            continue
        return [], f"{p} may be opened by root only (mode {stat.filemode(st.st_mode)})"
    return sorted(groups), None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


@functools.lru_cache(maxsize=1)
def _namespace_trial() -> str | None:
    """Can this process start a child in PID, mount, network, IPC and UTS namespaces of its own
    with a /proc and a /dev/shm of its own? Tried once, with a child that does just that (a fork
    where this process runs one thread, as the trusted process does when it starts its
    children: a millisecond; else a fresh interpreter); None if it can."""
    import subprocess
    import sys
    import threading

    if os.geteuid() != 0:
        return "the harness does not run as root (namespaces and a uid of its own need it)"
    try:
        if threading.active_count() == 1:
            r, w = os.pipe()
            with pid_namespace(True):
                pid = os.fork()
            if pid == 0:                                   # pragma: no cover - the trial child
                try:
                    os.close(r)
                    _private_mounts(shm=True)
                    os.write(w, b"ok")
                except BaseException as exc:  # noqa: BLE001
                    os.write(w, str(exc).encode()[:300])
                finally:
                    os._exit(0)
            os.close(w)
            with os.fdopen(r, "rb") as f:
                said = f.read().decode(errors="replace")
            os.waitpid(pid, 0)
        else:
            code = ("from arena.evaluation.sandbox.confine import _private_mounts; _private_mounts(shm=True); "
                    "print('ok')")
            root = str(Path(__file__).resolve().parents[3])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
            with pid_namespace(True):
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
            said = out.stdout.strip() or (out.stderr.strip().splitlines() or ["?"])[-1]
    except (OSError, subprocess.SubprocessError) as exc:
        return f"a PID namespace cannot be made here: {getattr(exc, 'strerror', None) or exc}"
    return None if said == "ok" else f"a namespace's own /proc cannot be mounted here: {said[:300]}"


def plan(role: str, *, share_by_fd: bool = True) -> Plan:
    """The confinement of a process of ``role`` (``ROLES``). ``share_by_fd``: the buffers it maps
    come as descriptors (memfd, CUDA's virtual-memory handles), which need no common uid; the
    runtime's IPC handles (ROCm here) do, and then it keeps the starter's uid."""
    from arena.evaluation.sandbox import seccomp

    p = Plan(role=role, data_headroom=data_headroom())
    why_ns = _namespace_trial()
    if why_ns is None:
        p.namespaces = True
    else:
        for d in ("pid namespace", "mount namespace", "network namespace"):
            p.missing[d] = why_ns
    groups, why_dev = device_groups()
    if why_ns is not None:
        p.missing["uid"] = why_ns
    elif why_dev is not None:
        p.missing["uid"] = why_dev
    elif not share_by_fd:
        p.missing["uid"] = "the device's buffers are shared through the runtime's IPC handles, which need one uid"
    else:
        p.uid = UID_BASE + (os.getpid() % 100_000_000) * len(ROLES) + ROLES.index(role)
        p.gid = CONFINED_GID
        p.groups = groups
    why_sc = seccomp.available()
    if why_sc is not None:
        p.seccomp = False
        p.missing["seccomp"] = why_sc
    return p


@contextlib.contextmanager
def pid_namespace(make: bool) -> Iterator[None]:
    """Within the block, the children this process starts (fork, subprocess) are each the first
    process of a new PID namespace; this process itself stays where it is."""
    if not make:
        yield
        return
    libc = _libc()
    me = os.getpid()
    own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        try:
            yield
        finally:
            if os.getpid() == me:  # not in a child forked inside the block
                _check(libc.setns(own, CLONE_NEWPID), "setns back to this process's PID namespace")
    finally:
        os.close(own)


def _private_mounts(shm: bool) -> None:
    """Its own mount, network, IPC and UTS namespaces, a /proc of its PID namespace, and its own
    tmpfs at /dev/shm. That tmpfs is its $TMPDIR, $HOME and working folder because it is a path
    reachable without capabilities, which ``access(2)`` ignores: gcc, finding no usable $TMPDIR
    beneath a /root of mode 0700, fell back on a /tmp Landlock closed, and aborted. The
    machine's /tmp stays visible (candidates' files may be there)."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "mount /proc")
    if shm and os.path.isdir(PRIVATE_TMP):
        opts = f"size={TMP_BYTES},mode=1777".encode()
        _check(
            libc.mount(b"tmpfs", PRIVATE_TMP.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts), f"mount {PRIVATE_TMP}"
        )


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _capset(caps: int) -> None:
    """Effective, permitted and inheritable capabilities all ``caps`` (a bit mask)."""
    head = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    for k in range(2):
        word = (caps >> (32 * k)) & 0xFFFFFFFF
        data[k] = _CapData(word, word, word)
    _check(_libc().capset(ctypes.byref(head), data), "capset")


def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


def _drop_capabilities(uid: int | None, gid: int | None, groups: list[int]) -> None:
    """Every capability gone but CAP_DAC_READ_SEARCH (bounding set, permitted, effective,
    inheritable and ambient: the programs it runs keep it too), as ``uid`` where given."""
    libc = _libc()
    for cap in range(_last_cap() + 1):
        if cap != CAP_DAC_READ_SEARCH:
            _check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    if uid is not None:
        _check(libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0), "keep capabilities")
        os.setgroups(groups)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        _check(libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0), "keep capabilities off")
        _check(libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")  # its own /proc files stay its own
    _capset(1 << CAP_DAC_READ_SEARCH)
    _check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0), "raise ambient capability")


def landlock_missing() -> None:
    """No Landlock bounds what this process reads: it gives up reading past file permissions."""
    _libc().prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if os.geteuid() == 0 or _has_capabilities():
        _capset(0)


def _has_capabilities() -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapPrm:"):
                return int(line.split()[1], 16) != 0
    except (OSError, ValueError):
        pass
    return False


def _limits(p: Plan) -> None:
    """Data (its heap and private mappings: host memory), CPU time, open files, processes and
    threads (counted for its uid alone), file size, no core files. Not its address space: a
    CUDA process's device allocations take it (on an H100, a limit of VmSize + 8 GiB refused a
    20 GiB device allocation), so that limit would cap the device memory by accident; the data
    limit does not count them."""
    limits = [
        ("RLIMIT_DATA", process_data_bytes() + p.data_headroom),
        ("RLIMIT_CPU", CPU_SECONDS),
        ("RLIMIT_NOFILE", NOFILE),
        ("RLIMIT_FSIZE", FSIZE_BYTES),
        ("RLIMIT_CORE", 0),
    ]
    if p.uid is not None:  # counted for its uid: alone only where the uid is its own
        limits.append(("RLIMIT_NPROC", nproc_limit()))
    for name, value in limits:
        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def enter(p: Plan, ctl: socket.socket | None, status_w: int | None = None) -> dict[str, str]:
    """Confine this process by the plan (its only thread; before any of its job's code). Sends
    the report ({defence: "" where applied, else why not}), its pid and the seccomp listener on
    ``ctl``. Where it is the first process of a PID namespace of its own, that first process
    stays behind as the namespace's init (``_init``: root, it runs nothing but a wait, and writes
    the confined process's wait status on ``status_w`` when it ends) and the confined process
    goes on as its child. A step that fails where the plan counted on it raises: the process
    ends before its job, and its starter reports a harness failure."""
    report = {d: why for d, why in p.missing.items()}
    libc = _libc()
    os.setsid()  # a session and process group of its own: a signal to its group reaches only its own
    if p.namespaces:
        _private_mounts(shm=True)
        child = os.fork()
        if child:
            _init(child, status_w)
        for d in ("pid namespace", "mount namespace", "network namespace"):
            report.setdefault(d, "")
        os.environ.update(TMPDIR=PRIVATE_TMP, HOME=PRIVATE_TMP, CUDA_CACHE_PATH=f"{PRIVATE_TMP}/nv")
        import tempfile

        tempfile.tempdir = None
        os.chdir(PRIVATE_TMP)
    if status_w is not None:
        os.close(status_w)
    try:
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass
    if os.geteuid() == 0:
        _drop_capabilities(p.uid, p.gid, p.groups)
    if p.uid is not None:
        os.umask(0o002)  # what it writes in the shared caches stays writable by the next one
        report.setdefault("uid", "")
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    _limits(p)
    report["resource limits"] = ""
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    report["no new privileges"] = ""
    listener = None
    if p.seccomp:
        from arena.evaluation.sandbox import seccomp

        listener = seccomp.load()
        report["seccomp"] = (
            "" if listener is not None else "refused calls kill the process unnamed (no user notification here)"
        )
    if ctl is not None:
        creds = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())  # its pid, as its starter sees it
        anc = [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)]
        if listener is not None:
            anc.append((socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", listener)))
        ctl.sendmsg([json.dumps(report).encode()], anc)
        if listener is not None:
            os.close(listener)
    return report


_INIT_CODE = """
import os, struct, sys
child, fd = int(sys.argv[1]), int(sys.argv[2])
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if pid == child:
        if fd >= 0:
            os.write(fd, struct.pack("i", status))
        break
os._exit(0)
"""


def _init(child: int, status_w: int | None) -> None:
    """PID 1 of the namespace: a fresh interpreter (nothing of the process it was forked from
    stays in it: not its memory, its arguments or its environment) that reaps what ends in
    the namespace and, when the confined process ends, writes its wait status and exits (the
    namespace, and whatever the process left in it, ends with it). Root, and killed with its
    parent; the confined process can neither signal nor trace it."""
    import sys

    try:
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.valid_signals()) - {signal.SIGCHLD})
        close_fds_except(() if status_w is None else (status_w,))
        fd = -1 if status_w is None else status_w
        if fd >= 0:
            os.set_inheritable(fd, True)
        os.execve(sys.executable, [sys.executable, "-S", "-I", "-c", _INIT_CODE, str(child), str(fd)], {})
    finally:
        os._exit(1)


def close_fds_except(keep: tuple[int, ...]) -> None:
    """Close every descriptor above stderr but ``keep`` (a process started for a job of its own
    keeps nothing of its starter's)."""
    try:
        top = max(int(x) for x in os.listdir("/proc/self/fd")) + 1
    except (OSError, ValueError):
        top = 1024
    for fd in range(3, top):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def socketpair() -> tuple[socket.socket, socket.socket]:
    """The control channel between a starter and its confined process: the starter's end
    (which learns the confined process's pid from its report), the confined process's end."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return mine, theirs


def receive(ctl: socket.socket, timeout: float) -> tuple[dict[str, str], int, int | None]:
    """The starter's side of ``enter``: the report, the confined process's pid (in the starter's
    PID namespace, as the kernel translated it) and the listener's descriptor (or None)."""
    ctl.settimeout(timeout)
    try:
        data, anc, _, _ = ctl.recvmsg(1 << 16, socket.CMSG_SPACE(12) + socket.CMSG_SPACE(4 * 4))
    finally:
        ctl.settimeout(None)
    pid, listener, extra = 0, None, []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= 12:
            pid = struct.unpack("3i", payload[:12])[0]
        elif level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = list(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4]))
            if fds:
                listener, extra = fds[0], fds[1:]
    for fd in extra:
        os.close(fd)
    if not data:
        raise OSError("the confined process ended before it said how it was confined")
    report = json.loads(data.decode())
    if not isinstance(report, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in report.items()):
        raise OSError(f"a malformed confinement report: {data[:200]!r}")
    return report, pid, listener


def features() -> dict[str, Any]:
    """What this machine offers a confined process (for ``arena device``): each defence, with
    None where it is had, else why not."""
    from arena.evaluation.sandbox import landlock, seccomp

    why_ns = _namespace_trial()
    _, why_dev = device_groups()
    abi = landlock.abi_version()
    sc = seccomp.available()
    return {
        "pid namespace": why_ns,
        "mount namespace": why_ns,
        "network namespace": why_ns,
        "uid": why_ns or why_dev,
        "no new privileges": None,
        "resource limits": None,
        "seccomp": sc if sc else (None if seccomp.notifies() else "refused calls kill unnamed"),
        "landlock": None if abi >= 1 else "Landlock is not available on this kernel",
        "landlock abi": abi,
    }


def share_dir(path: Path) -> None:
    """Make a cache folder the confined processes write (Triton's) theirs to write too: owned by
    their shared group, group-writable, new entries in that group. Only the root harness can."""
    if os.geteuid() != 0:
        return
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
            try:
                st = os.lstat(name)
                if stat.S_ISLNK(st.st_mode):
                    continue
                if st.st_gid != CONFINED_GID:
                    os.chown(name, -1, CONFINED_GID)
                want = st.st_mode | (0o2070 if stat.S_ISDIR(st.st_mode) else 0o060)
                if stat.S_IMODE(st.st_mode) != stat.S_IMODE(want):
                    os.chmod(name, stat.S_IMODE(want))
            except OSError:
                continue


def _children(pid: int) -> list[int]:
    """The live children of a process (every thread's), from /proc; a scan of every process's
    parent where the kernel keeps no list of them."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    try:
        for tid in tids:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    except FileNotFoundError:
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _stat(int(entry))
                if stat is not None and stat[2] == pid:
                    out.append(int(entry))
    except OSError:
        pass
    return [c for c in out if (_stat(c) or ("", "Z", 0))[1] not in ("Z", "X")]


def _stat(pid: int) -> tuple[str, str, int] | None:
    """A process's name, state and parent, or None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, _, rest = raw.partition(" (")[2].rpartition(")")
    fields = rest.split()
    return name, fields[0], int(fields[1])


def strays(pid: int, init: int | None = None) -> list[str]:
    """Processes that a confined process (``pid``) started and that still run: its children,
    and those its namespace's ``init`` holds other than it (orphans are given to the init).
    After each of its replies there must be none: nothing of its runs while it is not
    serving a request (a child could otherwise work on while the other side is timed)."""
    found = [c for c in _children(pid)]
    if init is not None:
        found += [c for c in _children(init) if c != pid]
    return [f"{c} ({(_stat(c) or ('?',))[0]})" for c in found]
