// Shared by the real/ programs: a checked CUDA call, a checked plain launch, and a
// fixed-seed LCG, so every run of a program makes the same inputs and launches.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>

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

// Each program picks its own seed (LCG_SEED, defined before this include).
static uint64_t lcg_state = LCG_SEED;
static uint32_t lcg_next()
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}
