/* The trace line as printf writes it: the formatter gcl_format.h used until its appenders were
 * written by hand, kept as the oracle. format_speed.cpp checks that gcl::format_raw_record writes
 * exactly these bytes and times the two against each other. Not used by the tool. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include <string>
#include <vector>

#include "gcl_format.h"

namespace gcl_printf {

inline void put(std::string &out, const char *fmt, unsigned long long v) {
  char buf[96];
  out.append(buf, snprintf(buf, sizeof buf, fmt, v));
}
inline void put_signed(std::string &out, long long v) {
  char buf[32];
  out.append(buf, snprintf(buf, sizeof buf, "%lld", v));
}

inline void addresses(const gcl::Record &r, gcl::AddrPolicy policy, std::string &out) {
  if (r.active_mask == 0) { /* a warp predicated off: no address (gclsampler's writer's `0`) */
    out += " 0";
    return;
  }
  uint64_t a[gcl::kWarpSize] = {0};
  int k = 0;
  for (int lane = 0; lane < gcl::kWarpSize; lane++)
    if ((r.active_mask >> lane) & 1u) a[k++] = r.addrs[lane];
  const uint32_t m = r.active_mask, low = m & (~m + 1u);
  const bool contiguous = ((m + low) & m) == 0 || m == 0xffffffffu;
  bool constant = k >= 2;
  const int64_t stride = k >= 2 ? (int64_t)(a[1] - a[0]) : 0;
  for (int j = 2; j < k && constant; j++) constant = (int64_t)(a[j] - a[j - 1]) == stride;
  constant = constant && stride >= INT32_MIN && stride <= INT32_MAX;
  if (policy == gcl::AddrPolicy::kAuto && contiguous && constant) {
    put(out, " 1 0x%llx ", a[0]);
    put_signed(out, stride);
  } else if (policy == gcl::AddrPolicy::kList) {
    out += " 0";
    for (int j = 0; j < k; j++) put(out, " 0x%llx", a[j]);
  } else {
    put(out, " 2 0x%llx", a[0]);
    for (int j = 1; j < k; j++) {
      out += ' ';
      put_signed(out, (long long)(int64_t)(a[j] - a[j - 1]));
    }
  }
}

inline void value_row(const uint32_t *lanes, uint32_t mask, std::string &out) {
  uint32_t v[gcl::kWarpSize] = {0};
  int k = 0;
  for (int lane = 0; lane < gcl::kWarpSize; lane++)
    if ((mask >> lane) & 1u) v[k++] = lanes[lane];
  bool constant = true;
  const int32_t stride = k >= 2 ? (int32_t)(v[1] - v[0]) : 0;
  for (int j = 1; j < k && constant; j++) constant = (int32_t)(v[j] - v[j - 1]) == stride;
  if (constant && stride == 0) {
    put(out, " =%llx", v[0]);
  } else if (constant) {
    put(out, " +%llx ", v[0]);
    put_signed(out, stride);
  } else {
    put(out, " :%llx", v[0]);
    for (int j = 1; j < k; j++) put(out, " %llx", v[j]);
  }
}

inline void record(const gcl::Record &r, const std::vector<std::string> &opcodes, bool lineinfo, std::string &out,
                   gcl::AddrPolicy policy) {
  char buf[96];
  out.clear();
  out.append(buf, snprintf(buf, sizeof buf, "%d %d %d %d ", r.cta_x, r.cta_y, r.cta_z, r.warp_id));
  if (lineinfo) out.append(buf, snprintf(buf, sizeof buf, "%d ", r.line_num));
  out.append(buf, snprintf(buf, sizeof buf, "%04x %08x %d", r.pc, r.active_mask, r.ndst));
  auto reg = [&](int n) {
    out.append(buf, n >= gcl::kUniformBase ? snprintf(buf, sizeof buf, " UR%d", n - gcl::kUniformBase)
                                           : snprintf(buf, sizeof buf, " R%d", n));
  };
  for (int d = 0; d < r.ndst; d++) reg(r.dst[d]);
  out.append(buf, snprintf(buf, sizeof buf, " %s %d", r.opcode_id < opcodes.size() ? opcodes[r.opcode_id].c_str()
                                                                                     : "UNKNOWN", r.nsrc));
  for (int s = 0; s < r.nsrc; s++) reg(r.src[s]);
  out.append(buf, snprintf(buf, sizeof buf, " %d", r.mem_width));
  if (r.mem_width > 0) addresses(r, policy, out);
  put(out, " %lld", (long long)(int64_t)r.imm);
  if (r.has_values && r.ndst + r.nsrc > 0 && r.active_mask != 0) { /* mask 0: no lane, no row */
    out += " |";
    for (int op = 0; op < r.ndst + r.nsrc; op++) value_row(r.values[op], r.active_mask, out);
  }
  out += '\n';
}

}  // namespace gcl_printf
