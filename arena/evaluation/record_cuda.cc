// The recorder linked into a HIP library built for CUDA (the candidate's, the task's baseline) (arena.evaluation.native_recorder).
//
// Linked into the candidate's library by the build (arena.toolchain.hip) with the linker's
// --wrap for each runtime call below, so that the candidate's object reaches these first. A
// wrapper passes the call on unchanged; while a call is recorded (arena_rec_begin ..
// arena_rec_end) it also writes down what the call asked of the device: launches (the kernel's
// name, grid, block, dynamic shared memory, stream and each parameter's bytes), fills,
// device-to-device copies, events recorded on a stream and streams made to wait for one; and
// it refuses, by a message in the log, what a replay cannot do again (a copy from the host,
// cooperative launches). Allocations and the streams the candidate creates (with their flags:
// a blocking stream orders against the legacy default stream) are followed at all times, so
// that a pointer into memory the candidate allocated (now or in an earlier call) can be named
// in the record, and a stream made in an earlier call is known.
//
// Nothing here is trusted: this code runs in the candidate's process beside the candidate's.
// What the candidate gains by changing it is a record that does not hold its work, which the
// replay's outputs then show, or one the replay refuses.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {

// ---- the log -----------------------------------------------------------------------------
enum { OP_LAUNCH = 1, OP_FILL = 2, OP_COPY = 3, OP_ALLOC = 4, OP_FREE = 5, OP_REFUSE = 6, OP_EVENT = 7, OP_WAIT = 8 };
static const size_t LOG_MAX = 64u << 20;        // a record's log is refused past this

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char* g_log = 0;
static size_t g_len = 0, g_cap = 0;
static int g_on = 0;
static int g_full = 0;

static void put(const void* data, size_t n) {
  if (g_full) return;
  if (g_len + n > LOG_MAX) { g_full = 1; return; }
  if (g_len + n > g_cap) {
    size_t cap = g_cap ? g_cap * 2 : 65536;
    while (cap < g_len + n) cap *= 2;
    unsigned char* grown = (unsigned char*)realloc(g_log, cap);
    if (!grown) { g_full = 1; return; }
    g_log = grown;
    g_cap = cap;
  }
  memcpy(g_log + g_len, data, n);
  g_len += n;
}
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_u64(uint64_t v) { put(&v, 8); }
static void put_str(const char* s) {
  uint32_t n = s ? (uint32_t)strnlen(s, 4096) : 0;
  put_u32(n);
  put(s, n);
}
static void refuse(const char* what) {   // under g_mu, while recording
  put_u32(OP_REFUSE);
  put_str(what);
}

// ---- allocations, followed at all times --------------------------------------------------
struct Alloc { uint64_t serial, ptr, size; int live; };
static Alloc* g_allocs = 0;
static size_t g_nallocs = 0, g_capallocs = 0;
static uint64_t g_serial = 0;

static void note_alloc(void* ptr, size_t size) {
  pthread_mutex_lock(&g_mu);
  if (g_nallocs == g_capallocs) {
    size_t cap = g_capallocs ? g_capallocs * 2 : 64;
    Alloc* grown = (Alloc*)realloc(g_allocs, cap * sizeof(Alloc));
    if (grown) { g_allocs = grown; g_capallocs = cap; }
  }
  uint64_t serial = ++g_serial;
  if (g_nallocs < g_capallocs) {
    Alloc a = {serial, (uint64_t)(uintptr_t)ptr, (uint64_t)size, 1};
    g_allocs[g_nallocs++] = a;
  }
  if (g_on) { put_u32(OP_ALLOC); put_u64(serial); put_u64((uint64_t)(uintptr_t)ptr); put_u64(size); }
  pthread_mutex_unlock(&g_mu);
}
static void note_free(void* ptr) {
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nallocs; ++i)
    if (g_allocs[i].live && g_allocs[i].ptr == (uint64_t)(uintptr_t)ptr) g_allocs[i].live = 0;
  if (g_on) { put_u32(OP_FREE); put_u64((uint64_t)(uintptr_t)ptr); }
  pthread_mutex_unlock(&g_mu);
}

// ---- streams the candidate creates, followed at all times ---------------------------------
struct Strm { uint64_t ptr; uint32_t flags; };
static Strm g_streams[256];
static size_t g_nstreams = 0;

static void note_stream(cudaStream_t s, unsigned flags) {
  pthread_mutex_lock(&g_mu);
  size_t i = 0;
  while (i < g_nstreams && g_streams[i].ptr != (uint64_t)(uintptr_t)s) ++i;
  if (i == g_nstreams && g_nstreams < sizeof g_streams / sizeof g_streams[0]) ++g_nstreams;
  if (i < g_nstreams) { g_streams[i].ptr = (uint64_t)(uintptr_t)s; g_streams[i].flags = flags; }
  pthread_mutex_unlock(&g_mu);
}

cudaError_t __real_cudaStreamCreate(cudaStream_t*);
cudaError_t __wrap_cudaStreamCreate(cudaStream_t* s) {
  cudaError_t err = __real_cudaStreamCreate(s);
  if (err == cudaSuccess && s) note_stream(*s, cudaStreamDefault);
  return err;
}
cudaError_t __real_cudaStreamCreateWithFlags(cudaStream_t*, unsigned);
cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  cudaError_t err = __real_cudaStreamCreateWithFlags(s, flags);
  if (err == cudaSuccess && s) note_stream(*s, flags);
  return err;
}
cudaError_t __real_cudaStreamCreateWithPriority(cudaStream_t*, unsigned, int);
cudaError_t __wrap_cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int priority) {
  cudaError_t err = __real_cudaStreamCreateWithPriority(s, flags, priority);
  if (err == cudaSuccess && s) note_stream(*s, flags);
  return err;
}

// ---- events between streams ---------------------------------------------------------------
cudaError_t __real_cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t __wrap_cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (g_on) {
    pthread_mutex_lock(&g_mu);
    put_u32(OP_EVENT); put_u64((uint64_t)(uintptr_t)e); put_u64((uint64_t)(uintptr_t)s);
    pthread_mutex_unlock(&g_mu);
  }
  return __real_cudaEventRecord(e, s);
}
cudaError_t __real_cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t __wrap_cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  if (g_on) {
    pthread_mutex_lock(&g_mu);
    put_u32(OP_WAIT); put_u64((uint64_t)(uintptr_t)s); put_u64((uint64_t)(uintptr_t)e);
    pthread_mutex_unlock(&g_mu);
  }
  return __real_cudaStreamWaitEvent(s, e, flags);
}

// ---- kernels: the registration's host stub -> device name, the launch handle -> stub -------
struct Fn { const void* host; const char* name; cudaKernel_t handle; };
static Fn g_fns[1024];
static size_t g_nfns = 0;

static const Fn* fn_by_host(const void* host) {
  for (size_t i = 0; i < g_nfns; ++i) if (g_fns[i].host == host) return &g_fns[i];
  return 0;
}
static const Fn* fn_by_handle(cudaKernel_t h) {
  for (size_t i = 0; i < g_nfns; ++i) if (g_fns[i].handle == h) return &g_fns[i];
  return 0;
}

void __real___cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void __wrap___cudaRegisterFunction(void** fatbin, const char* host, char* device_fun, const char* device_name,
                                   int limit, uint3* tid, uint3* bid, dim3* bdim, dim3* gdim, int* wsize) {
  pthread_mutex_lock(&g_mu);
  if (g_nfns < sizeof g_fns / sizeof g_fns[0]) {
    Fn f = {host, device_name, 0};
    g_fns[g_nfns++] = f;
  }
  pthread_mutex_unlock(&g_mu);
  __real___cudaRegisterFunction(fatbin, host, device_fun, device_name, limit, tid, bid, bdim, gdim, wsize);
}

cudaError_t __real___cudaGetKernel(cudaKernel_t*, const void*);
cudaError_t __wrap___cudaGetKernel(cudaKernel_t* out, const void* host) {
  cudaError_t err = __real___cudaGetKernel(out, host);
  if (err == cudaSuccess && out) {
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_nfns; ++i) if (g_fns[i].host == host) g_fns[i].handle = *out;
    pthread_mutex_unlock(&g_mu);
  }
  return err;
}

static void record_launch(const Fn* fn, const char* how, dim3 grid, dim3 block, void** args, size_t shared,
                          cudaStream_t stream) {
  if (!g_on) return;
  pthread_mutex_lock(&g_mu);
  if (!fn) {
    refuse(how);
  } else {
    // each parameter's place and size, as the runtime has them for this kernel
    uint32_t offsets[512], sizes[512], n = 0;
    while (n < 512) {
      size_t off = 0, size = 0;
      if (cudaFuncGetParamInfo(fn->host, n, &off, &size) != cudaSuccess) break;
      offsets[n] = (uint32_t)off;
      sizes[n] = (uint32_t)size;
      ++n;
    }
    (void)cudaGetLastError();            // the query past the last parameter leaves an error: not the candidate's
    put_u32(OP_LAUNCH);
    put_str(fn->name);
    put_u64((uint64_t)(uintptr_t)stream);
    put_u32(grid.x); put_u32(grid.y); put_u32(grid.z);
    put_u32(block.x); put_u32(block.y); put_u32(block.z);
    put_u64(shared);
    put_u32(n);
    for (uint32_t i = 0; i < n; ++i) {
      put_u32(offsets[i]);
      put_u32(sizes[i]);
      put(args ? args[i] : 0, args ? sizes[i] : 0);
      if (!args) g_full = 1;
    }
  }
  pthread_mutex_unlock(&g_mu);
}

cudaError_t __real___cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                      cudaStream_t stream) {
  pthread_mutex_lock(&g_mu);
  const Fn* fn = fn_by_handle(kernel);
  pthread_mutex_unlock(&g_mu);
  record_launch(fn, "a launch of a kernel the build did not register", grid, block, args, shared, stream);
  return __real___cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

cudaError_t __real_cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __wrap_cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                    cudaStream_t stream) {
  pthread_mutex_lock(&g_mu);
  const Fn* fn = fn_by_host(func);
  pthread_mutex_unlock(&g_mu);
  record_launch(fn, "a launch of a kernel the build did not register", grid, block, args, shared, stream);
  return __real_cudaLaunchKernel(func, grid, block, args, shared, stream);
}

// ---- fills and copies --------------------------------------------------------------------
static void record_fill(void* dst, int value, size_t count, cudaStream_t stream) {
  if (!g_on) return;
  pthread_mutex_lock(&g_mu);
  put_u32(OP_FILL); put_u64((uint64_t)(uintptr_t)dst); put_u32((uint32_t)(value & 0xFF)); put_u64(count);
  put_u64((uint64_t)(uintptr_t)stream);
  pthread_mutex_unlock(&g_mu);
}
static void record_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (!g_on) return;
  pthread_mutex_lock(&g_mu);
  // a copy to the host is a read: nothing to replay; one from the host would carry the host's data
  if (kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault) {
    put_u32(OP_COPY); put_u64((uint64_t)(uintptr_t)dst); put_u64((uint64_t)(uintptr_t)src); put_u64(count);
    put_u64((uint64_t)(uintptr_t)stream);
  } else if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost) {
    refuse("a copy from host memory inside the call (a replay does not carry the host's data)");
  }
  pthread_mutex_unlock(&g_mu);
}

cudaError_t __real_cudaMemset(void*, int, size_t);
cudaError_t __wrap_cudaMemset(void* dst, int value, size_t count) {
  record_fill(dst, value, count, 0);
  return __real_cudaMemset(dst, value, count);
}
cudaError_t __real_cudaMemsetAsync(void*, int, size_t, cudaStream_t);
cudaError_t __wrap_cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  record_fill(dst, value, count, stream);
  return __real_cudaMemsetAsync(dst, value, count, stream);
}
cudaError_t __real_cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
cudaError_t __wrap_cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  record_copy(dst, src, count, kind, 0);
  return __real_cudaMemcpy(dst, src, count, kind);
}
cudaError_t __real_cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t __wrap_cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  record_copy(dst, src, count, kind, stream);
  return __real_cudaMemcpyAsync(dst, src, count, kind, stream);
}

// ---- allocations -------------------------------------------------------------------------
cudaError_t __real_cudaMalloc(void**, size_t);
cudaError_t __wrap_cudaMalloc(void** ptr, size_t size) {
  cudaError_t err = __real_cudaMalloc(ptr, size);
  if (err == cudaSuccess && ptr) note_alloc(*ptr, size);
  return err;
}
cudaError_t __real_cudaMallocAsync(void**, size_t, cudaStream_t);
cudaError_t __wrap_cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  cudaError_t err = __real_cudaMallocAsync(ptr, size, stream);
  if (err == cudaSuccess && ptr) note_alloc(*ptr, size);
  return err;
}
cudaError_t __real_cudaFree(void*);
cudaError_t __wrap_cudaFree(void* ptr) {
  note_free(ptr);
  return __real_cudaFree(ptr);
}
cudaError_t __real_cudaFreeAsync(void*, cudaStream_t);
cudaError_t __wrap_cudaFreeAsync(void* ptr, cudaStream_t stream) {
  note_free(ptr);
  return __real_cudaFreeAsync(ptr, stream);
}

// ---- what a replay does not do again: refused while a call is recorded -------------------
#define ARENA_REFUSED(name, why, params, args)                                                  \
  cudaError_t __real_##name params;                                                             \
  cudaError_t __wrap_##name params {                                                            \
    if (g_on) { pthread_mutex_lock(&g_mu); refuse(#name ": " why); pthread_mutex_unlock(&g_mu); } \
    return __real_##name args;                                                                  \
  }
ARENA_REFUSED(cudaLaunchCooperativeKernel, "cooperative launches are not replayed",
              (const void* f, dim3 g, dim3 b, void** a, size_t s, cudaStream_t st), (f, g, b, a, s, st))
ARENA_REFUSED(cudaMemcpy2D, "two-dimensional copies are not replayed",
              (void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k),
              (d, dp, s, sp, w, h, k))
ARENA_REFUSED(cudaMemcpy2DAsync, "two-dimensional copies are not replayed",
              (void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t st),
              (d, dp, s, sp, w, h, k, st))
ARENA_REFUSED(cudaMemset2D, "two-dimensional fills are not replayed",
              (void* d, size_t p, int v, size_t w, size_t h), (d, p, v, w, h))
ARENA_REFUSED(cudaMemset2DAsync, "two-dimensional fills are not replayed",
              (void* d, size_t p, int v, size_t w, size_t h, cudaStream_t st), (d, p, v, w, h, st))
ARENA_REFUSED(cudaMemcpyToSymbol, "a copy from host memory (a replay does not carry the host's data)",
              (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k), (sym, src, n, off, k))
ARENA_REFUSED(cudaMemcpyToSymbolAsync, "a copy from host memory (a replay does not carry the host's data)",
              (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t st),
              (sym, src, n, off, k, st))

// ---- read from Python (arena.evaluation.native_recorder) ------------------------------------------------
int arena_rec_begin(void) {
  pthread_mutex_lock(&g_mu);
  g_len = 0;
  g_full = 0;
  g_on = 1;
  pthread_mutex_unlock(&g_mu);
  return 0;
}
// the log of the call recorded since arena_rec_begin; 1 when it passed its bound
int arena_rec_end(const unsigned char** data, size_t* len) {
  pthread_mutex_lock(&g_mu);
  g_on = 0;
  *data = g_log;
  *len = g_len;
  int full = g_full;
  pthread_mutex_unlock(&g_mu);
  return full;
}
// the allocations live now: (serial, address, bytes) as three 64-bit words each
size_t arena_rec_live(uint64_t* out, size_t max) {
  pthread_mutex_lock(&g_mu);
  size_t n = 0;
  for (size_t i = 0; i < g_nallocs && n < max; ++i)
    if (g_allocs[i].live) {
      out[3 * n] = g_allocs[i].serial;
      out[3 * n + 1] = g_allocs[i].ptr;
      out[3 * n + 2] = g_allocs[i].size;
      ++n;
    }
  pthread_mutex_unlock(&g_mu);
  return n;
}

// the streams the candidate created: (address, flags) as two 64-bit words each
size_t arena_rec_streams(uint64_t* out, size_t max) {
  pthread_mutex_lock(&g_mu);
  size_t n = 0;
  for (; n < g_nstreams && n < max; ++n) {
    out[2 * n] = g_streams[n].ptr;
    out[2 * n + 1] = g_streams[n].flags;
  }
  pthread_mutex_unlock(&g_mu);
  return n;
}

}  // extern "C"
