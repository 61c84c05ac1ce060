"""The candidate process's audit hook (PEP 578): what a Python candidate may not do ends the process.

The candidate process (``arena.evaluation.candidate.process``) calls ``install(policy, notice_fd)``
once, then ``arm()`` right before it imports a Triton candidate. From then on every audit event
of the process passes through one hook that either returns (allowed) or refuses: it writes one
JSON line ``{"type": "forbidden", "event": ..., "detail": ...}`` to ``notice_fd`` (a pipe the
trusted process reads, ``parse_notice``) and ends the process at once with
``os._exit(FORBIDDEN_EXIT)``. Nothing is raised, so a candidate cannot catch a refusal and carry
on. ``policy_data()`` returns the policy as data (for the record and the tests). What it refuses
and allows, and why, is written above ``CandidatePolicy``; how the hook keeps itself intact, at
``install``; what ``arm()`` changes, at ``arm``; what it does not stop, below.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

# What this does NOT stop (the audit hook is a policy over CPython's audit events, not a sandbox):
#
# - ctypes primitives that fire no event, and ``_ctypes`` is loaded in every candidate process
#   (torch imports ctypes): ``ctypes.c_char_p(address).value`` reads, ``ctypes.pointer(x)[i] = v``
#   writes out of bounds, ``ctypes.cast`` converts. With them a candidate can read and write this
#   process's memory (the hook, the timer's samples) without any refused event;
# - raw addresses through other libraries: numpy's ``__array_interface__`` / ``__cuda_array_interface__``
#   with a chosen address, ``torch._C._construct_storage_from_data_pointer``, ``torch.from_dlpack``;
# - Python-level state reachable without frames: closures (``__closure__``/``cell_contents`` read and
#   write fire no event), module globals, class attributes (assigning them fires no event);
# - data races on files Triton itself uses: a candidate thread or signal handler can rewrite the
#   temporary ``.c`` file (or drop headers beside it) between Triton writing it and the compiler
#   reading it; on Triton 3.6 a candidate that changes Triton's launcher generator data in ways the
#   install-time snapshot does not cover could still have Triton compile C of its choosing;
# - an open of a path object whose conversion to ``str`` is made to return different strings on
#   successive calls in ways not checked here; the ``/proc/<pid>/mem`` rule is a second line behind
#   Landlock, which keeps /proc read-only;
# - CPython bugs that corrupt memory from pure Python, and anything done before ``arm()``.

FORBIDDEN_EXIT = 86
NOTICE_TYPE = "forbidden"
FORK_EXEC_EVENT = "arena.evaluation.candidate.audit.fork_exec"
CREATE_BUILTIN_EVENT = "arena.evaluation.candidate.audit.create_builtin"
# builtin modules that may not be made again after arming (a fresh copy escapes the gates)
GATED_BUILTINS = frozenset({"_posixsubprocess", "_imp"})

# -----------------------------------------------------------------------------------------------
# The policy's tables

# events refused outright (after arm())
REFUSED_EVENTS = frozenset(
    {
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys.monitoring.register_callback",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "code.__new__",
        "marshal.load",
        "os.system",
        "os.exec",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "os.startfile",
        "os.posix_spawn",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "signal.pidfd_send_signal",
        "os.symlink",
        "os.unshare",
        "os.setns",
    }
)
# event name prefixes refused outright
REFUSED_PREFIXES = ("ctypes.", "socket.")
# attribute reads that hand out a frame
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# function attributes whose assignment would change what a function does
FUNCTION_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# environment variables a tool the policy runs would see (os.putenv of these is refused)
SENSITIVE_ENV_EXACT = frozenset(
    {
        "PATH",
        "CC",
        "CPATH",
        "C_INCLUDE_PATH",
        "CPLUS_INCLUDE_PATH",
        "OBJC_INCLUDE_PATH",
        "LIBRARY_PATH",
        "COMPILER_PATH",
        "TMPDIR",
        "TMP",
        "TEMP",
        "GCONV_PATH",
        "DEPENDENCIES_OUTPUT",
        "SUNPRO_DEPENDENCIES",
        "CUDA_HOME",
        "CUDA_PATH",
        "ROCM_PATH",
        "HIP_PATH",
    }
)
SENSITIVE_ENV_PREFIXES = (
    "LD_",
    "GCC_",
    "TRITON_PTXAS",
    "TRITON_CACHE",
    "TRITON_HOME",
    "TRITON_LIBCUDA",
    "TRITON_CUDACRT",
    "TRITON_CUDART",
    "TRITON_BACKENDS",
    "PYTHON",
)
# Triton's natively built modules (runtime/build.py compile_module_from_src names)
LAUNCHER_MODULES = ("__triton_launcher", "cuda_utils", "hip_utils")
# standard-library extensions a candidate may import although they were not loaded yet: computation
# only, loaded from the interpreter's own lib-dynload
STDLIB_EXTENSIONS = frozenset(
    {
        "math",
        "cmath",
        "_bisect",
        "_heapq",
        "_random",
        "_statistics",
        "_datetime",
        "_decimal",
        "_json",
        "_struct",
        "array",
        "_contextvars",
        "_opcode",
        "_md5",
        "_sha1",
        "_sha2",
        "_sha256",
        "_sha512",
        "_sha3",
        "_blake2",
        "binascii",
        "zlib",
        "_bz2",
        "_lzma",
        "unicodedata",
        "_csv",
        "_pickle",
        "_queue",
        "_zoneinfo",
    }
)

# event kinds (the hook dispatches on these small ints)
(
    _K_ALLOW,
    _K_REFUSE,
    _K_GETATTR,
    _K_SETATTR,
    _K_GETFRAME,
    _K_SPAWN,
    _K_FORKEXEC,
    _K_IMPORT,
    _K_OPEN,
    _K_MARSHAL,
    _K_PUTENV,
    _K_LINK,
    _K_CODE,
    _K_BUILTIN,
) = range(14)

_KINDS = {
    "object.__getattr__": _K_GETATTR,
    "object.__setattr__": _K_SETATTR,
    "object.__delattr__": _K_SETATTR,
    "sys._getframe": _K_GETFRAME,
    "subprocess.Popen": _K_SPAWN,
    FORK_EXEC_EVENT: _K_FORKEXEC,
    "import": _K_IMPORT,
    "open": _K_OPEN,
    "marshal.loads": _K_MARSHAL,
    "os.putenv": _K_PUTENV,
    "os.unsetenv": _K_PUTENV,
    "os.rename": _K_LINK,
    "os.link": _K_LINK,
    "function.__new__": _K_CODE,
    "exec": _K_CODE,
    CREATE_BUILTIN_EVENT: _K_BUILTIN,
}
_KINDS.update({e: _K_REFUSE for e in REFUSED_EVENTS})

# the C compiler's fixed flags in triton/runtime/build.py _build()
_CC_FIXED = ("-O3", "-shared", "-fPIC", "-Wno-psabi", "-o")


# -----------------------------------------------------------------------------------------------
# Notices


@dataclass(frozen=True)
class Notice:
    """One refusal, as the trusted process reads it from the notice pipe."""

    event: str
    detail: str

    def message(self) -> str:
        return f"the candidate did what candidates may not: {self.event}" + (f" ({self.detail})" if self.detail else "")


def format_notice(event: str, detail: str) -> bytes:
    """The notice line (what the hook writes; the hook builds the same bytes without json)."""
    return (json.dumps({"type": NOTICE_TYPE, "event": event, "detail": detail}) + "\n").encode("ascii")


def decode_notice(text: str) -> Notice:
    """The first notice line of ``text`` (ValueError when it is not one)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    data = json.loads(line)
    if not isinstance(data, dict) or data.get("type") != NOTICE_TYPE or not isinstance(data.get("event"), str):
        raise ValueError(f"not a notice: {line[:200]!r}")
    detail = data.get("detail")
    return Notice(event=data["event"], detail=detail if isinstance(detail, str) else "")


def parse_notice(text: str) -> str:
    """The human-readable message of the notice in ``text`` (what the trusted process records)."""
    return decode_notice(text).message()


# -----------------------------------------------------------------------------------------------
# The policy and what install() resolves


@dataclass(frozen=True)
# What is refused after ``arm()`` (``policy_data()`` has the exact tables):
#
# - ctypes: every ``ctypes.*`` event (dlopen, dlsym, cdata/from_address, call_function, string_at,
#   addressof, get_errno ...);
# - processes: ``subprocess.Popen``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``,
#   ``os.fork*``, ``pty.spawn``, ``_posixsubprocess.fork_exec`` (which fires no event of its own: see
#   "arm" below), except the tools Triton's compiler runs: ``ptxas`` (Triton's own resolution,
#   ``triton.knobs.nvidia.ptxas``/``ptxas_blackwell``), and the C compiler Triton's
#   ``runtime/build.py`` would pick (``CC`` or gcc/clang) while Triton compiles a launcher or its
#   driver utilities. Allowed only when the executable is exactly the resolved tool, the command
#   comes from Triton's own code (the frames between the hook and the first frame outside
#   ``subprocess`` must be, by code object identity, ``make_cubin`` / ``NvidiaTool.from_path`` /
#   ``get_ptxas_version`` for ptxas, ``_build`` <- ``compile_module_from_src`` <- a launcher or
#   utils ``__init__`` for the C compiler), the child inherits the process environment unchanged
#   (changes to ``PATH``, ``LD_*``, ``GCC_*``, include/library paths, ``CC``, ``TMPDIR``, Triton's tool
#   and cache knobs are refused, ``os.putenv``), and for the C compiler the command line is exactly
#   the one ``_build`` makes (flags from Triton's include/library lists captured at install, a
#   ``{name}.c`` and ``{name}{EXT_SUFFIX}`` in one temporary directory) and Triton's build and
#   driver modules (their globals, the build/cache knobs, the launcher classes) are as they were
#   at install. Triton 3.7 and 3.6 differ here: 3.6 compiles a C launcher per kernel signature
#   (``CudaLauncher.__init__`` calls ``compile_module_from_src``) so the compiler runs on the first
#   launch of every new signature; 3.7 has one generic launcher in ``cuda_utils``, compiled when the
#   driver starts (before ``arm()`` in the candidate process). Neither version runs ``ld.lld`` as a
#   process (the AMD backend links in-process, ``amd.link_hsaco``), so no linker is allowed;
# - native code: loading an extension module (the ``import`` event with a file path) other than
#   Triton's launcher/utils modules (``__triton_launcher``, ``cuda_utils``, ``hip_utils``) loaded from
#   the Triton cache directory by ``_load_module_from_path`` <- ``compile_module_from_src`` <- a
#   launcher/utils ``__init__``, and a short list of computational standard-library extensions from
#   the interpreter's own ``lib-dynload`` (``math``, ``_decimal``, ...); writing a native library
#   (``*.so``) into the Triton cache or renaming/linking anything into it except through Triton's
#   ``FileCacheManager.put`` on that same path; ``os.symlink``; bytecode other than the standard
#   ``.pyc`` files of trusted read-only roots (``marshal.loads`` is allowed only from importlib's
#   ``_compile_bytecode`` with bytes equal to that file's), ``code.__new__`` (crafted bytecode reads
#   and writes memory), ``function.__new__`` / ``exec`` of the code objects this policy trusts;
# - sockets (every ``socket.*`` event), ``os.kill``/``killpg``, ``signal.pthread_kill``;
# - opening ``/proc/<pid>/mem`` (also ``/proc/self``, ``thread-self``, ``task/<tid>``, through symlinks,
#   a final component ``mem`` of a relative path, ``/dev/mem``) in any mode; other writes are left
#   to the filesystem sandbox (Landlock, ``arena.evaluation.sandbox``);
# - introspection: ``gc.get_objects``/``get_referrers``/``get_referents``, ``sys._current_frames``,
#   ``sys.settrace``, ``sys.setprofile``, ``sys.monitoring.register_callback``, ``sys.addaudithook``
#   (another hook would receive every event's arguments, frames included), ``sys._getframe`` and
#   reading ``tb_frame``/``gi_frame``/``cr_frame``/``ag_frame``, and assigning or deleting a
#   function's ``__code__``/``__defaults__``/``__kwdefaults__``.
#
# Left allowed, and why: ``sys._getframe`` from ``typing._caller``, ``collections.namedtuple``,
# ``enum``'s functional API and ``typing_extensions`` (Triton's lazily imported modules and
# ``CompiledKernel.__init__`` call them; each reads the frame in place and returns a string or a
# bool); ``tb_frame`` read by Triton's ``filter_traceback`` (every compile error) and by the
# ``traceback`` module's own formatting (``_walk_tb_with_full_positions`` consumed by
# ``StackSummary._extract_from_extended_frame_gen`` without ``capture_locals``), so that
# ``traceback.format_exc()`` and ``logging.exception`` work; ``sys._getframemodulename`` (a module
# name, no frame); reading ``f_code``, ``__code__``, ``__defaults__``, ``__kwdefaults__`` (inspect, torch
# and Triton read them constantly); ``object.__setattr__`` on types (``__module__``, ``__doc__``);
# pure-Python imports; ``open`` for reading; ``mmap``; ``os.listdir``; ``exec``/``compile`` of source.
#
# For the caller: a Python candidate must be imported from its source, not from a ``__pycache__``
# file (bytecode is accepted only beneath the trusted roots); ``traceback.format_exc()`` and
# ``logging`` keep working after arming; every ``id()`` fires ``builtins.id`` and so costs one call of
# the hook (~1 us), which code calling ``id()`` in bulk after arming (``arena.evaluation.candidate.guard.Seal``) pays; a
# process that the hook ended may fail to leave a notice (a candidate can close the pipe first):
# its exit code, ``FORBIDDEN_EXIT``, says it all the same.
class CandidatePolicy:
    """What the caller decides. Everything else is resolved from the process at install time."""

    candidate_file: str = ""
    # None: Triton's own cache directory (knobs.cache.dir, TRITON_CACHE_DIR)
    triton_cache_dir: str | None = None
    stdlib_extensions: frozenset[str] = STDLIB_EXTENSIONS


@dataclass(frozen=True)
class Resolved:
    """What install() found in this process (recorded by policy_data())."""

    python: str
    triton: str | None
    ptxas: tuple[str, ...]
    c_compiler: str | None
    launcher_per_signature: bool
    triton_cache_dir: str | None
    trusted_roots: tuple[str, ...]
    dynload: str | None
    cc_flags: tuple[str, ...]
    missing: tuple[str, ...] = field(default=())  # Triton or stdlib functions not found (their paths stay refused)


_STATE: dict[str, Any] = {}


# -----------------------------------------------------------------------------------------------
# The hook and its helpers
#
# The ``_t_*`` functions below are templates: install() never calls them, it makes fresh function
# objects from their code with empty globals and empty builtins, and fills their last default,
# ``S``, with a tuple of everything they use (builtins included), in the order of their first
# statement ``(...) = S``. So they read no global, no builtin and no closure a candidate could
# change; tests check their bytecode for that.


def _t_self_frame(getframe=None):
    return getframe(0)


def _t_refuse(event, detail, S=None):
    (write, exit_, fd, enc, T_str, exit_code, base_exc, type_) = S
    try:
        try:
            ev = event if type_(event) is T_str else "?"
            de = detail if type_(detail) is T_str else "?"
            line = '{"type": "forbidden", "event": ' + enc(ev) + ', "detail": ' + enc(de[:2000]) + "}\n"
            if fd is not None and fd >= 0:
                write(fd, line.encode("ascii"))
        except base_exc:
            pass
    finally:
        exit_(exit_code)


def _t_text(v, S=None):
    """``v`` when it is a str, decoded when it is bytes (exact types only), else None."""
    (T_str, T_bytes, type_) = S
    t = type_(v)
    if t is T_str:
        return v
    if t is T_bytes:
        return v.decode("utf-8", "surrogateescape")
    return None


def _t_realpath(path, S=None):
    """``path`` (absolute, or relative to the working directory) with every symlink resolved, or
    None on a link loop. Components that do not exist are kept as they are."""
    (lstat, readlink, getcwd, T_list, reversed_, base_exc) = S
    if not path.startswith("/"):
        path = getcwd() + "/" + path
    pending = T_list(reversed_(path.split("/")))
    done = []
    hops = 0
    while pending:
        part = pending.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        here = "/" + "/".join(done) + ("/" if done else "") + part
        try:
            mode = lstat(here).st_mode
        except base_exc:
            done.append(part)
            continue
        if (mode & 0o170000) == 0o120000:
            hops += 1
            if hops > 40:
                return None
            try:
                target = readlink(here)
            except base_exc:
                return None
            if target.startswith("/"):
                done = []
            pending.extend(reversed_(target.split("/")))
            continue
        done.append(part)
    return "/" + "/".join(done)


def _t_under(path, roots, S=None):
    """Is ``path`` one of ``roots`` or beneath one of them?"""
    () = S
    for r in roots:
        if path == r or path.startswith(r + "/"):
            return True
    return False


def _t_is_in(obj, objs, S=None):
    """Is ``obj`` (by identity) one of ``objs``?"""
    () = S
    for o in objs:
        if o is obj:
            return True
    return False


def _t_skip(frame, plumbing, S=None):
    """The first frame, from ``frame`` outwards, whose code is not in ``plumbing`` (id -> code)."""
    (id_,) = S
    while frame is not None:
        c = frame.f_code
        if plumbing.get(id_(c)) is not c:
            return frame
        frame = frame.f_back
    return None


def _t_chain(frame, steps, S=None):
    """Do the frames from ``frame`` outwards run, one each, a code of each of ``steps``?"""
    (is_in,) = S
    for codes in steps:
        if frame is None or not is_in(frame.f_code, codes):
            return False
        frame = frame.f_back
    return True


def _t_where(frame, S=None):
    """`` from <qualname> (<file>)`` for a notice."""
    (T_str, type_) = S
    if frame is None:
        return ""
    c = frame.f_code
    q, f = c.co_qualname, c.co_filename
    return " from " + (q if type_(q) is T_str else "?") + " (" + (f if type_(f) is T_str else "?") + ")"


def _t_freeze(v, depth, S=None):
    """A snapshot of ``v`` to compare later: scalars by value, lists/tuples/dicts of them by
    content, anything else by identity. Runs no method of ``v``."""
    (T_str, T_bytes, T_int, T_float, T_bool, T_none, T_list, T_tuple, T_dict, type_, freeze) = S
    t = type_(v)
    if t is T_str or t is T_bytes or t is T_int or t is T_float or t is T_bool or t is T_none:
        return (0, v)
    if depth < 4 and (t is T_list or t is T_tuple):
        out = []
        for x in v:
            out.append(freeze(x, depth + 1))
        return (1, T_tuple(out))
    if depth < 4 and t is T_dict:
        out = []
        for k in v:
            out.append((freeze(k, depth + 1), freeze(v[k], depth + 1)))
        return (3, T_tuple(out))
    return (2, v)


def _t_same(a, b, S=None):
    """Are two snapshots of ``_t_freeze`` equal?"""
    (type_, len_, same) = S
    if a[0] != b[0]:
        return False
    if a[0] == 0:
        return type_(a[1]) is type_(b[1]) and a[1] == b[1]
    if a[0] == 2:
        return a[1] is b[1]
    x, y = a[1], b[1]
    if len_(x) != len_(y):
        return False
    i = 0
    for p in x:
        q = y[i]
        i += 1  # noqa: SIM113 - enumerate is a builtin this template may not read
        if a[0] == 1:
            if not same(p, q):
                return False
        elif not (same(p[0], q[0]) and same(p[1], q[1])):
            return False
    return True


def _t_sealed(seal, S=None):
    """Are the mappings recorded at install (Triton's build, cache and driver modules and
    classes, the build/cache knobs, builtins) as they were? New keys count as a change."""
    (freeze, same, missing, T_str, type_, ignored) = S
    for mapping, keys, snapshot in seal:
        for k in mapping:
            if type_(k) is not T_str or (k not in keys and k not in ignored):
                return False
        for key, frozen in snapshot:
            now = mapping.get(key, missing)
            if now is missing or not same(freeze(now, 0), frozen):
                return False
    return True


def _t_spawn(kind, args, caller, S=None):
    """Why starting the process in ``args`` is refused, or None. kind 5: ``subprocess.Popen``
    (executable, args, cwd, env); kind 6: the fork_exec gate (positional args, keyword args)."""
    (
        text,
        T_tuple,
        T_list,
        type_,
        len_,
        skip,
        chain,
        subprocess_codes,
        ptxas,
        ptxas_steps,
        cc,
        cc_steps,
        cc_argv,
        sealed,
        seal,
    ) = S
    if kind == 5:
        exe, argv, env = text(args[0]), args[1], args[3]
    else:
        a, kw = args
        if kw or type_(a) is not T_tuple or len_(a) < 6:
            return "an unexpected fork_exec call"
        exe_list, argv, env = a[1], a[0], a[5]
        if type_(exe_list) is not T_tuple or len_(exe_list) != 1:
            return "starting a process without one absolute executable"
        exe = text(exe_list[0])
    if exe is None:
        return "starting a process (an executable of an unexpected type)"
    if env is not None:
        return "starting " + exe + " with an environment of its own"
    if exe in ptxas:
        outer = skip(caller, subprocess_codes)
        if outer is not None and chain(outer, ptxas_steps):
            return None
        return "starting " + exe + " outside Triton's compiler"
    if cc is not None and exe == cc:
        outer = skip(caller, subprocess_codes)
        if outer is None or not chain(outer, cc_steps):
            return "starting the C compiler outside Triton's launcher build"
        if type_(argv) is not T_list and type_(argv) is not T_tuple:
            return "starting the C compiler with arguments of an unexpected type"
        words = []
        for w in argv:
            s = text(w)
            if s is None:
                return "starting the C compiler with arguments of an unexpected type"
            words.append(s)
        why = cc_argv(words)
        if why is not None:
            return why
        if not sealed(seal):
            return "starting the C compiler after Triton's build or driver code changed"
        return None
    return "starting a process: " + exe


def _t_cc_argv(words, S=None):
    """Why ``words`` is not the command line triton/runtime/build.py ``_build()`` makes, or None."""
    (cc, fixed, flags, names, ext, len_, T_tuple) = S
    if len_(words) < 8 or words[0] != cc or T_tuple(words[2:7]) != fixed:
        return "the C compiler's command line is not Triton's"
    src, so = words[1], words[7]
    d, _, base = src.rpartition("/")
    if not d.startswith("/") or not base.endswith(".c") or base[:-2] not in names:
        return "the C compiler's source is not a Triton launcher's"
    if so != d + "/" + base[:-2] + ext:
        return "the C compiler's output is not the launcher's module"
    for w in words[8:]:
        if w not in flags and w != "-I" + d:
            return "the C compiler's flag " + w + " is not Triton's"
    return None


def _t_path_of(obj, S=None):
    """The path an ``open`` event names: "" for a descriptor, None when it cannot be told safely
    (a path object whose str conversion was changed, or of another type)."""
    (text, T_int, type_, path_types, str_slot_get, fspath_ok, dir_entry, base_exc) = S
    s = text(obj)
    if s is not None:
        return s
    t = type_(obj)
    if t is T_int:
        return ""
    for pt in path_types:
        if t is pt:
            if not fspath_ok(t):
                return None
            try:
                return text(str_slot_get(obj))
            except base_exc:
                return None
    if t is dir_entry:
        return text(obj.path)
    return None


def _t_fspath_ok(t, S=None):
    """Does ``os.fspath`` of a pathlib path still go through ``PurePath.__fspath__``/``__str__``,
    which return its cached ``_str``?"""
    (fspath_fn, str_fn, object_, pathlib_dict, builtins_dict, T_str) = S
    for cls in t.__mro__:
        if cls is object_:
            continue
        d = cls.__dict__
        f = d.get("__fspath__")
        if f is not None and f is not fspath_fn:
            return False
        s = d.get("__str__")
        if s is not None and s is not str_fn:
            return False
    return pathlib_dict.get("str") is None and builtins_dict.get("str") is T_str


def _t_is_mem(real, S=None):
    """Is ``real`` (resolved) /proc/<pid>/mem, /proc/<pid>/task/<tid>/mem or /dev/(k)mem, /dev/port?"""
    (len_,) = S
    parts = real.split("/")
    n = len_(parts)
    if n == 3 and parts[1] == "dev" and (parts[2] == "mem" or parts[2] == "kmem" or parts[2] == "port"):
        return True
    if n >= 4 and parts[1] == "proc" and parts[n - 1] == "mem":
        return n == 4 or (n == 6 and parts[3] == "task")
    return False


def _t_open(args, caller, S=None):
    """Why an ``open`` is refused; "" when the calling frames are needed; None when allowed."""
    (
        path_of,
        realpath,
        under,
        is_mem,
        quick_roots,
        cache_dir,
        so_suffixes,
        write_mask,
        T_int,
        type_,
        put_steps,
        chain,
    ) = S
    p = path_of(args[0])
    if p is None:
        return "opening a path object that cannot be checked"
    if p == "":
        return None
    flags = args[2] if type_(args[2]) is T_int else 0o7777777
    norm = p.rstrip("/")
    last = norm.rpartition("/")[2]
    if (last == "mem" or last == "kmem" or last == "port") and (
        not p.startswith("/") or norm.startswith(("/proc/", "/dev/"))
    ):
        return "opening " + p
    if p.startswith("/") and "/.." not in p and under(p, quick_roots):
        real = p
    else:
        real = realpath(p)
        if real is None or is_mem(real):
            return "opening " + p
    if flags & write_mask and p.endswith(so_suffixes):
        if not p.startswith("/"):
            return "writing a native library through a relative path"
        if cache_dir is not None:
            d = real.rpartition("/")[0]
            rd = realpath(d) if d else "/"
            if rd is None or under(rd, (cache_dir,)):
                if caller is None:
                    return ""
                if chain(caller, put_steps):
                    return None
                return "writing a native library into Triton's cache"
    return None


def _t_link(args, caller, S=None):
    """Why an ``os.rename``/``os.replace``/``os.link`` is refused; "" when the calling frames are
    needed; None when allowed. Only what ends in Triton's cache (or above it) is checked."""
    (text, realpath, under, cache_dir, so_suffixes, put_steps, put_only, chain, len_, T_int, type_) = S
    if cache_dir is None:
        return None
    if len_(args) >= 4 and (type_(args[3]) is not T_int or args[3] != -1):
        return "renaming or linking relative to a directory descriptor"
    dst = text(args[1])
    if dst is None:
        return "renaming or linking to a path of an unexpected type"
    d, _, base = dst.rstrip("/").rpartition("/")
    if d:
        rd = realpath(d)
    elif dst.startswith("/"):
        rd = "/"
    else:
        rd = realpath(".")
    if rd is None:
        return "renaming or linking through a link loop"
    target = rd + ("" if rd.endswith("/") else "/") + base
    if not (under(target, (cache_dir,)) or under(cache_dir, (target,))):
        return None
    if caller is None:
        return ""
    if chain(caller, put_steps if dst.endswith(so_suffixes) else put_only):
        return None
    return "renaming or linking into Triton's cache"


def _t_import(args, caller, S=None):
    """Why loading the extension module ``args[0]`` from file ``args[1]`` is refused, or None."""
    (
        text,
        realpath,
        under,
        cache_dir,
        launcher_names,
        load_steps,
        skip,
        importlib_codes,
        chain,
        sealed,
        seal,
        stdlib_ext,
        dynload,
        ext_suffixes,
    ) = S
    name, path = text(args[0]), text(args[1])
    if name is None or path is None:
        return "loading a native module of an unexpected name or path"
    real = realpath(path)
    if real is None:
        return "loading native code through a link loop: " + path
    if name in launcher_names:
        if cache_dir is None or not under(real, (cache_dir,)):
            return "loading " + name + " from outside Triton's cache: " + path
        outer = skip(caller, importlib_codes)
        if outer is None or not chain(outer, load_steps):
            return "loading " + name + " outside Triton's launcher build: " + path
        if not sealed(seal):
            return "loading " + name + " after Triton's build or driver code changed"
        return None
    if name in stdlib_ext and dynload is not None:
        for suffix in ext_suffixes:
            if real == dynload + "/" + name + suffix:
                return None
    return "loading native code: " + name + " from " + path


def _t_marshal(args, caller, S=None):
    """Why unmarshalling ``args[0]`` is refused, or None: allowed only for importlib reading a
    .pyc beneath a trusted root, with exactly that file's bytes."""
    (
        compile_bytecode,
        realpath,
        under,
        roots,
        T_str,
        T_bytes,
        type_,
        len_,
        os_open,
        os_read,
        os_close,
        o_rdonly,
        base_exc,
    ) = S
    if caller is None or compile_bytecode is None or caller.f_code is not compile_bytecode:
        return "unmarshalling code from bytes"
    path = caller.f_locals.get("bytecode_path")
    data = args[0]
    if type_(path) is not T_str or type_(data) is not T_bytes:
        return "unmarshalling bytecode of an unknown file"
    real = realpath(path)
    if real is None or not under(real, roots):
        return "loading bytecode from outside the trusted roots: " + path
    try:
        fd = os_open(real, o_rdonly)
    except base_exc:
        return "loading bytecode that cannot be read again: " + path
    chunks = []
    try:
        while True:
            b = os_read(fd, 1048576)
            if not b:
                break
            chunks.append(b)
    finally:
        os_close(fd)
    content = b"".join(chunks)
    if len_(content) < 16 or content[16:] != data:
        return "loading bytecode that differs from its file: " + path
    return None


def _t_env(args, S=None):
    """Why setting or removing an environment variable is refused, or None."""
    (text, exact, prefixes) = S
    key = text(args[0])
    if key is None:
        return "changing an environment variable of an unexpected type"
    if key in exact or key.startswith(prefixes):
        return "changing the environment variable " + key
    return None


def _t_hook(event, args, S=None):
    """The audit hook: returns (allowed) or refuses (notice + os._exit)."""
    (kind_get, refuse, prefixes, base_exc, rest) = S
    try:
        kind = kind_get(event, 0)
        if kind == 0:  # most events (builtins.id, exec, compile, ...)
            if event.startswith(prefixes):
                refuse(event, "")
            return
        (
            T_func,
            type_,
            getrefcount,
            self_frame,
            self_code,
            expected_rc,
            getframe_callers,
            frame_attrs,
            func_attrs,
            tb_readers,
            tb_consumers,
            gate,
            builtin_gate,
            gated_builtins,
            trusted,
            id_,
            where,
            spawn,
            open_check,
            import_check,
            marshal_check,
            link_check,
            env_check,
        ) = rest
        if kind == 2:  # object.__getattr__ (obj, name)
            name = args[1]
            if name in frame_attrs:
                fs = self_frame()
                reader = fs.f_back.f_back
                fs = None
                if name == "tb_frame" and reader is not None:
                    code = reader.f_code
                    for c in tb_readers:
                        if c is code:
                            return
                    for c, consumers in tb_consumers:
                        if c is code:
                            consumer = reader.f_back
                            if consumer is not None:
                                k = consumer.f_code
                                for c2 in consumers:
                                    if c2 is k and consumer.f_locals.get("capture_locals", True) is False:
                                        return
                refuse(event, "reading " + name + where(reader))
            if (name == "__defaults__" or name == "__kwdefaults__") and (args[0] is gate or args[0] is builtin_gate):
                refuse(event, "reading the settings of a gate")
            return
        if kind == 4:  # sys._getframe (frame,)
            if getrefcount(args[0]) == expected_rc and args[0].f_code is self_code:
                return  # the hook's own frame, freshly taken
            fs = self_frame()
            caller = fs.f_back.f_back
            fs = None
            if caller is not None:
                code = caller.f_code
                for c in getframe_callers:
                    if c is code:
                        return
            refuse(event, "sys._getframe" + where(caller))
        if kind == 1:
            refuse(event, "")
        if kind == 3:  # object.__setattr__/__delattr__ (obj, name[, value])
            if args[1] in func_attrs and type_(args[0]) is T_func:
                refuse(event, "changing a function's " + args[1])
            return
        if kind == 12:  # function.__new__ / exec (code, ...)
            if trusted.get(id_(args[0])) is args[0]:
                refuse(event, "running code the audit policy trusts, out of place")
            return
        if kind == 13:  # the create_builtin gate (name,)
            if args[0] in gated_builtins:
                refuse(event, "making the builtin module " + args[0] + " again")
            return
        if kind == 10:  # os.putenv / os.unsetenv (key[, value])
            why = env_check(args)
            if why is not None:
                refuse(event, why)
            return
        if kind == 8:  # open (path, mode, flags)
            why = open_check(args, None)
            if why == "":
                fs = self_frame()
                caller = fs.f_back.f_back
                fs = None
                why = open_check(args, caller)
            if why is not None:
                refuse(event, why)
            return
        if kind == 11:  # os.rename / os.link (src, dst, src_dir_fd, dst_dir_fd)
            why = link_check(args, None)
            if why == "":
                fs = self_frame()
                caller = fs.f_back.f_back
                fs = None
                why = link_check(args, caller)
            if why is not None:
                refuse(event, why)
            return
        if kind == 7 and args[1] is None:  # import of a name: the file, if native, comes next
            return
        fs = self_frame()  # spawn (5, 6), extension import (7), marshal (9)
        caller = fs.f_back.f_back
        fs = None
        if kind == 5 or kind == 6:
            why = spawn(kind, args, caller)
        elif kind == 7:
            why = import_check(args, caller)
        elif kind == 9:
            why = marshal_check(args, caller)
        else:
            why = "an event of an unknown kind"
        if why is not None:
            refuse(event, why)
    except base_exc:
        refuse(event, "the audit hook could not decide")


def _t_gate(*a, G=None, **kw):
    """subprocess's ``fork_exec``, through the audit hook (``_posixsubprocess.fork_exec`` itself
    fires no audit event). The argument list and environment are frozen before the event, so
    what was checked is what runs."""
    (audit, real, T_tuple, T_list, type_, enumerate_, event) = G
    frozen = []
    for i, v in enumerate_(a):
        frozen.append(T_tuple(v) if (i == 0 or i == 1 or i == 5) and type_(v) is T_list else v)
    a = T_tuple(frozen)
    audit(event, a, kw)
    return real(*a, **kw)


def _t_builtin_gate(spec, G=None):
    """``_imp.create_builtin``, through the audit hook: a builtin module made again (after its
    entry left ``sys.modules``) is a fresh copy of its C functions, ``_posixsubprocess.fork_exec``
    included, and ``importlib.import_module`` makes one without any audit event. The name is read
    once and a plain namespace carrying it is what the real function sees."""
    (audit, real, T_str, type_, namespace, event) = G
    name = spec.name
    if type_(name) is not T_str:
        name = "?"
    audit(event, name)
    return real(namespace(name=name))


TEMPLATES = (
    _t_self_frame,
    _t_refuse,
    _t_text,
    _t_realpath,
    _t_under,
    _t_is_in,
    _t_skip,
    _t_chain,
    _t_where,
    _t_freeze,
    _t_same,
    _t_sealed,
    _t_spawn,
    _t_cc_argv,
    _t_path_of,
    _t_fspath_ok,
    _t_is_mem,
    _t_open,
    _t_link,
    _t_import,
    _t_marshal,
    _t_env,
    _t_hook,
    _t_gate,
    _t_builtin_gate,
)


def settings_names(template: types.FunctionType) -> tuple[str, ...]:
    """The names a template unpacks from its settings, in order (from its first statement)."""
    import dis

    ins = [i for i in dis.get_instructions(template) if i.opname not in ("RESUME", "NOP", "CACHE")]
    param = "G" if template in (_t_gate, _t_builtin_gate) else "S"
    if len(ins) < 2 or ins[0].opname != "LOAD_FAST" or ins[0].argval != param:
        return ()
    if ins[1].opname != "UNPACK_SEQUENCE":
        return ()
    return tuple(i.argval for i in ins[2 : 2 + ins[1].argval])


def _make(template: types.FunctionType, env: dict[str, Any], name: str | None = None) -> types.FunctionType:
    """A fresh function running ``template``'s code with empty globals and builtins, its settings
    taken from ``env`` by the names it unpacks."""
    settings = tuple(env[n] for n in settings_names(template))
    defaults = template.__defaults__ or ()
    return types.FunctionType(
        template.__code__,
        {"__builtins__": {}},
        name or "arena_audit" + template.__name__[2:],
        defaults[:-1] + (settings,),
    )


# -----------------------------------------------------------------------------------------------
# install() / arm()


def _codes_of(obj: Any) -> list[types.CodeType]:
    """The code objects of a module's (or a class's, a function's) functions, nested code included."""
    out: list[types.CodeType] = []
    seen: set[int] = set()

    def add_code(c: types.CodeType) -> None:
        if id(c) in seen:
            return
        seen.add(id(c))
        out.append(c)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                add_code(k)

    def add(o: Any, depth: int, module: str | None) -> None:
        while isinstance(o, (staticmethod, classmethod)):
            o = o.__func__
        if isinstance(o, property):
            for f in (o.fget, o.fset, o.fdel):
                if f is not None:
                    add(f, depth, module)
            return
        if isinstance(o, types.FunctionType):
            add_code(o.__code__)
            return
        if isinstance(o, type):
            if depth < 3 and (module is None or sys.modules.get(o.__module__) is sys.modules.get(module)):
                for v in list(vars(o).values()):
                    add(v, depth + 1, module)
            return
        wrapped = getattr(o, "__wrapped__", None) if callable(o) else None
        if wrapped is not None and wrapped is not o and depth < 4:
            add(wrapped, depth + 1, module)

    if isinstance(obj, types.ModuleType):
        for v in list(vars(obj).values()):
            add(v, 0, obj.__name__)
    else:
        add(obj, 0, None)
    return out


def _attr(path: str) -> Any:
    """The object named ``package.module.Class.attr`` (class attributes raw, from the class
    dict), or None."""
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: Any = sys.modules.get(name) or importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - an optional module
            continue
        try:
            for p in parts[i:]:
                obj = vars(obj)[p] if isinstance(obj, type) else getattr(obj, p)
        except (AttributeError, KeyError, TypeError):
            return None
        return obj
    return None


def _function_code(path: str, missing: list[str]) -> types.CodeType | None:
    obj = _attr(path)
    for _ in range(6):
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        elif obj is not None and not isinstance(obj, types.FunctionType) and hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__
    if isinstance(obj, types.FunctionType):
        return obj.__code__
    missing.append(path)
    return None


def _ptxas_paths(missing: list[str]) -> tuple[str, ...]:
    """The ptxas executables Triton resolved (``knobs.nvidia.ptxas``/``ptxas_blackwell``)."""
    paths: list[str] = []
    try:
        from triton import knobs
    except Exception:  # noqa: BLE001
        return ()
    for attr in ("ptxas", "ptxas_blackwell"):
        try:
            tool = getattr(knobs.nvidia, attr)
            path = getattr(tool, "path", None)
            if path:
                paths.append(str(path))
        except Exception:  # noqa: BLE001 - no such tool here
            missing.append(f"triton.knobs.nvidia.{attr}")
    return tuple(dict.fromkeys(paths))


def _c_compiler() -> str | None:
    """The compiler triton/runtime/build.py ``_build()`` would run (``CC``, else gcc, else clang)."""
    import shutil

    cc = os.environ.get("CC")
    if cc:
        return cc
    return shutil.which("gcc") or shutil.which("clang")


def _triton_cc_flags(missing: list[str]) -> tuple[str, ...]:
    """Every -l/-L/-I flag Triton's launcher and utils builds pass, computed now (trusted now)."""
    import sysconfig

    flags: list[str] = []
    try:
        from triton.runtime import build
    except Exception:  # noqa: BLE001
        return ()
    lib_flag = getattr(build, "_library_flag", lambda lib: f"-l{lib}")
    for modname in ("triton.backends.nvidia.driver", "triton.backends.amd.driver"):
        mod = _attr(modname)
        if not isinstance(mod, types.ModuleType):
            continue
        for lib in getattr(mod, "libraries", None) or []:
            flags.append(lib_flag(lib))
        for d in getattr(mod, "include_dirs", None) or []:
            flags.append(f"-I{d}")
        lib_dirs = getattr(mod, "library_dirs", None)
        if callable(lib_dirs):
            try:
                flags += [f"-L{d}" for d in lib_dirs()]
            except Exception:  # noqa: BLE001 - no driver library on this machine
                missing.append(f"{modname}.library_dirs")
    scheme = sysconfig.get_default_scheme()
    if scheme == "posix_local":
        scheme = "posix_prefix"
    flags.append("-I" + sysconfig.get_paths(scheme=scheme)["include"])
    try:
        from triton import knobs

        flags += [f"-I{d}" for d in knobs.build.backend_dirs]
    except Exception:  # noqa: BLE001, S110
        pass
    return tuple(dict.fromkeys(flags))


def _seal_targets() -> list[Any]:
    """The mappings whose contents Triton's native builds depend on: the build, cache and driver
    modules' globals, their launcher/utils/cache classes, the build and cache knobs, builtins."""
    out: list[Any] = []
    for modname, classes in (
        ("triton.runtime.build", ()),
        ("triton.runtime.cache", ("FileCacheManager",)),
        ("triton.backends.nvidia.driver", ("CudaUtils", "CudaLauncher")),
        ("triton.backends.amd.driver", ("HIPUtils", "HIPLauncher")),
    ):
        mod = _attr(modname)
        if not isinstance(mod, types.ModuleType):
            continue
        out.append(types.MappingProxyType(vars(mod)))
        for cname in classes:
            cls = vars(mod).get(cname)
            if isinstance(cls, type):
                out.append(vars(cls))  # a live, read-only view of the class dict
    try:
        from triton import knobs

        for sub in (knobs.build, knobs.cache):
            out.append(types.MappingProxyType(object.__getattribute__(sub, "__dict__")))
    except Exception:  # noqa: BLE001, S110
        pass
    out.append(types.MappingProxyType(vars(builtins)))
    return out


def _trusted_roots() -> tuple[str, ...]:
    """Where bytecode may come from: the standard library and site-packages (read-only to the
    candidate under the filesystem sandbox) and the packages' own directories."""
    import sysconfig

    roots = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            roots.add(os.path.realpath(paths[key]))
    for name in ("torch", "triton", "numpy", "typing_extensions"):
        f = getattr(sys.modules.get(name), "__file__", None)
        if f:
            roots.add(os.path.realpath(os.path.dirname(os.path.dirname(f))))
    return tuple(sorted(r for r in roots if r and r != "/"))


def _dynload() -> str | None:
    """The interpreter's directory of standard-library extension modules."""
    import sysconfig

    for name in ("math", "_json", "_struct", "_random", "_bisect"):
        f = getattr(sys.modules.get(name), "__file__", None)
        if f and f.endswith(tuple(__import__("importlib.machinery").machinery.EXTENSION_SUFFIXES)):
            return os.path.realpath(os.path.dirname(f))
    dl = sysconfig.get_config_var("DESTSHARED")
    return os.path.realpath(dl) if dl else None


def _calibrate() -> int:
    """The reference count a fresh frame object has inside the nested ``sys._getframe`` event of
    ``_t_self_frame``'s own call: measured here as (the frame's owner + one local + getrefcount's
    argument), plus one (there the event's tuple replaces the local, and sys._getframe holds one
    more while it audits). The hook's tests check it against the live value."""

    def probe(getframe=sys._getframe, getrefcount=sys.getrefcount):
        f = getframe(0)
        return getrefcount(f)

    return probe() + 1


def _idmap(codes: Any) -> types.MappingProxyType:
    """id -> code, read-only (the hook checks ``m.get(id(c)) is c``)."""
    return types.MappingProxyType({id(c): c for c in codes})


def install(policy: CandidatePolicy, notice_fd: int | None) -> Resolved:
    """Prepare the hook for this process (once: a second call raises RuntimeError). Nothing is
    refused until ``arm()``. Returns what was resolved (also in ``policy_data()``).

    Robustness of the hook itself: the hook is added by ``arm()`` (so it is inert before and
    arming cannot be undone: audit hooks cannot be removed). It reads no mutable state: it has no
    globals (its globals and builtins are empty dicts), no closure, and takes everything it uses
    (builtins included) from a tuple of defaults filled at install with immutable data (tuples,
    frozensets, read-only mapping views over private dicts, code objects). Assigning any function's
    ``__code__``/``__defaults__``/``__kwdefaults__`` is refused, so neither the hook nor the Triton and
    stdlib functions it trusts by code identity can be changed. No reference to the hook is kept
    once armed. When it needs the calling frames it gets its own frame through a private helper;
    the nested ``sys._getframe`` event of that call is accepted only if the returned frame runs the
    helper's code *and* its reference count is the one of a fresh call (a candidate that runs on
    top of the hook -- a signal handler, a finalizer -- and reaches that frame with ``_getframe(k)``
    adds references and is refused).
    """
    if _STATE:
        raise RuntimeError("the audit hook is already installed in this process")
    import _imp
    import _json
    import importlib
    import importlib.machinery
    import importlib.util
    import pathlib
    import subprocess
    import sysconfig
    import traceback  # noqa: F401 - its functions are resolved below by name

    missing: list[str] = []
    try:
        import triton

        triton_version: str | None = triton.__version__
    except Exception:  # noqa: BLE001
        triton_version = None
    try:
        # Triton caches this (platform.architecture runs `file`): compute it now, not after arming
        from triton.runtime import build as _triton_build

        _triton_build.platform_key()
    except Exception:  # noqa: BLE001, S110
        pass

    ptxas = _ptxas_paths(missing)
    cc = _c_compiler()
    cache_dir = policy.triton_cache_dir
    if cache_dir is None:
        try:
            from triton import knobs

            cache_dir = knobs.cache.dir
        except Exception:  # noqa: BLE001
            cache_dir = None
    cache_real = os.path.realpath(cache_dir) if cache_dir else None
    roots = _trusted_roots()
    dynload = _dynload()
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"

    def codes(*paths: str) -> tuple[types.CodeType, ...]:
        return tuple(c for c in (_function_code(p, missing) for p in paths) if c is not None)

    builders = tuple(
        c
        for c in codes(
            "triton.backends.nvidia.driver.CudaLauncher.__init__",
            "triton.backends.nvidia.driver.CudaUtils.__init__",
            "triton.backends.amd.driver.HIPLauncher.__init__",
            "triton.backends.amd.driver.HIPUtils.__init__",
        )
        if "compile_module_from_src" in c.co_names
    )
    per_signature = any(c.co_qualname.endswith("Launcher.__init__") for c in builders)
    build_fn = codes("triton.runtime.build._build")
    compile_src = codes("triton.runtime.build.compile_module_from_src")
    load_path = codes("triton.runtime.build._load_module_from_path")
    put = codes("triton.runtime.cache.FileCacheManager.put")
    ptxas_anchors = codes(
        "triton.backends.nvidia.compiler.CUDABackend.make_cubin",
        "triton.backends.nvidia.compiler.get_ptxas_version",
        "triton.knobs.NvidiaTool.from_path",
    )
    tb_readers = codes("triton.compiler.compiler.filter_traceback")
    tb_readers = tuple(c for top in tb_readers for c in _codes_of(types.FunctionType(top, {})))  # + its genexpr
    tb_gen = codes("traceback._walk_tb_with_full_positions")
    tb_consumer = codes("traceback.StackSummary._extract_from_extended_frame_gen")
    getframe_callers = codes("typing._caller", "collections.namedtuple", "enum.EnumType._create_")
    te_callers = codes("typing_extensions._caller", "typing_extensions._has_generic_or_protocol_as_origin")
    if "typing_extensions" in sys.modules:
        getframe_callers += te_callers
    compile_bytecode = codes("importlib._bootstrap_external._compile_bytecode")

    subprocess_codes = _codes_of(subprocess) + [_t_gate.__code__]
    importlib_codes: list[types.CodeType] = []
    for mod in (importlib._bootstrap, importlib._bootstrap_external, importlib, importlib.machinery, importlib.util):
        importlib_codes += _codes_of(mod)

    env: dict[str, Any] = {
        "T_str": str,
        "T_bytes": bytes,
        "T_int": int,
        "T_float": float,
        "T_bool": bool,
        "T_none": type(None),
        "T_list": list,
        "T_tuple": tuple,
        "T_dict": dict,
        "T_func": types.FunctionType,
        "type_": type,
        "len_": len,
        "reversed_": reversed,
        "enumerate_": enumerate,
        "id_": builtins.id,
        "base_exc": BaseException,
        "object_": object,
        "getrefcount": sys.getrefcount,
        "write": os.write,
        "exit_": os._exit,
        "fd": notice_fd,
        "enc": _json.encode_basestring_ascii,
        "exit_code": FORBIDDEN_EXIT,
        "lstat": os.lstat,
        "readlink": os.readlink,
        "getcwd": os.getcwd,
        "os_open": os.open,
        "os_read": os.read,
        "os_close": os.close,
        "o_rdonly": os.O_RDONLY | os.O_CLOEXEC,
        "missing": object(),
        "ignored": frozenset(
            {
                "__warningregistry__",
                "instance",
                "PyCUtensorMap",
                "PyKernelArg",
                "ARG_CONSTEXPR",
                "ARG_KERNEL",
                "ARG_TUPLE",
            }
        ),  # written when Triton's driver starts
        "roots": roots,
        "quick_roots": roots,
        "cache_dir": cache_real,
        "dynload": dynload,
        "so_suffixes": tuple(dict.fromkeys((".so", ext))),
        "ext": ext,
        "ext_suffixes": tuple(importlib.machinery.EXTENSION_SUFFIXES),
        "write_mask": os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND,
        "ptxas": frozenset(ptxas),
        "ptxas_steps": (ptxas_anchors,),
        "cc": cc,
        "cc_steps": (build_fn, compile_src, builders),
        "fixed": _CC_FIXED,
        "names": frozenset(LAUNCHER_MODULES),
        "launcher_names": frozenset(LAUNCHER_MODULES),
        "load_steps": (load_path, compile_src, builders),
        "put_steps": (put, compile_src, builders),
        "put_only": (put,),
        "subprocess_codes": _idmap(subprocess_codes),
        "importlib_codes": _idmap(importlib_codes),
        "stdlib_ext": frozenset(policy.stdlib_extensions),
        "compile_bytecode": compile_bytecode[0] if compile_bytecode else None,
        "exact": SENSITIVE_ENV_EXACT,
        "prefixes": REFUSED_PREFIXES,
        "path_types": (pathlib.PosixPath, pathlib.PurePosixPath),
        "dir_entry": os.DirEntry,
        "str_slot_get": pathlib.PurePath.__dict__["_str"].__get__,
        "fspath_fn": pathlib.PurePath.__dict__["__fspath__"],
        "str_fn": pathlib.PurePath.__dict__["__str__"],
        "pathlib_dict": types.MappingProxyType(vars(pathlib)),
        "builtins_dict": types.MappingProxyType(vars(builtins)),
    }
    made: dict[str, types.FunctionType] = {}

    def make(template: types.FunctionType, as_name: str, **extra: Any) -> types.FunctionType:
        fn = _make(template, {**env, **extra})
        made[as_name] = fn
        env[as_name] = fn
        return fn

    make(_t_refuse, "refuse")
    make(_t_text, "text")
    make(_t_realpath, "realpath")
    make(_t_under, "under")
    make(_t_is_in, "is_in")
    make(_t_skip, "skip")
    make(_t_chain, "chain")
    make(_t_where, "where")
    # the recursive helpers get a reference to themselves (set before arming; then fixed)
    freeze = make(_t_freeze, "freeze", freeze=None)
    freeze.__defaults__ = freeze.__defaults__[:-1] + (
        tuple(env[n] if n != "freeze" else freeze for n in settings_names(_t_freeze)),
    )
    same = make(_t_same, "same", same=None)
    same.__defaults__ = same.__defaults__[:-1] + (
        tuple(env[n] if n != "same" else same for n in settings_names(_t_same)),
    )
    seal = []
    for mapping in _seal_targets():
        items = [(k, v) for k, v in list(mapping.items()) if k not in env["ignored"]]
        seal.append((mapping, frozenset(k for k, _ in items), tuple((k, freeze(v, 0)) for k, v in items)))
    env["seal"] = tuple(seal)
    make(_t_sealed, "sealed")
    env["cc_flags"] = _triton_cc_flags(missing)
    make(_t_cc_argv, "cc_argv", flags=frozenset(env["cc_flags"]))
    make(_t_spawn, "spawn")
    make(_t_fspath_ok, "fspath_ok")
    make(_t_path_of, "path_of")
    make(_t_is_mem, "is_mem")
    make(_t_open, "open_check")
    make(_t_link, "link_check")
    make(_t_import, "import_check")
    make(_t_marshal, "marshal_check")
    make(_t_env, "env_check", prefixes=SENSITIVE_ENV_PREFIXES)

    real_fork_exec = getattr(subprocess, "_fork_exec", None)
    gate = None
    if real_fork_exec is not None:
        gate = types.FunctionType(_t_gate.__code__, {"__builtins__": {}}, "fork_exec")
        gate.__kwdefaults__ = {
            "G": tuple(
                {**env, "audit": sys.audit, "real": real_fork_exec, "event": FORK_EXEC_EVENT}[n]
                for n in settings_names(_t_gate)
            )
        }
    real_create_builtin = _imp.create_builtin
    builtin_gate = types.FunctionType(_t_builtin_gate.__code__, {"__builtins__": {}}, "create_builtin", (None,))
    builtin_gate.__defaults__ = (
        tuple(
            {
                **env,
                "audit": sys.audit,
                "real": real_create_builtin,
                "namespace": types.SimpleNamespace,
                "event": CREATE_BUILTIN_EVENT,
            }[n]
            for n in settings_names(_t_builtin_gate)
        ),
    )
    self_frame = types.FunctionType(
        _t_self_frame.__code__, {"__builtins__": {}}, "arena_audit_self_frame", (sys._getframe,)
    )
    trusted = [f.__code__ for f in made.values()] + [
        _t_hook.__code__,
        _t_gate.__code__,
        _t_builtin_gate.__code__,
        self_frame.__code__,
    ]
    trusted += list(
        builders
        + build_fn
        + compile_src
        + load_path
        + put
        + ptxas_anchors
        + tb_readers
        + tb_gen
        + tb_consumer
        + getframe_callers
        + compile_bytecode
    )
    trusted += subprocess_codes + importlib_codes
    env.update(
        {
            "kind_get": types.MappingProxyType(dict(_KINDS)).get,
            "self_frame": self_frame,
            "self_code": self_frame.__code__,
            "expected_rc": _calibrate(),
            "getframe_callers": getframe_callers,
            "frame_attrs": FRAME_ATTRS,
            "func_attrs": FUNCTION_ATTRS,
            "tb_readers": tb_readers,
            "tb_consumers": tuple((g, tb_consumer) for g in tb_gen),
            "gate": gate,
            "builtin_gate": builtin_gate,
            "gated_builtins": GATED_BUILTINS,
            "trusted": _idmap(trusted),
            "prefixes": REFUSED_PREFIXES,
        }
    )
    rest_names = (
        "T_func",
        "type_",
        "getrefcount",
        "self_frame",
        "self_code",
        "expected_rc",
        "getframe_callers",
        "frame_attrs",
        "func_attrs",
        "tb_readers",
        "tb_consumers",
        "gate",
        "builtin_gate",
        "gated_builtins",
        "trusted",
        "id_",
        "where",
        "spawn",
        "open_check",
        "import_check",
        "marshal_check",
        "link_check",
        "env_check",
    )
    env["rest"] = tuple(env[n] for n in rest_names)
    hook = _make(_t_hook, env, "arena_audit_hook")

    resolved = Resolved(
        python=sys.version.split()[0],
        triton=triton_version,
        ptxas=ptxas,
        c_compiler=cc,
        launcher_per_signature=per_signature,
        triton_cache_dir=cache_real,
        trusted_roots=roots,
        dynload=dynload,
        cc_flags=env["cc_flags"],
        missing=tuple(missing),
    )
    _STATE.update(
        policy=policy,
        resolved=resolved,
        hook=hook,
        gate=gate,
        real_fork_exec=real_fork_exec,
        builtin_gate=builtin_gate,
        real_create_builtin=real_create_builtin,
        armed=False,
    )
    return resolved


def arm() -> None:
    """Start refusing, for good (audit hooks cannot be removed). Call right before the candidate
    is imported; a second call raises RuntimeError.

    ``arm()`` also changes four things in the process: ``subprocess._fork_exec`` becomes a gate
    that fires ``arena.evaluation.candidate.audit.fork_exec`` with a frozen copy of its arguments
    before calling the real ``_posixsubprocess.fork_exec`` (which starts processes without any audit event of its own);
    ``_posixsubprocess`` leaves ``sys.modules`` and ``_imp.create_builtin`` becomes a gate firing
    ``arena.evaluation.candidate.audit.create_builtin``, refused for ``_posixsubprocess`` and ``_imp`` (on interpreters
    where
    ``_posixsubprocess`` is built in, as Debian's and Ubuntu's Python 3.12 on the GPU machine,
    ``importlib.import_module`` makes a fresh copy of it without any event; where it is a shared
    library, as with pyenv's 3.11, loading it again is an extension load, refused);
    ``subprocess._USE_POSIX_SPAWN`` becomes False (``os.posix_spawn`` passes ``os.environ`` as a Python
    mapping a candidate can alter without ``os.putenv``: it is refused); ``logging._srcfile`` becomes
    None (``Logger.findCaller`` would hand frames to module globals a candidate can replace).
    """
    if not _STATE:
        raise RuntimeError("install() the audit hook before arming it")
    if _STATE.get("armed"):
        raise RuntimeError("the audit hook is already armed")
    import logging
    import subprocess

    gate, real = _STATE.pop("gate"), _STATE.pop("real_fork_exec")
    if gate is not None:
        posix = sys.modules.get("_posixsubprocess")
        for mod in list(sys.modules.values()):
            d = getattr(mod, "__dict__", None)
            if not isinstance(d, dict) or mod is posix:
                continue
            for k, v in list(d.items()):
                if v is real:
                    d[k] = gate
                elif posix is not None and v is posix:
                    del d[k]
        sys.modules.pop("_posixsubprocess", None)
    bgate, breal = _STATE.pop("builtin_gate"), _STATE.pop("real_create_builtin")
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict):
            for k, v in list(d.items()):
                if v is breal:
                    d[k] = bgate
    subprocess._USE_POSIX_SPAWN = False
    logging._srcfile = None
    hook = _STATE.pop("hook")
    sys.addaudithook(hook)
    del hook
    _STATE["armed"] = True


def armed() -> bool:
    """Is the hook armed in this process?"""
    return bool(_STATE.get("armed"))


def policy_data() -> dict[str, Any]:
    """The policy as data: the tables, and what install() resolved in this process (if it ran)."""
    resolved: Resolved | None = _STATE.get("resolved")
    policy: CandidatePolicy | None = _STATE.get("policy")
    data: dict[str, Any] = {
        "forbidden_exit": FORBIDDEN_EXIT,
        "refused_events": sorted(REFUSED_EVENTS),
        "refused_prefixes": list(REFUSED_PREFIXES),
        "checked_events": sorted(k for k, v in _KINDS.items() if v not in (_K_ALLOW, _K_REFUSE)),
        "frame_attributes_refused": sorted(FRAME_ATTRS),
        "function_attributes_fixed": sorted(FUNCTION_ATTRS),
        "sensitive_env": sorted(SENSITIVE_ENV_EXACT) + [p + "*" for p in SENSITIVE_ENV_PREFIXES],
        "launcher_modules": list(LAUNCHER_MODULES),
        "stdlib_extensions": sorted(policy.stdlib_extensions if policy else STDLIB_EXTENSIONS),
        "getframe_callers": [
            "typing._caller",
            "collections.namedtuple",
            "enum.EnumType._create_",
            "typing_extensions._caller",
            "typing_extensions._has_generic_or_protocol_as_origin",
        ],
        "tb_frame_readers": [
            "triton.compiler.compiler.filter_traceback",
            (
                "traceback._walk_tb_with_full_positions, consumed by "
                "traceback.StackSummary._extract_from_extended_frame_gen without capture_locals"
            ),
        ],
        "process_changes_at_arm": [
            "subprocess._fork_exec -> gate firing " + FORK_EXEC_EVENT,
            "_posixsubprocess removed from sys.modules",
            "_imp.create_builtin -> gate firing "
            + CREATE_BUILTIN_EVENT
            + " (refused for "
            + ", ".join(sorted(GATED_BUILTINS))
            + ")",
            "subprocess._USE_POSIX_SPAWN = False",
            "logging._srcfile = None",
        ],
        "installed": resolved is not None,
        "armed": armed(),
    }
    if resolved is not None:
        data.update(
            {
                "candidate_file": policy.candidate_file if policy else "",
                "python": resolved.python,
                "triton": resolved.triton,
                "ptxas": list(resolved.ptxas),
                "c_compiler": resolved.c_compiler,
                "launcher_per_signature": resolved.launcher_per_signature,
                "triton_cache_dir": resolved.triton_cache_dir,
                "trusted_roots": list(resolved.trusted_roots),
                "dynload": resolved.dynload,
                "cc_flags": list(resolved.cc_flags),
                "missing": list(resolved.missing),
            }
        )
    return data
