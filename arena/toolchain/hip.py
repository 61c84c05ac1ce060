"""Build a HIP candidate into a shared library: CUDA (translated, nvcc) or ROCm (hipcc).

Two steps: the candidate's file is compiled to an object, which ``objcheck`` inspects (what
it imports, what it runs at load) before it is linked into ``lib.so``; an object that breaks
the rule is refused. The result names the kernels the build defines, as the profiler does.
Builds are content-addressed under ``default_cache_dir()``; only successful builds are
cached (a failure is rebuilt on the next call). Compile errors, refusals, timeouts and a
missing toolchain come back as ``BuildResult(ok=False)``; only programmer errors raise.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.toolchain import hip2cuda, objcheck, torch_headers

TARGETS = ("cuda", "rocm")
LIBRARY_NAME = "lib.so"
OBJECT_NAME = "kernel.o"
RECORD_NAME = "build.json"
# the device code alone (CUDA): what a replay process loads (arena.evaluation.native_recorder)
DEVICE_CODE_NAME = "kernels.fatbin"
SOURCE_NAMES = {"cuda": "kernel.cu", "rocm": "kernel.hip"}
_COMPILERS = {"cuda": "nvcc", "rocm": "hipcc"}
_COMPILER_ROOTS = {
    "cuda": (("CUDA_HOME", "CUDA_PATH"), ("/usr/local/cuda",)),
    "rocm": (("ROCM_PATH", "HIP_PATH"), ("/opt/rocm",)),
}
_CACHE_FORMAT = "kernel-arena-hip-build-3"  # bump when the layout or the parsing changes
_VERSION_TIMEOUT_S = 60.0
_REMARK_FLAG = "-Rpass-analysis=kernel-resource-usage"


@dataclass(frozen=True)
class BuildResult:
    """What one build_hip call produced."""

    ok: bool
    library: Path | None
    log: str
    seconds: float
    cached: bool
    timed_out: bool
    toolchain: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the kernels this build defines, as a device profiler names them (demangled), and mangled
    kernels: tuple[str, ...] = ()
    kernels_mangled: tuple[str, ...] = ()
    # the symbols the candidate's object imports, and why the build was refused (if it was)
    undefined: tuple[str, ...] = ()
    refused: str | None = None
    # CUDA: the build's device code alone (its fatbinary) and its sha256, for a replay process to load
    device_code: Path | None = None
    device_code_sha256: str = ""


def cache_root() -> Path:
    """Where the harness keeps its caches (HIP builds, Triton caches and warm folders, spare
    workers' folders): ``$ARENA_CACHE_DIR``, else ``~/.cache/kernel-arena``."""
    root = os.environ.get("ARENA_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "kernel-arena"


def default_cache_dir() -> Path:
    """The HIP build cache: ``cache_root()/build``."""
    return cache_root() / "build"


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"unknown build target {target!r}; expected one of {TARGETS}")


def _find_compiler(target: str) -> str | None:
    name = _COMPILERS[target]
    found = shutil.which(name)
    if found:
        return found
    env_vars, defaults = _COMPILER_ROOTS[target]
    roots = [os.environ.get(var) for var in env_vars] + list(defaults)
    for root in roots:
        if root:
            candidate = Path(root) / "bin" / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def _compiler_env(target: str) -> dict[str, str]:
    env = dict(os.environ)
    if target == "rocm":
        env["HIP_PLATFORM"] = "amd"  # with nvcc on PATH, hipcc would otherwise pick NVIDIA
    return env


_version_memo: dict[tuple[str, str, int, int], tuple[str, str] | str] = {}


def _compiler_version(path: str, target: str) -> tuple[str, str] | str:
    """(short version, full --version text), or the reason it could not be had. Memoized."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        return f"{path}: {exc}"
    memo_key = (path, target, stat.st_mtime_ns, stat.st_size)
    if memo_key in _version_memo:
        return _version_memo[memo_key]
    try:
        done = subprocess.run(
            [path, "--version"],
            env=_compiler_env(target),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_VERSION_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} --version failed: {exc}"
    text = done.stdout.decode(errors="replace")
    if target == "cuda":
        found = re.search(r"release [\d.]+, V([\d.]+)", text)
        result: tuple[str, str] | str = (
            (found.group(1), text) if found else (f"{path} --version gave no nvcc release line")
        )
    else:
        hip = re.search(r"HIP version:\s*(\S+)", text)
        clang = re.search(r"clang version\s+(\S+)", text)
        if hip and clang:
            result = (f"HIP {hip.group(1)}, clang {clang.group(1)}", text)
        else:
            result = f"{path} --version (HIP_PLATFORM=amd) gave no HIP/clang version"
    _version_memo[memo_key] = result
    return result


def toolchain_available(target: str) -> str | None:
    """None if the target's compiler is usable here, else the reason it is not."""
    _check_target(target)
    path = _find_compiler(target)
    if path is None:
        return f"{_COMPILERS[target]} not found on PATH"
    version = _compiler_version(path, target)
    return version if isinstance(version, str) else None


def compiler_found(target: str) -> dict[str, str | None]:
    """What the builds for ``target`` would use here, looked up as they look it up:
    ``{"compiler", "path", "version", "problem"}``; ``problem`` is None when it is usable."""
    _check_target(target)
    path = _find_compiler(target)
    if path is None:
        return {
            "compiler": _COMPILERS[target],
            "path": None,
            "version": None,
            "problem": f"{_COMPILERS[target]} not found on PATH",
        }
    version = _compiler_version(path, target)
    if isinstance(version, str):
        return {"compiler": _COMPILERS[target], "path": path, "version": None, "problem": version}
    return {"compiler": _COMPILERS[target], "path": path, "version": version[0], "problem": None}


def _normalize_arch(target: str, arch: str) -> str:
    if target == "cuda":
        found = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3}[af]?)", arch.strip())
        if not found:
            raise ValueError(f"bad CUDA arch {arch!r}; expected e.g. 'sm_90' or 'sm_90a'")
        return f"sm_{found.group(1)}"
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}(?::[a-z0-9]+[+-])*", arch.strip()):
        raise ValueError(f"bad ROCm arch {arch!r}; expected e.g. 'gfx90a' or 'gfx942'")
    return arch.strip()


def _clang_major(version_text: str) -> int:
    found = re.search(r"clang version\s+(\d+)", version_text)
    return int(found.group(1)) if found else 0


def _flags(target: str, arch: str, version_text: str, extra: Sequence[str]) -> list[str]:
    """Flags of the compile step (the candidate's file to a position-independent object)."""
    if target == "cuda":
        number = arch[len("sm_") :]
        # --expt-relaxed-constexpr: constexpr host functions in device code (std::numeric_limits<T>::infinity()),
        # as hipcc allows them
        flags = [
            "-O3",
            "-std=c++17",
            "--expt-relaxed-constexpr",
            "-Xcompiler",
            "-fPIC",
            "-x",
            "cu",
            f"-gencode=arch=compute_{number},code=sm_{number}",
            "-Xptxas",
            "-v",
            "-c",
        ]
    else:
        flags = ["-O3", "-std=c++17", "-fPIC", f"--offload-arch={arch}", "-c"]
        if _clang_major(version_text) >= 15:  # the resource-usage remark exists there
            flags.append(_REMARK_FLAG)
    return flags + [str(flag) for flag in extra]


def _link_flags(target: str, arch: str) -> list[str]:
    """Flags of the link step (the object to ``lib.so``): nvcc links cudart statically, and
    the recorder of record and replay (``arena.evaluation.native_recorder``) before it, each runtime call it
    follows wrapped by the linker; hipcc links libamdhip64 (told the arch, it does not look for
    a GPU)."""
    if target == "cuda":
        from arena.evaluation.native_recorder import WRAPPED

        return ["-shared", "-Xlinker", "--wrap=" + ",--wrap=".join(WRAPPED)]
    return ["-shared", "-fPIC", f"--offload-arch={arch}"]


def _cache_key(
    target: str,
    arch: str,
    source: bytes,
    compiler: str,
    version_text: str,
    flags: list[str],
    link_flags: list[str],
    headers: Sequence[tuple[str, bytes]] = (),
    torch_version: str = "",
) -> str:
    digest = hashlib.sha256()

    def part(name: str, data: bytes) -> None:
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)

    part("format", _CACHE_FORMAT.encode())
    part("target", target.encode())
    part("arch", arch.encode())
    part("source", source)
    for name, data in headers:
        part("header " + name, data)
    part("compiler", compiler.encode())
    part("version", version_text.encode())
    part("flags", json.dumps(flags).encode())
    part("link_flags", json.dumps(link_flags).encode())
    if torch_version:  # PyTorch's header-only headers were part of the build
        part("torch", torch_version.encode())
    if target == "cuda":
        from arena.evaluation.native_recorder import RECORDER_SOURCE

        part("compat", hip2cuda.COMPAT_HEADER_PATH.read_bytes())
        part("table", hip2cuda.table_fingerprint().encode())
        part("recorder", RECORDER_SOURCE.read_bytes())
    return digest.hexdigest()


def _recorder_object(compiler: str, env: dict[str, str], cache_root: Path, version_text: str) -> Path | str:
    """The recorder of record and replay (``arena.evaluation.native_recorder``) compiled for linking into a
    CUDA build, once per compiler and source (cached beside the builds); a message when it fails."""
    from arena.evaluation.native_recorder import RECORDER_SOURCE

    source = RECORDER_SOURCE.read_bytes()
    key = hashlib.sha256(source + b"\0" + version_text.encode()).hexdigest()[:32]
    done = cache_root / "recorder" / f"{key}.o"
    if done.is_file():
        return done
    done.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="recorder-", dir=done.parent))
    try:
        command = [compiler, "-O2", "-std=c++17", "-Xcompiler", "-fPIC", "-c", "-o", "recorder.o", str(RECORDER_SOURCE)]
        code, output, timed_out = _run(command, work, env, 120.0)
        if code != 0 or timed_out or not (work / "recorder.o").is_file():
            return f"build failed: the harness's recorder did not compile ({shlex.join(command)}):\n{output[-2000:]}"
        os.replace(work / "recorder.o", done)
        return done
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, bool]:
    """(return code or None, merged output, timed out). Kills the whole group on timeout. The compiler's
    temporary files go to a directory of the run's own, removed after it: clang's HIP driver (hipcc for an AMD
    target) leaves two empty directories named after the source in $TMPDIR for every compile."""
    scratch = tempfile.mkdtemp(prefix="arena-cc-")
    try:
        return _run_in(command, cwd, {**env, "TMPDIR": scratch}, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, bool]:
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=max(timeout, 0.0))
        return proc.returncode, out.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out = b""
        return None, (out or b"").decode(errors="replace"), True
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise


def _keyed(per_function: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    names = objcheck.demangle(per_function)
    out: dict[str, dict[str, Any]] = {}
    for mangled, info in per_function.items():
        entry: dict[str, Any] = dict(info)
        entry["mangled"] = mangled
        out[names.get(mangled, mangled)] = entry
    return out


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPS = re.compile(r"Function properties for (\S+)")
_PTXAS_USED = re.compile(r"ptxas info\s*:\s*Used (\d+) registers(.*)")


def ptxas_entries(output: str) -> tuple[str, ...]:
    """Mangled names of the entry functions (kernels) that ptxas compiled, once each."""
    return tuple(dict.fromkeys(_PTXAS_ENTRY.findall(output)))


def parse_ptxas(output: str) -> dict[str, dict[str, Any]]:
    """Per entry function: registers, shared_bytes, spill_bytes, stack_bytes, ... (ptxas -v)."""
    entries: dict[str, dict[str, int]] = {}
    props: dict[str, dict[str, int]] = {}
    current: str | None = None
    props_for: str | None = None
    for line in output.splitlines():
        if found := _PTXAS_ENTRY.search(line):
            current = found.group(1)
            entries.setdefault(current, {"registers": 0, "shared_bytes": 0, "spill_bytes": 0})
            continue
        if found := _PTXAS_PROPS.search(line):
            props_for = found.group(1)
            continue
        if props_for is not None and "stack frame" in line:
            info = props.setdefault(props_for, {})
            for field_name, pattern in (
                ("stack_bytes", r"(\d+) bytes stack frame"),
                ("spill_bytes", r"(\d+) bytes spill stores"),
                ("spill_load_bytes", r"(\d+) bytes spill loads"),
            ):
                if number := re.search(pattern, line):
                    info[field_name] = int(number.group(1))
            props_for = None
            continue
        if (found := _PTXAS_USED.search(line)) and current is not None:
            info = entries[current]
            info["registers"] = int(found.group(1))
            rest = found.group(2)
            for field_name, pattern in (
                ("barriers", r"(\d+) barriers"),
                ("shared_bytes", r"(\d+) bytes smem"),
                ("constant_bytes", r"(\d+) bytes cmem\[0\]"),
            ):
                if number := re.search(pattern, rest):
                    info[field_name] = int(number.group(1))
    for name, info in entries.items():
        info.update(props.get(name, {}))
    return _keyed(entries)


_REMARK_NAME = re.compile(r"remark:\s*Function Name:\s*(\S+)")
_REMARK_FIELD = re.compile(r"remark:\s*([A-Za-z][A-Za-z ]*?)(?:\s*\[[^\]]*\])?:\s*(\d+)\s*\[")
_REMARK_FIELDS = {
    "SGPRs": "sgprs",
    "VGPRs": "vgprs",
    "AGPRs": "agprs",
    "ScratchSize": "scratch_bytes",
    "Occupancy": "occupancy_waves",
    "SGPRs Spill": "sgpr_spills",
    "VGPRs Spill": "vgpr_spills",
    "LDS Size": "shared_bytes",
}


def parse_amdgpu_remarks(output: str) -> dict[str, dict[str, Any]]:
    """Per function, from clang's kernel-resource-usage remarks (AMDGPU)."""
    functions: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in output.splitlines():
        if found := _REMARK_NAME.search(line):
            current = functions.setdefault(found.group(1), {})
            continue
        if current is not None and (found := _REMARK_FIELD.search(line)):
            key = _REMARK_FIELDS.get(found.group(1).strip())
            if key:
                current[key] = int(found.group(2))
    for info in functions.values():
        info["registers"] = info.get("vgprs", 0) + info.get("agprs", 0)
        info["spill_bytes"] = 4 * info.get("vgpr_spills", 0)
        info.setdefault("shared_bytes", 0)
    return _keyed(functions)


def _load_record(directory: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((directory / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not (directory / LIBRARY_NAME).is_file() or record.get("format") != _CACHE_FORMAT:
        return None
    return record


def _named_kernels(mangled: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(demangled names, mangled names) of kernels, in one order (by demangled name)."""
    names = objcheck.demangle(mangled)
    pairs = sorted((names[name], name) for name in dict.fromkeys(mangled))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def build_hip(
    source: Path,
    *,
    target: str,
    arch: str,
    timeout: float = 180.0,
    cache_dir: Path | None = None,
    extra_flags: Sequence[str] = (),
    headers: Sequence[Path] = (),
) -> BuildResult:
    """Build a HIP file into ``lib.so`` for ``target`` ("cuda" via nvcc, "rocm" via hipcc).

    The file is compiled to an object (``extra_flags`` go to this step), the object is checked
    (``objcheck.check_object``: a refusal fails the build), then linked; ``timeout`` covers
    both steps. ``headers``: files put beside it for ``#include "name.h"`` (a task's own,
    translated like the file on NVIDIA); their names and contents are part of the cache key."""
    start = time.perf_counter()
    _check_target(target)
    arch = _normalize_arch(target, arch)
    source = Path(source)
    source_bytes = source.read_bytes()
    compiler_name = _COMPILERS[target]
    toolchain: dict[str, Any] = {
        "target": target,
        "compiler": compiler_name,
        "version": None,
        "arch": arch,
        "flags": [],
    }

    def failed(log: str, timed_out: bool = False, **found: Any) -> BuildResult:
        return BuildResult(
            ok=False,
            library=None,
            log=log,
            seconds=time.perf_counter() - start,
            cached=False,
            timed_out=timed_out,
            toolchain=toolchain,
            resources={},
            **found,
        )

    # PyTorch's headers: those that need its library are refused before anything runs (arena.toolchain.torch_headers)
    given = [source_bytes.decode("utf-8", errors="replace")] + [Path(h).read_text(errors="replace") for h in headers]
    refused = [
        line
        for text, name in zip(given, [source.name, *(Path(h).name for h in headers)])
        for line in torch_headers.refusals(text, name)
    ]
    if refused:
        return failed("\n".join(refused))
    lacking = torch_headers.missing(given, target)
    if lacking is not None:
        return failed(f"cannot build for {target}: {lacking}")
    torch_include = torch_headers.include_dir() if torch_headers.uses_headers(given) else None

    compiler = _find_compiler(target)
    if compiler is None:
        return failed(f"toolchain unavailable: {compiler_name} not found on PATH")
    version = _compiler_version(compiler, target)
    if isinstance(version, str):
        return failed(f"toolchain unavailable: {version}")
    short_version, version_text = version
    flags = _flags(target, arch, version_text, extra_flags)
    if torch_include is not None:
        flags += ["-isystem", str(torch_include)]
    link_flags = _link_flags(target, arch)
    toolchain.update(version=short_version, path=compiler, flags=flags, link_flags=link_flags)

    cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    header_bytes = [(Path(h).name, Path(h).read_bytes()) for h in headers]
    key = _cache_key(
        target,
        arch,
        source_bytes,
        compiler,
        version_text,
        flags,
        link_flags,
        header_bytes,
        torch_headers.torch_version() if torch_include is not None else "",
    )
    final_dir = cache_root / key[:2] / key
    record = _load_record(final_dir)
    if record is not None:
        code = final_dir / DEVICE_CODE_NAME
        return BuildResult(
            ok=True,
            library=final_dir / LIBRARY_NAME,
            log=record.get("log", ""),
            seconds=time.perf_counter() - start,
            cached=True,
            timed_out=False,
            toolchain=record.get("toolchain", toolchain),
            resources=record.get("resources", {}),
            kernels=tuple(record.get("kernels", ())),
            kernels_mangled=tuple(record.get("kernels_mangled", ())),
            undefined=tuple(record.get("undefined", ())),
            device_code=code if code.is_file() else None,
            device_code_sha256=str(record.get("device_code_sha256", "")),
        )

    log_parts: list[str] = []
    texts: dict[str, bytes] = {}
    for name, data in [(SOURCE_NAMES[target], source_bytes), *header_bytes]:
        if target == "cuda":
            try:
                translated = hip2cuda.translate_hip_to_cuda(data.decode("utf-8", errors="surrogateescape"))
            except ImportError as exc:
                return failed(f"HIP->CUDA translation needs torch's hipify tables: {exc}")
            log_parts += [f"translation note: {note}" for note in translated.notes]
            texts[name] = translated.source.encode("utf-8", errors="surrogateescape")
        else:
            texts[name] = data

    staging_root = cache_root / ".tmp"
    staging_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=staging_root))
    env = _compiler_env(target)
    try:
        source_name = SOURCE_NAMES[target]
        for name, text in texts.items():
            (work / name).write_bytes(text)
        deadline = time.perf_counter() + timeout

        def step(command: list[str], product: str) -> tuple[str, BuildResult | None]:
            """Run one step; (its output, None) or (output, the failed result)."""
            log_parts.append("$ " + shlex.join(command))
            try:
                code, output, timed_out = _run(command, work, env, deadline - time.perf_counter())
            except OSError as exc:
                return "", failed("\n".join(log_parts + [f"could not run {compiler}: {exc}"]))
            if output:
                log_parts.append(output.rstrip("\n"))
            if timed_out:
                log_parts.append(f"build timed out after {timeout:g} s: {compiler_name} killed")
                return output, failed("\n".join(log_parts), timed_out=True)
            if code != 0 or not (work / product).is_file():
                log_parts.append(f"build failed: {compiler_name} exited with status {code}")
                return output, failed("\n".join(log_parts))
            return output, None

        compile_start = time.perf_counter()
        output, failure = step([compiler, *flags, "-o", OBJECT_NAME, source_name], OBJECT_NAME)
        if failure is not None:
            return failure
        compile_seconds = time.perf_counter() - compile_start
        resources = parse_ptxas(output) if target == "cuda" else parse_amdgpu_remarks(output)
        try:
            obj = objcheck.read_elf(work / OBJECT_NAME)
            mangled = ptxas_entries(output) if target == "cuda" else objcheck.offload_kernels(obj)
            report = objcheck.check_object(obj, target, mangled)
        except (OSError, objcheck.ElfError) as exc:
            log_parts.append(f"build failed: could not read {OBJECT_NAME}: {exc}")
            return failed("\n".join(log_parts))
        kernels, kernels_mangled = _named_kernels(mangled)
        found = {"kernels": kernels, "kernels_mangled": kernels_mangled, "undefined": report.undefined}
        if report.refused is not None:
            log_parts.append(report.refused)
            return failed("\n".join(log_parts), refused=report.refused, **found)

        code_sha = ""
        linked = [OBJECT_NAME]
        if target == "cuda":
            # the device code alone, for a replay process (arena.evaluation.native_recorder), and the recorder
            # linked in
            fatbin = obj.section(".nv_fatbin")
            if fatbin is None:
                log_parts.append(f"build failed: {OBJECT_NAME} holds no device code (.nv_fatbin)")
                return failed("\n".join(log_parts))
            code_bytes = obj.contents(fatbin)
            (work / DEVICE_CODE_NAME).write_bytes(code_bytes)
            code_sha = hashlib.sha256(code_bytes).hexdigest()
            recorder = _recorder_object(compiler, env, cache_root, version_text)
            if isinstance(recorder, str):
                log_parts.append(recorder)
                return failed("\n".join(log_parts))
            linked.append(str(recorder))
        link_start = time.perf_counter()
        _, failure = step([compiler, *link_flags, "-o", LIBRARY_NAME, *linked], LIBRARY_NAME)
        if failure is not None:
            return failure
        link_seconds = time.perf_counter() - link_start
        (work / OBJECT_NAME).unlink()
        log = "\n".join(log_parts)
        record = {
            "format": _CACHE_FORMAT,
            "key": key,
            "source": str(source),
            "log": log,
            "toolchain": toolchain,
            "resources": resources,
            "kernels": list(kernels),
            "kernels_mangled": list(kernels_mangled),
            "undefined": list(report.undefined),
            "device_code_sha256": code_sha,
            "build_seconds": round(compile_seconds + link_seconds, 3),
            "compile_seconds": round(compile_seconds, 3),
            "link_seconds": round(link_seconds, 3),
        }
        (work / RECORD_NAME).write_text(json.dumps(record, indent=1, sort_keys=True))
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(work, final_dir)
        except OSError:
            if _load_record(final_dir) is None:  # not a concurrent twin: a broken leftover
                shutil.rmtree(final_dir, ignore_errors=True)
                try:
                    os.replace(work, final_dir)
                except OSError:
                    pass  # another builder placed it meanwhile
        code = final_dir / DEVICE_CODE_NAME
        return BuildResult(
            ok=True,
            library=final_dir / LIBRARY_NAME,
            log=log,
            seconds=time.perf_counter() - start,
            cached=False,
            timed_out=False,
            toolchain=toolchain,
            resources=resources,
            **found,
            device_code=code if code.is_file() else None,
            device_code_sha256=code_sha,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
