"""The system calls a confined process may make: a seccomp-bpf allow-list, built with libseccomp.

A confined process (``arena.evaluation.sandbox.confine``) loads this filter on itself last, before any of
the job's code runs; its children (Triton's ``ptxas`` and C compiler) inherit it. Calls on the
list run; calls that act on a process (scheduling, priority, affinity, resource limits,
signals) run on the process itself only; ``clone`` may make no namespace; sockets are Unix
sockets only; ``clone3``, whose flags a filter cannot read, answers ENOSYS (the C library then
uses ``clone``). Every other call is refused before it runs: the kernel stops the calling
thread and tells the process that started the confined one (a seccomp user notification on the
listener it was handed), which ends the process and names the call (``Listener``); where the
kernel or libseccomp cannot notify, the kernel kills the process (SECCOMP_RET_KILL_PROCESS) and
the call goes unnamed.

The list is what a CUDA or HIP process, Python, torch and Triton's compiler use, and it was
measured: every shipped solution and specialised kernel on every split on an H100 (615
verdicts, their baselines timed in a process under the same filter), with the filter in
learning mode (``ARENA_SECCOMP_LEARN``: a refused call is let through and written to that
file), asked for nothing outside it (reports/validation/2026-11-25-cuda-h100-confined.md); the
cpu backend's tests run under it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import struct
from dataclasses import dataclass

# reading and writing files and descriptors
_FILES = """read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2 open openat openat2 close
close_range creat lseek dup dup2 dup3 fcntl flock fsync fdatasync sync_file_range ftruncate truncate fallocate
stat fstat lstat newfstatat statx statfs fstatfs access faccessat faccessat2 readlink readlinkat getdents
getdents64 getcwd chdir fchdir mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink
symlinkat chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat umask utime utimes utimensat futimesat
pipe pipe2 sendfile splice tee vmsplice copy_file_range select pselect6 poll ppoll epoll_create epoll_create1
epoll_ctl epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2 signalfd signalfd4 timerfd_create timerfd_settime
timerfd_gettime inotify_init inotify_init1 inotify_add_watch inotify_rm_watch getxattr lgetxattr fgetxattr
listxattr llistxattr flistxattr fadvise64 readahead ioctl"""
# its own memory
_MEMORY = """mmap munmap mremap mprotect madvise brk mlock mlock2 munlock mlockall munlockall mincore msync
membarrier get_mempolicy set_mempolicy mbind pkey_alloc pkey_free pkey_mprotect remap_file_pages"""
# its own threads and children, time, signals to itself, its own identity and limits
_PROCESS = """fork vfork execve execveat exit exit_group wait4 waitid getpid getppid gettid getpgid getpgrp getsid
getuid geteuid getgid getegid getgroups getresuid getresgid capget capset prctl arch_prctl set_tid_address
set_robust_list get_robust_list rseq futex futex_waitv sched_yield sched_getaffinity sched_getparam
sched_getscheduler sched_get_priority_max sched_get_priority_min sched_rr_get_interval sched_getattr getpriority
getrlimit setrlimit getrusage times uname sysinfo getcpu restart_syscall nanosleep clock_nanosleep clock_gettime
clock_getres gettimeofday time alarm getitimer setitimer timer_create timer_settime timer_gettime timer_getoverrun
timer_delete pause rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait rt_sigsuspend
sigaltstack getrandom seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self ioprio_get
shmget shmat shmdt shmctl"""
# sockets among its own processes (its network namespace has no other)
_SOCKETS = """bind connect listen accept accept4 sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown
getsockname getpeername getsockopt setsockopt"""
ALLOWED = frozenset((_FILES + " " + _MEMORY + " " + _PROCESS + " " + _SOCKETS).split())

# the calls that name a process by its first argument (setpriority: by its second, after PRIO_PROCESS)
PID_FIRST = ("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "prlimit64", "kill",
             "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
_AF_UNIX = 1
_MAX_NR = 1024          # beyond every call number of the architectures Linux runs on
_ENUMERATED = 64        # a pid this small has a refusing rule for each number below it
_PRIO_PROCESS = 0

# the listener's ioctls (linux/seccomp.h) and the one flag a learning reply sets
_NOTIF_RECV, _NOTIF_SEND = 0xC0502100, 0xC0182101
_USER_NOTIF_FLAG_CONTINUE = 1
_NOTIF = struct.Struct("=QII iIQ6Q")        # id, pid, flags, then seccomp_data: nr, arch, ip, args[6]
_RESP = struct.Struct("=QqiI")              # id, val, error, flags
LEARN_ENV = "ARENA_SECCOMP_LEARN"


def available() -> str | None:
    """None where a filter can be built and loaded here, else why not."""
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail") as f:
            actions = f.read().split()
    except OSError:
        return "the kernel has no seccomp filters (no /proc/sys/kernel/seccomp)"
    if "kill_process" not in actions:
        return "the kernel's seccomp cannot kill a process"
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError, OSError) as exc:
        return f"libseccomp is not usable here ({type(exc).__name__}: {exc})"
    return None


def notifies() -> bool:
    """Can a refused call be held and named by the starting process (user notification, kernel
    5.5, libseccomp 2.5)?"""
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail") as f:
            if "user_notif" not in f.read().split():
                return False
        import pyseccomp

        return pyseccomp.get_api() >= 6
    except (OSError, ImportError, RuntimeError, NotImplementedError):
        return False


def build(self_pid: int, *, notify: bool) -> object:
    """The filter (a ``pyseccomp.SyscallFilter``, not loaded) for the process ``self_pid``.
    Every call the list does not allow has a rule of its own that refuses it (``notify``: held
    for the listener, else the process killed). The calls that name a process (``PID_FIRST``,
    and ``setpriority`` by its second argument) run on 0 and ``self_pid`` only: any other
    number is refused, by rules for the numbers above it and each one below it where it is
    small (in a PID namespace of its own it is 2); where it is not, a smaller number falls to
    the default (libseccomp compares an argument once a rule, so "neither 0 nor this process"
    has no single rule), which kills the process unnamed, as do a number no call has here and
    a call of another architecture (32-bit calls from a 64-bit process)."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.KILL_PROCESS)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    try:        # a binary tree of the call numbers (libseccomp 2.5): a call is found in ~9 steps, not ~400
        f.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except OSError:
        pass
    arch = sc.system_arch()
    names = set()
    for nr in range(_MAX_NR):
        try:
            names.add(sc.resolve_syscall(arch, nr).decode())
        except ValueError:
            continue
    def refused(name: str, *args: object) -> None:      # without notification the default kills: no rule
        if notify:
            f.add_rule(sc.NOTIFY, name, *args)

    conditional = {"clone", "clone3", "socket", "socketpair", "setpriority", *PID_FIRST}
    for name in sorted(names - conditional):
        if name in ALLOWED:
            f.add_rule(sc.ALLOW, name)
        else:
            refused(name)
    f.add_rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, NAMESPACE_FLAGS, 0))
    for bit in range(64):
        if NAMESPACE_FLAGS >> bit & 1:
            refused("clone", sc.Arg(0, sc.MASKED_EQ, 1 << bit, 1 << bit))
    if "clone3" in names:
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for name in ("socket", "socketpair"):
        f.add_rule(sc.ALLOW, name, sc.Arg(0, sc.EQ, _AF_UNIX))
        refused(name, sc.Arg(0, sc.NE, _AF_UNIX))

    def own_only(name: str, arg: int, *also: object) -> None:
        for pid in sorted({0, self_pid}):
            f.add_rule(sc.ALLOW, name, *also, sc.Arg(arg, sc.EQ, pid))
        refused(name, sc.Arg(arg, sc.GT, self_pid))
        if self_pid <= _ENUMERATED:
            for other in range(1, self_pid):
                refused(name, sc.Arg(arg, sc.EQ, other))

    for name in [n for n in PID_FIRST if n in names]:
        own_only(name, 0)
    own_only("setpriority", 1, sc.Arg(0, sc.EQ, _PRIO_PROCESS))
    refused("setpriority", sc.Arg(0, sc.NE, _PRIO_PROCESS))
    return f


def load() -> int | None:
    """Build and load the filter on this process (it must be its only thread, or the filter
    holds for this thread and those it starts only). Returns the listener's descriptor where
    refused calls notify, None where they kill."""
    notify = notifies()
    before = _listeners()
    build(os.getpid(), notify=notify).load()
    if not notify:
        return None
    new = _listeners() - before
    if len(new) == 1:
        return new.pop()
    raise RuntimeError("the seccomp filter was loaded but its listener was not found")


def _listeners() -> set[int]:
    """This process's descriptors that are seccomp listeners."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:seccomp notify":
                found.add(int(name))
        except OSError:
            continue
    return found


def syscall_name(nr: int) -> str:
    try:
        import pyseccomp as sc

        return sc.resolve_syscall(sc.system_arch(), nr).decode()
    except (ImportError, ValueError, RuntimeError, OSError):
        return f"system call {nr}"


@dataclass
class Refused:
    """A call the filter refused: its number, name and arguments, and the thread that made it
    (in the confined process's PID namespace)."""

    nr: int
    name: str
    args: tuple[int, ...]
    tid: int

    def describe(self) -> str:
        shown = ", ".join(_arg(a) for a in self.args[:_ARGS_SHOWN.get(self.name, 3)])
        return f"{self.name}({shown})"


_ARGS_SHOWN = {"kill": 2, "tkill": 2, "tgkill": 3, "setpriority": 3, "prlimit64": 2, "ptrace": 2,
               "sched_setaffinity": 1, "sched_setscheduler": 2, "socket": 3, "unshare": 1, "mount": 0,
               "perf_event_open": 0, "bpf": 1, "memfd_create": 0, "setsid": 0, "setpgid": 2}


def _arg(a: int) -> str:
    signed = a - (1 << 64) if a >= 1 << 63 else a
    return str(signed) if -4096 < signed < 1 << 20 else hex(a)


class Listener:
    """The starting process's end of a confined process's filter: refused calls arrive here,
    the calling thread stopped until answered. ``learn``: answer each by letting it run, and
    append its name to that file (measuring the list); otherwise the caller ends the process."""

    def __init__(self, fd: int, learn: str | None = None):
        self.fd = fd
        self.learn = learn
        self.refused: list[Refused] = []

    def pending(self) -> bool:
        p = select.poll()
        p.register(self.fd, select.POLLIN)
        return any(ev & select.POLLIN for _, ev in p.poll(0))

    def take(self) -> Refused | None:
        """The next refused call (None if none is waiting or it was withdrawn: its thread died);
        in learning mode it is answered and let through."""
        if not self.pending():
            return None
        buf = bytearray(_NOTIF.size)
        try:
            fcntl.ioctl(self.fd, _NOTIF_RECV, buf)
        except OSError:
            return None
        nid, tid, _, nr, _, _, *args = _NOTIF.unpack(buf)
        got = Refused(nr, syscall_name(nr), tuple(args), tid)
        self.refused.append(got)
        if self.learn:
            try:
                with open(self.learn, "a") as f:
                    f.write(f"{got.name} {got.describe()}\n")
                fcntl.ioctl(self.fd, _NOTIF_SEND, bytearray(_RESP.pack(nid, 0, 0, _USER_NOTIF_FLAG_CONTINUE)))
            except OSError:
                pass
            return None
        return got

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass

