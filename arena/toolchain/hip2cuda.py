"""HIP -> CUDA source translation.

HIP API names, types and headers are renamed to CUDA by reversing torch's hipify tables
(``CUDA_TO_HIP_MAPPINGS``); what the tables lack (``hipLaunchKernelGGL``, mask-less warp
functions, ...) is covered by ``hip_compat_cuda.h``, inlined after the last ``#include``.
PyTorch's own HIP headers go back to the CUDA ones they were made from (``c10/hip/*`` ->
``c10/cuda/*``, ``ATen/hip/*`` -> ``ATen/cuda/*``) and ``c10::hip::`` / ``at::hip::`` to
``::cuda::``; which of them a build may use is ``torch_headers``'s to say.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

COMPAT_HEADER_PATH = Path(__file__).with_name("hip_compat_cuda.h")
_MAPPINGS_MODULE = "torch.utils.hipify.cuda_to_hip_mappings"

# HIP names whose table entry is missing or points at the wrong CUDA name.
_EXTRA_IDENTIFIERS: dict[str, str] = {
    "hipHostMalloc": "cudaHostAlloc",  # (ptr, size, flags); 2-arg form: compat overload
    "hipMallocHost": "cudaMallocHost",
    "hipFreeHost": "cudaFreeHost",
    "hipcub": "cub",
    "__HIP_DEVICE_COMPILE__": "__CUDA_ARCH__",
    "__hip_bfloat16_raw": "__nv_bfloat16_raw",
    "__hip_bfloat162_raw": "__nv_bfloat162_raw",
    "__hip_fp8_e4m3": "__nv_fp8_e4m3",
    "__hip_fp8_e5m2": "__nv_fp8_e5m2",
    "__hip_fp8x2_e4m3": "__nv_fp8x2_e4m3",
    "__hip_fp8x2_e5m2": "__nv_fp8x2_e5m2",
    "__hip_fp8x4_e4m3": "__nv_fp8x4_e4m3",
    "__hip_fp8x4_e5m2": "__nv_fp8x4_e5m2",
    "__hip_fp8_storage_t": "__nv_fp8_storage_t",
    "__hip_fp8x2_storage_t": "__nv_fp8x2_storage_t",
    "__hip_fp8x4_storage_t": "__nv_fp8x4_storage_t",
    "__hip_saturation_t": "__nv_saturation_t",
    "__hip_fp8_interpretation_t": "__nv_fp8_interpretation_t",
    "__HIP_NOSAT": "__NV_NOSAT",
    "__HIP_SATFINITE": "__NV_SATFINITE",
    "__HIP_E4M3": "__NV_E4M3",
    "__HIP_E5M2": "__NV_E5M2",
    "__hip_cvt_float_to_fp8": "__nv_cvt_float_to_fp8",
    "__hip_cvt_fp8_to_halfraw": "__nv_cvt_fp8_to_halfraw",
}

# HIP headers -> CUDA headers, where the table has several sources or none.
_EXTRA_INCLUDES: dict[str, str] = {
    "hip/hip_runtime.h": "cuda_runtime.h",
    "hip/hip_runtime_api.h": "cuda_runtime_api.h",
    "hip/hip_fp16.h": "cuda_fp16.h",
    "hip/hip_bf16.h": "cuda_bf16.h",
    "hip/hip_bfloat16.h": "cuda_bf16.h",
    "hip/hip_fp8.h": "cuda_fp8.h",
    "hip/hip_ext.h": "cuda_runtime.h",
    "hip/hip_common.h": "cuda_runtime.h",
    "hip/device_functions.h": "cuda_runtime.h",  # CUDA's is an internal header
    "hip/hip_texture_types.h": "cuda_runtime.h",  # CUDA 13 removed cuda_texture_types.h
    "hip/hip_math_constants.h": "math_constants.h",
    "hip/hip_cooperative_groups.h": "cooperative_groups.h",
    "hip/hip_vector_types.h": "vector_types.h",
    "hip/hip_complex.h": "cuComplex.h",
    "hipcub/hipcub.hpp": "cub/cub.cuh",
    "hiprand/hiprand_kernel.h": "curand_kernel.h",
    "hiprand/hiprand.h": "curand.h",
    "hipblas/hipblas.h": "cublas_v2.h",
}

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_HIP_NAME_PREFIXES = ("hip", "HIP", "__hip", "__HIP")
_HIP_HEADER_DIRS = ("hip", "hipblas", "hipblaslt", "hipcub", "hipfft", "hiprand", "hipsparse",
                    "hipsparselt", "hipsolver")
_DISCOURAGED_SUFFIXES = ("_st", "_enum", "_v1", "_v2")
# PyTorch's hipified headers: the folder of each library's HIP headers, and of its CUDA ones
_TORCH_HIP_DIRS = {"c10/hip/": "c10/cuda/", "ATen/hip/": "ATen/cuda/"}
_TORCH_HIP_NAMESPACE = re.compile(r"\b(c10|at)(\s*::\s*)hip(\s*::)")
_HEADER_FILE = re.compile(r"\.(?:h|hpp|cuh)\Z")

# One pass over the text: an #include path, or an identifier.
_TOKEN_RE = re.compile(
    r"(?P<inc>^[ \t]*\#[ \t]*include[ \t]*)(?P<open>[<\"])(?P<path>[^>\"\n]+)(?P<close>[>\"])"
    r"|(?P<id>\b[A-Za-z_]\w*)",
    re.MULTILINE,
)

# Constructs with no NVIDIA equivalent: (pattern, note). Reported; the compile then fails.
_UNPORTABLE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b__builtin_amdgcn_\w+"), "AMD GCN builtin"),
    (re.compile(r"\b__llvm_amdgcn_\w+"), "AMD GCN intrinsic"),
    (re.compile(r"\bgcnArchName\b"), "hipDeviceProp_t::gcnArchName (AMD only)"),
    (re.compile(r"\b__(?:ockl|ocml)_\w+"), "AMD device-library function"),
    (re.compile(r"\b__hip_(?:move_dpp|ds_swizzle|ds_bpermute|ds_permute)\w*"),
     "AMD cross-lane intrinsic"),
    (re.compile(r"\b__mbcnt_(?:lo|hi)\b"), "AMD lane-count intrinsic"),
    (re.compile(r"\b__hip_atomic_\w+"), "clang HIP atomic builtin"),
    (re.compile(r"\b__builtin_nontemporal_(?:load|store)\b"), "clang nontemporal builtin"),
    (re.compile(r"\bamdgpu_\w+"), "AMDGPU attribute"),
    (re.compile(r"\b__AMDGCN_WAVEFRONT_SIZE\b"), "AMD wavefront-size macro"),
    (re.compile(r"\b__hip_fp8\w*_fnuz\b|\b__HIP_\w*FNUZ\w*"), "AMD FNUZ fp8 type"),
)
_ASM_RE = re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile|__volatile__)?\s*\(\s*\"([^\"]*)\"")
_AMD_ISA_RE = re.compile(r"\b(?:v|s|ds|buffer|global|flat|scratch)_[a-z0-9_]+")
_WARPSIZE_CONST_RE = re.compile(
    r"^.*\b(?:constexpr|static_assert|__shared__|template)\b.*\bwarpSize\b.*$"
    r"|^[ \t]*\#[ \t]*if.*\bwarpSize\b.*$"
    r"|\w<[^<>;&|()\n]*\bwarpSize\b[^<>;&|()\n]*>",
    re.MULTILINE,
)


@dataclass(frozen=True)
class TranslationResult:
    """The CUDA text and the notes on constructs that cannot be translated."""

    source: str
    notes: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=1)
def torch_root() -> Path | None:
    """The installed torch package's folder, found without importing it."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def mappings_file() -> Path | None:
    """Where torch's cuda_to_hip_mappings.py lies, found without importing torch."""
    root = torch_root()
    candidate = root / "utils" / "hipify" / "cuda_to_hip_mappings.py" if root is not None else None
    return candidate if candidate is not None and candidate.is_file() else None


@functools.lru_cache(maxsize=1)
def table_fingerprint() -> str:
    """sha256 over torch's mapping table file and this module: what renaming depends on."""
    digest = hashlib.sha256()
    path = mappings_file()
    digest.update(path.read_bytes() if path is not None else b"<no torch mappings>")
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def _load_mappings_module() -> ModuleType:
    """The mapping module; loaded on its own (it imports only stdlib) so torch stays unloaded."""
    loaded = sys.modules.get(_MAPPINGS_MODULE)
    if loaded is not None:
        return loaded
    path = mappings_file()
    if path is not None:
        spec = importlib.util.spec_from_file_location("_kernel_arena_cuda_to_hip", path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
                return module
            except ImportError:  # an older torch whose table imports its package
                pass
    return importlib.import_module(_MAPPINGS_MODULE)


def _target_name(value: Any) -> str:
    """Table values are a HIP name (newer torch) or a tuple starting with one (older)."""
    return value if isinstance(value, str) else str(value[0])


def _cuda_preference(hip_name: str, cuda_name: str) -> tuple[int, int, int, int, str]:
    """Sort key among the CUDA names of one HIP name: lower is preferred."""
    lower = hip_name.lower()
    rest = hip_name[len("hip"):] if lower.startswith("hip") else hip_name
    direct = {"cuda" + rest, "CUDA" + rest, "cu" + rest, "CU" + rest}
    exact = 0 if cuda_name in direct else 1
    if cuda_name.startswith("cuda"):
        family = 0  # runtime API
    elif cuda_name.startswith("CUDA_"):
        family = 1
    else:
        family = 2  # driver API or library
    discouraged = int(cuda_name.endswith(_DISCOURAGED_SUFFIXES) or "Thread" in cuda_name)
    return (exact, family, discouraged, len(cuda_name), cuda_name)


@functools.lru_cache(maxsize=1)
def reverse_tables() -> tuple[dict[str, str], dict[str, str]]:
    """(HIP identifier -> CUDA identifier, HIP header -> CUDA header), built once."""
    identifiers: dict[str, list[str]] = {}
    headers: dict[str, list[str]] = {}
    for table in _load_mappings_module().CUDA_TO_HIP_MAPPINGS:
        for cuda_name, value in table.items():
            hip_name = _target_name(value)
            if _IDENT.match(cuda_name) and _IDENT.match(hip_name):
                if hip_name.startswith(_HIP_NAME_PREFIXES) and cuda_name != hip_name:
                    identifiers.setdefault(hip_name, []).append(cuda_name)
            elif ((hip_name.split("/", 1)[0] in _HIP_HEADER_DIRS or hip_name.startswith(tuple(_TORCH_HIP_DIRS)))
                  and _HEADER_FILE.search(hip_name) and _HEADER_FILE.search(cuda_name)
                  and not cuda_name.startswith(("include", "<", '"'))):
                headers.setdefault(hip_name, []).append(cuda_name)
    ident_map = {hip: min(cands, key=functools.partial(_cuda_preference, hip))
                 for hip, cands in identifiers.items()}
    ident_map.update(_EXTRA_IDENTIFIERS)
    header_map = {hip: cands[0] for hip, cands in headers.items()}
    header_map.update(_EXTRA_INCLUDES)
    return ident_map, header_map


def torch_header_to_cuda(path: str) -> str | None:
    """The CUDA header a PyTorch HIP header was made from (``c10/hip/HIPStream.h`` ->
    ``c10/cuda/CUDAStream.h``, ``ATen/hip/DeviceUtils.cuh`` -> ``ATen/cuda/DeviceUtils.cuh``):
    the hipify table's entry, else hipify's naming reversed (the folder ``hip`` was ``cuda``,
    ``HIP`` in a file name was ``CUDA``); None for any other header."""
    for hip_dir, cuda_dir in _TORCH_HIP_DIRS.items():
        if path.startswith(hip_dir):
            known = reverse_tables()[1].get(path)
            if known is not None:
                return known
            rest = path[len(hip_dir):].split("/")
            rest = [("cuda" if part == "hip" else part) for part in rest[:-1]] + [rest[-1].replace("HIP", "CUDA")]
            return cuda_dir + "/".join(rest)
    return None


def strip_comments_keep_lines(text: str) -> str:
    """The text with comments blanked (newlines kept), so directives can be scanned."""
    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("/"):
            return re.sub(r"[^\n]", " ", token)
        return token
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.DOTALL)


def insertion_line(text: str) -> int:
    """Index of the line before which the compat header goes: after the last #include.

    An #include inside #if/#endif moves the point past the closing #endif; an include
    guard around the whole file (#ifndef X / #define X first) does not count as nesting.
    """
    lines = strip_comments_keep_lines(text).split("\n")
    directives: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            directives.append((index, stripped[1:].strip()))
    base = 0
    if len(directives) >= 2:
        first, second = directives[0][1], directives[1][1]
        guard = re.match(r"ifndef\s+(\w+)", first)
        if guard and re.match(rf"define\s+{guard.group(1)}\b", second):
            if directives[-1][1].startswith("endif"):
                base = 1
    depth = 0
    point = 0
    waiting = False
    for index, directive in directives:
        word = re.match(r"\w*", directive).group(0)  # type: ignore[union-attr]
        if word in ("if", "ifdef", "ifndef"):
            depth += 1
        elif word == "endif":
            depth -= 1
            if waiting and depth <= base:
                point = index + 1
                waiting = False
        elif word == "include":
            if depth <= base:
                point = index + 1
                waiting = False
            else:
                waiting = True
    return point


def _unportable_notes(text: str) -> list[str]:
    notes: list[str] = []
    for pattern, what in _UNPORTABLE:
        found = sorted(set(pattern.findall(text)))
        if found:
            notes.append(f"not translatable ({what}): {', '.join(found[:8])}")
    isa = sorted({m for body in _ASM_RE.findall(text) for m in _AMD_ISA_RE.findall(body)})
    if isa:
        notes.append(f"not translatable (inline asm with AMD ISA): {', '.join(isa[:8])}")
    if _WARPSIZE_CONST_RE.search(text):
        notes.append("warpSize appears where a compile-time constant may be needed; in CUDA "
                     "warpSize is a run-time built-in (use a constant of your own)")
    return notes


def translate_hip_to_cuda(source: str, filename: str = "kernel.hip") -> TranslationResult:
    """Translate HIP source text to CUDA. Never fails on bad input: notes say what won't port.

    ``filename`` goes into the ``#line`` directives so compiler messages cite the original.
    """
    ident_map, header_map = reverse_tables()
    notes = _unportable_notes(source)
    unmapped_headers: set[str] = set()

    def rename(match: re.Match[str]) -> str:
        name = match.group("id")
        if name is not None:
            return ident_map.get(name, name)
        path = match.group("path")
        new = header_map.get(path) or torch_header_to_cuda(path)
        if new is None:
            if path.split("/", 1)[0] in _HIP_HEADER_DIRS:
                unmapped_headers.add(path)
            return match.group(0)
        return f"{match.group('inc')}{match.group('open')}{new}{match.group('close')}"

    renamed = _TOKEN_RE.sub(rename, _TORCH_HIP_NAMESPACE.sub(r"\1\2cuda\3", source))
    if unmapped_headers:
        listed = ", ".join(sorted(unmapped_headers))
        notes.append(f"HIP headers without a CUDA equivalent: {listed}")

    lines = renamed.split("\n")
    at = insertion_line(source)
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    header = COMPAT_HEADER_PATH.read_text().rstrip("\n")
    block = [f'#line 1 "{COMPAT_HEADER_PATH.name}"', header, f'#line {at + 1} "{quoted}"']
    prefix = [f'#line 1 "{quoted}"'] if at > 0 else []
    out = prefix + lines[:at] + block + lines[at:]
    return TranslationResult(source="\n".join(out), notes=notes)
