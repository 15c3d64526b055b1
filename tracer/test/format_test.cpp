/*
 * format_test -- drives gcl_format.h without a GPU: reads records described as
 * text on stdin, merges BEFORE/AFTER halves per warp exactly as the NVBit tool's
 * host thread does, and writes the raw trace to stdout. tests/test_tracer_format.py
 * generates the records, runs this program and parses the output with
 * gclsampler.trace, so the C++ and Python sides of the format are checked together.
 *
 * Usage: format_test [auto|list|delta]   (address mode policy, default auto)
 *
 * Input tokens:
 *   HEADER name kernel_id gx gy gz bx by bz lineinfo values
 *   OPCODES n op_0 .. op_{n-1}
 *   RECORD kind expects_after cta_x cta_y cta_z warp line pc mask opcode_id
 *          mem_width ndst dst.. nsrc src.. imm has_values
 *          32 hex addresses, then rows*32 hex values (rows = ndst+nsrc for BEFORE
 *          records with has_values, ndst for AFTER records, else 0)
 *   END
 */
#include <stdio.h>
#include <string.h>

#include <iostream>
#include <string>
#include <vector>

#include "gcl_format.h"

static bool fail(const char *what) {
  fprintf(stderr, "format_test: bad input at %s\n", what);
  return false;
}

int main(int argc, char **argv) {
  gcl::AddrPolicy policy = gcl::AddrPolicy::kAuto;
  if (argc > 1) {
    if (!strcmp(argv[1], "list")) policy = gcl::AddrPolicy::kList;
    else if (!strcmp(argv[1], "delta")) policy = gcl::AddrPolicy::kDelta;
    else if (strcmp(argv[1], "auto")) return fail(argv[1]) ? 0 : 2;
  }
  std::string tok;
  gcl::KernelHeaderInfo h;
  std::vector<std::string> opcodes;
  gcl::WarpMerger merger;
  std::string line;
  auto emit = [&](const gcl::Record &r) {
    gcl::format_raw_record(r, opcodes, h.lineinfo, line, policy);
    std::cout << line;
  };
  while (std::cin >> tok) {
    if (tok == "HEADER") {
      int li = 0, vals = 1;
      std::cin >> h.name >> h.kernel_id >> h.grid[0] >> h.grid[1] >> h.grid[2] >> h.block[0] >> h.block[1] >>
          h.block[2] >> li >> vals;
      h.lineinfo = li != 0;
      h.values = vals != 0;
      h.binary_version = 86;
      std::string text;
      gcl::format_raw_header(h, text);
      std::cout << text;
    } else if (tok == "OPCODES") {
      size_t n = 0;
      std::cin >> n;
      opcodes.resize(n);
      for (auto &op : opcodes) std::cin >> op;
    } else if (tok == "RECORD") {
      gcl::Record r;
      memset(&r, 0, sizeof r);
      std::cin >> r.kind >> r.expects_after >> r.cta_x >> r.cta_y >> r.cta_z >> r.warp_id >> r.line_num >>
          std::hex >> r.pc >> r.active_mask >> std::dec >> r.opcode_id >> r.mem_width >> r.ndst;
      if (r.ndst < 0 || r.ndst > gcl::kMaxDst) return fail("ndst") ? 0 : 2;
      for (int d = 0; d < r.ndst; d++) std::cin >> r.dst[d];
      std::cin >> r.nsrc;
      if (r.nsrc < 0 || r.nsrc > gcl::kMaxSrc) return fail("nsrc") ? 0 : 2;
      for (int s = 0; s < r.nsrc; s++) std::cin >> r.src[s];
      std::cin >> r.imm >> r.has_values;
      for (int lane = 0; lane < gcl::kWarpSize; lane++) std::cin >> std::hex >> r.addrs[lane] >> std::dec;
      int rows = r.kind == gcl::kAfter ? r.ndst : (r.has_values ? r.ndst + r.nsrc : 0);
      for (int row = 0; row < rows; row++)
        for (int lane = 0; lane < gcl::kWarpSize; lane++) std::cin >> std::hex >> r.values[row][lane] >> std::dec;
      if (!std::cin) return fail("RECORD") ? 0 : 2;
      merger.push(r, emit);
    } else if (tok == "END") {
      merger.flush(emit);
    } else {
      return fail(tok.c_str()) ? 0 : 2;
    }
  }
  return 0;
}
