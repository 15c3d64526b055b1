/*
 * inject_funcs.cu -- device functions NVBit inserts around every SASS instruction.
 *
 * One thread per warp (the first active lane) pushes the record, after the warp
 * has gathered its lanes' addresses and register values with shuffles, so the
 * channel carries one record per warp-level dynamic instruction, as the
 * Accel-Sim trace layout expects.
 *
 * Compiled by nvcc with -maxrregcount=24 -Xptxas -astoolspatch
 * --keep-device-functions (NVBit's rules for injected code; see the Makefile).
 */
#include <stdarg.h>
#include <stdint.h>

#include "utils/channel.hpp"
#include "gcl_record.h"

__device__ __forceinline__ uint32_t gcl_smid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ uint32_t gcl_laneid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

/* Linear thread index in the CTA divided by the warp size: the warp id Accel-Sim uses. */
__device__ __forceinline__ int gcl_warp_in_cta() {
  int tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  return tid / gcl::kWarpSize;
}

__device__ __forceinline__ bool gcl_in_launch_scope(uint32_t scope) {
  return gcl::in_scope(
      scope, [] { return gcl_smid(); }, [] { return (blockIdx.x | blockIdx.y | blockIdx.z) == 0; },
      [](uint32_t n) { return gcl::cta_linear_mod(blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x, gridDim.y, n); });
}

/* Fill the fields every record kind shares; returns false when this warp is out of scope. */
__device__ __forceinline__ bool gcl_fill_common(gcl::Record &r, int pred, uint32_t launch_sm,
                                                uint32_t pc, uint32_t opcode_id,
                                                uint32_t *active, uint32_t *leader) {
  /* The launch's scope (gcl::launch_scope: an SM, its id share, every SM, or CTA 0) comes as a
   * launch-time value, so changing it needs no re-instrumentation. A CTA never moves
   * between SMs, so all warps of a kept CTA are kept whole. */
  if (!gcl_in_launch_scope(launch_sm)) return false;
  const uint32_t exec = __activemask();
  *active = __ballot_sync(exec, pred);
  /* A warp whose every lane is predicated off (`@P0 EXIT` with no lane exiting) still issues
   * the instruction: ncu's inst_executed counts it and Accel-Sim's tracer records it with mask
   * 0. Dropping it left nw's CTAs 581 instructions in the trace against 591 in the profile.
   * Its record is pushed by the first executing lane, with no addresses' or values' lanes. */
  *leader = __ffs(*active ? *active : exec) - 1;
  r.cta_x = blockIdx.x;
  r.cta_y = blockIdx.y;
  r.cta_z = blockIdx.z;
  r.warp_id = gcl_warp_in_cta();
  r.pc = pc;
  r.active_mask = *active;
  r.opcode_id = opcode_id;
  return true;
}

/* Hand the finished record to the launch's sink: NVBit's channel, or (GCL_BUFFER_MB) a slot
 * of the device buffer, claimed with one atomic; a record past its end is only counted. */
__device__ __forceinline__ void gcl_emit(uint64_t sink, int32_t to_buffer, gcl::Record &r) {
  if (to_buffer) {
    gcl::DeviceBuffer *b = (gcl::DeviceBuffer *)sink;
    const unsigned long long off = atomicAdd(&b->used, (unsigned long long)sizeof(gcl::Record));
    if (off + sizeof(gcl::Record) <= b->capacity)
      memcpy(b->base + off, &r, sizeof(gcl::Record));
    else
      atomicAdd(&b->dropped, 1ull);
  } else {
    ((ChannelDev *)sink)->push(&r, sizeof(r));
  }
}

/* Gather one 32-bit value per lane into out[32]; inactive lanes read as 0. Every lane takes
 * part in the shuffles, but only the leader, who pushes the record, stores: the record lives
 * in local memory, and 32 lanes each writing their own copy was 32x the traffic. */
__device__ __forceinline__ void gcl_gather32(uint32_t exec, uint32_t active, bool lead, uint32_t v, uint32_t *out) {
  for (int lane = 0; lane < gcl::kWarpSize; lane++) {
    uint32_t x = __shfl_sync(exec, v, lane);
    if (lead) out[lane] = (active >> lane) & 1u ? x : 0u;
  }
}

/*
 * BEFORE the instruction: addresses, source values, everything static.
 * The static fields come packed (`info`: gcl::pack_info; register numbers two to a word:
 * gcl::pack_regs), because NVBit faults a call with too many argument words (gcl_record.h);
 * tests/test_tracer_format.py keeps this signature within the words that are known to work.
 * Variadic tail: nsrc 32-bit source register values (only when with_values).
 * pchannel is the ChannelDev, or the gcl::DeviceBuffer when to_buffer.
 */
extern "C" __device__ __noinline__ void gcl_before(
    int pred, uint32_t launch_sm, uint64_t addr, uint64_t imm, uint64_t pchannel, uint32_t pc, uint32_t info,
    int32_t line_num, uint32_t dst01, uint32_t src01, uint32_t src23, uint32_t src4, ...) {
  gcl::Record r;
  uint32_t active, leader;
  if (!gcl_fill_common(r, pred, launch_sm, pc, gcl::info_opcode(info), &active, &leader)) return;
  const uint32_t exec = __activemask();
  const bool lead = gcl_laneid() == leader;
  const int32_t mem_width = gcl::info_mem_width(info), ndst = gcl::info_ndst(info), nsrc = gcl::info_nsrc(info);
  const int32_t with_values = gcl::info_with_values(info), to_buffer = gcl::info_to_buffer(info);
  r.kind = gcl::kBefore;
  r.line_num = line_num;
  r.mem_width = mem_width;
  r.ndst = ndst;
  r.nsrc = nsrc;
  r.dst[0] = gcl::unpack_reg(dst01, 0);
  r.dst[1] = gcl::unpack_reg(dst01, 1);
  r.src[0] = gcl::unpack_reg(src01, 0);
  r.src[1] = gcl::unpack_reg(src01, 1);
  r.src[2] = gcl::unpack_reg(src23, 0);
  r.src[3] = gcl::unpack_reg(src23, 1);
  r.src[4] = gcl::unpack_reg(src4, 0);
  r.imm = imm;
  r.expects_after = gcl::info_expects_after(info);
  r.has_values = with_values;
  if (mem_width > 0) {
    for (int lane = 0; lane < gcl::kWarpSize; lane++) {
      uint64_t a = __shfl_sync(exec, addr, lane);
      if (lead) r.addrs[lane] = (active >> lane) & 1u ? a : 0ull;
    }
  }
  if (with_values) {
    va_list vl;
    va_start(vl, src4);
    for (int s = 0; s < nsrc; s++) {
      uint32_t v = va_arg(vl, uint32_t);
      gcl_gather32(exec, active, lead, v, r.values[ndst + s]);
    }
    va_end(vl);
  }
  if (lead) gcl_emit(pchannel, to_buffer, r);
}

/*
 * AFTER the instruction: the destination values it produced (NVBit cannot insert
 * after control-flow instructions; those have no destination worth reading).
 * Variadic tail: ndst 32-bit destination register values.
 */
extern "C" __device__ __noinline__ void gcl_after(int pred, uint32_t launch_sm, uint32_t opcode_id,
                                                  uint32_t pc, int32_t ndst, int32_t to_buffer, uint64_t pchannel,
                                                  ...) {
  gcl::Record r;
  uint32_t active, leader;
  if (!gcl_fill_common(r, pred, launch_sm, pc, opcode_id, &active, &leader)) return;
  const uint32_t exec = __activemask();
  const bool lead = gcl_laneid() == leader;
  r.kind = gcl::kAfter;
  r.ndst = ndst;
  va_list vl;
  va_start(vl, pchannel);
  for (int d = 0; d < ndst; d++) {
    uint32_t v = va_arg(vl, uint32_t);
    gcl_gather32(exec, active, lead, v, r.values[d]);
  }
  va_end(vl);
  if (lead) gcl_emit(pchannel, to_buffer, r);
}

/*
 * GCL_COUNT_ONLY: one atomic per warp-level instruction issued on the launch's scope, a warp
 * predicated off included (as gcl_fill_common records it). No record, no channel: a probe that
 * instrumented code runs and that the scoping selects what it should, and the count of
 * instructions in scope per launch. `pred` is unused: the signature is the one the tool inserts.
 */
extern "C" __device__ __noinline__ void gcl_count(int pred, uint32_t launch_sm, uint64_t pcounter) {
  if (!gcl_in_launch_scope(launch_sm)) return;
  const uint32_t exec = __activemask();
  if (gcl_laneid() == (uint32_t)(__ffs(exec) - 1))
    atomicAdd((unsigned long long *)pcounter, 1ull);
}
