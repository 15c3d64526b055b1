/*
 * gcl_format.h -- record-to-text formatting for gclsampler's NVBit tool.
 *
 * Header-only, plain C++17 (no CUDA, no NVBit), so CI builds a test program from
 * it with g++ and checks that `gclsampler.trace` parses the output back to the
 * same values (tests/test_tracer_format.py). The grammar it writes is the raw
 * (ungrouped) Accel-Sim layout plus gclsampler's value extension, documented in
 * docs/trace-format.md:
 *
 *   cta_x cta_y cta_z warp [line] PC mask ndst [Rd] OPCODE nsrc [Rs..] width [mode addrs] imm [| rows]
 *
 * address modes: 0 = one hex address per active lane, 1 = base stride (active
 * lanes contiguous, constant stride), 2 = base then signed deltas from the
 * previous active lane. Value rows (one per register operand, destinations
 * first): `=v` all lanes equal, `+v s` base and stride, `~v d..` base and
 * deltas, `:v v..` one hex value per active lane.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gcl_record.h"

namespace gcl {

struct KernelHeaderInfo {
  std::string name;
  uint64_t kernel_id = 1;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  int shmem = 0;
  int nregs = 0;
  int binary_version = 0;
  uint64_t cuda_stream_id = 0;
  uint64_t shmem_base_addr = 0;
  uint64_t local_mem_base_addr = 0;
  std::string nvbit_version = "1.7";
  bool lineinfo = false;
  bool values = true;
};

/* How addresses are written. kAuto does what NVBit's Accel-Sim tracer does
 * (stride when it can, deltas otherwise); the others exist so the format test
 * can cover every mode. */
enum class AddrPolicy { kAuto, kList, kDelta };

inline void append_fmt(std::string &out, const char *fmt, unsigned long long v) {
  char buf[96];
  int n = snprintf(buf, sizeof buf, fmt, v);
  out.append(buf, n);
}
/* Decimal and hex by hand, not snprintf: the host thread formats every record of a traced
 * launch while the GPU waits on the channel, and snprintf made that 7.3 us per record
 * (measured with two of four register operands divergent, the costly case). Output is
 * byte-identical to the printf forms named in each comment. */
inline void append_u64(std::string &out, unsigned long long v) { /* %llu */
  char buf[20];
  int n = 0;
  do {
    buf[19 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  out.append(buf + 20 - n, n);
}
inline void append_i64(std::string &out, long long v) { /* %lld */
  if (v < 0) {
    out += '-';
    append_u64(out, 0ull - (unsigned long long)v);
  } else {
    append_u64(out, (unsigned long long)v);
  }
}
inline void append_hex(std::string &out, unsigned long long v, int min_digits = 1) { /* %llx, %0<min>llx */
  static const char digits[] = "0123456789abcdef";
  char buf[16];
  int n = 0;
  do {
    buf[15 - n++] = digits[v & 15u];
    v >>= 4;
  } while (v);
  while (n < min_digits && n < 16) buf[15 - n++] = '0';
  out.append(buf + 16 - n, n);
}

/* Register numbers from NVBit: 0..254 general registers, 255 = RZ (written R255,
 * which the reader maps back to RZ's code); kUniformBase + n is uniform register URn. */
inline void append_reg(std::string &out, int num) {
  if (num >= kUniformBase) {
    out += "UR";
    num -= kUniformBase;
  } else {
    out += 'R';
  }
  append_i64(out, num);
}

inline void format_raw_header(const KernelHeaderInfo &h, std::string &out) {
  char buf[512];
  out += "-kernel name = " + h.name + "\n";
  append_fmt(out, "-kernel id = %llu\n", (unsigned long long)h.kernel_id);
  snprintf(buf, sizeof buf, "-grid dim = (%u,%u,%u)\n-block dim = (%u,%u,%u)\n", h.grid[0], h.grid[1],
           h.grid[2], h.block[0], h.block[1], h.block[2]);
  out += buf;
  snprintf(buf, sizeof buf, "-shmem = %d\n-nregs = %d\n-binary version = %d\n", h.shmem, h.nregs,
           h.binary_version);
  out += buf;
  append_fmt(out, "-cuda stream id = %llu\n", (unsigned long long)h.cuda_stream_id);
  append_fmt(out, "-shmem base_addr = 0x%016llx\n", (unsigned long long)h.shmem_base_addr);
  append_fmt(out, "-local mem base_addr = 0x%016llx\n", (unsigned long long)h.local_mem_base_addr);
  out += "-nvbit version = " + h.nvbit_version + "\n";
  out += "-accelsim tracer version = 5\n";
  out += h.lineinfo ? "-enable lineinfo = 1\n" : "-enable lineinfo = 0\n";
  out += "\n#traces format = threadblock_x threadblock_y threadblock_z warpid_tb ";
  out += h.lineinfo ? "[line_num] " : "";
  /* ldgsts_once: one record per LDGSTS, with its global address (Accel-Sim's tracer writes
   * one per memory reference, a pair that its post-processing and gclsampler's reader
   * reduce to the second); the reader then has no pairs to look for */
  out += "PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] "
         "[mem_addresses] immediate ldgsts_once";
  out += h.values ? " | reg_values\n\n" : "\n\n";
}

inline void format_addresses(const Record &r, AddrPolicy policy, std::string &out) {
  /* No active lane (the whole warp predicated off): no address at all, `0` and an empty list,
   * as gclsampler's writer (writer._addr_modes) writes it, so that a raw trace and the grouped
   * file agree byte for byte; a mode-2 base of 0x0 named an address nobody accessed. */
  if (r.active_mask == 0) {
    out += " 0";
    return;
  }
  uint64_t a[kWarpSize];
  int k = 0;
  for (int lane = 0; lane < kWarpSize; lane++)
    if ((r.active_mask >> lane) & 1u) a[k++] = r.addrs[lane];
  /* stride mode needs contiguous active lanes: the simulator expands base+j*stride */
  const uint32_t m = r.active_mask, low = m & (~m + 1u);
  const bool contiguous = ((m + low) & m) == 0 || (m == 0xffffffffu);
  bool constant = k >= 2;
  const int64_t stride = k >= 2 ? (int64_t)(a[1] - a[0]) : 0;
  for (int j = 2; j < k && constant; j++) constant = (int64_t)(a[j] - a[j - 1]) == stride;
  constant = constant && stride >= INT32_MIN && stride <= INT32_MAX;
  if (policy == AddrPolicy::kAuto && contiguous && constant) {
    out += " 1 0x";
    append_hex(out, a[0]);
    out += ' ';
    append_i64(out, (long long)stride);
  } else if (policy == AddrPolicy::kList) {
    out += " 0";
    for (int j = 0; j < k; j++) {
      out += " 0x";
      append_hex(out, a[j]);
    }
  } else {
    out += " 2 0x";
    append_hex(out, a[0]);
    for (int j = 1; j < k; j++) {
      out += ' ';
      append_i64(out, (long long)(int64_t)(a[j] - a[j - 1]));
    }
  }
}

/* One register operand's values over the active lanes, in the most compact row form. */
inline void format_value_row(const uint32_t *lanes, uint32_t mask, std::string &out) {
  uint32_t v[kWarpSize];
  v[0] = 0; /* no active lane (format_record writes no rows then): 0, not stack garbage */
  int k = 0;
  for (int lane = 0; lane < kWarpSize; lane++)
    if ((mask >> lane) & 1u) v[k++] = lanes[lane];
  bool constant = true;
  const int32_t stride = k >= 2 ? (int32_t)(v[1] - v[0]) : 0;
  for (int j = 1; j < k && constant; j++) constant = (int32_t)(v[j] - v[j - 1]) == stride;
  if (constant && stride == 0) {
    out += " =";
    append_hex(out, v[0]);
  } else if (constant) {
    out += " +";
    append_hex(out, v[0]);
    out += ' ';
    append_i64(out, stride);
  } else {
    out += " :";
    append_hex(out, v[0]);
    for (int j = 1; j < k; j++) {
      out += ' ';
      append_hex(out, v[j]);
    }
  }
}

/* One raw trace line (with newline). `opcodes[r.opcode_id]` is the full SASS opcode. */
inline void format_raw_record(const Record &r, const std::vector<std::string> &opcodes, bool lineinfo,
                              std::string &out, AddrPolicy policy = AddrPolicy::kAuto) {
  out.clear();
  for (int32_t v : {r.cta_x, r.cta_y, r.cta_z, r.warp_id}) { /* "%d %d %d %d " */
    append_i64(out, v);
    out += ' ';
  }
  if (lineinfo) {
    append_i64(out, r.line_num);
    out += ' ';
  }
  append_hex(out, r.pc, 4); /* "%04x %08x %d" */
  out += ' ';
  append_hex(out, r.active_mask, 8);
  out += ' ';
  append_i64(out, r.ndst);
  for (int d = 0; d < r.ndst; d++) {
    out += ' ';
    append_reg(out, r.dst[d]);
  }
  out += ' ';
  if (r.opcode_id < opcodes.size())
    out += opcodes[r.opcode_id];
  else
    out += "UNKNOWN";
  out += ' ';
  append_i64(out, r.nsrc);
  for (int s = 0; s < r.nsrc; s++) {
    out += ' ';
    append_reg(out, r.src[s]);
  }
  out += ' ';
  append_i64(out, r.mem_width);
  if (r.mem_width > 0) format_addresses(r, policy, out);
  out += ' ';
  append_i64(out, (long long)(int64_t)r.imm); /* signed, as docs/trace-format.md says */
  /* a row lists the active lanes' values, so a warp that skipped the instruction (mask 0) has
   * none to write: no block at all, which reads as "no values" (" | =0" was refused) */
  if (r.has_values && r.ndst + r.nsrc > 0 && r.active_mask != 0) {
    out += " |";
    for (int op = 0; op < r.ndst + r.nsrc; op++) format_value_row(r.values[op], r.active_mask, out);
  }
  out += '\n';
}

/* GCL_BUFFER_MB: hands the records one launch left in the device buffer to `take`, in slot
 * order, through `staging` (whose size sets the chunk). `used` is the bytes the launch
 * claimed, which passes `capacity` when records were dropped; only whole records inside
 * the capacity are read. `copy(dst, offset, bytes)` fetches from the device buffer.
 * Returns the number of records taken. */
template <class Copy, class Take>
inline unsigned long long drain_buffer(unsigned long long used, unsigned long long capacity,
                                       std::vector<Record> &staging, Copy &&copy, Take &&take) {
  const unsigned long long bytes = (used < capacity ? used : capacity) / sizeof(Record) * sizeof(Record);
  const unsigned long long chunk = staging.size() * sizeof(Record);
  unsigned long long n = 0;
  for (unsigned long long off = 0; chunk && off < bytes; off += chunk) {
    const unsigned long long len = bytes - off < chunk ? bytes - off : chunk;
    copy(staging.data(), off, len);
    for (size_t i = 0; i < len / sizeof(Record); i++, n++) take(staging[i]);
  }
  return n;
}

/* Joins each BEFORE record with the AFTER record that brings its destination
 * values. A warp's records arrive in its program order (its first active lane
 * pushes them), so at most one record per warp is ever pending. Records of
 * different warps may interleave arbitrarily. */
class WarpMerger {
 public:
  template <class Emit>
  void push(const Record &r, Emit &&emit) {
    const auto key = std::make_tuple(r.cta_x, r.cta_y, r.cta_z, r.warp_id);
    auto it = pending_.find(key);
    if (r.kind == kBefore) {
      if (it != pending_.end()) { /* its AFTER never came (e.g. the warp exited): keep it */
        emit(it->second);
        pending_.erase(it);
      }
      /* A BEFORE record never carries destination values (the device gathers sources only):
       * they are 0 until an AFTER brings them, so a BEFORE whose AFTER never comes (the warp
       * exited, the instruction rewrote its own guard predicate, or a control-flow instruction,
       * which gets no AFTER) is written with 0, not with the record's unused words. */
      if (r.expects_after) {
        zero_destinations(pending_[key] = r);
      } else if (r.has_values && r.ndst > 0) {
        Record c = r;
        zero_destinations(c);
        emit(c);
      } else {
        emit(r);
      }
    } else if (r.kind == kAfter && it != pending_.end() && it->second.pc == r.pc) {
      for (int d = 0; d < it->second.ndst && d < kMaxDst; d++)
        for (int lane = 0; lane < kWarpSize; lane++) it->second.values[d][lane] = r.values[d][lane];
      emit(it->second);
      pending_.erase(it);
    }
  }

  /* End of the launch: write what is still waiting, in warp order for determinism. */
  template <class Emit>
  void flush(Emit &&emit) {
    for (auto &kv : pending_) emit(kv.second);
    pending_.clear();
  }

 private:
  static void zero_destinations(Record &r) {
    for (int d = 0; d < r.ndst && d < kMaxDst; d++)
      for (int lane = 0; lane < kWarpSize; lane++) r.values[d][lane] = 0;
  }
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t>, Record> pending_;
};

}  // namespace gcl
