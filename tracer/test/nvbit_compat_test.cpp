/* GPU-free check of nvbit_compat.h: built three times by tests/test_tracer_format.py, with
 * the NVBit 1.7.1 declaration of nvbit_set_at_launch, with one that takes a stream
 * (-DGCL_MOCK_STREAM_ARG), and with NVBit 1.7.7's, which also takes a graph node's launch
 * handle (-DGCL_MOCK_LAUNCH_HANDLE). Prints which overload ran and its arguments, then
 * "graph 1" when a graph node's launch value could be set, "graph 0" when not. */
#include <stdint.h>
#include <stdio.h>

struct CUctx_st;
struct CUfunc_st;
struct CUstream_st;
typedef CUctx_st *CUcontext;
typedef CUfunc_st *CUfunction;
typedef CUstream_st *CUstream;

#if defined(GCL_MOCK_LAUNCH_HANDLE)
void nvbit_set_at_launch(CUcontext, CUfunction, uint64_t value, CUstream stream = nullptr, uint64_t handle = 0) {
  printf("5 %llu %p %llu\n", (unsigned long long)value, (void *)stream, (unsigned long long)handle);
}
#elif defined(GCL_MOCK_STREAM_ARG)
void nvbit_set_at_launch(CUcontext, CUfunction, uint64_t value, CUstream stream) {
  printf("4 %llu %p\n", (unsigned long long)value, (void *)stream);
}
#else
void nvbit_set_at_launch(CUcontext, CUfunction, uint64_t value) { printf("3 %llu\n", (unsigned long long)value); }
#endif

#include "nvbit_compat.h"

int main() {
  CUcontext ctx = nullptr;
  CUfunction f = nullptr;
  CUstream s = reinterpret_cast<CUstream>(0x40);
  GCL_SET_AT_LAUNCH(ctx, f, (uint64_t)7, s);
  const bool node = GCL_SET_AT_GRAPH_NODE(ctx, f, (uint64_t)9, s, (uint64_t)119);
  printf("graph %d\n", node ? 1 : 0);
  return 0;
}
