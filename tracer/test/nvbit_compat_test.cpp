/* GPU-free check of nvbit_compat.h: built twice by tests/test_tracer_format.py, once with
 * the NVBit 1.7.1 declaration of nvbit_set_at_launch and once with the later one that
 * takes a stream (-DGCL_MOCK_STREAM_ARG). Prints which overload ran and its arguments. */
#include <stdint.h>
#include <stdio.h>

struct CUctx_st;
struct CUfunc_st;
struct CUstream_st;
typedef CUctx_st *CUcontext;
typedef CUfunc_st *CUfunction;
typedef CUstream_st *CUstream;

#ifdef GCL_MOCK_STREAM_ARG
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
  return 0;
}
