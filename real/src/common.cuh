// Shared by the real/ programs: a checked CUDA call, a checked plain launch, a GPU timer,
// and a fixed-seed LCG, so every run of a program makes the same inputs and launches.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t err_ = (call);                                           \
        if (err_ != cudaSuccess) {                                           \
            fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__,      \
                    __LINE__, cudaGetErrorString(err_), #call);              \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

// Plain <<<>>> launch followed by a launch-error check (a CPU emulation of the
// kernels may define its own LAUNCH before including this).
#ifndef LAUNCH
#define LAUNCH(kern, grid, block, ...)                                       \
    do {                                                                     \
        kern<<<(grid), (block)>>>(__VA_ARGS__);                              \
        CHECK(cudaGetLastError());                                           \
    } while (0)
#endif

// GPU time of everything queued on the default stream between start() and stop_ms(), which
// waits for it; each program prints it as gpu_ms.
struct GpuTimer {
    cudaEvent_t begin, end;
    GpuTimer() { CHECK(cudaEventCreate(&begin)); CHECK(cudaEventCreate(&end)); }
    ~GpuTimer() { CHECK(cudaEventDestroy(begin)); CHECK(cudaEventDestroy(end)); }
    void start() { CHECK(cudaEventRecord(begin)); }
    float stop_ms()
    {
        CHECK(cudaEventRecord(end));
        CHECK(cudaEventSynchronize(end));
        CHECK(cudaDeviceSynchronize());
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, begin, end));
        return ms;
    }
};

// Each program picks its own seed (LCG_SEED, defined before this include).
static uint64_t lcg_state = LCG_SEED;
static uint32_t lcg_next()
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

// The command line every program takes: an optional size in [lo, hi] that is a multiple
// of `multiple`, and --check. False, after the usage line, on anything else.
static bool parse_args(int argc, char **argv, long lo, long hi, long multiple, const char *what,
                       long *size, bool *check)
{
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--check") == 0) { *check = true; continue; }
        char *end = nullptr;
        long v = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || v < lo || v > hi || v % multiple != 0) {
            fprintf(stderr, "usage: %s [%s] [--check]\n", argv[0], what);
            return false;
        }
        *size = v;
    }
    return true;
}

// The verdict of a --check run against the program's CPU reference.
static void report_check(long long bad)
{
    if (bad == 0) printf("CHECK OK\n");
    else printf("CHECK FAILED (%lld mismatches)\n", bad);
}
