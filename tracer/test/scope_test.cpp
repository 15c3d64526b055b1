/*
 * scope_test.cpp -- gcl::launch_scope and gcl::in_scope (gcl_record.h): which CTAs of a launch
 * the tool records, checked against block-scheduler placements drawn at random.
 *
 * Each case draws a grid (1-D to 3-D) and places its CTAs on the GPU's SMs: a launch with fewer
 * CTAs than SMs on distinct SMs chosen at random (as a real GPU may), a larger one round-robin
 * from a random SM. The recorded CTAs must be: every CTA with GCL_TRACE_SM=-1; exactly CTA
 * (0,0,0) for a small grid under GCL_SMALL_GRID=cta0; under GCL_CTA_SCOPE=id with a known SM
 * count, exactly the CTAs whose linear id is GCL_TRACE_SM modulo the SM count, wherever they
 * ran; exactly the CTAs on the traced SM otherwise (small grid with GCL_SMALL_GRID=sm, a large
 * grid, or an unknown SM count). A large grid must keep at least one CTA, the SM scope must
 * lose small grids now and then, and the id scope must keep CTAs that ran elsewhere, or the
 * test would not be telling the rules apart. Then the id scope's pieces on their own: the
 * 32-bit remainder against 64-bit arithmetic on grids too large for a 32-bit linear id, and
 * the scope word's encoding against the reserved scopes.
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

/* The id scope's remainder and encoding, apart from placements. */
static int check_id_pieces() {
  int failures = 0;
  for (int c = 0; c < 200000; c++) {
    /* grids up to CUDA's limits, (2^31-1) x 65535 x 65535 CTAs: linear ids past 2^32 */
    const uint32_t gx = 1 + (uint32_t)(next_u64() % (below(2) ? 0x7fffffffull : 300ull));
    const uint32_t gy = 1 + (uint32_t)(next_u64() % (below(2) ? 65535ull : 4ull));
    const uint32_t gz = 1 + (uint32_t)(next_u64() % (below(2) ? 65535ull : 4ull));
    const uint32_t bx = (uint32_t)(next_u64() % gx), by = (uint32_t)(next_u64() % gy), bz = (uint32_t)(next_u64() % gz);
    const uint32_t n = below(4) ? 1 + (uint32_t)below(200) : 1 + (uint32_t)below(gcl::kScopeByIdMaxSms);
    const uint64_t linear = ((uint64_t)bz * gy + by) * gx + bx;
    const uint32_t got = gcl::cta_linear_mod(bx, by, bz, gx, gy, n);
    if (got != linear % n) {
      fprintf(stderr, "FAILED: CTA (%u,%u,%u) of grid (%u,%u,%u) mod %u: %u, not %llu\n", bx, by, bz, gx, gy, gz, n, got,
              (unsigned long long)(linear % n));
      failures++;
    }
    const uint32_t residue = (uint32_t)below((int)n);
    const uint32_t scope = gcl::scope_by_id(n, residue);
    if (!gcl::scope_is_by_id(scope) || gcl::scope_id_sms(scope) != n || gcl::scope_id_residue(scope) != residue ||
        scope == gcl::kScopeAllSms || scope == gcl::kScopeFirstCta || scope == gcl::kScopeNone) {
      fprintf(stderr, "FAILED: id scope %u/%u encodes as %08x\n", residue, n, scope);
      failures++;
    }
    /* a plain SM scope is never read as an id scope */
    if (gcl::scope_is_by_id((uint32_t)below(100000))) {
      fprintf(stderr, "FAILED: an SM scope reads as an id scope\n");
      failures++;
    }
  }
  for (uint32_t reserved : {gcl::kScopeAllSms, gcl::kScopeFirstCta, gcl::kScopeNone})
    if (gcl::scope_is_by_id(reserved)) {
      fprintf(stderr, "FAILED: reserved scope %08x reads as an id scope\n", reserved);
      failures++;
    }
  /* GCL_CTA_SCOPE=id without a usable SM count, or with an SM the GPU lacks, keeps the SM */
  if (gcl::launch_scope(3, 1000, 0, true, true) != 3 || gcl::launch_scope(3, 100000, gcl::kScopeByIdMaxSms + 1, true, true) != 3 ||
      gcl::launch_scope(140, 1000, 132, true, true) != 140) {
    fprintf(stderr, "FAILED: the id scope was chosen without a usable SM count\n");
    failures++;
  }
  return failures;
}

int main() {
  int failures = check_id_pieces(), sm_scope_lost_small = 0, small = 0, id_kept_elsewhere = 0;
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
    const bool by_id = below(2) != 0;
    const uint32_t scope = gcl::launch_scope(trace_sm, n, known ? n_sms : 0, cta0, by_id);
    int kept = 0, kept_cta0 = 0, on_sm = 0;
    for (const Cta &k : ctas) {
      const bool first = (k.x | k.y | k.z) == 0;
      const uint64_t linear = ((uint64_t)k.z * g[1] + k.y) * g[0] + k.x;
      const auto mod = [&](uint32_t m) { return gcl::cta_linear_mod(k.x, k.y, k.z, g[0], g[1], m); };
      const bool in = gcl::in_scope(scope, [&] { return k.sm; }, [&] { return first; }, mod);
      kept += in;
      kept_cta0 += in && first;
      if (gcl::in_scope(gcl::kScopeNone, [&] { return k.sm; }, [&] { return first; }, mod)) {
        fprintf(stderr, "FAILED: the graph-node scope kept CTA (%u,%u,%u) on SM %u\n", k.x, k.y, k.z, k.sm);
        failures++;
      }
      on_sm += trace_sm >= 0 && k.sm == (uint32_t)trace_sm;
      const bool small_cta0 = cta0 && known && (int64_t)n < n_sms;
      const bool want = trace_sm < 0      ? true
                        : small_cta0      ? first
                        : by_id && known  ? linear % (uint64_t)n_sms == (uint64_t)trace_sm
                                          : k.sm == (uint32_t)trace_sm;
      id_kept_elsewhere += in && by_id && known && !small_cta0 && trace_sm >= 0 && k.sm != (uint32_t)trace_sm;
      if (in != want) {
        fprintf(stderr, "FAILED: grid (%u,%u,%u) on %d SMs, trace_sm %lld, cta0 %d, known %d, by_id %d: CTA (%u,%u,%u) "
                "on SM %u kept %d\n", g[0], g[1], g[2], n_sms, (long long)trace_sm, cta0, known, by_id, k.x, k.y, k.z,
                k.sm, in);
        failures++;
      }
    }
    if (trace_sm >= 0 && (int64_t)n >= n_sms && kept == 0) {
      fprintf(stderr, "FAILED: grid of %llu CTAs on %d SMs kept none on SM %lld\n", (unsigned long long)n, n_sms,
              (long long)trace_sm);
      failures++;
    }
    /* the id scope keeps the round-robin share: n / n_sms CTAs, one more for the first n % n_sms residues */
    if (trace_sm >= 0 && by_id && known && (int64_t)n >= n_sms) {
      const int share = (int)(n / n_sms) + ((uint64_t)trace_sm < n % n_sms ? 1 : 0);
      if (kept != share) {
        fprintf(stderr, "FAILED: grid of %llu CTAs on %d SMs kept %d CTAs by id, not %d\n", (unsigned long long)n, n_sms,
                kept, share);
        failures++;
      }
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
  if (id_kept_elsewhere == 0) {
    fprintf(stderr, "FAILED: the id scope never kept a CTA that ran on another SM\n");
    failures++;
  }
  if (failures) return 1;
  printf("scope: all cases hold (%d small grids, %d of them with no CTA on the traced SM; %d CTAs kept by id that ran "
         "elsewhere)\n", small, sm_scope_lost_small, id_kept_elsewhere);
  return 0;
}
