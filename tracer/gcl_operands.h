/*
 * gcl_operands.h -- which of a SASS instruction's NVBit operands become the record's
 * destination and source registers, its memory reference and its immediate.
 *
 * Kept apart from the tool, and written against any operand type shaped like NVBit's
 * `InstrType::operand_t` (an enum class `type` with REG, UREG, MREF, IMM_UINT64, ...;
 * `u.reg.num`, `u.mref.has_ra` / `ra_num` / `has_ur` / `ur_num`, `u.imm_uint64.value`), so
 * that the choice is tested on the
 * CPU against hand-made operand lists (test/operands_test.cpp) without NVBit.
 */
#pragma once

#include <stdint.h>

#include "gcl_record.h"

namespace gcl {

constexpr int kURZ = 63; /* the uniform zero register: reads as 0, so it is no operand here */

struct Operands {
  int dst[kMaxDst] = {-1, -1};
  int src[kMaxSrc] = {-1, -1, -1, -1, -1};
  int ndst = 0, nsrc = 0;
  int mref = -1;    /* index of the first memory reference, -1 when none */
  int nmref = 0;    /* memory references: LDGSTS has two, the shared destination and then the
                       global source, whose address is the one recorded (nmref - 1) */
  uint64_t imm = 0; /* the last integer immediate, 0 when none */
};

/* Operand 0 is the destination when it is a register; memory references contribute their
 * base register as a source, as Accel-Sim's tracer does; past kMaxDst / kMaxSrc registers
 * are left out. With `uniform`, uniform registers count as registers too, numbered from
 * kUniformBase: `ULDC URn, c[0x0][...]` is how sm_75+ code loads a kernel argument. */
template <class OperandAt>
Operands select_operands(int n, OperandAt operand_at, bool uniform) {
  Operands r;
  for (int i = 0; i < n; i++) {
    const auto *o = operand_at(i);
    using Type = decltype(o->type);
    const bool ureg = uniform && o->type == Type::UREG && o->u.reg.num != kURZ;
    if (o->type == Type::REG || ureg) {
      const int num = o->u.reg.num + (ureg ? kUniformBase : 0);
      if (i == 0 && r.ndst < kMaxDst) r.dst[r.ndst++] = num;
      else if (r.nsrc < kMaxSrc) r.src[r.nsrc++] = num;
    } else if (o->type == Type::MREF) {
      /* its base registers: a general one only when it has one (`ra_num` is 0 otherwise, and
       * the TMA copies `UTMALDG [UR8]` and `SYNCS.EXCH.64 [UR10]` read as sources R0), and with
       * `uniform` the uniform one (`[R2.64+UR4]`, `[UR8]`) */
      if (o->u.mref.has_ra && r.nsrc < kMaxSrc) r.src[r.nsrc++] = o->u.mref.ra_num;
      if (uniform && o->u.mref.has_ur && o->u.mref.ur_num != kURZ && r.nsrc < kMaxSrc)
        r.src[r.nsrc++] = o->u.mref.ur_num + kUniformBase;
      if (r.mref < 0) r.mref = i;
      r.nmref++;
    } else if (o->type == Type::IMM_UINT64) {
      r.imm = o->u.imm_uint64.value;
    }
  }
  return r;
}

}  // namespace gcl
