"""The candidate process's audit hook (arena.evaluation.candidate.audit): what it refuses ends the process with a
notice; what an honest Triton candidate does (import, interpret, compile for a GPU) passes.

Each case runs in a fresh interpreter that installs and arms the hook with a pipe for the
notice, then does one thing. Refusals are checked by exit code and notice; allowed paths share
one interpreter per setting and must reach their end with exit code 0."""

from __future__ import annotations

import dis
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from arena.evaluation.candidate import audit

REPO = Path(__file__).resolve().parents[1]

KERNEL = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


    def entry(x, y, out):
        n = x.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
""")


def run_armed(tmp_path: Path, body: str, before: str = "", env: dict[str, str] | None = None,
              timeout: float = 240) -> tuple[int, audit.Notice | None, str]:
    """Run ``before``, install and arm the hook, then run ``body``, in a fresh interpreter.
    Returns the exit code, the notice (if any) and the output."""
    cache = tmp_path / "triton-cache"
    cache.mkdir(exist_ok=True)
    script = tmp_path / "case.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "import ctypes, triton  # the candidate process has both loaded (torch imports ctypes)\n"
        + textwrap.dedent(before) +
        "\nfrom arena.evaluation.candidate import audit\n"
        f"audit.install(audit.CandidatePolicy(candidate_file='cand.py', triton_cache_dir={str(cache)!r}), "
        "int(sys.argv[1]))\n"
        "audit.arm()\n"
        "print('ARMED', flush=True)\n"
        + textwrap.dedent(body) +
        "\nprint('BODY-DONE', flush=True)\n")
    r, w = os.pipe()
    full_env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    try:
        proc = subprocess.Popen([sys.executable, str(script), str(w)], pass_fds=(w,), cwd=tmp_path, env=full_env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        os.close(w)
        w = -1
        out, _ = proc.communicate(timeout=timeout)
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    notice = audit.decode_notice(data.decode()) if data.strip() else None
    return proc.returncode, notice, out


def assert_refused(result: tuple[int, audit.Notice | None, str], event: str | tuple[str, ...],
                   detail: str = "") -> audit.Notice:
    rc, notice, out = result
    assert "ARMED" in out, out
    assert rc == audit.FORBIDDEN_EXIT, f"exit code {rc}\n{out}"
    assert "BODY-DONE" not in out and "AFTER" not in out, out
    assert notice is not None, out
    events = (event,) if isinstance(event, str) else event
    assert any(notice.event == e or (e.endswith(".") and notice.event.startswith(e)) for e in events), notice
    assert detail in notice.detail, notice
    return notice


def assert_allowed(result: tuple[int, audit.Notice | None, str]) -> str:
    rc, notice, out = result
    assert notice is None, f"{notice}\n{out}"
    assert rc == 0 and "BODY-DONE" in out, out
    return out


# -- the module itself --------------------------------------------------------------------------

def test_templates_read_no_global_builtin_or_closure():
    """The hook and its helpers take everything from their settings: nothing a candidate could
    rebind (a module global, a builtin, a closure cell) is read."""
    for template in audit.TEMPLATES:
        todo = [template.__code__]
        while todo:
            code = todo.pop()
            for ins in dis.get_instructions(code):
                assert ins.opname not in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "LOAD_DEREF", "STORE_DEREF",
                                          "LOAD_CLOSURE", "LOAD_CLASSDEREF"), (template.__name__, ins)
            todo += [c for c in code.co_consts if isinstance(c, type(code))]
        assert template is audit._t_self_frame or audit.settings_names(template) or \
            template in (audit._t_under, audit._t_is_in), template.__name__


def test_notice_round_trip_and_policy_data():
    line = audit.format_notice("ctypes.dlopen", "libc")
    notice = audit.decode_notice(line.decode())
    assert notice == audit.Notice("ctypes.dlopen", "libc")
    assert "ctypes.dlopen" in audit.parse_notice(line.decode())
    with pytest.raises(ValueError):
        audit.decode_notice('{"type": "other"}')
    data = audit.policy_data()
    assert data["forbidden_exit"] == audit.FORBIDDEN_EXIT == 86
    assert "gc.get_objects" in data["refused_events"] and "ctypes." in data["refused_prefixes"]
    assert "sys._getframe" in data["checked_events"] and "tb_frame" in data["frame_attributes_refused"]


# -- refusals -------------------------------------------------------------------------------------

REFUSALS = {
    "ctypes_cdll": ("import ctypes\nctypes.CDLL('libm.so.6')", "ctypes.dlopen", ""),
    "ctypes_from_address": ("import ctypes\n(ctypes.c_char * 8).from_address(id(b'x'))", "ctypes.cdata", ""),
    "ctypes_string_at": ("import ctypes\nctypes.string_at(id(b'x'), 8)", "ctypes.", ""),
    "subprocess_true": ("import subprocess\nsubprocess.run(['/bin/true'])", "subprocess.Popen", "/bin/true"),
    "os_system": ("os.system('true')", "os.system", ""),
    "os_fork": ("os.fork()", "os.fork", ""),
    "fork_exec_direct": (("import subprocess\nr, w = os.pipe()\n"
                          "subprocess._fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None, -1, -1, -1, -1, "
                          "-1, -1, r, w, False, False, -1, None, None, None, -1, None, False)"),
                         audit.FORK_EXEC_EVENT, "/bin/true"),
    "posixsubprocess_reimport": ("import _posixsubprocess", ("import", audit.CREATE_BUILTIN_EVENT),
                                 "_posixsubprocess"),
    "posixsubprocess_import_module": (("import importlib\nsys.modules.pop('_posixsubprocess', None)\n"
                                       "importlib.import_module('_posixsubprocess')"),
                                      ("import", audit.CREATE_BUILTIN_EVENT), "_posixsubprocess"),
    "imp_remade": ("import importlib\nsys.modules.pop('_imp')\nimportlib.import_module('_imp')",
                   audit.CREATE_BUILTIN_EVENT, "_imp"),
    "stdlib_extension": ("import _sqlite3", "import", "_sqlite3"),
    "socket": ("import socket\nsocket.socket()", ("socket.", "import"), ""),
    "gc_get_objects": ("import gc\ngc.get_objects()", "gc.get_objects", ""),
    "gc_get_referrers": ("import gc\ngc.get_referrers(sys)", "gc.get_referrers", ""),
    "function_code": ("def f(): pass\ndef g(): return 1\nf.__code__ = g.__code__", "object.__setattr__", "__code__"),
    "template_code": ("audit._t_hook.__code__ = (lambda e, a, S=None: None).__code__", "object.__setattr__",
                      "__code__"),
    "add_audit_hook": ("sys.addaudithook(lambda *a: None)", "sys.addaudithook", ""),
    "getframe": ("sys._getframe(0)", "sys._getframe", ""),
    "tb_frame": ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame", "object.__getattr__",
                 "tb_frame"),
    "gi_frame": ("def g():\n    yield 1\ng().gi_frame", "object.__getattr__", "gi_frame"),
    "current_frames": ("sys._current_frames()", "sys._current_frames", ""),
    "settrace": ("sys.settrace(lambda *a: None)", "sys.settrace", ""),
    "proc_self_mem": ("open('/proc/self/mem', 'rb')", "open", "/proc/self/mem"),
    "proc_pid_mem_write": ("os.open(f'/proc/{os.getpid()}/mem', os.O_RDWR)", "open", "mem"),
    "proc_mem_dir_fd": ("d = os.open('/proc/self', os.O_RDONLY)\nos.open('mem', os.O_RDONLY, dir_fd=d)", "open",
                        "mem"),
    "os_kill": ("os.kill(os.getpid(), 0)", "os.kill", ""),
    "putenv_ld_preload": ("os.environ['LD_PRELOAD'] = '/tmp/x.so'", "os.putenv", "LD_PRELOAD"),
    "marshal": ("import marshal\nmarshal.loads(marshal.dumps(1))", "marshal.loads", ""),
    "code_new": ("(lambda: 1).__code__.replace(co_name='x')", "code.__new__", ""),
    "symlink": ("os.symlink('/proc/self/mem', 'm')", "os.symlink", ""),
    "caught": ("import ctypes\ntry:\n    ctypes.CDLL('libm.so.6')\nexcept BaseException:\n    pass\nprint('AFTER')",
               "ctypes.dlopen", ""),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused(tmp_path, case):
    body, event, detail = REFUSALS[case]
    assert_refused(run_armed(tmp_path, body), event, detail)


def test_refused_symlink_made_before_arming_to_proc_self_mem(tmp_path):
    assert_refused(run_armed(tmp_path, "open('innocent', 'rb')", before="os.symlink('/proc/self/mem', 'innocent')"),
                   "open", "innocent")


def test_refused_changing_the_hook_found_before_arming(tmp_path):
    """No reference to the hook is kept once armed; even code that took one before arming (as a
    candidate that found it by gc or frames would hold it) cannot change its code or settings."""
    grab = ("from arena.evaluation.candidate import audit as A\n_arm = A.arm\n"
            "def _grabbing_arm():\n    globals()['hook'] = A._STATE['hook']\n    _arm()\n"
            "A.arm = _grabbing_arm\n")
    body = "assert A._STATE.get('hook') is None and 'hook' not in A.__dict__\nhook.__defaults__ = (None,)"
    assert_refused(run_armed(tmp_path, body, before=grab), "object.__setattr__", "__defaults__")
    body = "hook.__code__ = (lambda e, a, S=None: None).__code__"
    assert_refused(run_armed(tmp_path, body, before=grab), "object.__setattr__", "__code__")
    body = "del hook.__defaults__"
    assert_refused(run_armed(tmp_path, body, before=grab), "object.__delattr__", "__defaults__")
    body = "import types\ntypes.FunctionType(hook.__code__, {})"
    assert_refused(run_armed(tmp_path, body, before=grab), "function.__new__", "trusts")


def test_refused_native_extension_built_here(tmp_path):
    """A tiny extension module built with the system compiler, imported after arming."""
    src = tmp_path / "tinyext.c"
    src.write_text('#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "tinyext", NULL, -1, '
                   'NULL};\nPyMODINIT_FUNC PyInit_tinyext(void) { return PyModule_Create(&m); }\n')
    so = tmp_path / ("tinyext" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = subprocess.run(["gcc", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], str(src), "-o", str(so)],
                        check=False, capture_output=True, text=True)
    if cc.returncode != 0:
        pytest.skip(f"no C compiler for a test extension: {cc.stderr[-300:]}")
    assert_refused(run_armed(tmp_path, "sys.path.insert(0, os.getcwd())\nimport tinyext"), "import", "tinyext")
    # the same file, named as a Triton launcher and placed in the Triton cache, loaded by the
    # candidate through Triton's own helper: not Triton's launcher build, refused
    launcher_src = src.read_text().replace("tinyext", "__triton_launcher")
    (tmp_path / "l.c").write_text(launcher_src)
    cache = tmp_path / "triton-cache" / "k"
    cache.mkdir(parents=True)
    lso = cache / ("__triton_launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], str(tmp_path / "l.c"), "-o",
                    str(lso)], check=True)
    body = (f"from triton.runtime.build import _load_module_from_path\n"
            f"_load_module_from_path('__triton_launcher', {str(lso)!r})")
    assert_refused(run_armed(tmp_path, body), "import", "__triton_launcher")


def test_refused_writing_a_native_library_into_the_triton_cache(tmp_path):
    body = (
        "p = os.path.join(os.environ['TRITON_CACHE_DIR'], 'k')\nos.makedirs(p, exist_ok=True)\n"
        "open(os.path.join(p, '__triton_launcher.so'), 'wb')"
    )
    assert_refused(run_armed(tmp_path, body), "open", "native library")
    body = (
        "evil = os.path.abspath('evil.so')\nopen(evil, 'wb').close()  # outside the cache: Landlock's business\n"
        "os.replace(evil, os.path.join(os.environ['TRITON_CACHE_DIR'], '__triton_launcher.so'))"
    )
    assert_refused(run_armed(tmp_path, body), "os.rename", "Triton's cache")


def test_refused_ptxas_outside_triton(tmp_path):
    """The very tool Triton may run, started by candidate code: refused."""
    body = (
        "from triton import knobs\nimport subprocess\n"
        "subprocess.run([knobs.nvidia.ptxas.path, '--version'], capture_output=True)"
    )
    assert_refused(run_armed(tmp_path, body), ("subprocess.Popen", audit.FORK_EXEC_EVENT), "outside Triton")


# -- what honest code does ------------------------------------------------------------------------


def test_allowed_triton_interpreter_and_torch(tmp_path):
    """An ordinary Triton kernel in a module file, imported after arming and run by Triton's
    interpreter on CPU tensors; torch operators; the harness's own checks; stdlib helpers that
    look at frames; a traceback; reading and writing ordinary files."""
    (tmp_path / "cand.py").write_text(KERNEL)
    before = "import torch\nfrom arena.evaluation.candidate.guard import OpTrace, Seal, ThreadWatch\nseal = Seal()\n"
    body = """
        import importlib.util, collections, typing, enum, logging, traceback, pathlib, dataclasses
        spec = importlib.util.spec_from_file_location("arena_side_test", os.path.join(os.getcwd(), "cand.py"))
        mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
        x, y, out = torch.randn(1000), torch.randn(1000), torch.full((1000,), float("nan"))
        with OpTrace() as trace:
            mod.entry(x, y, out)
        assert torch.allclose(out, x + y), "the interpreted kernel ran"
        mod.entry(x, y, out)
        a = torch.randn(64, 64)
        float((a @ a).softmax(-1).sum() + torch.nn.functional.gelu(a).mean() + torch.cumsum(a, 0)[-1, 0])
        assert seal.broken() == [], seal.broken()
        tw = ThreadWatch(); tw.before(); assert tw.after() == []
        P = collections.namedtuple("P", "a b"); T = typing.TypeVar("T")
        E = enum.Enum("E", "A B")
        @dataclasses.dataclass
        class D:
            a: int = 1
        try:
            1 / 0
        except ZeroDivisionError:
            text = traceback.format_exc()
        assert "ZeroDivisionError" in text
        logging.getLogger("x").warning("a warning from an honest candidate")
        pathlib.Path("notes.txt").write_text("hello")
        assert pathlib.Path("notes.txt").read_text() == "hello"
        os.environ["MY_CANDIDATE_FLAG"] = "1"
        import colorsys, statistics  # a pure-Python module and one with a computational extension
        statistics.mean([1, 2, 3])
        fresh = sorted(set(sys.builtin_module_names) - set(sys.modules) - audit.GATED_BUILTINS)
        if fresh:
            import importlib
            importlib.import_module(fresh[0])   # a builtin module not loaded yet: through the create_builtin gate
            print("builtin imported:", fresh[0])
        print("namedtuple module", P.__module__)
    """
    out = assert_allowed(run_armed(tmp_path, body, before=before, env={"TRITON_INTERPRET": "1"}))
    assert "namedtuple module __main__" in out


def test_allowed_triton_compile_for_gpu_targets(tmp_path):
    """``triton.compile`` for an NVIDIA (sm_90, which runs Triton's ptxas as a process) and an AMD
    (gfx942) target, after arming, with a fresh Triton cache; then a compile error (Triton reads
    the traceback's frames to filter it) is an ordinary exception, and a second compile of the
    same kernel loads from the cache."""
    (tmp_path / "cand.py").write_text(
        KERNEL
        + textwrap.dedent("""
        @triton.jit
        def broken_kernel(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), undefined_name)
    """)
    )
    body = """
        import importlib.util, glob
        import triton
        from triton.backends.compiler import GPUTarget
        spec = importlib.util.spec_from_file_location("arena_side_test", os.path.join(os.getcwd(), "cand.py"))
        mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
        sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
        for target in (GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx942", 64), GPUTarget("cuda", 90, 32)):
            src = triton.compiler.ASTSource(fn=mod.add_kernel, signature=sig, constexprs={"BLOCK": 256})
            k = triton.compile(src, target=target)
            print(target.backend, sorted(k.asm))
        assert glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "*.cubin")), "ptxas ran"
        try:
            triton.compile(triton.compiler.ASTSource(fn=mod.broken_kernel, signature={"x_ptr": "*fp32",
                           "BLOCK": "constexpr"}, constexprs={"BLOCK": 16}), target=GPUTarget("cuda", 90, 32))
        except Exception as exc:
            print("compile error:", type(exc).__name__)
    """
    out = assert_allowed(run_armed(tmp_path, body, env={"TRITON_INTERPRET": "0"}))
    assert "cuda ['cubin', 'llir', 'ptx', 'source', 'ttgir', 'ttir']" in out
    assert "hip ['amdgcn', 'hsaco', 'llir', 'source', 'ttgir', 'ttir']" in out
    assert "compile error: CompilationError" in out


def test_install_once_arm_once_and_what_is_resolved(tmp_path):
    body = """
        for f in (lambda: audit.install(audit.CandidatePolicy(), None), audit.arm):
            try:
                f()
            except RuntimeError as exc:
                print("refused twice:", exc)
        data = audit.policy_data()
        assert data["armed"] and data["installed"]
        assert data["ptxas"] and all(os.path.isabs(p) for p in data["ptxas"]), data["ptxas"]
        print("per-signature launchers:", data["launcher_per_signature"])
        import subprocess
        assert subprocess._fork_exec.__name__ == "fork_exec" and "_posixsubprocess" not in sys.modules
    """
    out = assert_allowed(run_armed(tmp_path, body))
    assert out.count("refused twice:") == 2


def test_allowed_triton_jit_on_the_gpu(tmp_path):
    """On a GPU, as the candidate process does it: the device, Triton's driver and the timer are
    warmed before arming; then the candidate's kernel is imported and JIT-compiled (ptxas; on
    Triton 3.6 a C launcher per signature, built with the C compiler and loaded from the cache),
    launched with a second signature, launched again, and timed in a profiled session."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU here")
    (tmp_path / "cand.py").write_text(KERNEL)
    before = """
        import time, torch
        from arena.timing.timer import DeviceTimer
        timer = DeviceTimer(64 * 2**20)
        s = timer.session(True); s.open(); s.step(lambda: None); s.close()   # profiler, flush and marker kernels
        torch.cuda.synchronize()
    """
    body = """
        import importlib.util
        spec = importlib.util.spec_from_file_location("arena_side_gpu", os.path.join(os.getcwd(), "cand.py"))
        mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
        for dtype in (torch.float32, torch.float16):
            x, y = torch.randn(1 << 20, device="cuda", dtype=dtype), torch.randn(1 << 20, device="cuda", dtype=dtype)
            out = torch.empty_like(x)
            t0 = time.perf_counter(); mod.entry(x, y, out); torch.cuda.synchronize()
            print(f"first launch {dtype}: {time.perf_counter() - t0:.3f} s")
            assert torch.equal(out, x + y)
        t0 = time.perf_counter()
        for _ in range(200):
            mod.entry(x, y, out)
        torch.cuda.synchronize()
        print(f"later launches: {(time.perf_counter() - t0) / 200 * 1e6:.1f} us each")
        s = timer.session(True); s.open()
        for _ in range(5):
            s.step(lambda: mod.entry(x, y, out))
        samples, warnings = s.close()
        assert len(samples) == 5 and all(span > 0 for span, _, _ in samples), samples
        print("policy", {k: audit.policy_data()[k] for k in ("python", "triton", "launcher_per_signature",
        "c_compiler")})
    """
    out = assert_allowed(run_armed(tmp_path, body, before=before))
    print(out)


def test_refused_a_candidate_from_its_own_bytecode_cache(tmp_path):
    """Bytecode is accepted only beneath the trusted roots: a candidate module with a
    ``__pycache__`` file beside it (which an agent could have crafted) is refused, so the harness
    imports candidates from source."""
    (tmp_path / "cand.py").write_text(KERNEL)
    before = "import py_compile\npy_compile.compile('cand.py')\n"
    body = (
        "import importlib.util\nspec = importlib.util.spec_from_file_location('c', os.path.abspath('cand.py'))\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))"
    )
    assert_refused(run_armed(tmp_path, body, before=before), "marshal.loads", "trusted roots")
