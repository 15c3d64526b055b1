/* GPU-free check of gcl_launch.h, built by tests/test_tracer_format.py against mocks of the
 * driver's launch parameter structs (same field names as cuda.h / generated_cuda_meta.h).
 * For each callback id: "<api> f grid block shmem stream", or "- <cbid>" when it is not a launch. */
#include <stdio.h>

struct CUfunc_st;
struct CUstream_st;
typedef CUfunc_st *CUfunction;
typedef CUstream_st *CUstream;

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
  printf("%s %p %u,%u,%u %u,%u,%u %u %p\n", v.api, (void *)v.f, v.grid[0], v.grid[1], v.grid[2], v.block[0],
         v.block[1], v.block[2], v.dyn_shmem, (void *)v.stream);
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
  show(API_CUDA_cuLaunchKernel, &a);
  show(API_CUDA_cuLaunchKernel_ptsz, &b);
  show(API_CUDA_cuLaunchCooperativeKernel, &c);
  show(API_CUDA_cuLaunchCooperativeKernel_ptsz, &d);
  show(API_CUDA_cuLaunchKernelEx, &e);
  show(API_CUDA_cuLaunchKernelEx_ptsz, &f);
  show(API_CUDA_cuLaunchKernelEx, &null_config);
  show(API_CUDA_cuMemcpyHtoD_v2, &a);
  show(API_CUDA_cuGraphLaunch, &a);
  return 0;
}
