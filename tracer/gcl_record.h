/*
 * gcl_record.h -- the one record the injected device code pushes per warp-level
 * dynamic instruction, and the host thread formats to text.
 *
 * Plain C++ (no CUDA, no NVBit) so that the formatter and its test program build
 * with g++ alone; the device side includes it too, so both sides agree on the
 * layout byte for byte.
 */
#pragma once

#include <stdint.h>

namespace gcl {

constexpr int kWarpSize = 32;
constexpr int kMaxDst = 2;  /* SASS writes at most 2 register operands per instruction */
constexpr int kMaxSrc = 5;  /* register sources we record (Accel-Sim accepts 4; export checks) */
constexpr int kMaxOps = kMaxDst + kMaxSrc;
/* Register numbers at or above this are uniform registers (UR<n - kUniformBase>), the
 * numbering gclsampler's reader gives them: kernel arguments reach sm_75+ code through
 * `ULDC URn, c[0x0][...]`, so a trace without them has no kernel arguments in it. */
constexpr int kUniformBase = 256;

/* What a record carries. A BEFORE record has everything but the destination
 * values (they do not exist yet); the AFTER record of the same warp and PC, when
 * the instruction has a destination and is not a control-flow instruction, brings
 * them. The host merges the two before formatting. */
enum RecordKind : int32_t {
  kBefore = 0,
  kAfter = 1,
  kKernelEnd = 2, /* pushed by the flush kernel: every record of the launch has arrived */
};

struct Record {
  int32_t kind;
  int32_t cta_x, cta_y, cta_z;
  int32_t warp_id;      /* warp index inside its CTA: threadIdx linear / 32 */
  int32_t line_num;     /* source line, 0 when the binary has no line info */
  uint32_t pc;          /* offset of the instruction inside its function */
  uint32_t active_mask; /* lanes executing the instruction (guard predicate applied; 0 when the
                           whole warp is predicated off, which still issues it) */
  uint32_t opcode_id;   /* index into the host's opcode table */
  int32_t mem_width;    /* bytes per lane, 0 when not a memory instruction */
  int32_t ndst, nsrc;
  int32_t dst[kMaxDst]; /* register numbers, 255 = RZ, kUniformBase + n = URn */
  int32_t src[kMaxSrc];
  int32_t has_values;   /* 1 when values[] holds register operand values */
  int32_t expects_after; /* 1 when an AFTER record will bring the destination values */
  uint64_t imm;         /* immediate operand (e.g. DEPBAR count), 0 when absent */
  uint64_t addrs[kWarpSize]; /* one address per lane; only active lanes are meaningful */
  /* values[op][lane]: destinations first (after execution), then sources (before
   * execution); only active lanes are meaningful. */
  uint32_t values[kMaxOps][kWarpSize];
};

#if defined(__CUDACC__)
#define GCL_HD __host__ __device__ __forceinline__
#else
#define GCL_HD inline
#endif

/* The static fields of one instruction, packed into few 32-bit words for gcl_before.
 *
 * Why: NVBit hands an injected call its arguments in a small fixed space, and a call with
 * too many faults every instrumented launch with an illegal address (NVlabs/NVBit#160;
 * seen on an H200 with NVBit 1.7.7.3: 19 scalars and three 64-bit values failed, the
 * 3-argument counting call ran). Packed, gcl_before takes 15 words before its register
 * values, fewer than Accel-Sim's tracer (22), with every 64-bit argument on an even word.
 *
 * info: opcode_id (16 bits) | mem_width (8) | ndst (2) | nsrc (3) | expects_after (1) |
 * with_values (1) | to_buffer (1). Register pairs: two 16-bit signed numbers (-1 = none). */
constexpr uint32_t kMaxOpcodeIds = 1u << 16;
constexpr int32_t kMaxPackedWidth = 255;

GCL_HD uint32_t pack_info(uint32_t opcode_id, int32_t mem_width, int32_t ndst, int32_t nsrc, int32_t expects_after,
                          int32_t with_values, int32_t to_buffer) {
  return (opcode_id & 0xffffu) | ((uint32_t)mem_width & 0xffu) << 16 | ((uint32_t)ndst & 3u) << 24 |
         ((uint32_t)nsrc & 7u) << 26 | (expects_after ? 1u : 0u) << 29 | (with_values ? 1u : 0u) << 30 |
         (to_buffer ? 1u : 0u) << 31;
}
GCL_HD uint32_t info_opcode(uint32_t w) { return w & 0xffffu; }
GCL_HD int32_t info_mem_width(uint32_t w) { return (int32_t)((w >> 16) & 0xffu); }
GCL_HD int32_t info_ndst(uint32_t w) { return (int32_t)((w >> 24) & 3u); }
GCL_HD int32_t info_nsrc(uint32_t w) { return (int32_t)((w >> 26) & 7u); }
GCL_HD int32_t info_expects_after(uint32_t w) { return (int32_t)((w >> 29) & 1u); }
GCL_HD int32_t info_with_values(uint32_t w) { return (int32_t)((w >> 30) & 1u); }
GCL_HD int32_t info_to_buffer(uint32_t w) { return (int32_t)((w >> 31) & 1u); }

GCL_HD uint32_t pack_regs(int32_t lo, int32_t hi) {
  return (uint32_t)(uint16_t)(int16_t)lo | (uint32_t)(uint16_t)(int16_t)hi << 16;
}
GCL_HD int32_t unpack_reg(uint32_t w, int half) { return (int32_t)(int16_t)(uint16_t)(w >> (16 * half)); }

/* Which warps a launch records: its scope, passed to the injected code as the launch-time
 * value (so it changes per launch without re-instrumenting).
 *
 * Why a scope other than the SM: GCL-Sampler traces "a single representative SM per kernel
 * invocation". A launch with fewer CTAs than the GPU has SMs puts at most one CTA on each SM
 * it uses, and which SMs it uses is the block scheduler's choice in that run: on an H200 SM 0
 * ran no CTA of 631 of the 2-layer LLM's 1058 launches (1-CTA elementwise kernels, mostly), so
 * their SM-0 traces were a header alone, and two launches of one kernel could get one CTA or
 * none. For such a launch the representative SM's view is one CTA, and CTA 0 is the one CTA
 * that is there in every run. gclsampler's synthesizer, whose round-robin scheduler puts CTA 0
 * on SM 0, records the same CTA. */
constexpr uint32_t kScopeAllSms = 0xffffffffu; /* GCL_TRACE_SM=-1: every warp */
constexpr uint32_t kScopeFirstCta = 0xfffffffeu; /* the CTA at blockIdx (0,0,0), wherever it runs */
/* No warp: the launch value of a CUDA-graph node replaying an instrumented kernel, which no
 * launch callback opened a trace for. in_scope compares it with the SM id, which never
 * reaches it, so the injected code needs no branch of its own for it. */
constexpr uint32_t kScopeNone = 0xfffffffdu;

/* GCL_CTA_SCOPE=id: the CTAs of SM `trace_sm`'s round-robin share, chosen by their linear id
 * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) rather than by where they
 * ran. Why: only the traced SM's warps pay the recording cost, so in a grid of several waves
 * the other SMs drain the grid faster and the traced SM runs fewer CTAs than it would
 * unperturbed (pass 6: vecadd's 4096 CTAs gave SM 0 8 CTAs when traced, 15-16 when only
 * counted, against 4096 / 132 = 31 round-robin). The id share is the same in every run, has
 * the round-robin size, spreads over the whole grid, and is the set gclsampler's synthesizer
 * puts on SM 0. The encoding: bit 31 set, the SM count in bits 16-30, the residue in bits
 * 0-15. The reserved scopes above all have bits 16-30 set, so an SM count below 0x7fff never
 * collides with them. */
constexpr uint32_t kScopeByIdBit = 0x80000000u;
constexpr int kScopeByIdMaxSms = 0x7ffe;

GCL_HD bool scope_is_by_id(uint32_t scope) {
  return (scope & kScopeByIdBit) && scope != kScopeAllSms && scope != kScopeFirstCta && scope != kScopeNone;
}
GCL_HD uint32_t scope_by_id(uint32_t n_sms, uint32_t residue) {
  return kScopeByIdBit | (n_sms << 16) | residue;
}
GCL_HD uint32_t scope_id_sms(uint32_t scope) { return (scope >> 16) & 0x7fffu; }
GCL_HD uint32_t scope_id_residue(uint32_t scope) { return scope & 0xffffu; }

/* The scope of one launch: trace_sm < 0 keeps every SM; a grid of fewer CTAs than the GPU's
 * SMs keeps CTA 0 when small_grid_cta0 is set (and the SM count is known); otherwise the SM,
 * by its id share when by_id is set and the SM count is known (1 .. kScopeByIdMaxSms, with
 * trace_sm below it), else by %smid. */
GCL_HD uint32_t launch_scope(int64_t trace_sm, uint64_t grid_ctas, int n_sms, bool small_grid_cta0,
                             bool by_id = false) {
  if (trace_sm < 0) return kScopeAllSms;
  if (small_grid_cta0 && n_sms > 0 && grid_ctas < (uint64_t)n_sms) return kScopeFirstCta;
  if (by_id && n_sms > 0 && n_sms <= kScopeByIdMaxSms && trace_sm < n_sms)
    return scope_by_id((uint32_t)n_sms, (uint32_t)trace_sm);
  return (uint32_t)trace_sm;
}

/* A CTA's linear id modulo n (1 <= n <= kScopeByIdMaxSms) in 32-bit arithmetic: the linear id
 * of a grid of up to (2^31-1) x 65535 x 65535 CTAs does not fit in 32 bits, and a 64-bit
 * remainder is a long subroutine on the GPU, run before every instruction of every warp.
 * (bz * gy + by) fits in 32 bits, and each later product of two remainders stays below 2^30. */
GCL_HD uint32_t cta_linear_mod(uint32_t bx, uint32_t by, uint32_t bz, uint32_t gx, uint32_t gy, uint32_t n) {
  const uint32_t zy = (bz * gy + by) % n;
  return (zy * (gx % n) + bx % n) % n;
}

/* Whether a warp is inside `scope`: smid() its SM, first_cta() whether its CTA is at blockIdx
 * (0,0,0), cta_mod(n) its CTA's linear id modulo n. Each is read only when the scope needs it:
 * the injected code runs before every instruction of every warp, and reading the CTA index up
 * front in every launch made gcl_before spill 76 bytes of registers instead of 20 (ptxas -v,
 * sm_90; 28 read lazily). The id scope's remainders, inline, take it to 36 (out of line, the
 * call took it to 88). */
template <class SmId, class FirstCta, class CtaMod>
GCL_HD bool in_scope(uint32_t scope, SmId smid, FirstCta first_cta, CtaMod cta_mod) {
  if (scope == kScopeAllSms) return true;
  if (scope == kScopeFirstCta) return first_cta();
  if (scope_is_by_id(scope)) return cta_mod(scope_id_sms(scope)) == scope_id_residue(scope);
  return smid() == scope;
}

/* GCL_BUFFER_MB: the other way records leave the GPU. The injected code claims a slot with
 * one atomic and copies the record into device memory; the host copies the launch's records
 * back after it ends. Nothing on the host polls while the kernel runs (no channel, no
 * doorbell, no receiving thread), at the price of a fixed capacity: records past it are
 * counted in `dropped`, never written over each other. */
struct DeviceBuffer {
  unsigned char *base;            /* cudaMalloc'd, `capacity` bytes */
  unsigned long long capacity;    /* a whole number of records */
  unsigned long long used;        /* bytes claimed this launch (may pass capacity) */
  unsigned long long dropped;     /* records that did not fit */
};

}  // namespace gcl
