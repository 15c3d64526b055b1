// nw: Needleman-Wunsch global alignment score matrix, blocked in 16x16 tiles
// processed in anti-diagonal wavefronts of tiles (after Rodinia's nw, Che et
// al., IISWC 2009).  One kernel handles the upper-left triangle of tiles
// (launched once per tile diagonal, diagonal d has d tiles = d CTAs of 16
// threads), one the lower-right triangle.
// Usage: nw [n] [--check]      (n = sequence length, multiple of 16, default 2048)
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

#define LCG_SEED 0x9E3779B97F4A7C15ULL
#include "common.cuh"

#define TILE 16
#define PENALTY 10
#define NSYM 24   // alphabet size of the similarity matrix

__device__ __forceinline__ int max3(int a, int b, int c)
{
    int m = a > b ? a : b;
    return m > c ? m : c;
}

// Fill one 16x16 tile of the (n+1)x(n+1) score matrix.  Tile (brow, bcol)
// covers rows brow*16+1 .. brow*16+16 and the same columns shifted by bcol;
// its north border is row brow*16 and its west border column bcol*16.
// t: (TILE+1)^2 shared scores incl. borders, r: TILE^2 shared similarities.
// The caller guarantees the tile lies inside the matrix (CTA-uniform check),
// so every thread reaches every __syncthreads.
__device__ void nw_tile(int *score, const int *ref, int n, int brow, int bcol,
                        int (*t)[TILE + 1], int (*r)[TILE])
{
    const int tid = (int)threadIdx.x;
    const bool active = tid < TILE;
    const int w = n + 1;
    const int row0 = brow * TILE;
    const int col0 = bcol * TILE;

    if (active) {
        if (tid == 0) t[0][0] = score[row0 * w + col0];
        t[0][tid + 1] = score[row0 * w + col0 + 1 + tid];
        t[tid + 1][0] = score[(row0 + 1 + tid) * w + col0];
        for (int i = 0; i < TILE; ++i)
            r[i][tid] = ref[(row0 + 1 + i) * w + col0 + 1 + tid];
    }
    __syncthreads();

    // Internal anti-diagonals: cell (i, j) with i + j == d; thread tid owns column j = tid.
    for (int d = 0; d < 2 * TILE - 1; ++d) {
        const int i = d - tid;
        if (active && i >= 0 && i < TILE) {
            t[i + 1][tid + 1] = max3(t[i][tid] + r[i][tid],
                                     t[i][tid + 1] - PENALTY,
                                     t[i + 1][tid] - PENALTY);
        }
        __syncthreads();
    }

    if (active) {
        for (int i = 0; i < TILE; ++i)
            score[(row0 + 1 + i) * w + col0 + 1 + tid] = t[i + 1][tid + 1];
    }
}

// Upper-left triangle: diagonal `diag` (1..nb) holds tiles with brow + bcol == diag - 1.
__global__ void nw_kernel_upper(int *score, const int *ref, int n, int diag)
{
    __shared__ int t[TILE + 1][TILE + 1];
    __shared__ int r[TILE][TILE];
    const int nb = n / TILE;
    const int b = (int)blockIdx.x;
    const int bcol = b;
    const int brow = diag - 1 - b;
    // CTA-uniform bounds check (whole CTA returns together).
    if (n % TILE != 0 || b >= diag || brow < 0 || brow >= nb || bcol >= nb) return;
    nw_tile(score, ref, n, brow, bcol, t, r);
}

// Lower-right triangle: diagonal `diag` (nb-1 down to 1) holds tiles with
// brow + bcol == 2*nb - 1 - diag.
__global__ void nw_kernel_lower(int *score, const int *ref, int n, int diag)
{
    __shared__ int t[TILE + 1][TILE + 1];
    __shared__ int r[TILE][TILE];
    const int nb = n / TILE;
    const int b = (int)blockIdx.x;
    const int bcol = nb - diag + b;
    const int brow = nb - 1 - b;
    if (n % TILE != 0 || b >= diag || bcol < 0 || bcol >= nb || brow < 0 || brow >= nb) return;
    nw_tile(score, ref, n, brow, bcol, t, r);
}

int main(int argc, char **argv)
{
    long size = 2048;
    bool check = false;
    if (!parse_args(argc, argv, TILE, 16384, TILE, "n (multiple of 16, 16..16384)", &size, &check)) return 1;
    const int n = (int)size;
    const int w = n + 1;
    const int nb = n / TILE;
    const size_t cells = (size_t)w * w;

    // BLOSUM-like symmetric similarity matrix and the two sequences.
    int sim[NSYM][NSYM];
    for (int x = 0; x < NSYM; ++x) {
        sim[x][x] = 4 + (int)(lcg_next() % 8);
        for (int y = x + 1; y < NSYM; ++y) {
            int v = (int)(lcg_next() % 9) - 4;
            sim[x][y] = v;
            sim[y][x] = v;
        }
    }
    std::vector<int> seq1(w, 0), seq2(w, 0);
    for (int i = 1; i <= n; ++i) seq1[i] = (int)(lcg_next() % NSYM);
    for (int j = 1; j <= n; ++j) seq2[j] = (int)(lcg_next() % NSYM);

    std::vector<int> ref(cells, 0), score(cells, 0);
    for (int i = 1; i <= n; ++i)
        for (int j = 1; j <= n; ++j)
            ref[(size_t)i * w + j] = sim[seq1[i]][seq2[j]];
    for (int j = 0; j <= n; ++j) score[j] = -j * PENALTY;
    for (int i = 0; i <= n; ++i) score[(size_t)i * w] = -i * PENALTY;

    int *d_score = nullptr, *d_ref = nullptr;
    CHECK(cudaMalloc(&d_score, cells * sizeof(int)));
    CHECK(cudaMalloc(&d_ref, cells * sizeof(int)));
    CHECK(cudaMemcpy(d_score, score.data(), cells * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_ref, ref.data(), cells * sizeof(int), cudaMemcpyHostToDevice));

    GpuTimer timer;
    int launches = 0;
    timer.start();
    for (int d = 1; d <= nb; ++d) {
        LAUNCH(nw_kernel_upper, d, TILE, d_score, d_ref, n, d);
        ++launches;
    }
    for (int d = nb - 1; d >= 1; --d) {
        LAUNCH(nw_kernel_lower, d, TILE, d_score, d_ref, n, d);
        ++launches;
    }
    const float ms = timer.stop_ms();

    std::vector<int> out(cells, 0);
    CHECK(cudaMemcpy(out.data(), d_score, cells * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum = 0;
    for (size_t k = 0; k < cells; ++k) sum += out[k];
    printf("nw n=%d launches=%d score=%d checksum=%lld gpu_ms=%.3f\n", n, launches,
           out[(size_t)n * w + n], sum, ms);

    if (check) {
        // Plain row-major dynamic programming on the CPU.
        for (int i = 1; i <= n; ++i)
            for (int j = 1; j <= n; ++j) {
                int a = score[(size_t)(i - 1) * w + (j - 1)] + ref[(size_t)i * w + j];
                int b = score[(size_t)(i - 1) * w + j] - PENALTY;
                int c = score[(size_t)i * w + (j - 1)] - PENALTY;
                int m = a > b ? a : b;
                score[(size_t)i * w + j] = m > c ? m : c;
            }
        long long bad = 0;
        for (size_t k = 0; k < cells; ++k)
            if (out[k] != score[k]) ++bad;
        report_check(bad);
    }

    CHECK(cudaFree(d_score));
    CHECK(cudaFree(d_ref));
    return 0;
}
