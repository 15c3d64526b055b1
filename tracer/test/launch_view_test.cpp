/* GPU-free check of gcl_launch.h, built by tests/test_tracer_format.py against mocks of the
 * driver's launch parameter structs (same field names as cuda.h / generated_cuda_meta.h)
 * and of its attribute queries.
 * For each callback id: "<api> f grid block shmem stream queue", or "- <cbid>" when it is not a launch.
 * Then each entry point again with a null stream ("null <api> stream queue").
 * Then for each handle kind: "attr <kind> value status via_kernel_handle". Build with
 * -DCUDA_VERSION=11080 for a driver API without cuKernelGetAttribute. */
#include <stdio.h>

#ifndef CUDA_VERSION
#define CUDA_VERSION 13010
#endif
struct CUfunc_st;
struct CUkern_st;
struct CUstream_st;
typedef CUfunc_st *CUfunction;
typedef CUkern_st *CUkernel;
typedef CUstream_st *CUstream;
typedef int CUdevice;
#define CU_STREAM_PER_THREAD ((CUstream)0x2) /* as cuda.h defines it */
enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_HANDLE = 400 };
enum CUfunction_attribute { CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1, CU_FUNC_ATTRIBUTE_NUM_REGS = 4 };

/* The mock driver: handles below 0x8000 are CUfunctions, 0x8000.. CUkernels (which only
 * cuKernelGetAttribute knows), 0xdead a handle neither knows. Values encode the path taken. */
static int mock_device = 7;
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  unsigned long h = reinterpret_cast<unsigned long>(f);
  *v = -1; /* the real driver leaves garbage behind on failure */
  if (h >= 0x8000) return CUDA_ERROR_INVALID_HANDLE;
  *v = 100 * (int)a + (int)(h >> 12);
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice *d) {
  *d = mock_device;
  return CUDA_SUCCESS;
}
CUresult cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  unsigned long h = reinterpret_cast<unsigned long>(k);
  *v = -2;
  if (h == 0xdead || d != mock_device) return CUDA_ERROR_INVALID_HANDLE;
  *v = 1000 * (int)a + (int)((h - 0x8000) >> 12);
  return CUDA_SUCCESS;
}

enum nvbit_api_cuda_t {
  API_CUDA_cuMemcpyHtoD_v2,
  API_CUDA_cuLaunchKernel,
  API_CUDA_cuLaunchKernel_ptsz,
  API_CUDA_cuLaunchCooperativeKernel,
  API_CUDA_cuLaunchCooperativeKernel_ptsz,
  API_CUDA_cuLaunchKernelEx,
  API_CUDA_cuLaunchKernelEx_ptsz,
  API_CUDA_cuGraphLaunch,
};

#define CLASSIC(NAME)                                                                   \
  struct NAME {                                                                         \
    CUfunction f;                                                                       \
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;          \
    unsigned int sharedMemBytes;                                                        \
    CUstream hStream;                                                                   \
    void **kernelParams;                                                                \
  };
CLASSIC(cuLaunchKernel_params)
CLASSIC(cuLaunchKernel_ptsz_params)
CLASSIC(cuLaunchCooperativeKernel_params)
CLASSIC(cuLaunchCooperativeKernel_ptsz_params)

struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void *attrs;
  unsigned int numAttrs;
};
struct cuLaunchKernelEx_params { const CUlaunchConfig *config; CUfunction f; void **kernelParams; void **extra; };
struct cuLaunchKernelEx_ptsz_params { const CUlaunchConfig *config; CUfunction f; void **kernelParams; void **extra; };

#include "gcl_launch.h"

static void show(nvbit_api_cuda_t cbid, const void *params) {
  gcl::LaunchView v;
  if (!gcl::launch_view(cbid, params, &v)) {
    printf("- %d\n", (int)cbid);
    return;
  }
  printf("%s %p %u,%u,%u %u,%u,%u %u %p %p\n", v.api, (void *)v.f, v.grid[0], v.grid[1], v.grid[2], v.block[0],
         v.block[1], v.block[2], v.dyn_shmem, (void *)v.stream, (void *)v.queue());
}

/* the same launch with a null stream: the legacy stream, or in a _ptsz launch the thread's own */
static void show_null(nvbit_api_cuda_t cbid, const void *params) {
  gcl::LaunchView v;
  if (gcl::launch_view(cbid, params, &v))
    printf("null %s %p %p\n", v.api, (void *)v.stream, (void *)v.queue());
}

static void attr(const char *kind, CUfunction_attribute a, unsigned long handle) {
  gcl::LaunchAttribute r = gcl::launch_attribute(a, reinterpret_cast<CUfunction>(handle));
  printf("attr %s %d %d %d\n", kind, r.value, (int)r.status, r.via_kernel_handle ? 1 : 0);
}

template <typename P>
static P classic(unsigned k) {
  P p{};
  p.f = reinterpret_cast<CUfunction>(0x1000 * k);
  p.gridDimX = 10 * k + 1, p.gridDimY = 10 * k + 2, p.gridDimZ = 10 * k + 3;
  p.blockDimX = 10 * k + 4, p.blockDimY = 10 * k + 5, p.blockDimZ = 10 * k + 6;
  p.sharedMemBytes = 10 * k + 7;
  p.hStream = reinterpret_cast<CUstream>(0x100 * k);
  return p;
}

int main() {
  auto a = classic<cuLaunchKernel_params>(1);
  auto b = classic<cuLaunchKernel_ptsz_params>(2);
  auto c = classic<cuLaunchCooperativeKernel_params>(3);
  auto d = classic<cuLaunchCooperativeKernel_ptsz_params>(4);
  CUlaunchConfig cfg5{51, 52, 53, 54, 55, 56, 57, reinterpret_cast<CUstream>(0x500), nullptr, 0};
  CUlaunchConfig cfg6{61, 62, 63, 64, 65, 66, 67, reinterpret_cast<CUstream>(0x600), nullptr, 0};
  cuLaunchKernelEx_params e{&cfg5, reinterpret_cast<CUfunction>(0x5000), nullptr, nullptr};
  cuLaunchKernelEx_ptsz_params f{&cfg6, reinterpret_cast<CUfunction>(0x6000), nullptr, nullptr};
  cuLaunchKernelEx_params null_config{nullptr, reinterpret_cast<CUfunction>(0x7000), nullptr, nullptr};
  const struct {
    nvbit_api_cuda_t cbid;
    const void *params;
  } launches[] = {{API_CUDA_cuLaunchKernel, &a},           {API_CUDA_cuLaunchKernel_ptsz, &b},
                  {API_CUDA_cuLaunchCooperativeKernel, &c}, {API_CUDA_cuLaunchCooperativeKernel_ptsz, &d},
                  {API_CUDA_cuLaunchKernelEx, &e},          {API_CUDA_cuLaunchKernelEx_ptsz, &f}};
  for (const auto &l : launches) show(l.cbid, l.params);
  show(API_CUDA_cuLaunchKernelEx, &null_config);
  show(API_CUDA_cuMemcpyHtoD_v2, &a);
  show(API_CUDA_cuGraphLaunch, &a);
  a.hStream = b.hStream = c.hStream = d.hStream = nullptr;
  cfg5.hStream = cfg6.hStream = nullptr;
  for (const auto &l : launches) show_null(l.cbid, l.params);
  attr("function", CU_FUNC_ATTRIBUTE_NUM_REGS, 0x3000);
  attr("kernel", CU_FUNC_ATTRIBUTE_NUM_REGS, 0xa000);
  attr("kernel", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 0xa000);
  attr("unknown", CU_FUNC_ATTRIBUTE_NUM_REGS, 0xdead);
  return 0;
}
