// bfs: level-synchronous breadth-first search on a CSR graph, after Rodinia's
// bfs (Che et al., IISWC 2009).  Per level: `bfs_expand` expands every node
// whose mask is set, `bfs_update` moves the newly reached nodes into the
// frontier and sets a device flag; the host copies the flag back each level
// and stops when it stays 0 (hard cap MAX_LEVELS iterations).
// Graph (generated, fixed seed): node i has 2..10 out-edges: i -> i+1, the
// rest mostly to near nodes i+1..i+64 and a few (1 in 128) to uniformly random
// nodes, so every node is reachable from node 0 and the BFS has a few dozen
// levels (28 at the default size: 29 iterations, 58 launches).
// Usage: bfs [nodes] [--check]      (default 1000000)
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

#define LCG_SEED 0x853C49E6748FEA9BULL
#include "common.cuh"

static const int THREADS = 512;
static const int MAX_LEVELS = 10000;

// Expand the frontier: every node with mask set leaves the frontier and marks
// each unvisited neighbour (cost = own cost + 1, updating = 1).  All writers of
// cost[v] in one level write the same value.
__global__ void bfs_expand(const int *row_start, const int *edges, unsigned char *mask,
                           unsigned char *updating, const unsigned char *visited,
                           int *cost, int n, int n_edges)
{
    const int tid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (tid >= n || !mask[tid]) return;
    mask[tid] = 0;
    const int c = cost[tid] + 1;
    int e0 = row_start[tid];
    int e1 = row_start[tid + 1];
    if (e0 < 0) e0 = 0;
    if (e1 > n_edges) e1 = n_edges;
    for (int e = e0; e < e1; ++e) {
        const int v = edges[e];
        if (v >= 0 && v < n && !visited[v]) {
            cost[v] = c;
            updating[v] = 1;
        }
    }
}

// Move newly reached nodes into the frontier and the visited set.
__global__ void bfs_update(unsigned char *mask, unsigned char *updating,
                           unsigned char *visited, int *changed, int n)
{
    const int tid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (tid >= n || !updating[tid]) return;
    mask[tid] = 1;
    visited[tid] = 1;
    updating[tid] = 0;
    *changed = 1;
}

int main(int argc, char **argv)
{
    long size = 1000000;
    bool check = false;
    if (!parse_args(argc, argv, 2, 50000000, 1, "nodes (2..5e7)", &size, &check)) return 1;
    const int n = (int)size;

    // CSR graph.
    std::vector<int> row_start(n + 1, 0);
    std::vector<int> edges;
    edges.reserve((size_t)n * 6);
    for (int i = 0; i < n; ++i) {
        row_start[i] = (int)edges.size();
        const int deg = 2 + (int)(lcg_next() % 9);
        edges.push_back(i + 1 < n ? i + 1 : (int)(lcg_next() % (uint32_t)n));
        for (int k = 1; k < deg; ++k) {
            int v;
            if (lcg_next() % 128 == 0) v = (int)(lcg_next() % (uint32_t)n);
            else v = (int)(((long long)i + 1 + lcg_next() % 64) % n);
            edges.push_back(v);
        }
    }
    row_start[n] = (int)edges.size();
    const int n_edges = (int)edges.size();

    std::vector<unsigned char> mask(n, 0), visited(n, 0);
    std::vector<int> cost(n, -1);
    mask[0] = 1;
    visited[0] = 1;
    cost[0] = 0;

    int *d_row = nullptr, *d_edges = nullptr, *d_cost = nullptr, *d_changed = nullptr;
    unsigned char *d_mask = nullptr, *d_upd = nullptr, *d_vis = nullptr;
    CHECK(cudaMalloc(&d_row, (size_t)(n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_edges, (size_t)n_edges * sizeof(int)));
    CHECK(cudaMalloc(&d_cost, (size_t)n * sizeof(int)));
    CHECK(cudaMalloc(&d_changed, sizeof(int)));
    CHECK(cudaMalloc(&d_mask, (size_t)n));
    CHECK(cudaMalloc(&d_upd, (size_t)n));
    CHECK(cudaMalloc(&d_vis, (size_t)n));
    CHECK(cudaMemcpy(d_row, row_start.data(), (size_t)(n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_edges, edges.data(), (size_t)n_edges * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_cost, cost.data(), (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_mask, mask.data(), (size_t)n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_vis, visited.data(), (size_t)n, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_upd, 0, (size_t)n));

    GpuTimer timer;
    const int blocks = (n + THREADS - 1) / THREADS;
    int launches = 0, iters = 0, changed = 0;
    timer.start();
    do {
        changed = 0;
        CHECK(cudaMemcpy(d_changed, &changed, sizeof(int), cudaMemcpyHostToDevice));
        LAUNCH(bfs_expand, blocks, THREADS, d_row, d_edges, d_mask, d_upd, d_vis, d_cost, n, n_edges);
        LAUNCH(bfs_update, blocks, THREADS, d_mask, d_upd, d_vis, d_changed, n);
        launches += 2;
        CHECK(cudaMemcpy(&changed, d_changed, sizeof(int), cudaMemcpyDeviceToHost));
        ++iters;
    } while (changed != 0 && iters < MAX_LEVELS);
    const float ms = timer.stop_ms();
    if (changed != 0)
        fprintf(stderr, "warning: stopped at the cap of %d levels\n", MAX_LEVELS);

    std::vector<int> out(n);
    CHECK(cudaMemcpy(out.data(), d_cost, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum = 0;
    int reached = 0, maxlev = 0;
    for (int i = 0; i < n; ++i) {
        if (out[i] >= 0) { ++reached; sum += out[i]; if (out[i] > maxlev) maxlev = out[i]; }
    }
    printf("bfs nodes=%d edges=%d launches=%d levels=%d reached=%d checksum=%lld gpu_ms=%.3f\n",
           n, n_edges, launches, maxlev, reached, sum, ms);

    if (check) {
        // Queue-based BFS on the CPU.
        std::vector<int> lev(n, -1), queue;
        queue.reserve(n);
        lev[0] = 0;
        queue.push_back(0);
        for (size_t h = 0; h < queue.size(); ++h) {
            const int u = queue[h];
            for (int e = row_start[u]; e < row_start[u + 1]; ++e) {
                const int v = edges[e];
                if (lev[v] < 0) { lev[v] = lev[u] + 1; queue.push_back(v); }
            }
        }
        long long bad = 0;
        for (int i = 0; i < n; ++i)
            if (out[i] != lev[i]) ++bad;
        report_check(bad);
    }

    CHECK(cudaFree(d_row));
    CHECK(cudaFree(d_edges));
    CHECK(cudaFree(d_cost));
    CHECK(cudaFree(d_changed));
    CHECK(cudaFree(d_mask));
    CHECK(cudaFree(d_upd));
    CHECK(cudaFree(d_vis));
    return 0;
}
