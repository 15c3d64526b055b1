/* NVBit API differences between releases, resolved at compile time.
 *
 * Why: many Accel-Sim users still run NVBit 1.7.1, whose launch-value call is
 *     void nvbit_set_at_launch(CUcontext ctx, CUfunction func, uint64_t value);
 * while later 1.7.x releases take the launch's stream as a fourth argument. The tool
 * must build against both. NVBIT_VERSION is a string literal ("1.7.1"), which the
 * preprocessor cannot compare, so the declaration in the nvbit.h being compiled
 * against is detected instead: overload resolution tries the four-argument call first
 * (int beats long) and drops it by SFINAE when that nvbit.h has no such overload.
 * Include this header after nvbit.h.
 */
#pragma once
#include <stdint.h>

namespace gcl_compat {

template <typename Ctx, typename Func, typename Stream>
auto set_at_launch(int, Ctx ctx, Func func, uint64_t value, Stream stream)
    -> decltype(nvbit_set_at_launch(ctx, func, value, stream), void()) {
  nvbit_set_at_launch(ctx, func, value, stream); /* NVBit releases after 1.7.1 */
}

template <typename Ctx, typename Func, typename Stream>
auto set_at_launch(long, Ctx ctx, Func func, uint64_t value, Stream)
    -> decltype(nvbit_set_at_launch(ctx, func, value), void()) {
  nvbit_set_at_launch(ctx, func, value); /* NVBit 1.7.1: no stream argument */
}

/* A graph node's launch value takes the node's launch handle, which only releases that have
 * nvbit_at_graph_node_launch accept; elsewhere there is no node to set it for. */
template <typename Ctx, typename Func, typename Stream>
auto set_at_graph_node(int, Ctx ctx, Func func, uint64_t value, Stream stream, uint64_t handle)
    -> decltype(nvbit_set_at_launch(ctx, func, value, stream, handle), bool()) {
  nvbit_set_at_launch(ctx, func, value, stream, handle);
  return true;
}

template <typename Ctx, typename Func, typename Stream>
bool set_at_graph_node(long, Ctx, Func, uint64_t, Stream, uint64_t) {
  return false;
}

}  // namespace gcl_compat

/* nvbit_set_at_launch with the stream where the NVBit release takes one. */
#define GCL_SET_AT_LAUNCH(ctx, func, value, stream) gcl_compat::set_at_launch(0, (ctx), (func), (value), (stream))
/* nvbit_set_at_launch for one CUDA-graph node, where the release can; false where it cannot. */
#define GCL_SET_AT_GRAPH_NODE(ctx, func, value, stream, handle) \
  gcl_compat::set_at_graph_node(0, (ctx), (func), (value), (stream), (handle))
