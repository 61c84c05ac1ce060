"""Triton code as it is written in the field: ``@triton.autotune``, ``@triton.heuristics``,
``do_not_specialize`` and ``@triton.jit`` helpers, on the cpu backend (the interpreter cannot
benchmark: the first config runs, and the record says so) and in the compile-ahead check
(every config compiles)."""

from __future__ import annotations

from pathlib import Path

from arena.devices import detect
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import load_task
from arena.toolchain.autotune import AUTOTUNE_ON_CPU, uses_autotune
from arena.toolchain.triton_aot import compile_launches

FIX = Path(__file__).parent / "fixtures"
AXPY = FIX / "tasks" / "triton2triton" / "axpy"
AUTOTUNED = FIX / "triton_wrappers" / "axpy_autotuned.py"


def test_an_autotuned_candidate_passes_on_the_cpu_and_the_record_says_which_config_ran(tmp_path):
    task = load_task(AXPY)
    (v,) = evaluate(task, Candidate(task, AUTOTUNED), ["smoke"], detect("cpu"), work_dir=tmp_path)
    assert v.status is Status.PASSED, v.message
    assert v.build["autotune"] == AUTOTUNE_ON_CPU
    (b,) = evaluate(task, Candidate(task, AXPY / "baseline.py"), ["smoke"], detect("cpu"), work_dir=tmp_path / "b")
    assert b.status is Status.PASSED and "autotune" not in b.build


def test_the_compile_ahead_check_compiles_every_autotune_config(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    task = load_task(AXPY)
    one = [task.configs("smoke")[0]]
    out = compile_launches(task, AUTOTUNED, one, "sm_90")
    assert out.done == [one[0].name] and not out.errors
    assert set(out.kernels.values()) == {"_axpy_kernel"} and len(out.kernels) == 2   # BLOCK 256 and 1024


def test_uses_autotune_reads_the_decorators():
    assert uses_autotune(AUTOTUNED.read_text())
    assert not uses_autotune((AXPY / "baseline.py").read_text())
    assert uses_autotune("from triton import autotune\n@autotune(configs=[], key=[])\ndef k(): pass\n")
    assert not uses_autotune("def autotune(): pass\n")


UNARY = {"tanh": "torch.tanh", "sinh": "torch.sinh", "cosh": "torch.cosh", "tan": "torch.tan",
         "expm1": "torch.expm1", "log1p": "torch.log1p", "log10": "torch.log10", "exp10": "lambda t: 10 ** t",
         "exp": "torch.exp", "exp2": "torch.exp2", "log": "torch.log", "log2": "torch.log2", "sqrt": "torch.sqrt",
         "rsqrt": "torch.rsqrt", "erf": "torch.erf", "abs": "torch.abs", "floor": "torch.floor", "ceil": "torch.ceil",
         "trunc": "torch.trunc", "sin": "torch.sin", "cos": "torch.cos", "fast_expf": "torch.exp",
         "rcp_rn": "torch.reciprocal"}

KERNELS = '''
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
{kernels}
'''

KERNEL = '''

@triton.jit
def k_{name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, libdevice.{name}(tl.load(x_ptr + offs, mask=mask)), mask=mask)
'''

CHECK = '''
import importlib.util, sys, torch
from arena.toolchain import interpreter_libdevice
interpreter_libdevice.install()
spec = importlib.util.spec_from_file_location("kernels", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
x = torch.linspace(0.1, 2.5, 200, dtype=torch.float32) * torch.tensor([1.0, -1.0]).repeat(100)
bad = []
for name, ref in {unary}.items():
    xin = x.abs() if name in ("log1p", "log10", "log", "log2", "sqrt", "rsqrt") else x
    out = torch.empty_like(xin)
    getattr(m, "k_" + name)[(1,)](xin, out, xin.numel(), BLOCK=256)
    want = eval(ref)(xin.double()).float()
    if not torch.allclose(out, want, rtol=1e-5, atol=1e-6):
        bad.append((name, float((out - want).abs().max())))
print("BAD", bad)
'''


def test_libdevice_runs_on_the_interpreter_as_on_a_gpu(tmp_path):
    import os
    import subprocess
    import sys

    from arena.toolchain.interpreter_libdevice import SUPPORTED

    assert set(UNARY) <= SUPPORTED
    kernels = tmp_path / "kernels.py"
    kernels.write_text(KERNELS.format(kernels="".join(KERNEL.format(name=n) for n in UNARY)))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", CHECK.format(unary=UNARY), str(kernels)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "BAD []"


def test_a_libdevice_function_the_interpreter_lacks_is_not_runnable_on_the_cpu(tmp_path):
    from arena.toolchain.interpreter_libdevice import unsupported

    task = load_task(AXPY)
    src = (AXPY / "baseline.py").read_text().replace("import triton.language as tl\n", "import triton.language as tl\n"
                                                     "from triton.language.extra import libdevice\n")
    src = src.replace("alpha * x + y", "libdevice.pow(x, 1.0) * alpha + y")
    path = tmp_path / "kernel.py"
    path.write_text(src)
    assert unsupported(src) == ["pow"]
    assert unsupported("from triton.language.extra.libdevice import pow, tanh\n") == ["pow"]
    (v,) = evaluate(task, Candidate(task, path), ["smoke"], detect("cpu"), work_dir=tmp_path / "w")
    assert v.status is Status.NOT_RUNNABLE and not v.status.scored
    assert "libdevice.pow" in v.message and "a GPU runs it" in v.message


def test_a_launcher_that_selects_its_inputs_device_or_asks_its_properties_runs_on_the_cpu_backend(tmp_path):
    """``with torch.cuda.device(x.device.index):`` around a launch (vLLM's and FLA's launchers): a CPU tensor's
    index is None, for which a CPU build of torch raises; on the cpu backend it selects nothing and the kernel
    runs. A device the machine does not have (``torch.cuda.device(0)``) still fails the candidate. A launcher that
    asks torch.cuda for the GPU's properties (its number of SMs, its compute capability) is answered for the nominal
    H100 of ``arena.toolchain.interpreter_cuda``, and torch still has no CUDA. A grid function gets the launch's
    arguments as a GPU's launcher gives them (a tensor's ``nelement()``), and an argument it sets is the one the
    kernel is launched with (``arena.toolchain.interpreter_grid``; vLLM's ``causal_conv1d_fwd`` sizes and fills a
    buffer there)."""
    task = load_task(AXPY)
    src = (AXPY / "baseline.py").read_text()
    launch = "    _axpy_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, alpha, BLOCK=BLOCK)"
    assert launch in src
    asks = ("    sms = torch.cuda.get_device_properties(x.device).multi_processor_count\n"
            "    assert (sms, torch.cuda.get_device_capability(), torch.cuda.current_device()) == (132, (9, 0), 0)\n"
            "    assert not torch.cuda.is_available() and 'H100' in torch.cuda.get_device_name()\n")
    grid = ('    grid = lambda META: (META.__setitem__("n", META["x_ptr"].nelement()) or 0)'
            ' or (triton.cdiv(META["n"], META["BLOCK"]),)\n'
            "    _axpy_kernel[grid](x, y, out, 0, alpha, BLOCK=BLOCK)")
    for index, status in (("x.device.index", Status.PASSED), ("0", Status.RUNTIME_ERROR), ("asks", Status.PASSED),
                          ("grid", Status.PASSED)):
        path = tmp_path / f"kernel_{index.replace('.', '_')}.py"
        within = (asks + launch if index == "asks" else grid if index == "grid" else
                  f"    with torch.cuda.device({index}):\n    " + launch)
        path.write_text("import torch\n" + src.replace(launch, within))
        (v,) = evaluate(task, Candidate(task, path), ["smoke"], detect("cpu"), work_dir=tmp_path / index)
        assert v.status is status, v.message


def test_names_with_capitals_as_real_kernels_use_them(tmp_path):
    import shutil

    folder = tmp_path / "tasks" / "triton2triton" / "axpy"
    shutil.copytree(AXPY, folder)
    text = (folder / "task.yaml").read_text()
    text = text.replace("{name: x,", "{name: X,").replace("{name: y,", "{name: Y,")
    assert "name: X" in text and "name: Y" in text
    (folder / "task.yaml").write_text(text)
    task = load_task(folder)
    assert [s.name for s in task.inputs][:2] == ["X", "Y"]
    (v,) = evaluate(task, Candidate(task, folder / "baseline.py"), ["smoke"], detect("cpu"), work_dir=tmp_path / "w")
    assert v.status is Status.PASSED, v.message
