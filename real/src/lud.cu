// lud: blocked LU decomposition without pivoting, in place (L unit lower,
// stored below the diagonal; U on and above it), after Rodinia's lud (Che et
// al., IISWC 2009).  Per 16-wide step: `lud_diagonal` factorises the diagonal
// tile, `lud_perimeter` solves the row tiles to its right and the column tiles
// below it, `lud_internal` updates the trailing submatrix; a final
// `lud_diagonal` factorises the last tile.
// Usage: lud [n] [--check]      (n multiple of 16, default 1024)
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>

#define LCG_SEED 0xD1B54A32D192ED03ULL
#include "common.cuh"

#define BS 16

// One CTA of BS threads factorises the BS x BS tile at (off, off).
// Thread tx owns row tx during elimination.
__global__ void lud_diagonal(float *a, int n, int off)
{
    __shared__ float s[BS][BS];
    const int tx = (int)threadIdx.x;
    const bool active = tx < BS;
    if (off < 0 || off + BS > n) return;   // CTA-uniform

    if (active)
        for (int r = 0; r < BS; ++r) s[r][tx] = a[(off + r) * n + off + tx];
    __syncthreads();

    for (int k = 0; k < BS - 1; ++k) {
        // Row k is final here (written by thread k in step k-1, before the barrier).
        if (active && tx > k) {
            const float l = s[tx][k] / s[k][k];
            s[tx][k] = l;
            for (int j = k + 1; j < BS; ++j) s[tx][j] -= l * s[k][j];
        }
        __syncthreads();
    }

    if (active)
        for (int r = 0; r < BS; ++r) a[(off + r) * n + off + tx] = s[r][tx];
}

// CTA b (2*BS threads) handles the row tile at (off, other) and the column
// tile at (other, off), other = off + (b+1)*BS.  Threads 0..BS-1 compute
// U_row = L_diag^-1 A_row (one column each); threads BS..2BS-1 compute
// L_col = A_col U_diag^-1 (one row each).
__global__ void lud_perimeter(float *a, int n, int off)
{
    __shared__ float dia[BS][BS];
    __shared__ float prow[BS][BS];
    __shared__ float pcol[BS][BS];
    const int tid = (int)threadIdx.x;
    const bool active = tid < 2 * BS;
    const int other = off + ((int)blockIdx.x + 1) * BS;
    if (off < 0 || other + BS > n) return;   // CTA-uniform

    if (active) {
        for (int idx = tid; idx < BS * BS; idx += 2 * BS) {
            const int r = idx / BS, c = idx % BS;
            dia[r][c] = a[(off + r) * n + off + c];
            prow[r][c] = a[(off + r) * n + other + c];
            pcol[r][c] = a[(other + r) * n + off + c];
        }
    }
    __syncthreads();

    if (tid < BS) {
        const int c = tid;
        for (int r = 1; r < BS; ++r) {
            float v = prow[r][c];
            for (int j = 0; j < r; ++j) v -= dia[r][j] * prow[j][c];
            prow[r][c] = v;
        }
    } else if (active) {
        const int r = tid - BS;
        for (int c = 0; c < BS; ++c) {
            float v = pcol[r][c];
            for (int j = 0; j < c; ++j) v -= pcol[r][j] * dia[j][c];
            pcol[r][c] = v / dia[c][c];
        }
    }
    __syncthreads();

    if (active) {
        for (int idx = tid; idx < BS * BS; idx += 2 * BS) {
            const int r = idx / BS, c = idx % BS;
            a[(off + r) * n + other + c] = prow[r][c];
            a[(other + r) * n + off + c] = pcol[r][c];
        }
    }
}

// CTA (bx, by) with BS x BS threads updates the trailing tile at
// (off + (by+1)*BS, off + (bx+1)*BS): tile -= L_col * U_row.
__global__ void lud_internal(float *a, int n, int off)
{
    __shared__ float lt[BS][BS];
    __shared__ float ut[BS][BS];
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const bool active = tx < BS && ty < BS;
    const int row0 = off + ((int)blockIdx.y + 1) * BS;
    const int col0 = off + ((int)blockIdx.x + 1) * BS;
    if (off < 0 || row0 + BS > n || col0 + BS > n) return;   // CTA-uniform

    if (active) {
        lt[ty][tx] = a[(row0 + ty) * n + off + tx];
        ut[ty][tx] = a[(off + ty) * n + col0 + tx];
    }
    __syncthreads();

    if (active) {
        float sum = 0.0f;
        for (int k = 0; k < BS; ++k) sum += lt[ty][k] * ut[k][tx];
        a[(row0 + ty) * n + col0 + tx] -= sum;
    }
}

int main(int argc, char **argv)
{
    long size = 1024;
    bool check = false;
    if (!parse_args(argc, argv, BS, 8192, BS, "n (multiple of 16, 16..8192)", &size, &check)) return 1;
    const int n = (int)size;
    const size_t cells = (size_t)n * n;

    // Strictly diagonally dominant (rows and columns): off-diagonal in [-1, 1), diagonal n.
    std::vector<float> m(cells);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float v = (float)(lcg_next() % 2000) * 0.001f - 1.0f;
            m[(size_t)i * n + j] = (i == j) ? (float)n + (v + 1.0f) : v;
        }

    float *d_a = nullptr;
    CHECK(cudaMalloc(&d_a, cells * sizeof(float)));
    CHECK(cudaMemcpy(d_a, m.data(), cells * sizeof(float), cudaMemcpyHostToDevice));

    GpuTimer timer;
    int launches = 0;
    timer.start();
    int off = 0;
    for (; off < n - BS; off += BS) {
        const int t = (n - off) / BS - 1;   // tiles right of / below the diagonal tile
        LAUNCH(lud_diagonal, 1, BS, d_a, n, off);
        LAUNCH(lud_perimeter, t, 2 * BS, d_a, n, off);
        LAUNCH(lud_internal, dim3(t, t), dim3(BS, BS), d_a, n, off);
        launches += 3;
    }
    LAUNCH(lud_diagonal, 1, BS, d_a, n, off);
    launches += 1;
    const float ms = timer.stop_ms();

    std::vector<float> out(cells);
    CHECK(cudaMemcpy(out.data(), d_a, cells * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t k = 0; k < cells; ++k) sum += out[k];
    printf("lud n=%d launches=%d checksum=%.6e gpu_ms=%.3f\n", n, launches, sum, ms);

    if (check) {
        // Unblocked in-place Doolittle LU in double precision.
        std::vector<double> r(m.begin(), m.end());
        for (int k = 0; k < n; ++k) {
            const double piv = r[(size_t)k * n + k];
            for (int i = k + 1; i < n; ++i) {
                double *ri = &r[(size_t)i * n];
                const double *rk = &r[(size_t)k * n];
                const double l = ri[k] / piv;
                ri[k] = l;
                for (int j = k + 1; j < n; ++j) ri[j] -= l * rk[j];
            }
        }
        long long bad = 0;
        double maxrel = 0.0;
        for (size_t k = 0; k < cells; ++k) {
            const double diff = fabs((double)out[k] - r[k]);
            const double tol = 1e-3 * fabs(r[k]) + 1e-5;
            if (!(diff <= tol)) ++bad;   // also catches NaN
            const double rel = diff / (fabs(r[k]) + 1e-5);
            if (rel > maxrel) maxrel = rel;
        }
        printf("lud check: max rel err %.3e\n", maxrel);
        report_check(bad);
    }

    CHECK(cudaFree(d_a));
    return 0;
}
