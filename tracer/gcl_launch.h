/* One view of a kernel launch, whichever driver entry point made it.
 *
 * Why: the tool must count and trace every launch the profilers count, or the trace ids
 * stop lining up with profile.csv rows. `<<<>>>` and cudaLaunchKernel reach cuLaunchKernel,
 * but cudaLaunchKernelEx (which thread-block-cluster launches need, e.g. on Hopper)
 * reaches cuLaunchKernelEx, whose geometry sits in a CUlaunchConfig, and
 * cudaLaunchCooperativeKernel reaches cuLaunchCooperativeKernel. Each comes in a
 * per-thread-default-stream (_ptsz) form with the same parameter layout. The callback
 * reads the kernel, its grid, block, dynamic shared memory and stream from here only.
 * CUDA-graph replays do not pass through any of these entry points.
 * A null stream means the legacy default stream, except in a _ptsz launch, where it means
 * the calling thread's default stream: the tool's events and capture query go to queue(),
 * which names that stream, so a per-thread launch is not timed on the legacy stream (which
 * waits for every other blocking stream) and a thread's capture is seen.
 * launch_attribute reads the launched kernel's registers, static shared memory and binary
 * version whichever handle kind the launch carried.
 * Include after the CUDA and NVBit headers (cuda.h, generated_cuda_meta.h, nvbit.h).
 */
#pragma once

namespace gcl {

struct LaunchView {
  CUfunction f = nullptr;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned dyn_shmem = 0;  /* dynamic shared memory per CTA, bytes */
  CUstream stream = nullptr; /* as the application passed it (NVBit matches launch values on it) */
  bool per_thread = false; /* a _ptsz entry point: a null stream is the thread's default stream */
  const char *api = "";    /* the entry point, for messages */
  /* the stream the kernel is queued on, for the tool's own events and queries */
  CUstream queue() const { return stream == nullptr && per_thread ? CU_STREAM_PER_THREAD : stream; }
};

template <typename P>
inline void copy_geometry(const P &p, LaunchView *v) {
  v->grid[0] = p.gridDimX, v->grid[1] = p.gridDimY, v->grid[2] = p.gridDimZ;
  v->block[0] = p.blockDimX, v->block[1] = p.blockDimY, v->block[2] = p.blockDimZ;
  v->dyn_shmem = p.sharedMemBytes;
  v->stream = p.hStream;
}

template <typename P>
inline bool from_classic(const void *params, const char *api, bool per_thread, LaunchView *v) {
  const P *p = static_cast<const P *>(params);
  v->f = p->f;
  copy_geometry(*p, v);
  v->per_thread = per_thread;
  v->api = api;
  return true;
}

template <typename P>
inline bool from_ex(const void *params, const char *api, bool per_thread, LaunchView *v) {
  const P *p = static_cast<const P *>(params);
  if (p->config == nullptr) return false; /* the driver rejects it: nothing launches */
  v->f = p->f;
  copy_geometry(*p->config, v);
  v->per_thread = per_thread;
  v->api = api;
  return true;
}

/* True when `cbid` is a single-kernel launch; then *v describes it. */
inline bool launch_view(nvbit_api_cuda_t cbid, const void *params, LaunchView *v) {
  switch (cbid) {
    case API_CUDA_cuLaunchKernel: return from_classic<cuLaunchKernel_params>(params, "cuLaunchKernel", false, v);
    case API_CUDA_cuLaunchKernel_ptsz:
      return from_classic<cuLaunchKernel_ptsz_params>(params, "cuLaunchKernel_ptsz", true, v);
    case API_CUDA_cuLaunchCooperativeKernel:
      return from_classic<cuLaunchCooperativeKernel_params>(params, "cuLaunchCooperativeKernel", false, v);
    case API_CUDA_cuLaunchCooperativeKernel_ptsz:
      return from_classic<cuLaunchCooperativeKernel_ptsz_params>(params, "cuLaunchCooperativeKernel_ptsz", true, v);
    case API_CUDA_cuLaunchKernelEx: return from_ex<cuLaunchKernelEx_params>(params, "cuLaunchKernelEx", false, v);
    case API_CUDA_cuLaunchKernelEx_ptsz:
      return from_ex<cuLaunchKernelEx_ptsz_params>(params, "cuLaunchKernelEx_ptsz", true, v);
    default: return false;
  }
}

/* One function attribute of a launched kernel.
 *
 * Why: since CUDA 12 the runtime may pass cuLaunchKernel a CUkernel (a library kernel,
 * not bound to a context) where a CUfunction used to be. cuFuncGetAttribute then fails
 * with CUDA_ERROR_INVALID_HANDLE, and the tool recorded nregs = shmem = 0 for every
 * launch of the first H200 runs. cuKernelGetAttribute answers for the same handle on
 * the current device. `status` is the last failure when neither answers (value 0). */
struct LaunchAttribute {
  int value = 0;
  CUresult status = CUDA_SUCCESS;
  bool via_kernel_handle = false;
};

inline LaunchAttribute launch_attribute(CUfunction_attribute attr, CUfunction f) {
  LaunchAttribute a;
  a.status = cuFuncGetAttribute(&a.value, attr, f);
#if CUDA_VERSION >= 12000
  if (a.status == CUDA_ERROR_INVALID_HANDLE) {
    CUdevice dev;
    CUresult r = cuCtxGetDevice(&dev);
    if (r == CUDA_SUCCESS) r = cuKernelGetAttribute(&a.value, attr, reinterpret_cast<CUkernel>(f), dev);
    a.status = r;
    a.via_kernel_handle = r == CUDA_SUCCESS;
  }
#endif
  if (a.status != CUDA_SUCCESS) a.value = 0;
  return a;
}

}  // namespace gcl
