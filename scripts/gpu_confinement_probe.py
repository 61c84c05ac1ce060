"""What a machine allows a confined process to do on its GPU: a process of its own uid, in PID,
network, IPC and mount namespaces of its own, opening a device context, mapping device memory
another process shares with it (torch's IPC, the runtime's IPC handle, a virtual-memory
allocation passed as a file descriptor), and reading its kernels' device times from the
profiler. Also what NVML says each process holds. Standalone (torch, ctypes); prints JSON.

Run as root on the GPU machine from the repo root: python3 scripts/gpu_confinement_probe.py
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import pickle
import platform
import socket
import stat
import sys
import traceback

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, \
    0x40000000
MS_REC, MS_PRIVATE, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x4000, 1 << 18, 2, 4, 8
UID = (1 << 30) + os.getpid() % 100000


def _check(r: int, what: str) -> None:
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def send(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj)
    sock.sendall(len(data).to_bytes(8, "little") + data)


def recv(sock: socket.socket):
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        if not chunk:
            return None
        head += chunk
    n = int.from_bytes(head, "little")
    data = b""
    while len(data) < n:
        data += sock.recv(n - len(data))
    return pickle.loads(data)


def cudart():
    for line in open("/proc/self/maps"):
        if "libcudart" in line:
            return ctypes.CDLL(line.split()[-1])
    return ctypes.CDLL(ctypes.util.find_library("cudart"))


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AllocProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", MemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", MemLocation), ("flags", ctypes.c_int)]


VMM_BYTES = 2 << 20


def vm() -> dict:
    out = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmPeak", "VmSize", "VmRSS", "VmData"):
            out[k] = int(v.split()[0])
    return out


def confine(variant: str, report: dict) -> None:
    if "ns" in variant:
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount private")
        _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount proc")
    if "uid" in variant:
        scratch = f"/tmp/probe-{UID}"
        os.makedirs(scratch, exist_ok=True)
        os.chown(scratch, UID, UID)
        os.environ.update(
            TRITON_CACHE_DIR=scratch + "/triton",
            HOME=scratch,
            TMPDIR=scratch,
            USER="arena",
            LOGNAME="arena",
            CUDA_CACHE_PATH=scratch + "/nv",
        )
        groups = sorted(
            {
                os.stat(p).st_gid
                for p in (f"/dev/{n}" for n in os.listdir("/dev") if n.startswith("nvidia"))
                if os.path.exists(p)
            }
            - {0}
        )
        os.setgroups(groups)
        os.setresgid(UID, UID, UID)
        os.setresuid(UID, UID, UID)
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    report["uid"], report["ppid"], report["pid"] = os.getuid(), os.getppid(), os.getpid()
    report["proc_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())[:20]


def child(variant: str, sock: socket.socket, parent_pid: int) -> dict:
    report: dict = {"variant": variant}
    try:
        if "early" in variant:
            confine(variant, report)
        import torch

        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        report["context"] = "ok"
        if "early" not in variant:
            confine(variant, report)
        try:
            os.setpriority(os.PRIO_PROCESS, parent_pid, 10)
            report["setpriority_parent"] = "allowed"
        except OSError as exc:
            report["setpriority_parent"] = f"refused: {exc}"
        msg = recv(sock)
        # torch's own sharing (reduce_tensor)
        try:
            rebuild, args = pickle.loads(msg["torch"])
            t = rebuild(*args)
            report["torch_ipc_read"] = int(t[0].item())
            t[1] = 7
            torch.cuda.synchronize()
            report["torch_ipc"] = "ok"
        except Exception as exc:  # noqa: BLE001
            report["torch_ipc"] = f"{type(exc).__name__}: {exc}"[:300]
        # the runtime's IPC handle, no reference-count file
        try:
            rt = cudart()
            ptr = ctypes.c_void_p()
            h = IpcHandle()
            ctypes.memmove(ctypes.addressof(h), msg["raw"], 64)
            rt.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), IpcHandle, ctypes.c_uint]
            err = rt.cudaIpcOpenMemHandle(ctypes.byref(ptr), h, 1)
            if err:
                report["raw_ipc"] = f"cudaIpcOpenMemHandle error {err}"
            else:
                host = (ctypes.c_int64 * 2)()
                rt.cudaMemcpy(host, ptr, 16, 2)
                report["raw_ipc_read"] = int(host[0])
                host[1] = 9
                rt.cudaMemcpy(ptr, host, 16, 1)
                rt.cudaDeviceSynchronize()
                report["raw_ipc"] = "ok"
        except Exception as exc:  # noqa: BLE001
            report["raw_ipc"] = f"{type(exc).__name__}: {exc}"[:300]
        # a virtual-memory allocation passed as a file descriptor
        try:
            msgs, fds, _, _ = socket.recv_fds(sock, 16, 1)
            cu = ctypes.CDLL("libcuda.so.1")
            h = ctypes.c_ulonglong()
            err = cu.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fds[0]), 1)
            if err:
                raise RuntimeError(f"cuMemImportFromShareableHandle {err}")
            ptr = ctypes.c_ulonglong()
            for name, call in (
                (
                    "reserve",
                    lambda: cu.cuMemAddressReserve(
                        ctypes.byref(ptr),
                        ctypes.c_size_t(VMM_BYTES),
                        ctypes.c_size_t(0),
                        ctypes.c_ulonglong(0),
                        ctypes.c_ulonglong(0),
                    ),
                ),
                (
                    "map",
                    lambda: cu.cuMemMap(ptr, ctypes.c_size_t(VMM_BYTES), ctypes.c_size_t(0), h, ctypes.c_ulonglong(0)),
                ),
                (
                    "access",
                    lambda: cu.cuMemSetAccess(
                        ptr,
                        ctypes.c_size_t(VMM_BYTES),
                        ctypes.byref(AccessDesc(MemLocation(1, 0), 3)),
                        ctypes.c_size_t(1),
                    ),
                ),
            ):
                err = call()
                if err:
                    raise RuntimeError(f"{name} {err}")
            host = (ctypes.c_int64 * 2)()
            err = cu.cuMemcpyDtoH_v2(host, ptr, ctypes.c_size_t(16))
            report["vmm_read"] = int(host[0]) if not err else f"copy {err}"

            # the same memory as a torch tensor, through __cuda_array_interface__
            class _Arr:
                __cuda_array_interface__ = {"shape": (2,), "typestr": "<i8", "data": (ptr.value, False), "version": 3}

            tv = torch.as_tensor(_Arr(), device="cuda")
            report["vmm_torch_view"] = int(tv[0].item())
            tv[1] = 11
            torch.cuda.synchronize()
            report["vmm"] = "ok"
        except Exception as exc:  # noqa: BLE001
            report["vmm"] = f"{type(exc).__name__}: {exc}"[:300]
        try:
            rt.cudaGetLastError()
        except Exception:  # noqa: BLE001
            pass
        # the profiler's kernel times
        try:
            from torch.profiler import ProfilerActivity, profile

            a = torch.randn(1024, 1024, device="cuda")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    a @ a
                torch.cuda.synchronize()
            kernels = [
                e
                for e in prof.events()
                if getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA")
            ]
            report["profiler_kernels"] = len(kernels)
        except Exception as exc:  # noqa: BLE001
            report["profiler_kernels"] = f"{type(exc).__name__}: {exc}"[:300]
        try:
            import importlib

            importlib.import_module("torch._inductor.codegen.cuda_combined_scheduling")
            report["lazy_import"] = "ok"
        except Exception as exc:  # noqa: BLE001
            report["lazy_import"] = f"{type(exc).__name__}: {exc}"[:200]
        report["vm_after_context"] = vm()
        try:
            import triton
            import triton.language as tl

            @triton.jit
            def _add(x, n, BLOCK: tl.constexpr):
                i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

            xs = torch.zeros(1000, device="cuda")
            _add[(4,)](xs, 1000, BLOCK=256)
            torch.cuda.synchronize()
            report["triton"] = float(xs.sum())
        except Exception as exc:  # noqa: BLE001
            report["triton"] = f"{type(exc).__name__}: {exc}"[:300]
        import resource

        try:
            size_now = vm()["VmSize"]
            resource.setrlimit(resource.RLIMIT_AS, ((size_now << 10) + (8 << 30),) * 2)
            big20 = torch.empty(20 << 30, dtype=torch.uint8, device="cuda")
            big20[-1] = 1
            torch.cuda.synchronize()
            report["rlimit_as_plus8g_device_20g"] = f"ok, VmSize now {vm()['VmSize'] >> 20} GiB"
            del big20
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001
            report["rlimit_as_plus8g_device_20g"] = f"{type(exc).__name__}: {exc}"[:300]
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
        try:
            data_now = vm()["VmData"]
            resource.setrlimit(resource.RLIMIT_DATA, ((data_now << 10) + (1 << 30),) * 2)
            try:
                host = torch.empty(4 << 30, dtype=torch.uint8)
                host.fill_(1)
                report["rlimit_data_host_4g"] = "allocated (limit not enforced)"
                del host
            except Exception as exc:  # noqa: BLE001
                report["rlimit_data_host_4g"] = f"refused: {type(exc).__name__}"
            dev = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            pinned = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
            report["rlimit_data_device_2g_and_pinned"] = "ok"
            del dev, pinned
        except Exception as exc:  # noqa: BLE001
            report["rlimit_data_device_2g_and_pinned"] = f"{type(exc).__name__}: {exc}"[:300]
        report["nofile"] = len(os.listdir("/proc/self/fd"))
        report["threads"] = len(os.listdir("/proc/self/task"))
        report["held"] = torch.cuda.memory_allocated()
        big = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")  # 3 GiB, for NVML's figure
        torch.cuda.synchronize()
        send(sock, report)
        recv(sock)  # the parent has read NVML
        del big
    except Exception as exc:  # noqa: BLE001
        report["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
        send(sock, report)
    return report


def facts() -> dict:
    out: dict = {
        "kernel": platform.release(),
        "uid": os.getuid(),
        "python": sys.executable,
        "prefix": sys.prefix,
        "cwd": os.getcwd(),
    }
    p, chain = os.getcwd(), []
    while True:
        st = os.stat(p)
        chain.append(f"{p} {stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid}")
        if p == "/":
            break
        p = os.path.dirname(p)
    out["cwd_chain"] = chain
    out["home"] = os.path.expanduser("~")
    out["dev"] = {
        n: f"{stat.filemode(os.stat('/dev/' + n).st_mode)} {os.stat('/dev/' + n).st_gid}"
        for n in sorted(os.listdir("/dev"))
        if n.startswith(("nvidia", "kfd", "dri", "shm"))
    }
    out["libseccomp"] = ctypes.util.find_library("seccomp")
    for f in (
        "/dev/kmsg",
        "/sys/fs/cgroup/cgroup.controllers",
        "/sys/fs/cgroup/cgroup.subtree_control",
        "/proc/sys/kernel/dmesg_restrict",
        "/proc/self/cgroup",
        "/proc/sys/kernel/yama/ptrace_scope",
    ):
        try:
            with open(f, "rb") as fh:
                out[f] = fh.read(300).decode(errors="replace").strip() if f != "/dev/kmsg" else "readable"
        except OSError as exc:
            out[f] = str(exc)
    import resource

    out["rlimits"] = {
        n: resource.getrlimit(getattr(resource, n))
        for n in ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_MEMLOCK")
    }
    out["nproc_cpus"] = os.cpu_count()
    try:
        out["landlock_abi"] = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except Exception:  # noqa: BLE001
        out["landlock_abi"] = None
    for f in (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/pid_max",
        "/proc/sys/kernel/seccomp/actions_avail",
    ):
        try:
            out[f] = open(f).read().strip()
        except OSError as exc:
            out[f] = str(exc)
    try:
        import torch

        out["torch_prefix_mode"] = stat.filemode(os.stat(os.path.dirname(torch.__file__)).st_mode)
    except Exception as exc:  # noqa: BLE001
        out["torch"] = str(exc)
    return out


def main() -> int:
    variants = ["plain", "pidns-ns-uid-early"]
    kids = []
    own_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)
    os.environ["PROBE_PARENT"] = str(os.getpid())
    for v in variants:
        a, b = socket.socketpair()
        if v.startswith("pidns"):
            _check(libc.unshare(CLONE_NEWPID), "unshare pid")
        pid = os.fork()
        if pid == 0:
            a.close()
            try:
                child(v, b, os.getppid() or int(os.environ.get("PROBE_PARENT", "0")))
            finally:
                os._exit(0)
        if v.startswith("pidns"):
            _check(libc.setns(own_ns, CLONE_NEWPID), "setns back")
        b.close()
        kids.append((v, pid, a))
    out = {"facts": facts(), "variants": {}}
    import torch

    rt = cudart()
    rt.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(IpcHandle), ctypes.c_void_p]
    cu = ctypes.CDLL("libcuda.so.1")
    for v, pid, sock in kids:
        t = torch.tensor([1234, 0], dtype=torch.int64, device="cuda")
        rawp = ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(rawp), ctypes.c_size_t(1 << 21))
        rt.cudaMemcpy(rawp, (ctypes.c_int64 * 2)(5678, 0), 16, 1)
        torch.cuda.synchronize()
        from torch.multiprocessing.reductions import reduce_tensor

        h = IpcHandle()
        err = rt.cudaIpcGetMemHandle(ctypes.byref(h), rawp)
        # a VMM allocation exported as a file descriptor
        prop = AllocProp(1, 1, MemLocation(1, 0), None, AllocFlags())  # pinned, POSIX fd, device 0
        vh = ctypes.c_ulonglong()
        vfd = ctypes.c_int(-1)
        verr = cu.cuMemCreate(ctypes.byref(vh), ctypes.c_size_t(VMM_BYTES), ctypes.byref(prop), ctypes.c_ulonglong(0))
        if not verr:
            verr = cu.cuMemExportToShareableHandle(ctypes.byref(vfd), vh, 1, ctypes.c_ulonglong(0))
        vptr = ctypes.c_ulonglong()
        if not verr:
            cu.cuMemAddressReserve(
                ctypes.byref(vptr),
                ctypes.c_size_t(VMM_BYTES),
                ctypes.c_size_t(0),
                ctypes.c_ulonglong(0),
                ctypes.c_ulonglong(0),
            )
            cu.cuMemMap(vptr, ctypes.c_size_t(VMM_BYTES), ctypes.c_size_t(0), vh, ctypes.c_ulonglong(0))
            cu.cuMemSetAccess(
                vptr, ctypes.c_size_t(VMM_BYTES), ctypes.byref(AccessDesc(MemLocation(1, 0), 3)), ctypes.c_size_t(1)
            )
            host = (ctypes.c_int64 * 2)(4321, 0)
            cu.cuMemcpyHtoD_v2(vptr, host, ctypes.c_size_t(16))
        try:
            send(
                sock,
                {"torch": pickle.dumps(reduce_tensor(t)), "raw": bytes(h.reserved) if not err else b"", "raw_err": err},
            )
            if not verr:
                socket.send_fds(sock, [b"v"], [vfd.value])
            else:
                socket.send_fds(sock, [b"v"], [os.open("/dev/null", os.O_RDONLY)])
        except OSError:
            pass
        rep = recv(sock) or {"error": "no report"}
        torch.cuda.synchronize()
        rep["parent_saw_torch_write"] = int(t[1].item())
        back = (ctypes.c_int64 * 2)()
        rt.cudaMemcpy(back, rawp, 16, 2)
        rep["parent_saw_raw_write"] = int(back[1])
        rep["raw_get_err"] = err
        rep["parent_vmm_export"] = verr
        if not verr:
            host = (ctypes.c_int64 * 2)()
            cu.cuMemcpyDtoH_v2(host, vptr, ctypes.c_size_t(16))
            rep["parent_saw_vmm_write"] = int(host[1])
        rep["host_pid"] = pid
        try:
            import pynvml

            pynvml.nvmlInit()
            hdl = pynvml.nvmlDeviceGetHandleByIndex(0)
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(hdl)
            rep["nvml"] = {p.pid: round((p.usedGpuMemory or 0) / 2**30, 2) for p in procs}
        except Exception as exc:  # noqa: BLE001
            rep["nvml"] = f"{type(exc).__name__}: {exc}"
        try:
            send(sock, "done")
        except OSError:
            pass
        out["variants"][v] = rep
        os.waitpid(pid, 0)
    out["parent_pid"] = os.getpid()
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
