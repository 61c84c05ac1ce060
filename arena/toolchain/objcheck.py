"""What a candidate's compiled host object needs and what it runs at load, and the rule on both.

A small ELF64 reader (pure Python) gives a relocatable object's undefined symbols, the
functions its ``.init_array`` / ``.ctors`` / ``.preinit_array`` (and the unload twins) run,
and, for hipcc objects, the kernels in the embedded AMDGPU code objects. ``check_object``
applies the rule: every undefined symbol on the target's allow-list, and nothing run at load
but the compiler's own registration constructor. The HIP build (``hip.py``) refuses on it.
"""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import struct
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import ArenaException

__all__ = ["ElfError", "ElfObject", "InitEntry", "ObjectReport", "Section", "Symbol",
           "allowed_import", "check_object", "demangle", "offload_kernels", "read_elf",
           "refusal_reason"]

# ---- the ELF64 reader -------------------------------------------------------------------

ET_REL, ET_EXEC, ET_DYN = 1, 2, 3
EM_X86_64, EM_AMDGPU = 62, 224
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL, SHT_DYNSYM = 2, 4, 8, 9, 11
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY, SHT_SYMTAB_SHNDX = 14, 15, 16, 18
SHT_LLVM_DEPENDENT_LIBRARIES = 0x6FFF4C04
SHF_EXECINSTR = 0x4
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFF00, 0xFFF1, 0xFFF2, 0xFFFF
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_GNU_IFUNC = 0, 1, 2, 3, 4, 10
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
# x86-64 relocations whose value is PC-relative (the addend is "target - 4" for a call or a lea)
_PC_RELATIVE = {2, 4, 9, 24, 41, 42}  # PC32, PLT32, GOTPCREL, PC64, GOTPCRELX, REX_GOTPCRELX


class ElfError(ArenaException, ValueError):
    """The bytes are not an ELF64 file this reader understands."""


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass(frozen=True)
class Symbol:
    index: int
    name: str
    value: int
    size: int
    type: int
    bind: int
    visibility: int
    shndx: int  # resolved through SHT_SYMTAB_SHNDX when the index did not fit

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF


@dataclass(frozen=True)
class Relocation:
    offset: int
    type: int
    symbol: int
    addend: int


@dataclass(frozen=True)
class InitEntry:
    """One slot of a load-time (or unload-time) function table."""

    section: str  # .init_array, .init_array.00101, .ctors, .preinit_array, .fini_array, ...
    function: str  # the symbol name, "name+0x10", "section+0x40" or "<absolute 0x...>"
    at_load: bool  # False for .fini_array / .dtors (they run at unload)


class ElfObject:
    """An ELF64 file read from bytes: sections, symbols and relocations, nothing written."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 64 or data[:4] != b"\x7fELF":
            raise ElfError("not an ELF file")
        if data[4] != 2:
            raise ElfError("not a 64-bit ELF file")
        if data[5] not in (1, 2):
            raise ElfError(f"unknown ELF data encoding {data[5]}")
        self.data = data
        self._e = "<" if data[5] == 1 else ">"
        (self.type, self.machine, _, _, _, shoff, _, _, _, _, shentsize, shnum,
         shstrndx) = self._unpack("HHIQQQIHHHHHH", 16)
        if shoff == 0:
            raise ElfError("no section headers")
        if shentsize != 64:
            raise ElfError(f"unexpected section header size {shentsize}")
        first = self._section_header(shoff, 0)
        if shnum == 0:  # extended numbering: the count lives in section 0
            shnum = first[5]
        if shstrndx == SHN_XINDEX:
            shstrndx = first[6]
        headers = [self._section_header(shoff, i) for i in range(shnum)]
        if not 0 <= shstrndx < shnum:
            raise ElfError("bad section name table index")
        names = headers[shstrndx]
        self.sections: list[Section] = []
        for index, (name, stype, flags, offset, size, link, info, entsize) in enumerate(headers):
            self.sections.append(Section(index, self._string(names[3], names[4], name), stype,
                                         flags, offset, size, link, info, entsize))
        self.symbols: list[Symbol] = self._read_symbols()

    # -- low level
    def _unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        try:
            return struct.unpack_from(self._e + fmt, self.data, offset)
        except struct.error as exc:
            raise ElfError(f"truncated ELF file (at {offset:#x})") from exc

    def _section_header(self, shoff: int, index: int) -> tuple[int, ...]:
        name, stype, flags, _, offset, size, link, info, _, entsize = self._unpack(
            "IIQQQQIIQQ", shoff + 64 * index)
        return name, stype, flags, offset, size, link, info, entsize

    def _string(self, table_offset: int, table_size: int, index: int) -> str:
        if index >= table_size:
            raise ElfError("string index out of its table")
        start = table_offset + index
        end = self.data.find(b"\0", start, table_offset + table_size)
        if end < 0:
            raise ElfError("unterminated string")
        return self.data[start:end].decode("utf-8", errors="surrogateescape")

    def contents(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            return b""
        if section.offset + section.size > len(self.data):
            raise ElfError(f"section {section.name} runs past the end of the file")
        return self.data[section.offset:section.offset + section.size]

    def _read_symbols(self) -> list[Symbol]:
        tables = [s for s in self.sections if s.type == SHT_SYMTAB]
        if not tables:
            tables = [s for s in self.sections if s.type == SHT_DYNSYM]
        if not tables:
            return []
        table = tables[0]
        if not 0 < table.link < len(self.sections):
            raise ElfError("symbol table without a string table")
        strtab = self.sections[table.link]
        extended: list[int] = []
        for s in self.sections:
            if s.type == SHT_SYMTAB_SHNDX and s.link == table.index:
                extended = list(struct.unpack(f"{self._e}{s.size // 4}I", self.contents(s)))
        raw = self.contents(table)
        symbols = []
        for index in range(len(raw) // 24):
            name, info, other, shndx, value, size = struct.unpack_from(
                self._e + "IBBHQQ", raw, 24 * index)
            if shndx == SHN_XINDEX and index < len(extended):
                shndx = extended[index]
            symbols.append(Symbol(index, self._string(strtab.offset, strtab.size, name), value,
                                  size, info & 0xF, info >> 4, other & 0x3, shndx))
        return symbols

    # -- queries
    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def relocations_for(self, target: Section) -> list[Relocation]:
        """The relocations (REL or RELA) that apply to ``target``, in file order."""
        out: list[Relocation] = []
        for s in self.sections:
            if s.type not in (SHT_RELA, SHT_REL) or s.info != target.index:
                continue
            raw = self.contents(s)
            width = 24 if s.type == SHT_RELA else 16
            for at in range(0, len(raw) - width + 1, width):
                if s.type == SHT_RELA:
                    offset, info, addend = struct.unpack_from(self._e + "QQq", raw, at)
                else:  # the addend is the value already in place
                    offset, info = struct.unpack_from(self._e + "QQ", raw, at)
                    addend = self._implicit_addend(target, offset)
                out.append(Relocation(offset, info & 0xFFFFFFFF, info >> 32, addend))
        return out

    def _implicit_addend(self, target: Section, offset: int) -> int:
        body = self.contents(target)
        return struct.unpack_from(self._e + "q", body, offset)[0] if offset + 8 <= len(body) else 0

    def undefined(self) -> tuple[str, ...]:
        """Names of the undefined (imported) symbols, sorted, without duplicates."""
        return tuple(sorted({s.name for s in self.symbols[1:]
                             if not s.defined and s.name and s.type != STT_FILE}))

    def function_at(self, shndx: int, address: int) -> Symbol | None:
        """The named function (or label) defined in section ``shndx`` that starts at
        ``address``, else the one whose range holds it; globals before locals."""
        candidates = [s for s in self.symbols[1:] if s.shndx == shndx and s.name
                      and s.type in (STT_FUNC, STT_NOTYPE, STT_GNU_IFUNC)]
        exact = [s for s in candidates if s.value == address]
        if not exact:
            exact = [s for s in candidates if s.value <= address < s.value + s.size]
        exact.sort(key=lambda s: (s.type != STT_FUNC, s.bind == STB_LOCAL, s.name.startswith(".")))
        return exact[0] if exact else None

    def describe_target(self, relocation: Relocation,
                        pc_relative: bool = False) -> tuple[str, Symbol | None]:
        """(a name for what the relocation points at, the defined function there if any)."""
        if not 0 <= relocation.symbol < len(self.symbols):
            return f"<symbol #{relocation.symbol}>", None
        symbol = self.symbols[relocation.symbol]
        addend = relocation.addend + (4 if pc_relative else 0)
        if symbol.type == STT_SECTION or (not symbol.name and symbol.defined):
            section = self.sections[symbol.shndx] if symbol.shndx < len(self.sections) else None
            where = symbol.value + addend
            if section is None:
                return f"<section #{symbol.shndx}+{where:#x}>", None
            if section.flags & SHF_EXECINSTR:
                found = self.function_at(section.index, where)
                if found is not None:
                    extra = where - found.value
                    return (found.name if extra == 0 else f"{found.name}+{extra:#x}"), found
            return f"{section.name}+{where:#x}", None
        if not symbol.defined:
            return symbol.name, None
        if symbol.type in (STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE) and symbol.shndx < len(self.sections) \
                and self.sections[symbol.shndx].flags & SHF_EXECINSTR:
            if addend == 0:
                return symbol.name, symbol
            found = self.function_at(symbol.shndx, symbol.value + addend)
            if found is not None and found.value == symbol.value + addend:
                return found.name, found
            return f"{symbol.name}+{addend:#x}", None
        return (symbol.name if addend == 0 else f"{symbol.name}+{addend:#x}"), None

    def init_entries(self) -> tuple[InitEntry, ...]:
        """Every slot of the function tables the loader runs (init, preinit, ctors) and the
        unload ones (fini, dtors), each resolved to a name through its relocation."""
        out: list[InitEntry] = []
        for section in self.sections:
            kind = _table_kind(section)
            if kind is None:
                continue
            at_load = kind
            relocated = {r.offset: r for r in self.relocations_for(section)}
            body = self.contents(section)
            for slot in range(0, max(section.size, len(body)) - 7, 8):
                relocation = relocated.get(slot)
                if relocation is not None:
                    name, _ = self.describe_target(relocation)
                else:
                    raw = struct.unpack_from(self._e + "Q", body, slot)[0] if body else 0
                    if section.name.startswith((".ctors", ".dtors")) and raw in (0, 2**64 - 1):
                        continue  # the list terminators of the old scheme
                    name = f"<absolute {raw:#x}>"
                out.append(InitEntry(section.name, name, at_load))
        return tuple(out)


def _table_kind(section: Section) -> bool | None:
    """True: run at load; False: run at unload; None: not a function table."""
    name = section.name
    if section.type in (SHT_INIT_ARRAY, SHT_PREINIT_ARRAY) or name.startswith(
            (".init_array", ".preinit_array", ".ctors")):
        return True
    if section.type == SHT_FINI_ARRAY or name.startswith((".fini_array", ".dtors")):
        return False
    return None


def read_elf(source: bytes | Path | str) -> ElfObject:
    """Read an ELF64 file (a path or its bytes). Raises ElfError when it is not one."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    return ElfObject(data)


# ---- AMDGPU kernels inside a hipcc object -------------------------------------------------

_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def _bundle_entries(blob: bytes) -> list[tuple[str, bytes]]:
    """(triple, bytes) of each entry of a clang offload bundle; [] when it is not one."""
    if not blob.startswith(_BUNDLE_MAGIC):
        return []
    try:
        (count,) = struct.unpack_from("<Q", blob, len(_BUNDLE_MAGIC))
        at = len(_BUNDLE_MAGIC) + 8
        out = []
        for _ in range(min(count, 4096)):
            offset, size, triple_size = struct.unpack_from("<QQQ", blob, at)
            at += 24
            triple = blob[at:at + triple_size].decode(errors="replace")
            at += triple_size
            out.append((triple, blob[offset:offset + size]))
        return out
    except struct.error:
        return []


def offload_kernels(obj: ElfObject) -> tuple[str, ...]:
    """Mangled names of the kernels in a hipcc object's embedded AMDGPU code objects (each
    kernel has a ``<name>.kd`` descriptor symbol there), sorted, without duplicates."""
    names: set[str] = set()
    for section in obj.sections:
        if section.name != ".hip_fatbin":
            continue
        blob = obj.contents(section)
        for triple, code in _bundle_entries(blob):
            if "amdgcn" not in triple or not code.startswith(b"\x7fELF"):
                continue
            device = ElfObject(code)
            names.update(s.name[:-3] for s in device.symbols[1:]
                         if s.name.endswith(".kd") and s.defined)
    return tuple(sorted(names))


# ---- the rule: what a candidate's host object may import and run at load ------------------

TARGETS = ("cuda", "rocm")

# The GPU runtime API a kernel's host code uses: errors, launches and per-kernel attributes,
# device queries, memory, streams, events. The same calls under their HIP and CUDA names
# (what the HIP->CUDA translation maps them to; *_v2 / R0600 are the versioned ABI names).
_RUNTIME: dict[str, frozenset[str]] = {
    "rocm": frozenset("""
        hipGetLastError hipPeekAtLastError hipGetErrorString hipGetErrorName
        hipLaunchKernel hipLaunchCooperativeKernel hipExtLaunchKernel
        hipFuncSetAttribute hipFuncGetAttributes hipFuncSetCacheConfig hipFuncSetSharedMemConfig
        hipOccupancyMaxActiveBlocksPerMultiprocessor
        hipOccupancyMaxActiveBlocksPerMultiprocessorWithFlags hipOccupancyMaxPotentialBlockSize
        hipGetDevice hipGetDeviceCount hipGetDeviceProperties hipGetDevicePropertiesR0600
        hipDeviceGetAttribute hipDriverGetVersion hipRuntimeGetVersion hipDeviceSynchronize
        hipMalloc hipFree hipMallocAsync hipFreeAsync hipHostMalloc hipHostFree hipMallocHost
        hipFreeHost hipMemGetInfo hipPointerGetAttributes
        hipMemcpy hipMemcpyAsync hipMemcpy2D hipMemcpy2DAsync hipMemset hipMemsetAsync
        hipMemset2D hipMemset2DAsync hipMemsetD32 hipMemsetD32Async
        hipMemcpyToSymbol hipMemcpyToSymbolAsync hipMemcpyFromSymbol hipMemcpyFromSymbolAsync
        hipGetSymbolAddress hipGetSymbolSize
        hipStreamCreate hipStreamCreateWithFlags hipStreamCreateWithPriority hipStreamDestroy
        hipStreamSynchronize hipStreamWaitEvent hipStreamQuery hipStreamGetFlags
        hipStreamGetPriority hipDeviceGetStreamPriorityRange
        hipEventCreate hipEventCreateWithFlags hipEventRecord hipEventSynchronize
        hipEventDestroy hipEventQuery hipEventElapsedTime
        """.split()),
    "cuda": frozenset("""
        cudaGetLastError cudaPeekAtLastError cudaGetErrorString cudaGetErrorName
        cudaLaunchKernel cudaLaunchCooperativeKernel
        cudaFuncSetAttribute cudaFuncGetAttributes cudaFuncSetCacheConfig
        cudaFuncSetSharedMemConfig cudaOccupancyMaxActiveBlocksPerMultiprocessor
        cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
        cudaGetDevice cudaGetDeviceCount cudaGetDeviceProperties cudaGetDeviceProperties_v2
        cudaDeviceGetAttribute cudaDriverGetVersion cudaRuntimeGetVersion cudaDeviceSynchronize
        cudaMalloc cudaFree cudaMallocAsync cudaFreeAsync cudaHostAlloc cudaFreeHost
        cudaMallocHost cudaMemGetInfo cudaPointerGetAttributes
        cudaMemcpy cudaMemcpyAsync cudaMemcpy2D cudaMemcpy2DAsync cudaMemset cudaMemsetAsync
        cudaMemset2D cudaMemset2DAsync
        cudaMemcpyToSymbol cudaMemcpyToSymbolAsync cudaMemcpyFromSymbol cudaMemcpyFromSymbolAsync
        cudaGetSymbolAddress cudaGetSymbolSize
        cudaStreamCreate cudaStreamCreateWithFlags cudaStreamCreateWithPriority cudaStreamDestroy
        cudaStreamSynchronize cudaStreamWaitEvent cudaStreamQuery cudaStreamGetFlags
        cudaStreamGetPriority cudaDeviceGetStreamPriorityRange
        cudaEventCreate cudaEventCreateWithFlags cudaEventRecord cudaEventSynchronize
        cudaEventDestroy cudaEventQuery cudaEventElapsedTime
        """.split()),
}

# What the compiler itself emits for kernels: registration (run by its load-time
# constructor) and the <<<...>>> launch path.
_REGISTRATION: dict[str, frozenset[str]] = {
    "cuda": frozenset("""
        __cudaRegisterFatBinary __cudaRegisterFatBinaryEnd __cudaUnregisterFatBinary
        __cudaRegisterFunction __cudaRegisterVar __cudaRegisterManagedVar __cudaInitModule
        atexit
        """.split()),
    "rocm": frozenset("""
        __hipRegisterFatBinary __hipUnregisterFatBinary __hipRegisterFunction __hipRegisterVar
        __hipRegisterManagedVar __hipRegisterSurface __hipRegisterTexture atexit
        """.split()),
}
# Besides registration: the <<<...>>> launch path, and for nvcc the host-side stand-ins it
# gives __device__ functions of external linkage (their bodies call exit()).
_LAUNCH: dict[str, frozenset[str]] = {
    "cuda": frozenset("__cudaPushCallConfiguration __cudaPopCallConfiguration "
                      "__cudaLaunchKernel __cudaGetKernel exit".split()),
    "rocm": frozenset("__hipPushCallConfiguration __hipPopCallConfiguration".split()),
}

# The C and C++ runtime a kernel's host code plausibly needs: memory and strings, numbers read
# from strings (glibc 2.38's headers name strtol __isoc23_strtol), printing to stdout / stderr,
# abort and assert, the pieces g++ / clang emit for C++ (operator new / delete, guards of
# function-local statics, exceptions, RTTI vtables, unwinding).
_C_RUNTIME = frozenset("""
    malloc calloc realloc free aligned_alloc posix_memalign
    memcpy memmove memset memcmp memchr strlen strnlen strcmp strncmp strcpy strncpy strcat
    strncat strchr strrchr strstr
    __memcpy_chk __memmove_chk __memset_chk __strcpy_chk __strncpy_chk __strcat_chk
    printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf puts putchar fputs fputc
    fwrite fflush stdout stderr
    __printf_chk __fprintf_chk __sprintf_chk __snprintf_chk __vprintf_chk __vfprintf_chk
    __vsprintf_chk __vsnprintf_chk
    abort __assert_fail __errno_location abs labs llabs
    atoi atol atoll atof strtol strtoll strtoul strtoull strtof strtod strtold
    __isoc23_strtol __isoc23_strtoll __isoc23_strtoul __isoc23_strtoull
    _Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t
    _ZnwmSt11align_val_t _ZnamSt11align_val_t _ZdlPvSt11align_val_t _ZdaPvSt11align_val_t
    _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t _ZSt7nothrow
    __cxa_guard_acquire __cxa_guard_release __cxa_guard_abort __cxa_atexit __dso_handle
    __cxa_allocate_exception __cxa_free_exception __cxa_throw __cxa_begin_catch
    __cxa_end_catch __cxa_rethrow __cxa_call_unexpected __cxa_pure_virtual
    __cxa_deleted_virtual _ZSt9terminatev __gxx_personality_v0 _Unwind_Resume
    __stack_chk_fail _GLOBAL_OFFSET_TABLE_
    _ZTVN10__cxxabiv117__class_type_infoE _ZTVN10__cxxabiv120__si_class_type_infoE
    _ZTVN10__cxxabiv121__vmi_class_type_infoE
    pthread_mutex_lock pthread_mutex_unlock pthread_mutex_trylock
    """.split())
# libm (double, float and long double forms) and libstdc++'s out-of-line throw helpers
# (std::vector and friends call them on a bad size).
_MATH = re.compile(
    r"(?:a?(?:sin|cos|tan)h?|atan2|exp|exp2|expm1|log|log2|log10|log1p|logb|ilogb|pow|sqrt|"
    r"cbrt|hypot|erfc?|lgamma|tgamma|ceil|floor|trunc|round|l?lround|nearbyint|rint|l?lrint|"
    r"fmod|remainder|remquo|fabs|fmin|fmax|fdim|fma|frexp|ldexp|modf|scalbl?n|copysign|nan|"
    r"nextafter|nexttoward|sincos)[fl]?")
_THROW_HELPER = re.compile(r"_ZSt\d+__throw_[a-z_]+\w*")

# Names that look like runtime API (or ordinary libc) and are refused, with the reason the
# message gives. An allow-list decides; these only explain.
_REFUSED: list[tuple[re.Pattern[str], str]] = [(re.compile(p), why) for p, why in [
    (r"dl(open|sym|vsym|mopen|close|error|addr1?|info|_iterate_phdr)|__libc_dl\w*|_dl_\w*|_r_debug",
     "dynamic loading and symbol lookup: code reached that way is not built from the candidate's file"),
    (r"_?Py\w*", "the Python C API: native candidate code may not run or inspect Python"),
    (r"(cublas|cudnn|cufft|curand|cusparse|cusolver|cutensor|nvrtc|nvJitLink|nvjpeg|npp|nvtx|"
     r"nccl|rocblas|hipblas|rocfft|hipfft|rocrand|hiprand|rocsparse|hipsparse|rocsolver|"
     r"hipsolver|miopen|rccl|hiprtc|amd_comgr|roctx)\w*",
     "a vendor library: its kernels are not the candidate's own"),
    (r"_ZN[KVRO]*(2at|3c10|5torch|6caffe2)\w*",
     "torch / ATen: the framework's kernels are not the candidate's own"),
    (r"cu[A-Z]\w*|cuda(GetDriverEntryPoint\w*|Library\w*|Kernel\w*|GetFuncBySymbol|GetKernel)|"
     r"hip(Module\w*|ExtModule\w*|GetProcAddress|Library\w*|GetFuncBySymbol|Drv\w*)",
     "the driver API, module or library loading, or driver entry points: kernels loaded that way "
     "are not built from the candidate's file"),
    (r"(cuda|hip)(DeviceSetLimit|ThreadSetLimit|CtxResetPersistingL2Cache|StreamSetAttribute|"
     r"StreamCopyAttributes|GraphKernelNodeSetAttribute|LaunchKernelExC?)",
     "sets launch or stream attributes and limits, L2 persistence among them, which survives "
     "the harness's cache flush (exploit 32)"),
    (r"(cuda|hip)(DeviceReset|SetDevice|SetDeviceFlags|ThreadExit|SetValidDevices|ChooseDevice\w*)",
     "resets the device or changes which device the process uses, under the harness"),
    (r"(cuda|hip)(DeviceSetCacheConfig|DeviceSetSharedMemConfig|ThreadSetCacheConfig|"
     r"DeviceSetMemPool|MemPoolSetAttribute|DeviceSetGraphMemAttribute)",
     "device-wide configuration that outlives the call (set per kernel with "
     "FuncSetAttribute / FuncSetCacheConfig instead)"),
    (r"(cuda|hip)(Graph\w*|StreamBeginCapture\w*|StreamEndCapture|StreamIsCapturing|"
     r"StreamGetCaptureInfo\w*|ThreadExchangeStreamCaptureMode|UserObject\w*)",
     "graph capture and replay: replayed work is not launched by the candidate's call (exploit 32)"),
    (r"(cuda|hip)(Ipc\w*|MemPool(Export|Import)\w*)",
     "inter-process memory handles: they reach memory beyond the call's arguments"),
    (r"(cuda|hip)(LaunchHostFunc|StreamAddCallback)",
     "a host callback run from the stream: candidate code outside the call"),
    (r"fork|vfork|clone3?|exec(l|lp|le|v|vp|vpe|ve|veat)|fexecve|system|popen|pclose|"
     r"posix_spawnp?\w*|pthread_create|pthread_atfork|thrd_create|daemon|kill|tgkill|raise|"
     r"_Z(T[IVS])?NSt6j?thread\w*",
     "creates a process or a thread, or signals one: work that outlives the call (exploit 2)"),
    (r"syscall|ptrace|prctl|personality|mmap(64)?|munmap|mremap|mprotect|pkey_\w+|madvise|"
     r"process_vm_(readv|writev)|signal|sigaction|sigprocmask|pthread_sigmask|setjmp|longjmp|"
     r"_?_?sigsetjmp|__libc_\w+",
     "raw system calls, memory mapping or signal handling: not what a kernel's host code does"),
    (r"(__)?(open|openat|creat|fopen|freopen|fdopen|opendir|tmpfile|mkstemp)(64)?(_2)?|"
     r"read|write|pread(64)?|pwrite(64)?|readv|writev|__read_chk|fread|dup[23]?|pipe2?|"
     r"socket|socketpair|connect|bind|send(to|msg)?|recv(from|msg)?|ioctl|fcntl|readlink|"
     r"access|stat|fstat|lstat|__x?stat\w*|unlink|remove|rename|mkdir|chdir|getcwd|dprintf|"
     r"vdprintf|shm_open",
     "file, descriptor or socket access: the harness's files and channels are out of bounds "
     "(exploits 5, 24, 26)"),
    (r"(secure_)?getenv|setenv|unsetenv|putenv|clearenv|environ|__environ",
     "the process environment: harness settings and knobs that change libraries (exploit 28)"),
    (r"clock_gettime|gettimeofday|time|clock|nanosleep|usleep|sleep|clock_nanosleep|"
     r"sched_yield|_ZNSt6chrono\w*",
     "host clocks and sleeps: a kernel's host code has no use for time (exploits 2, 11)"),
]]

# The compiler's own load-time constructor, and the functions it may call or hand over.
_CONSTRUCTOR = {"cuda": "_ZL24__sti____cudaRegisterAllv", "rocm": "__hip_module_ctor"}
_CONSTRUCTOR_HELPERS = {
    "cuda": re.compile(r"_ZL\d+__(cudaUnregisterBinaryUtil|nv_cudaEntityRegisterCallback|"
                       r"nv_save_fatbinhandle_for_managed_rt)\w*"),
    "rocm": re.compile(r"__hip_module_dtor"),
}


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {TARGETS}")


def allowed_import(name: str, target: str) -> bool:
    """Whether a candidate's host object may leave ``name`` undefined (import it)."""
    _check_target(target)
    return (name in _RUNTIME[target] or name in _REGISTRATION[target] or name in _LAUNCH[target]
            or name in _C_RUNTIME
            or bool(_MATH.fullmatch(name)) or bool(_THROW_HELPER.fullmatch(name)))


def refusal_reason(name: str, target: str) -> str | None:
    """None when ``name`` may be imported on ``target``; else why not, in a few words."""
    if allowed_import(name, target):
        return None
    base = name.split("@", 1)[0]  # a versioned reference (.symver) counts as its base name
    for pattern, why in _REFUSED:
        if pattern.fullmatch(base):
            return why
    return f"not on the {target} allow-list (GPU runtime, C/C++ runtime, libm)"


@dataclass(frozen=True)
class ObjectReport:
    """What ``check_object`` found in one object, and the refusal if any."""

    undefined: tuple[str, ...]
    init: tuple[InitEntry, ...]
    problems: tuple[str, ...]  # one clause each; empty when the object is acceptable

    @property
    def refused(self) -> str | None:
        if not self.problems:
            return None
        return ("Build refused: " + "; ".join(self.problems) + ". A kernel file's host code may "
                "call the GPU runtime, the C/C++ runtime and libm, and only the compiler's kernel "
                "registration may run at load, so that the kernels that run are the ones this "
                "build made from the candidate's file.")


def _with_demangled(names: Iterable[str]) -> list[str]:
    names = list(names)
    plain = demangle(names)
    return [name if plain.get(name, name) == name else f"{name} ({plain[name]})" for name in names]


def _is_kernel(name: str, kernels: frozenset[str]) -> bool:
    """Whether a host-side function is a kernel's (its launch stub or shadow, which the
    registration hands to the runtime): nvcc marks an anonymous namespace's host shadow
    internal (``L``) where the device name is not, so names are compared demangled."""
    if name in kernels or "__device_stub__" in name:
        return True
    return demangle([name])[name] in set(demangle(kernels).values())


def _constructor_problems(obj: ElfObject, target: str, ctor: Symbol,
                          kernels: frozenset[str]) -> list[str]:
    """What the load-time constructor refers to beyond registration: it must be the
    compiler's (a candidate's function can take its name when the compiler renames its own)."""
    allowed_undefined = _REGISTRATION[target]
    helpers = _CONSTRUCTOR_HELPERS[target]
    bad: list[str] = []
    seen: set[int] = set()
    todo = [ctor]
    while todo:
        function = todo.pop()
        if function.index in seen:
            continue
        seen.add(function.index)
        if function.shndx >= len(obj.sections):
            bad.append(function.name)
            continue
        section = obj.sections[function.shndx]
        for relocation in obj.relocations_for(section):
            if not function.value <= relocation.offset < function.value + max(function.size, 1):
                continue
            symbol = obj.symbols[relocation.symbol] if relocation.symbol < len(obj.symbols) else None
            name, target_function = obj.describe_target(relocation, relocation.type in _PC_RELATIVE)
            if symbol is not None and not symbol.defined:
                if symbol.name not in allowed_undefined:
                    bad.append(symbol.name)
            elif target_function is not None:
                if helpers.fullmatch(target_function.name):
                    todo.append(target_function)
                elif not _is_kernel(target_function.name, kernels):
                    bad.append(target_function.name)
            elif symbol is not None and symbol.defined and symbol.shndx < len(obj.sections) and \
                    obj.sections[symbol.shndx].flags & SHF_EXECINSTR:
                bad.append(name)  # code that is no named function
    return sorted(set(bad))


def check_object(source: ElfObject | bytes | Path | str, target: str,
                 kernels: Iterable[str] = ()) -> ObjectReport:
    """Apply the rule to a candidate's relocatable host object built for ``target``.

    ``kernels`` are the mangled names of the kernels it defines (their host-side symbols are
    what the registration constructor hands to the runtime)."""
    _check_target(target)
    obj = source if isinstance(source, ElfObject) else read_elf(source)
    problems: list[str] = []
    if obj.type != ET_REL:
        problems.append("the compiler's output is not a relocatable object")
    undefined = obj.undefined()
    refused = [(name, refusal_reason(name, target)) for name in undefined]
    refused = [(name, why) for name, why in refused if why is not None]
    by_reason: dict[str, list[str]] = {}
    for name, why in refused:
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        problems.append(f"it uses {', '.join(_with_demangled(names))}: {why}")

    reserved = sorted(s.name for s in obj.symbols[1:] if s.defined and s.name
                      and s.type != STT_SECTION and allowed_import(s.name, target)
                      and s.name not in ("__dso_handle", "_GLOBAL_OFFSET_TABLE_"))
    if reserved:
        problems.append(f"it defines {', '.join(_with_demangled(reserved))}, which the runtime or "
                        "the C library owns (a definition would replace theirs)")

    entries = obj.init_entries()
    ctor_name = _CONSTRUCTOR[target]
    load = [e for e in entries if e.at_load]
    foreign = [e for e in load if e.function != ctor_name or not e.section.startswith(".init_array")]
    if foreign:
        problems.append("it runs " + ", ".join(f"{n} from {e.section}" for e, n in zip(
            foreign, _with_demangled(e.function for e in foreign))) +
            " at load: a constructor function or a global object's constructor runs candidate "
            "code outside any call")
    if len(load) - len(foreign) > 1:
        problems.append(f"it registers {ctor_name} to run at load more than once")
    unload = [e for e in entries if not e.at_load]
    if unload:
        problems.append("it runs " + ", ".join(f"{n} from {e.section}" for e, n in zip(
            unload, _with_demangled(e.function for e in unload))) +
            " at unload: a destructor function runs candidate code outside any call")
    ctors = [s for s in obj.symbols[1:] if s.name == ctor_name and s.defined]
    if any(e.function == ctor_name for e in load) and ctors:
        extra = _constructor_problems(obj, target, ctors[0], frozenset(kernels))
        if extra:
            problems.append(f"its load-time constructor {ctor_name} refers to "
                            f"{', '.join(_with_demangled(extra))}, which the compiler's "
                            "registration does not")
    twins = sorted(s.name for s in obj.symbols[1:] if s.name.startswith(ctor_name + "."))
    if twins:
        problems.append(f"it defines {', '.join(twins)} besides {ctor_name}: a function of the "
                        "candidate's took the name of the compiler's constructor")
    ifuncs = sorted(s.name for s in obj.symbols[1:] if s.type == STT_GNU_IFUNC and s.defined)
    if ifuncs:
        problems.append(f"it defines indirect functions {', '.join(ifuncs)}, whose resolvers run "
                        "at load")
    for section in obj.sections:
        if section.name in (".init", ".fini") and section.size:
            problems.append(f"it adds code to {section.name}, which runs at load or unload")
        if section.type == SHT_LLVM_DEPENDENT_LIBRARIES or section.name == ".deplibs":
            problems.append("it asks the linker for libraries (#pragma comment(lib, ...))")
    return ObjectReport(undefined=undefined, init=entries, problems=tuple(problems))


# ---- demangling: as the CUDA profiler's reader (kineto) does it ---------------------------

_KINETO_MAX_SYMBOL = 1024  # kineto leaves longer names mangled


@functools.lru_cache(maxsize=1)
def _cxa_demangler() -> tuple[Any, Any] | None:
    """libstdc++'s ``__cxa_demangle`` and libc's ``free`` through ctypes; None without them."""
    try:
        function = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                         ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return function, free


def _demangle_cxa(name: str, function: Any, free: Any) -> str:
    raw = name.encode("utf-8", errors="surrogateescape")
    if len(raw) > _KINETO_MAX_SYMBOL:
        return name
    status = ctypes.c_int(0)
    length = ctypes.c_size_t(0)
    pointer = function(raw, None, ctypes.byref(length), ctypes.byref(status))
    if not pointer:
        return name
    try:
        text = ctypes.string_at(pointer).decode("utf-8", errors="surrogateescape")
    finally:
        free(pointer)
    return text if status.value == 0 else name


def _demangle_cxxfilt(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt")
    mangled = [name for name in names if name.startswith("_Z")]
    if not tool or not mangled:
        return {}
    try:
        done = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    plain = done.stdout.splitlines()
    if done.returncode != 0 or len(plain) != len(mangled):
        return {}
    return dict(zip(mangled, plain, strict=True))


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Each name as the CUDA profiler's reader (kineto) reports it: libstdc++'s
    ``abi::__cxa_demangle`` on the whole name, the name itself where that fails or the name is
    over 1,024 bytes (so an ``extern "C"`` kernel keeps its name; note that, as in kineto, a
    name that is also a type code, such as ``f``, comes out as the type, ``float``).
    Falls back to ``c++filt`` (``_Z`` names only) when libstdc++ cannot be loaded."""
    names = list(dict.fromkeys(names))
    demangler = _cxa_demangler()
    if demangler is None:
        found = _demangle_cxxfilt(names)
        return {name: found.get(name, name) for name in names}
    return {name: _demangle_cxa(name, *demangler) for name in names}
