// CPU emulation shim (tests/test_real_programs.py): compiles a real/src .cu file, kernels and host main, with g++.
// Each CTA runs its threads as std::threads with a std::barrier for
// __syncthreads (EMU_SERIAL=1: threads run one after another; __syncthreads aborts).
// CTAs run one after another, so `static` (= __shared__) locals are per-CTA state.
#pragma once
#include <barrier>
#include <thread>
#include <vector>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
inline thread_local dim3 threadIdx;
inline dim3 blockIdx, blockDim, gridDim;
inline std::barrier<> *emu_bar = nullptr;
inline thread_local long emu_nsync = 0;
inline bool emu_serial() { const char *s = getenv("EMU_SERIAL"); return s && s[0] == '1'; }
inline void __syncthreads()
{
    if (!emu_bar) { fprintf(stderr, "EMU: __syncthreads in serial mode\n"); abort(); }
    ++emu_nsync;
    emu_bar->arrive_and_wait();
}
inline long emu_total_ctas = 0, emu_total_launches = 0;
template <class K, class... A> void emu_launch(dim3 g, dim3 b, K k, A... a)
{
    gridDim = g; blockDim = b;
    ++emu_total_launches;
    const unsigned nt = b.x * b.y * b.z;
    if (nt == 0 || nt > 1024 || g.x == 0 || g.y == 0 || g.z == 0) { fprintf(stderr, "EMU: bad launch config\n"); exit(2); }
    const bool serial = emu_serial();
    for (unsigned bz = 0; bz < g.z; ++bz)
    for (unsigned by = 0; by < g.y; ++by)
    for (unsigned bx = 0; bx < g.x; ++bx) {
        blockIdx = dim3(bx, by, bz);
        ++emu_total_ctas;
        if (serial) {
            for (unsigned t = 0; t < nt; ++t) {
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                k(a...);
            }
            continue;
        }
        std::barrier<> bar((std::ptrdiff_t)nt);
        emu_bar = &bar;
        std::vector<long> nsync(nt, -1);
        std::vector<std::thread> th;
        th.reserve(nt);
        for (unsigned t = 0; t < nt; ++t)
            th.emplace_back([&, t] {
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                emu_nsync = 0;
                k(a...);
                nsync[t] = emu_nsync;
                bar.arrive_and_drop();   // exited thread: no hang, but divergence is detected below
            });
        for (auto &x : th) x.join();
        emu_bar = nullptr;
        for (unsigned t = 1; t < nt; ++t)
            if (nsync[t] != nsync[0]) { fprintf(stderr, "EMU: divergent __syncthreads count in CTA (%u,%u,%u): thread 0 %ld, thread %u %ld\n", bx, by, bz, nsync[0], t, nsync[t]); exit(3); }
    }
}
#define LAUNCH(kern, grid, block, ...) emu_launch(dim3(grid), dim3(block), kern, __VA_ARGS__)

// Minimal CUDA runtime API on host memory.
typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
typedef int cudaEvent_t;
template <class T> cudaError_t cudaMalloc(T **p, size_t s) { *p = (T *)malloc(s ? s : 1); return *p ? 0 : 1; }
inline cudaError_t cudaFree(void *p) { free(p); return 0; }
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memcpy(d, s, n); return 0; }
inline cudaError_t cudaMemset(void *d, int v, size_t n) { memset(d, v, n); return 0; }
inline cudaError_t cudaGetLastError() { return 0; }
inline cudaError_t cudaDeviceSynchronize() { return 0; }
inline const char *cudaGetErrorString(cudaError_t) { return "emu error"; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = 0; return 0; }
inline cudaError_t cudaEventRecord(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) { *ms = 0; return 0; }
struct EmuReport { ~EmuReport() { fprintf(stderr, "EMU: %ld launches, %ld CTAs\n", emu_total_launches, emu_total_ctas); } };
inline EmuReport emu_report;
