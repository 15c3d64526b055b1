/*
 * operands_test.cpp -- gcl::select_operands against hand-made operand lists shaped like
 * NVBit's InstrType::operand_t, for the SASS forms the tool meets.
 *
 *   operands_test   exit 0 when every case holds, else one line per failed case
 */
#include <stdint.h>
#include <stdio.h>

#include <initializer_list>
#include <vector>

#include "gcl_operands.h"

/* the parts of NVBit's operand_t that select_operands reads */
struct MockOperand {
  enum class OperandType { IMM_UINT64, IMM_DOUBLE, REG, PRED, UREG, UPRED, CBANK, MREF, GENERIC, MEM_DESC };
  OperandType type;
  union {
    struct { uint64_t value; } imm_uint64;
    struct { int num; } reg;
    struct { bool has_ra; int ra_num; bool has_ur; int ur_num; } mref;
  } u;
};
using T = MockOperand::OperandType;

static MockOperand reg(int n) { MockOperand o{T::REG, {}}; o.u.reg.num = n; return o; }
static MockOperand ureg(int n) { MockOperand o{T::UREG, {}}; o.u.reg.num = n; return o; }
/* NVBit leaves ra_num 0 when the reference has no general register: -1 here means none */
static MockOperand mref(int ra, int ur = -1) {
  MockOperand o{T::MREF, {}};
  o.u.mref.has_ra = ra >= 0;
  o.u.mref.ra_num = ra >= 0 ? ra : 0;
  o.u.mref.has_ur = ur >= 0;
  o.u.mref.ur_num = ur >= 0 ? ur : 0;
  return o;
}
static MockOperand imm(uint64_t v) { MockOperand o{T::IMM_UINT64, {}}; o.u.imm_uint64.value = v; return o; }
static MockOperand other(T t) { MockOperand o{t, {}}; o.u.reg.num = 0; return o; }

static int failures = 0;
static void expect(const char *sass, std::vector<MockOperand> ops, bool uniform, std::initializer_list<int> dst,
                   std::initializer_list<int> src, int mref_at, uint64_t imm_value) {
  const gcl::Operands r = gcl::select_operands((int)ops.size(), [&](int i) { return &ops[i]; }, uniform);
  bool ok = r.ndst == (int)dst.size() && r.nsrc == (int)src.size() && r.mref == mref_at && r.imm == imm_value;
  int k = 0;
  for (int d : dst) ok = ok && r.dst[k++] == d;
  k = 0;
  for (int s : src) ok = ok && r.src[k++] == s;
  if (!ok) {
    fprintf(stderr, "FAILED: %s (uniform %d): got %d dst, %d src, mref %d, imm %llu\n", sass, uniform, r.ndst,
            r.nsrc, r.mref, (unsigned long long)r.imm);
    failures++;
  }
}

int main() {
  const int U = gcl::kUniformBase;
  /* a kernel argument: the uniform destination is what carries its value */
  expect("ULDC UR4, c[0x0][0x160]", {ureg(4), other(T::CBANK)}, true, {U + 4}, {}, -1, 0);
  expect("ULDC UR4, c[0x0][0x160]", {ureg(4), other(T::CBANK)}, false, {}, {}, -1, 0);
  /* a uniform source between general ones keeps its place */
  expect("IMAD R0, R1, UR4, R2", {reg(0), reg(1), ureg(4), reg(2)}, true, {0}, {1, U + 4, 2}, -1, 0);
  expect("IMAD R0, R1, UR4, R2", {reg(0), reg(1), ureg(4), reg(2)}, false, {0}, {1, 2}, -1, 0);
  /* URZ reads as 0: no operand */
  expect("UIADD3 UR5, UR4, 0x10, URZ", {ureg(5), ureg(4), imm(16), ureg(gcl::kURZ)}, true, {U + 5}, {U + 4}, -1, 16);
  /* RZ stays, as Accel-Sim's tracer writes it (R255) */
  expect("IADD3 R1, R2, RZ, RZ", {reg(1), reg(2), reg(255), reg(255)}, true, {1}, {2, 255, 255}, -1, 0);
  /* a load: the memory reference's base register is a source */
  expect("LDG.E R4, [R2.64]", {reg(4), mref(2)}, true, {4}, {2}, 1, 0);
  expect("STG.E [R2.64], R4", {mref(2), reg(4)}, true, {}, {2, 4}, 0, 0);
  /* LDGSTS: two memory references, shared destination then global source; both base
   * registers are sources, and the address recorded is the last reference's */
  {
    std::vector<MockOperand> ops = {mref(5), mref(2)};
    const gcl::Operands r = gcl::select_operands(2, [&](int i) { return &ops[i]; }, true);
    if (!(r.mref == 0 && r.nmref == 2 && r.nsrc == 2 && r.src[0] == 5 && r.src[1] == 2)) {
      fprintf(stderr, "FAILED: LDGSTS [R5+0x800], [R2.64]: mref %d, nmref %d\n", r.mref, r.nmref);
      failures++;
    }
  }
  /* a reference through a uniform register only (TMA, SYNCS): no general base, so no R0 */
  expect("UTMALDG.3D [UR8], [UR4]", {mref(-1, 8), mref(-1, 4)}, true, {}, {U + 8, U + 4}, 0, 0);
  expect("UTMALDG.3D [UR8], [UR4]", {mref(-1, 8), mref(-1, 4)}, false, {}, {}, 0, 0);
  expect("SYNCS.EXCH.64 URZ, [UR10], UR4", {ureg(gcl::kURZ), mref(-1, 10), ureg(4)}, true, {}, {U + 10, U + 4}, 1, 0);
  /* both bases: the general one first, then the uniform one */
  expect("LDG.E R4, [R2.64+UR6]", {reg(4), mref(2, 6)}, true, {4}, {2, U + 6}, 1, 0);
  expect("LDG.E R4, [R2.64+UR6]", {reg(4), mref(2, 6)}, false, {4}, {2}, 1, 0);
  expect("LDS R4, [R2+URZ]", {reg(4), mref(2, gcl::kURZ)}, true, {4}, {2}, 1, 0);
  /* predicates and constant-bank operands are no registers here */
  expect("ISETP.GE.AND P0, PT, R0, c[0x0][0x168], PT",
         {other(T::PRED), other(T::PRED), reg(0), other(T::CBANK), other(T::PRED)}, true, {}, {0}, -1, 0);
  /* past kMaxSrc sources the rest are left out */
  expect("six sources", {reg(0), reg(1), reg(2), ureg(3), reg(4), reg(5), reg(6)}, true, {0}, {1, 2, U + 3, 4, 5}, -1, 0);
  if (failures == 0) printf("operands: all cases hold\n");
  return failures ? 1 : 0;
}
