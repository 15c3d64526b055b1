/*
 * pack_test.cpp -- gcl::pack_info / gcl::pack_regs and their unpackers (gcl_record.h), over
 * every value the tool can pass: the host packs gcl_before's static fields and the device
 * unpacks them, so a field that does not survive the round trip reaches the trace wrong.
 *
 *   pack_test   exit 0 when every case holds, else one line per failed case
 */
#include <stdint.h>
#include <stdio.h>

#include "gcl_record.h"

int main() {
  int failures = 0;
  const uint32_t opcodes[] = {0u, 1u, 777u, gcl::kMaxOpcodeIds - 1};
  const int32_t widths[] = {0, 1, 4, 8, 16, 128, gcl::kMaxPackedWidth};
  for (uint32_t op : opcodes)
    for (int32_t w : widths)
      for (int32_t nd = 0; nd <= gcl::kMaxDst; nd++)
        for (int32_t ns = 0; ns <= gcl::kMaxSrc; ns++)
          for (int f = 0; f < 8; f++) {
            const int32_t after = f & 1, values = (f >> 1) & 1, buffer = (f >> 2) & 1;
            const uint32_t i = gcl::pack_info(op, w, nd, ns, after, values, buffer);
            if (gcl::info_opcode(i) != op || gcl::info_mem_width(i) != w || gcl::info_ndst(i) != nd ||
                gcl::info_nsrc(i) != ns || gcl::info_expects_after(i) != after ||
                gcl::info_with_values(i) != values || gcl::info_to_buffer(i) != buffer) {
              fprintf(stderr, "FAILED: info op %u width %d ndst %d nsrc %d flags %d -> %08x\n", op, w, nd, ns, f, i);
              failures++;
            }
          }
  /* register numbers: -1 (none), R0..R254, RZ = 255, URn = kUniformBase + n (n <= 63) */
  const int32_t regs[] = {-1, 0, 1, 254, 255, gcl::kUniformBase, gcl::kUniformBase + 63};
  for (int32_t lo : regs)
    for (int32_t hi : regs) {
      const uint32_t w = gcl::pack_regs(lo, hi);
      if (gcl::unpack_reg(w, 0) != lo || gcl::unpack_reg(w, 1) != hi) {
        fprintf(stderr, "FAILED: regs %d %d -> %08x\n", lo, hi, w);
        failures++;
      }
    }
  if (failures) return 1;
  printf("pack: all cases hold\n");
  return 0;
}
