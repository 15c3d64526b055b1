/*
 * gcl_gate.h -- GCL_TIME_GATE_US: keep a timed launch's start event from firing before
 * the launch itself is queued.
 *
 * Why: GCL_TIME_ONLY records a start event on the launch's stream in the launch
 * callback's entry, and the stream is idle then (the previous launch was synchronized),
 * so the event fires at once. The GPU then waits for the host to finish the launch call
 * (NVBit's and the driver's part), and that wait is inside the measured time: on the
 * H200 it made the tool's times 1.5-5.6x the profilers' for us-scale kernels. The gate
 * is a one-thread kernel queued ahead of the start event that spins on a word in mapped
 * host memory; the exit callback, which runs once the launch is queued, opens it. The
 * start event, the kernel and the stop event then run back to back on the GPU.
 *
 * A launch call that itself waits for the stream to go idle (lazy module loading may
 * synchronize the context while it loads a kernel) would wait for the gate, which waits
 * for the launch call: the gate gives up after its timeout, says so in `timed_out`, and
 * that launch's time includes the wait. EAGER module loading avoids it.
 *
 * The host side is plain C++ over a small driver interface, so that its order of
 * operations is tested on the CPU (test/gate_test.cpp) against a stream emulator.
 */
#pragma once

#include <stdint.h>

namespace gcl {

/* Lives in host memory mapped into the device: the host writes `open`, the gate kernel
 * writes `timed_out`. */
struct GateWords {
  volatile uint32_t open;
  volatile uint32_t timed_out;
};

#ifdef __CUDACC__
__device__ __forceinline__ uint64_t gate_globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* One thread, queued on the launch's stream ahead of its start event. */
__global__ void gate_kernel(GateWords *w, uint64_t timeout_ns) {
  const uint64_t t0 = gate_globaltimer_ns();
  while (!w->open) {
    if (gate_globaltimer_ns() - t0 > timeout_ns) {
      w->timed_out = 1;
      break;
    }
  }
}
#endif

/* Entry of the launch callback, in this order: close the gate, queue the gate kernel,
 * then the start event behind it. `d.launch_gate()` and `d.record_start()` go to the
 * launch's stream. */
template <class Driver>
inline void gate_begin(Driver &d, GateWords *w) {
  w->open = 0;
  w->timed_out = 0;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  d.launch_gate();
  d.record_start();
}

/* Exit of the launch callback (the launch is queued): open the gate before waiting on
 * the stop event, never after, or the wait lasts until the gate's timeout. Returns
 * whether the gate was opened by the host rather than by its timeout. */
template <class Driver>
inline bool gate_end(Driver &d, GateWords *w) {
  __atomic_store_n(&w->open, 1u, __ATOMIC_RELEASE);
  d.record_stop();
  d.sync_stop();
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return w->timed_out == 0;
}

}  // namespace gcl
