/* format_speed -- gcl::format_raw_record against the printf oracle (printf_reference.h), on
 * seeded random records that reach every branch: negative and extreme CTA ids, PCs past 16
 * bits, full, partial, single-lane and empty masks, every address mode and policy, constant,
 * strided and divergent values, immediates up to 2^64-1, unknown opcodes, line info on/off.
 *
 *   format_speed check N [seed]   exit 1 at the first record whose bytes differ (both lines on stderr)
 *   format_speed time N [seed]    microseconds per record for each, and their ratio
 *
 * tests/test_tracer_format.py runs `check`; bench/tracer_format.py runs `time`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "gcl_format.h"
#include "printf_reference.h"

struct Case {
  gcl::Record r;
  bool lineinfo;
  gcl::AddrPolicy policy;
};

static std::vector<Case> make_cases(int n, uint64_t seed) {
  std::mt19937_64 g(seed);
  const int32_t edge[] = {0, 1, -1, 7, 100, INT32_MIN, INT32_MAX, 65535, 65536};
  /* 0: a warp predicated off entirely, recorded with no address and no value lane */
  const uint32_t masks[] = {0xffffffffu, 1u, 0x80000000u, 0x0000ff00u, 0xf0f0f0f0u, 0x7fffffffu, 0u};
  std::vector<Case> cases(n);
  for (Case &c : cases) {
    gcl::Record &r = c.r;
    r = gcl::Record();
    auto id = [&] { return g() % 3 == 0 ? edge[g() % 9] : (int32_t)(g() % 1000); };
    r.cta_x = id(), r.cta_y = id(), r.cta_z = id(), r.warp_id = id(), r.line_num = id();
    r.pc = g() % 4 == 0 ? (uint32_t)g() : (uint32_t)(g() % 0x10000);
    r.active_mask = g() % 4 == 0 ? ((uint32_t)g() | 1u) : masks[g() % 7];
    r.opcode_id = g() % 5; /* 4 = not in the table */
    r.ndst = g() % 3, r.nsrc = g() % 6;
    /* general registers 0..255 and, one in five, uniform registers UR0..UR63 */
    for (int d = 0; d < gcl::kMaxDst; d++) r.dst[d] = (int)(g() % 320);
    for (int s = 0; s < gcl::kMaxSrc; s++) r.src[s] = (int)(g() % 320);
    r.mem_width = g() % 2 ? 1 << (g() % 5) : 0;
    r.imm = g() % 3 == 0 ? g() : g() % 100;
    r.has_values = g() % 2;
    const uint64_t base = g() % 2 ? g() : g() % 0x100000;
    const int mode = g() % 3;
    const int64_t stride = (int64_t)(g() % 64) - 32;
    for (int l = 0; l < gcl::kWarpSize; l++)
      r.addrs[l] = mode == 0 ? base + stride * l : mode == 1 ? base : g();
    for (int o = 0; o < gcl::kMaxOps; o++) {
      const int vm = g() % 4;
      const uint32_t b = (uint32_t)g();
      const int32_t st = (int32_t)(g() % 9) - 4;
      for (int l = 0; l < gcl::kWarpSize; l++)
        r.values[o][l] = vm == 0 ? b : vm == 1 ? b + st * l : vm == 2 ? (uint32_t)g() : (uint32_t)INT32_MIN + l;
    }
    c.lineinfo = g() % 2;
    c.policy = (gcl::AddrPolicy)(g() % 3);
  }
  return cases;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "check") && strcmp(argv[1], "time"))) {
    fprintf(stderr, "usage: format_speed check|time N [seed]\n");
    return 2;
  }
  const int n = atoi(argv[2]);
  const std::vector<Case> cases = make_cases(n, argc > 3 ? strtoull(argv[3], nullptr, 10) : 1);
  const std::vector<std::string> ops = {"IMAD.MOV.U32", "LDG.E.64", "FFMA", "ISETP.GE.AND"};
  std::string a, b;
  if (!strcmp(argv[1], "check")) {
    for (int i = 0; i < n; i++) {
      gcl::format_raw_record(cases[i].r, ops, cases[i].lineinfo, a, cases[i].policy);
      gcl_printf::record(cases[i].r, ops, cases[i].lineinfo, b, cases[i].policy);
      if (a != b) {
        fprintf(stderr, "record %d differs:\n  gcl_format: %s  printf:     %s", i, a.c_str(), b.c_str());
        return 1;
      }
    }
    printf("%d records identical\n", n);
    return 0;
  }
  size_t bytes = 0;
  auto time = [&](auto &&fmt) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Case &c : cases) {
      fmt(c, a);
      bytes += a.size();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n * 1e6;
  };
  const double ref = time([&](const Case &c, std::string &o) { gcl_printf::record(c.r, ops, c.lineinfo, o, c.policy); });
  const double fast = time([&](const Case &c, std::string &o) { gcl::format_raw_record(c.r, ops, c.lineinfo, o, c.policy); });
  printf("%d records, %.0f bytes each: printf %.2f us/record, gcl_format %.2f us/record, ratio %.2fx\n", n,
         bytes / 2.0 / n, ref, fast, ref / fast);
  return 0;
}
