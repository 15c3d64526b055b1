// vecadd: c = a + b over n floats, launched NLAUNCH times.
// Usage: vecadd [n] [--check]      (default n = 1<<20)
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

#define LCG_SEED 0x2545F4914F6CDD1DULL
#include "common.cuh"

static const int THREADS = 256;
static const int NLAUNCH = 3;

__global__ void vecadd_kernel(const float *a, const float *b, float *c, int n)
{
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
    long n = 1L << 20;
    bool check = false;
    if (!parse_args(argc, argv, 1, 1L << 28, 1, "n (1..2^28)", &n, &check)) return 1;

    std::vector<float> a(n), b(n), c(n, 0.0f);
    for (long i = 0; i < n; ++i) a[i] = (float)(lcg_next() % 1000) * 0.001f;
    for (long i = 0; i < n; ++i) b[i] = (float)(lcg_next() % 1000) * 0.002f;

    size_t bytes = (size_t)n * sizeof(float);
    float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
    CHECK(cudaMalloc(&d_a, bytes));
    CHECK(cudaMalloc(&d_b, bytes));
    CHECK(cudaMalloc(&d_c, bytes));
    CHECK(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_c, 0, bytes));

    GpuTimer timer;
    int blocks = (int)((n + THREADS - 1) / THREADS);
    int launches = 0;
    timer.start();
    for (int k = 0; k < NLAUNCH; ++k) {
        LAUNCH(vecadd_kernel, blocks, THREADS, d_a, d_b, d_c, (int)n);
        ++launches;
    }
    const float ms = timer.stop_ms();

    CHECK(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (long i = 0; i < n; ++i) sum += c[i];
    printf("vecadd n=%ld launches=%d checksum=%.6f gpu_ms=%.3f\n", n, launches, sum, ms);

    if (check) {
        long bad = 0;
        for (long i = 0; i < n; ++i)
            if (c[i] != a[i] + b[i]) ++bad;
        report_check(bad);
    }

    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    CHECK(cudaFree(d_c));
    return 0;
}
