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
  uint32_t active_mask; /* lanes executing the instruction (guard predicate applied) */
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
