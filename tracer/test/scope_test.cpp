/*
 * scope_test.cpp -- gcl::launch_scope and gcl::in_scope (gcl_record.h): which CTAs of a launch
 * the tool records, checked against block-scheduler placements drawn at random.
 *
 * Each case draws a grid (1-D to 3-D) and places its CTAs on the GPU's SMs: a launch with fewer
 * CTAs than SMs on distinct SMs chosen at random (as a real GPU may), a larger one round-robin
 * from a random SM. The recorded CTAs must be: every CTA with GCL_TRACE_SM=-1; exactly CTA
 * (0,0,0) for a small grid under GCL_SMALL_GRID=cta0; exactly the CTAs on the traced SM
 * otherwise (small grid with GCL_SMALL_GRID=sm, a large grid, or an unknown SM count). A large
 * grid must keep at least one CTA, and the SM scope must lose small grids now and then, or the
 * test would not be telling the two rules apart.
 *
 *   scope_test   exit 0 when every case holds, else one line per failed case
 */
#include <stdint.h>
#include <stdio.h>

#include <vector>

#include "gcl_record.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64() { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int below(int n) { return (int)(next_u64() % (uint64_t)n); }

struct Cta {
  unsigned x, y, z;
  uint32_t sm;
};

static std::vector<Cta> place(unsigned gx, unsigned gy, unsigned gz, int n_sms) {
  const int n = (int)(gx * gy * gz);
  std::vector<uint32_t> sms(n);
  if (n < n_sms) { /* distinct SMs, any of them: a partial shuffle */
    std::vector<uint32_t> all(n_sms);
    for (int i = 0; i < n_sms; i++) all[i] = (uint32_t)i;
    for (int i = 0; i < n; i++) {
      const int j = i + below(n_sms - i);
      uint32_t t = all[i];
      all[i] = all[j];
      all[j] = t;
      sms[i] = all[i];
    }
  } else {
    const int start = below(n_sms);
    for (int i = 0; i < n; i++) sms[i] = (uint32_t)((start + i) % n_sms);
  }
  std::vector<Cta> ctas;
  int i = 0;
  for (unsigned z = 0; z < gz; z++)
    for (unsigned y = 0; y < gy; y++)
      for (unsigned x = 0; x < gx; x++) ctas.push_back({x, y, z, sms[i++]});
  return ctas;
}

int main() {
  int failures = 0, sm_scope_lost_small = 0, small = 0;
  const int gpus[] = {1, 2, 46, 108, 132};
  for (int c = 0; c < 20000; c++) {
    const int n_sms = gpus[below(5)];
    const int dims = 1 + below(3);
    unsigned g[3] = {1, 1, 1};
    for (int d = 0; d < dims; d++) g[d] = 1 + (unsigned)below(d == 0 ? 3 * n_sms : 4);
    const uint64_t n = (uint64_t)g[0] * g[1] * g[2];
    const std::vector<Cta> ctas = place(g[0], g[1], g[2], n_sms);
    const int64_t trace_sm = below(4) == 0 ? -1 : below(n_sms);
    const bool cta0 = below(4) != 0;
    const bool known = below(8) != 0;
    const uint32_t scope = gcl::launch_scope(trace_sm, n, known ? n_sms : 0, cta0);
    int kept = 0, kept_cta0 = 0, on_sm = 0;
    for (const Cta &k : ctas) {
      const bool first = (k.x | k.y | k.z) == 0;
      const bool in = gcl::in_scope(scope, [&] { return k.sm; }, [&] { return first; });
      kept += in;
      kept_cta0 += in && first;
      if (gcl::in_scope(gcl::kScopeNone, [&] { return k.sm; }, [&] { return first; })) {
        fprintf(stderr, "FAILED: the graph-node scope kept CTA (%u,%u,%u) on SM %u\n", k.x, k.y, k.z, k.sm);
        failures++;
      }
      on_sm += trace_sm >= 0 && k.sm == (uint32_t)trace_sm;
      const bool want = trace_sm < 0                        ? true
                        : (cta0 && known && (int64_t)n < n_sms) ? first
                                                              : k.sm == (uint32_t)trace_sm;
      if (in != want) {
        fprintf(stderr, "FAILED: grid (%u,%u,%u) on %d SMs, trace_sm %lld, cta0 %d, known %d: CTA (%u,%u,%u) on SM %u "
                "kept %d\n", g[0], g[1], g[2], n_sms, (long long)trace_sm, cta0, known, k.x, k.y, k.z, k.sm, in);
        failures++;
      }
    }
    if (trace_sm >= 0 && (int64_t)n >= n_sms && kept == 0) {
      fprintf(stderr, "FAILED: grid of %llu CTAs on %d SMs kept none on SM %lld\n", (unsigned long long)n, n_sms,
              (long long)trace_sm);
      failures++;
    }
    if (trace_sm >= 0 && cta0 && known && (int64_t)n < n_sms) {
      small++;
      sm_scope_lost_small += on_sm == 0;
      if (kept != 1 || kept_cta0 != 1) {
        fprintf(stderr, "FAILED: small grid of %llu CTAs on %d SMs kept %d CTAs\n", (unsigned long long)n, n_sms, kept);
        failures++;
      }
    }
  }
  if (small == 0 || sm_scope_lost_small == 0) {
    fprintf(stderr, "FAILED: the draws never had a small grid that the SM scope would lose (%d small)\n", small);
    failures++;
  }
  if (failures) return 1;
  printf("scope: all cases hold (%d small grids, %d of them with no CTA on the traced SM)\n", small,
         sm_scope_lost_small);
  return 0;
}
