"""Device memory one process allocates and another maps, handed over as a file descriptor.

CUDA's virtual memory management (driver API, through ``libcuda``): ``cuMemCreate`` makes the
physical memory, ``cuMemExportToShareableHandle`` turns it into a POSIX file descriptor, which
travels over a Unix socket (``SCM_RIGHTS``) to the process that maps it
(``cuMemImportFromShareableHandle``, ``cuMemAddressReserve``, ``cuMemMap``,
``cuMemSetAccess``). A descriptor is a capability: unlike the runtime's IPC handles (which
failed between processes of different uids on an H100, "mapping of buffer object failed"), it
needs no common uid, so the processes that make calls can run as uids of their own
(``arena.evaluation.sandbox.confine``). Each side sees the memory as a torch tensor (through
``__cuda_array_interface__``); the mapping is undone when the last tensor over it is gone.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

from arena.errors import ArenaException

_PINNED, _POSIX_FD, _LOCATION_DEVICE, _READ_WRITE, _GRANULARITY_MINIMUM = 1, 1, 1, 3, 0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class VmmError(ArenaException, RuntimeError):
    pass


_OUT_OF_MEMORY = 2      # CUDA_ERROR_OUT_OF_MEMORY


@functools.lru_cache(maxsize=1)
def _driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _call(name: str, *args: Any) -> None:
    fn = getattr(_driver(), name)
    err = fn(*args)
    if err:
        if err == _OUT_OF_MEMORY:      # the device is full: what the stages try again, as torch's own shortage
            import torch

            raise torch.cuda.OutOfMemoryError(f"{name} failed: the device is out of memory (CUDA driver error {err})")
        raise VmmError(f"{name} failed with CUDA driver error {err}")


def _device() -> int:
    """The device of this process's current context (made current first: the driver's calls
    need one)."""
    import torch

    torch.zeros(1, device="cuda")
    return torch.cuda.current_device()


def _prop(device: int) -> _Prop:
    return _Prop(_PINNED, _POSIX_FD, _Location(_LOCATION_DEVICE, device), None, _AllocFlags())


def rounded(nbytes: int) -> int:
    """``nbytes`` rounded up to the allocation granularity of this process's device."""
    gran = ctypes.c_size_t()
    prop = _prop(_device())
    _call("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop), _GRANULARITY_MINIMUM)
    g = max(1, gran.value)
    return max(g, -(-nbytes // g) * g)


class Mapping:
    """``size`` bytes of device memory mapped at ``ptr`` in this process. Made by ``allocate``
    (new memory) or ``open_fd`` (memory another process made). Unmapped when garbage: hold it
    while any tensor over it lives (``tensor`` does)."""

    def __init__(self, handle: int, size: int, device: int):
        self.handle, self.size, self.device = handle, size, device
        self.ptr = 0
        self._mapped = False
        ptr = ctypes.c_ulonglong()
        try:
            _call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                  ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
            self.ptr = ptr.value
            _call("cuMemMap", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                  ctypes.c_ulonglong(handle), ctypes.c_ulonglong(0))
            self._mapped = True
            access = _Access(_Location(_LOCATION_DEVICE, device), _READ_WRITE)
            _call("cuMemSetAccess", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(size), ctypes.byref(access),
                  ctypes.c_size_t(1))
        except BaseException:
            self.release()
            raise

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}

    def tensor(self) -> Any:
        """A uint8 tensor over the whole mapping (it keeps the mapping alive)."""
        import torch

        return torch.as_tensor(self, device=f"cuda:{self.device}")

    def release(self) -> None:
        """Unmap, and let the memory go (another process's mapping of it stays)."""
        drv = _driver()
        if self._mapped:
            try:
                import torch

                torch.cuda.synchronize()        # no work in flight on it
            except Exception:  # noqa: BLE001 - a lost context: the unmap fails alike, harmlessly
                pass
            drv.cuMemUnmap(ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
            self._mapped = False
        if self.ptr:
            drv.cuMemAddressFree(ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
            self.ptr = 0
        if self.handle:
            drv.cuMemRelease(ctypes.c_ulonglong(self.handle))
            self.handle = 0

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass


def allocate(nbytes: int) -> tuple[Mapping, int]:
    """New device memory of at least ``nbytes`` (the granularity's multiple), mapped here, and a
    descriptor another process can map it by (the caller's to close once sent)."""
    device = _device()
    size = rounded(nbytes)
    handle = ctypes.c_ulonglong()
    prop = _prop(device)
    _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0))
    fd = ctypes.c_int(-1)
    try:
        _call("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_ulonglong(handle.value), _POSIX_FD,
              ctypes.c_ulonglong(0))
    except BaseException:
        _driver().cuMemRelease(handle)
        raise
    try:
        return Mapping(handle.value, size, device), fd.value
    except BaseException:
        os.close(fd.value)
        raise


def open_fd(fd: int, size: int) -> Mapping:
    """The memory behind another process's descriptor ``fd`` (``size`` bytes), mapped here. The
    descriptor is closed."""
    device = _device()
    handle = ctypes.c_ulonglong()
    try:
        _call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD)
    finally:
        os.close(fd)
    return Mapping(handle.value, size, device)
