/*
 * gcl_tracer.cu -- NVBit tool that writes gclsampler traces (Accel-Sim raw layout
 * plus gclsampler's per-lane register-value extension) and per-kernel wall times.
 *
 *   LD_PRELOAD=/path/to/gcl_tracer.so ./app
 *   gclsampler trace group traces/ workload/   # raw kernel-N.trace -> grouped .traceg
 *
 * Environment (read once at start, see README.md):
 *   GCL_TRACE_DIR            output directory                       (./traces)
 *   GCL_TRACE_SM             keep only CTAs resident on this SM id  (-1 = all SMs)
 *   GCL_SMALL_GRID           cta0: a launch with fewer CTAs than SMs keeps CTA 0 instead of
 *                            the SM (gcl_record.h, launch_scope); sm: always the SM  (cta0)
 *   GCL_CTA_SCOPE            sm: the CTAs that ran on GCL_TRACE_SM (%smid); id: those whose
 *                            linear id is GCL_TRACE_SM modulo the SM count, the same in
 *                            every run (gcl_record.h, kScopeByIdBit)  (sm)
 *   GCL_KERNEL_BEGIN/END     invocation id range to trace, 1-based  (1 .. unlimited)
 *   GCL_KERNEL_FILTER        ECMAScript regex on the mangled or demangled kernel name
 *   GCL_MAX_INSTS_PER_WARP   cap on records written per warp        (0 = no cap)
 *   GCL_VALUES               1: record register values (extension)  (1)
 *   GCL_COMPRESS             none | zstd | xz | gz                  (zstd)
 *   GCL_TIME_ONLY            1: no instrumentation, only wall times -> profile.csv
 *   GCL_LINEINFO             1: prefix line numbers (binary built with -lineinfo)
 *   GCL_VERBOSE              1: one stderr line per launch with its phase times
 *   GCL_COUNT_ONLY           1: count warp instructions per launch -> counts.csv, no trace
 *   GCL_BUFFER_MB            >0: records go to a device buffer of this many MiB, copied back
 *                            after each launch, instead of NVBit's channel   (0 = channel)
 *   GCL_UNIFORM              1: with values on, record uniform-register operands (URn) too  (1)
 *   GCL_TIME_GATE_US         >0, with GCL_TIME_ONLY: hold each launch's start event until the
 *                            launch is queued (gcl_gate.h), giving up after this many us (0 = off)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "nvbit.h"
#include "nvbit_compat.h"
#include "nvbit_tool.h"
#include "utils/channel.hpp"

#include "gcl_env.h"
#include "gcl_format.h"
#include "gcl_gate.h"
#include "gcl_launch.h"
#include "gcl_operands.h"
#include "gcl_output.h"
#include "gcl_record.h"

#define GCL_CHANNEL_BYTES (1 << 22)

/* Both live in managed memory allocated in tool_setup, as NVBit >= 1.7's own tools do,
 * rather than in `__managed__` globals: the host-side address of a `__managed__` variable
 * is only bound to its device storage once the tool's module is loaded, which lazy module
 * loading (CUDA >= 12.2's default) defers, and the injected code is handed that address.
 * An allocation has one address for host, injected code and flush kernel alike. */
static ChannelDev *channel_dev = nullptr;
/* GCL_COUNT_ONLY: warp-level instructions executed on the scoped SM(s) by the launch */
static unsigned long long *gcl_warp_insts = nullptr;
/* GCL_BUFFER_MB: the device buffer (managed struct, device-memory records) */
static gcl::DeviceBuffer *dev_buffer = nullptr;
static ChannelHost channel_host;
/* GCL_TIME_GATE_US: the gate's words in mapped host memory, as the host and the device see them */
static gcl::GateWords *gate_host = nullptr, *gate_dev = nullptr;
static uint64_t gate_timeouts = 0, gate_first_timeout = 0;

/* ---- configuration ----------------------------------------------------------- */
struct Options {
  std::string dir = "traces";
  int64_t trace_sm = -1;
  bool small_grid_cta0 = true; /* GCL_SMALL_GRID=cta0 */
  bool cta_scope_id = false; /* GCL_CTA_SCOPE=id */
  uint64_t kernel_begin = 1, kernel_end = UINT64_MAX;
  std::string filter;
  uint64_t max_insts_per_warp = 0;
  int values = 1;
  int uniform = 1; /* GCL_UNIFORM: URn operands and values (only with values on) */
  std::string compress = "zstd";
  int time_only = 0;
  int lineinfo = 0;
  int verbose = 0; /* GCL_VERBOSE=1: per-launch phase times on stderr */
  int count_only = 0; /* GCL_COUNT_ONLY=1: count instructions, record nothing (no channel) */
  uint64_t buffer_mb = 0; /* GCL_BUFFER_MB: device buffer instead of the channel */
  uint64_t time_gate_us = 0; /* GCL_TIME_GATE_US: gate's timeout; 0 = start events ungated */
};
static Options opt;
static std::regex filter_re;

static std::string env_str(const char *name, const std::string &dflt) {
  const char *v = getenv(name);
  return v && *v ? std::string(v) : dflt;
}
/* ---- per-launch state (the receiving thread writes, the launch callback waits) --- */
struct Launch {
  FILE *out = nullptr;
  std::string path; /* of `out`, for the line said when it is not whole */
  bool piped = false;
  gcl::WarpMerger merger;                               /* BEFORE + AFTER halves per warp */
  /* (CTA x, y, z, warp) -> records written; a tuple, since the shifted-and-xored key it
   * replaced made CTA (0,1,0) and (0,0,4096) one warp, sharing GCL_MAX_INSTS_PER_WARP's budget */
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t>, uint64_t> written;
  uint64_t records = 0, dropped_by_cap = 0;
};
static Launch cur;
static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile bool kernel_done = false;
static volatile bool recv_running = false;

static std::vector<std::string> opcode_table;
static std::map<std::string, uint32_t> opcode_ids;
static std::unordered_set<CUfunction> instrumented;
static uint64_t invocation_id = 0; /* 1-based, every launch counts, traced or not */
static bool skip_callbacks = false;
static FILE *profile_csv = nullptr;
static FILE *kernelslist = nullptr;
static FILE *counts_csv = nullptr;
static int clock_khz = 0;
static int n_sms = 0; /* the GPU's SM count, for GCL_SMALL_GRID; 0 (unknown) keeps the SM scope */

static void emit(const gcl::Record &r) {
  uint64_t &n = cur.written[std::make_tuple(r.cta_x, r.cta_y, r.cta_z, r.warp_id)];
  if (opt.max_insts_per_warp && n >= opt.max_insts_per_warp) {
    cur.dropped_by_cap++;
    return;
  }
  n++;
  cur.records++;
  std::string line;
  gcl::format_raw_record(r, opcode_table, opt.lineinfo != 0, line);
  fwrite(line.data(), 1, line.size(), cur.out);
}

/* Host thread: merge BEFORE/AFTER halves per warp and format in arrival order. A
 * warp's records arrive in its program order, so grouping by warp later (gclsampler
 * trace group) recovers each warp's temporal order. */
static void *recv_loop(void *) {
  char *buf = (char *)malloc(GCL_CHANNEL_BYTES);
  while (recv_running) {
    uint32_t n = channel_host.recv(buf, GCL_CHANNEL_BYTES);
    uint32_t off = 0;
    while (off + sizeof(gcl::Record) <= n) {
      gcl::Record *r = (gcl::Record *)(buf + off);
      off += sizeof(gcl::Record);
      pthread_mutex_lock(&launch_mu);
      if (r->kind == gcl::kKernelEnd) {
        cur.merger.flush(emit);
        kernel_done = true;
      } else if (cur.out) {
        cur.merger.push(*r, emit);
      }
      pthread_mutex_unlock(&launch_mu);
    }
  }
  free(buf);
  return nullptr;
}

/* GCL_BUFFER_MB: after the launch, copy its records back in chunks and merge and write them
 * in the order their slots were claimed (a warp's own records in its program order, as on
 * the channel); then empty the buffer for the next launch. */
static cudaError_t drain_copy_error = cudaSuccess; /* the first failed chunk copy of this drain */

static void drain_device_buffer() {
  const unsigned long long used = dev_buffer->used, dropped = dev_buffer->dropped;
  drain_copy_error = cudaSuccess;
  static std::vector<gcl::Record> staging((64u << 20) / sizeof(gcl::Record)); /* 64 MiB chunks */
  pthread_mutex_lock(&launch_mu);
  gcl::drain_buffer(
      used, dev_buffer->capacity, staging,
      [](gcl::Record *dst, unsigned long long off, unsigned long long len) {
        const cudaError_t e = cudaMemcpy(dst, dev_buffer->base + off, len, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess && drain_copy_error == cudaSuccess) drain_copy_error = e;
      },
      [](const gcl::Record &r) {
        if (cur.out && drain_copy_error == cudaSuccess) cur.merger.push(r, emit); /* not a failed copy's bytes */
      });
  cur.merger.flush(emit);
  kernel_done = true;
  pthread_mutex_unlock(&launch_mu);
  /* A chunk that did not copy back left the staging buffer's stale bytes to be written as this
   * launch's records: stop, as a failed channel flush does, outside the lock as that path is. */
  if (drain_copy_error != cudaSuccess) {
    fprintf(stderr, "gcl_tracer: launch %llu: copying its records back from GCL_BUFFER_MB's buffer failed: %s; "
            "its trace would hold stale records\n", (unsigned long long)invocation_id,
            cudaGetErrorString(drain_copy_error));
    exit(1);
  }
  if (dropped)
    fprintf(stderr, "gcl_tracer: kernel %llu: %llu records did not fit GCL_BUFFER_MB=%llu and are missing from "
            "its trace; rerun with a larger GCL_BUFFER_MB\n", (unsigned long long)invocation_id,
            (unsigned long long)dropped, (unsigned long long)opt.buffer_mb);
  dev_buffer->used = 0;
  dev_buffer->dropped = 0;
}

__global__ void gcl_flush_channel(ChannelDev *ch) {
  gcl::Record r;
  r.kind = gcl::kKernelEnd;
  ch->push(&r, sizeof(r));
  ch->flush();
}

/* GCL_TRACE_DIR with its parents, as `mkdir -p`: a missing parent used to leave every
 * output file unopened and the application to crash at its first write (rc 139). */
static void make_dirs(const std::string &dir) {
  for (size_t i = 1; i <= dir.size(); i++)
    if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0755);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "gcl_tracer: GCL_TRACE_DIR=%s cannot be made (%s)\n", dir.c_str(), strerror(errno));
    exit(2);
  }
}

/* an output file of the tool's own, or one line naming it and exit status 2 */
static FILE *open_output(const std::string &path) {
  FILE *f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "gcl_tracer: cannot write %s (%s)\n", path.c_str(), strerror(errno));
    exit(2);
  }
  return f;
}

/* ---- NVBit callbacks ----------------------------------------------------------- */
void nvbit_at_init() {
  setenv("CUDA_MANAGED_FORCE_DEVICE_ALLOC", "1", 1);
  opt.dir = env_str("GCL_TRACE_DIR", opt.dir);
  opt.trace_sm = gcl::env_int("GCL_TRACE_SM", -1, -1, INT32_MAX, "-1 (every SM) or an SM id");
  const std::string small_grid = env_str("GCL_SMALL_GRID", "cta0");
  if (small_grid != "cta0" && small_grid != "sm") {
    fprintf(stderr, "gcl_tracer: GCL_SMALL_GRID must be cta0 or sm, not %s\n", small_grid.c_str());
    exit(2);
  }
  opt.small_grid_cta0 = small_grid == "cta0";
  const std::string cta_scope = env_str("GCL_CTA_SCOPE", "sm");
  if (cta_scope != "sm" && cta_scope != "id") {
    fprintf(stderr, "gcl_tracer: GCL_CTA_SCOPE must be sm or id, not %s\n", cta_scope.c_str());
    exit(2);
  }
  opt.cta_scope_id = cta_scope == "id";
  opt.kernel_begin = (uint64_t)gcl::env_int("GCL_KERNEL_BEGIN", 1, 1, INT64_MAX, "a launch number (launches count from 1)");
  int64_t end = gcl::env_int("GCL_KERNEL_END", 0, 0, INT64_MAX, "0 (no end) or a launch number");
  opt.kernel_end = end > 0 ? (uint64_t)end : UINT64_MAX;
  const std::string range = gcl::kernel_range_error((int64_t)opt.kernel_begin, end);
  if (!range.empty()) {
    fprintf(stderr, "gcl_tracer: %s\n", range.c_str());
    exit(2);
  }
  opt.filter = env_str("GCL_KERNEL_FILTER", "");
  opt.max_insts_per_warp = gcl::env_count("GCL_MAX_INSTS_PER_WARP", "0 (no cap) or an instruction count");
  opt.values = gcl::env_flag("GCL_VALUES", 1);
  /* Uniform registers are gclsampler's (Accel-Sim's parser reads R<n> only): they come with
   * the value extension, so GCL_VALUES=0 still writes plain Accel-Sim traces. */
  /* read even with GCL_VALUES=0, so that a bad value is refused there too (it was never read) */
  const int uniform = gcl::env_flag("GCL_UNIFORM", 1);
  opt.uniform = opt.values && uniform;
  opt.compress = env_str("GCL_COMPRESS", "zstd");
  opt.time_only = gcl::env_flag("GCL_TIME_ONLY", 0);
  opt.lineinfo = gcl::env_flag("GCL_LINEINFO", 0);
  opt.verbose = gcl::env_flag("GCL_VERBOSE", 0);
  opt.count_only = gcl::env_flag("GCL_COUNT_ONLY", 0);
  opt.buffer_mb = gcl::env_count("GCL_BUFFER_MB", "0 (NVBit's channel) or a size in MiB, at most 16777216",
                                 gcl::kMaxBufferMb);
  opt.time_gate_us = gcl::env_count("GCL_TIME_GATE_US", "0 (off) or the gate's timeout in microseconds",
                                    INT64_MAX / 1000); /* x 1000 in ns must fit */
  if (opt.time_gate_us && !opt.time_only)
    fprintf(stderr, "gcl_tracer: GCL_TIME_GATE_US applies to GCL_TIME_ONLY runs only; ignored\n");
  if (!opt.filter.empty()) {
    try {
      filter_re = std::regex(opt.filter, std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      fprintf(stderr, "gcl_tracer: GCL_KERNEL_FILTER=%s is not a valid regex: %s\n", opt.filter.c_str(), e.what());
      exit(2);
    }
  }
  if (opt.compress != "none" && opt.compress != "zstd" && opt.compress != "xz" && opt.compress != "gz") {
    fprintf(stderr, "gcl_tracer: GCL_COMPRESS must be none, zstd, xz or gz, not %s\n", opt.compress.c_str());
    exit(2);
  }
  if (opt.compress != "none" && !opt.time_only && !opt.count_only) { /* gcl_output.h says why */
    const std::string prog = gcl::compressor_program(opt.compress);
    const char *path = getenv("PATH");
    if (!gcl::on_path(prog, path ? path : "")) {
      fprintf(stderr, "gcl_tracer: GCL_COMPRESS=%s, but %s is not on PATH; install it or set GCL_COMPRESS=none\n",
              opt.compress.c_str(), prog.c_str());
      exit(2);
    }
  }
  make_dirs(opt.dir);
}

static int live_contexts = 0; /* between nvbit_at_ctx_init and nvbit_at_ctx_term */
static bool files_open = false;
static bool contexts_ended = false; /* a context was made after every earlier one had ended */
static bool tool_ready = false; /* tool_setup ran in a live context */
static CUcontext setup_ctx = nullptr; /* the context tool_setup allocated the channel, buffer or counter in */

/* Only plain host work here: NVBit >= 1.7 calls this while the context is being
 * created, and a CUDA allocation from inside it (the channel's buffers) deadlocks the
 * application before its first launch. The files are opened now because
 * MemcpyHtoD lines reach kernelslist before any launch. */
void nvbit_at_ctx_init(CUcontext ctx) {
  live_contexts++;
  /* A second context (another GPU, or the application's own cuCtxCreate) used to open every
   * file again with "w", truncating all that was written so far. One process writes one set
   * of files; the invocation numbering runs on across contexts. */
  if (files_open) {
    if (live_contexts == 1 && tool_ready) {
      /* every earlier context ended (cudaDeviceReset, cuCtxDestroy), and what tool_setup
       * allocated in it went with it: the channel, the buffer, the counter, the gate */
      if (opt.time_only) {
        tool_ready = false; /* the gate is allocated again, in this context */
      } else if (!contexts_ended) {
        fprintf(stderr, "gcl_tracer: a CUDA context made after the first one ended (cudaDeviceReset?): the tool's "
                "channel ended with it, so launches from here on are timed but not traced\n");
      }
      contexts_ended = true;
    } else {
      static bool said = false;
      if (!said)
        fprintf(stderr, "gcl_tracer: another CUDA context: its launches continue this run's files and numbering, "
                "timed but not traced (the tool's channel is the first context's)\n");
      said = true;
    }
    return;
  }
  files_open = true;
  std::string p = opt.dir + (opt.time_only ? "/profile.csv" : "/instrumented_times.csv");
  profile_csv = open_output(p);
  /* Times of instrumented launches are inflated by the tracing itself, so they go
   * to a separate file; only a GCL_TIME_ONLY run writes profile.csv. */
  fprintf(profile_csv, "invocation,kernel_name,grid,block,time_ns,cycles,nregs,shmem\n");
  /* the list of trace files: a GCL_TIME_ONLY or GCL_COUNT_ONLY run writes no trace, and its
   * list of MemcpyHtoD lines alone used to replace the traced run's list when both ran in one
   * GCL_TRACE_DIR (the Run recipe did), leaving every trace unlisted */
  if (!opt.time_only && !opt.count_only) kernelslist = open_output(opt.dir + "/kernelslist");
  if (opt.count_only) {
    counts_csv = open_output(opt.dir + "/counts.csv");
    fprintf(counts_csv, "invocation,kernel_name,grid,block,trace_sm,warp_insts\n");
  }
}

/* a failed allocation of the tool's own: one line and exit status 1, not records lost later */
static void gcl_cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "gcl_tracer: %s failed: %s\n", what, cudaGetErrorString(e));
  exit(1);
}

/* CUDA calls are allowed from here on: NVBit >= 1.7 calls nvbit_tool_init before the
 * first launch, and the launch callback calls this too for NVBit releases without it.
 * A GCL_TIME_ONLY run instruments nothing, so it needs no channel. */
static void tool_setup(CUcontext ctx) {
  if (tool_ready) return;
  tool_ready = true;
  setup_ctx = ctx;
  CUdevice dev;
  cuCtxGetDevice(&dev);
  cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
  if (cuDeviceGetAttribute(&n_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS) n_sms = 0;
  /* an SM the GPU does not have runs no CTA: every trace would be a header alone */
  if (!opt.time_only && n_sms > 0 && opt.trace_sm >= n_sms) {
    fprintf(stderr, "gcl_tracer: GCL_TRACE_SM=%lld, but the GPU has %d SMs (0..%d)\n", (long long)opt.trace_sm, n_sms,
            n_sms - 1);
    exit(2);
  }
  if (opt.cta_scope_id && opt.trace_sm >= 0 && (n_sms <= 0 || n_sms > gcl::kScopeByIdMaxSms))
    fprintf(stderr, "gcl_tracer: GCL_CTA_SCOPE=id needs the GPU's SM count (got %d): keeping the CTAs that run on SM "
            "%lld instead\n", n_sms, (long long)opt.trace_sm);
  if (opt.time_only && opt.time_gate_us) {
    gcl_cuda_check(cudaHostAlloc(&gate_host, sizeof(*gate_host), cudaHostAllocMapped), "cudaHostAlloc(gate)");
    gcl_cuda_check(cudaHostGetDevicePointer(&gate_dev, gate_host, 0), "cudaHostGetDevicePointer(gate)");
    gate_host->open = 1;
    gate_host->timed_out = 0;
  }
  if (opt.time_only) return;
  if (opt.count_only) {
    gcl_cuda_check(cudaMallocManaged(&gcl_warp_insts, sizeof(*gcl_warp_insts)), "cudaMallocManaged(counter)");
    *gcl_warp_insts = 0;
    return;
  }
  if (opt.buffer_mb) {
    const unsigned long long bytes = opt.buffer_mb << 20;
    gcl_cuda_check(cudaMallocManaged(&dev_buffer, sizeof(*dev_buffer)), "cudaMallocManaged(buffer)");
    dev_buffer->capacity = bytes / sizeof(gcl::Record) * sizeof(gcl::Record);
    dev_buffer->used = dev_buffer->dropped = 0;
    gcl_cuda_check(cudaMalloc(&dev_buffer->base, dev_buffer->capacity), "cudaMalloc(GCL_BUFFER_MB)");
    return;
  }
  gcl_cuda_check(cudaMallocManaged(&channel_dev, sizeof(ChannelDev)), "cudaMallocManaged(channel)");
  recv_running = true;
  channel_host.init(0, GCL_CHANNEL_BYTES, channel_dev, recv_loop, nullptr);
  nvbit_set_tool_pthread(channel_host.get_thread());
}

void nvbit_tool_init(CUcontext ctx) { tool_setup(ctx); }

static bool control_flow(const char *op_short) {
  static const char *cf[] = {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BREAK", "BSYNC",
                             "WARPSYNC", "KILL", "BPT", "SYNC", "BMOV", "RTT", "YIELD", nullptr};
  for (int i = 0; cf[i]; i++)
    if (!strcmp(op_short, cf[i])) return true;
  return false;
}

/* the value of a register operand as the injected call's next variadic argument */
static void add_reg_val(Instr *in, int num) {
  if (num >= gcl::kUniformBase) nvbit_add_call_arg_ureg_val(in, num - gcl::kUniformBase, true);
  else nvbit_add_call_arg_reg_val(in, num, true);
}

static void instrument(CUcontext ctx, CUfunction kernel) {
  const uint64_t sink = dev_buffer ? (uint64_t)dev_buffer : (uint64_t)channel_dev;
  std::vector<CUfunction> fns = nvbit_get_related_functions(ctx, kernel);
  fns.push_back(kernel);
  for (CUfunction f : fns) {
    if (!instrumented.insert(f).second) continue;
    for (Instr *in : nvbit_get_instrs(ctx, f)) {
      std::string op = in->getOpcode();
      if (!opcode_ids.count(op)) {
        opcode_ids[op] = (uint32_t)opcode_table.size();
        opcode_table.push_back(op);
      }
      if (opt.count_only) {
        /* the cheapest instrumentation there is: one call, one atomic per warp. It tells
         * whether instrumented code runs and the SM scoping selects anything, apart from
         * the channel that the full records need */
        nvbit_insert_call(in, "gcl_count", IPOINT_BEFORE);
        nvbit_add_call_arg_guard_pred_val(in);
        nvbit_add_call_arg_launch_val32(in, 0);
        nvbit_add_call_arg_const_val64(in, (uint64_t)gcl_warp_insts);
        continue;
      }
      uint32_t line = 0;
      if (opt.lineinfo) {
        char *file = nullptr, *dir = nullptr;
        nvbit_get_line_info(ctx, f, in->getOffset(), &file, &dir, &line);
      }
      const gcl::Operands ops = gcl::select_operands(
          in->getNumOperands(), [&](int i) { return in->getOperand(i); }, opt.uniform != 0);
      const int *dst = ops.dst, *src = ops.src;
      const int ndst = ops.ndst, nsrc = ops.nsrc, mref = ops.mref;
      const uint64_t imm = ops.imm;
      const bool after = ndst > 0 && opt.values && !control_flow(in->getOpcodeShort());
      const int mem_width = mref >= 0 ? in->getSize() : 0;

      if (opcode_ids[op] >= gcl::kMaxOpcodeIds || mem_width > gcl::kMaxPackedWidth) {
        fprintf(stderr, "gcl_tracer: %s (opcode %u, %d bytes per lane) does not fit gcl_before's packed arguments\n",
                op.c_str(), opcode_ids[op], mem_width);
        exit(1);
      }
      /* the order and packing gcl_before's signature declares (gcl_record.h says why) */
      nvbit_insert_call(in, "gcl_before", IPOINT_BEFORE);
      nvbit_add_call_arg_guard_pred_val(in);
      nvbit_add_call_arg_launch_val32(in, 0); /* GCL_TRACE_SM, set per launch */
      if (mref >= 0) nvbit_add_call_arg_mref_addr64(in, ops.nmref - 1); /* LDGSTS: the global address */
      else nvbit_add_call_arg_const_val64(in, 0);
      nvbit_add_call_arg_const_val64(in, imm);
      nvbit_add_call_arg_const_val64(in, sink);
      nvbit_add_call_arg_const_val32(in, in->getOffset());
      nvbit_add_call_arg_const_val32(
          in, gcl::pack_info(opcode_ids[op], mem_width, ndst, nsrc, after ? 1 : 0, opt.values, dev_buffer ? 1 : 0));
      nvbit_add_call_arg_const_val32(in, line);
      nvbit_add_call_arg_const_val32(in, gcl::pack_regs(dst[0], dst[1]));
      nvbit_add_call_arg_const_val32(in, gcl::pack_regs(src[0], src[1]));
      nvbit_add_call_arg_const_val32(in, gcl::pack_regs(src[2], src[3]));
      nvbit_add_call_arg_const_val32(in, gcl::pack_regs(src[4], -1));
      if (opt.values)
        for (int s = 0; s < nsrc; s++) add_reg_val(in, src[s]);

      if (after) {
        nvbit_insert_call(in, "gcl_after", IPOINT_AFTER);
        nvbit_add_call_arg_guard_pred_val(in);
        nvbit_add_call_arg_launch_val32(in, 0);
        nvbit_add_call_arg_const_val32(in, opcode_ids[op]);
        nvbit_add_call_arg_const_val32(in, in->getOffset());
        nvbit_add_call_arg_const_val32(in, ndst);
        nvbit_add_call_arg_const_val32(in, dev_buffer ? 1 : 0);
        nvbit_add_call_arg_const_val64(in, sink);
        for (int d = 0; d < ndst; d++) add_reg_val(in, dst[d]);
      }
    }
  }
}

static bool wanted(uint64_t id, const char *mangled, const char *demangled) {
  if (id < opt.kernel_begin || id > opt.kernel_end) return false;
  if (opt.filter.empty()) return true;
  return std::regex_search(mangled, filter_re) || std::regex_search(demangled, filter_re);
}

/* Suffix of the file GCL_COMPRESS produces; kernelslist names the real file so that
 * `gclsampler trace group` finds it. */
static std::string compress_suffix() {
  return opt.compress == "zstd" ? ".zst" : opt.compress == "xz" ? ".xz" : opt.compress == "gz" ? ".gz" : "";
}

/* kernel-N.trace[.zst|.xz|.gz]: the trace of launch N, as kernelslist names it */
static std::string trace_file_name(uint64_t id) {
  return "kernel-" + std::to_string(id) + ".trace" + compress_suffix();
}

static FILE *open_trace(const std::string &path, bool *piped) {
  *piped = opt.compress != "none";
  if (!*piped) return fopen(path.c_str(), "w");
  return popen(gcl::compressor_command(opt.compress, path).c_str(), "w"); /* gcl_output.h */
}

static double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Spin until done(); with `note`, say every 5 s how long `what` has taken and how many records
 * came so far, so that a launch that stalls (GCL_VERBOSE) says where and after how much. */
template <class Done>
static void wait_until(Done done, bool note, unsigned long long invocation, double since, const char *what,
                       const volatile uint64_t *records) {
  double next_note = now_s() + 5;
  while (!done()) {
    sched_yield();
    if (note && now_s() > next_note) {
      next_note += 5;
      fprintf(stderr, "gcl_tracer: launch %llu: still waiting for %s after %.0f s, %llu records so far\n",
              invocation, what, now_s() - since, (unsigned long long)*records);
    }
  }
}

/* gcl::launch_attribute, with a failure said once instead of a silent 0 */
static bool launched_kernel_handle = false; /* the launch carried a CUkernel, not a CUfunction */
static int func_attribute(CUfunction_attribute a, CUfunction f, const char *what) {
  gcl::LaunchAttribute r = gcl::launch_attribute(a, f);
  launched_kernel_handle = launched_kernel_handle || r.via_kernel_handle;
  if (r.status != CUDA_SUCCESS) {
    static bool warned = false;
    if (!warned) {
      const char *msg = nullptr;
      cuGetErrorString(r.status, &msg);
      fprintf(stderr, "gcl_tracer: function attribute %s: %s; the profile's nregs/shmem are 0\n", what,
              msg ? msg : "unknown error");
      warned = true;
    }
  }
  return r.value;
}

/* gcl_gate.h's driver: the gate kernel and the two events on the launch's stream. The
 * gate kernel's own launch must not reach the callback below (skip_callbacks). */
struct GateDriver {
  CUstream stream;
  CUevent start, stop;
  void launch_gate() {
    skip_callbacks = true;
    gcl::gate_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(gate_dev, opt.time_gate_us * 1000);
    const cudaError_t e = cudaGetLastError();
    skip_callbacks = false;
    if (e != cudaSuccess) { /* then the start event is ungated, as without the gate */
      fprintf(stderr, "gcl_tracer: the GCL_TIME_GATE_US gate kernel did not launch (%s); times stay ungated\n",
              cudaGetErrorString(e));
      opt.time_gate_us = 0;
    }
  }
  void record_start() { cuEventRecord(start, stream); }
  void record_stop() { cuEventRecord(stop, stream); }
  void sync_stop() { cuEventSynchronize(stop); }
};

void nvbit_at_cuda_event(CUcontext ctx, int is_exit, nvbit_api_cuda_t cbid, const char *name,
                         void *params, CUresult *status) {
  if (skip_callbacks) return;
  if (cbid == API_CUDA_cuMemcpyHtoD_v2 && !is_exit) {
    cuMemcpyHtoD_v2_params *p = (cuMemcpyHtoD_v2_params *)params;
    if (kernelslist) fprintf(kernelslist, "MemcpyHtoD,0x%016llx,%llu\n", (unsigned long long)p->dstDevice,
            (unsigned long long)p->ByteCount);
    return;
  }
  gcl::LaunchView L;
  if (!gcl::launch_view(cbid, params, &L)) return;
  if (!is_exit && !tool_ready) {
    skip_callbacks = true;
    tool_setup(ctx);
    skip_callbacks = false;
  }
  /* A launch made while its stream is being captured into a CUDA graph does not run: it
   * becomes a graph node, and its replays bypass these callbacks. Counting it would give
   * a trace id to a kernel the profilers never see run, and timing it would record and
   * wait on events inside the capture, which invalidates the application's graph. */
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(L.queue(), &capture) == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    static bool warned = false;
    if (!is_exit && !warned) {
      fprintf(stderr, "gcl_tracer: %s during CUDA-graph stream capture: not traced or counted, and neither are the "
              "graph's replays; trace with graphs off\n", L.api);
      warned = true;
    }
    return;
  }
  static CUevent ev_start, ev_stop;
  static bool traced = false;
  static std::string mangled;
  static int nregs = 0, shmem = 0;
  static double t_entry = 0, t_queued = 0; /* GCL_VERBOSE phase times */
  static bool gated = false, gate_opened = true;
  static uint32_t scope = gcl::kScopeAllSms; /* this launch's (gcl::launch_scope) */
  if (!is_exit) {
    invocation_id++;
    mangled = nvbit_get_func_name(ctx, L.f, true);
    const char *demangled = nvbit_get_func_name(ctx, L.f, false);
    traced = !opt.time_only && !contexts_ended && wanted(invocation_id, mangled.c_str(), demangled);
    if (traced && ctx != setup_ctx) {
      /* the channel, buffer or counter the injected code writes to belongs to the first
       * context (on another GPU, an address this one cannot reach): timed, not traced */
      static bool said = false;
      if (!said)
        fprintf(stderr, "gcl_tracer: launch %llu is in another CUDA context than the tool's (another GPU?): launches "
                "there are timed but not traced; trace one GPU per process (CUDA_VISIBLE_DEVICES)\n",
                (unsigned long long)invocation_id);
      said = true;
      traced = false;
    }
    t_entry = now_s();
    if (traced) {
      /* GCL_VERBOSE: a line before each phase that can stall, so a launch that never
       * finishes still says where it stopped */
      if (opt.verbose) fprintf(stderr, "gcl_tracer: launch %llu: instrumenting %s\n", (unsigned long long)invocation_id,
                               mangled.c_str());
      instrument(ctx, L.f);
      if (opt.verbose) fprintf(stderr, "gcl_tracer: launch %llu: instrumented in %.3f s, launching\n",
                               (unsigned long long)invocation_id, now_s() - t_entry);
      scope = gcl::launch_scope(opt.trace_sm, (uint64_t)L.grid[0] * L.grid[1] * L.grid[2], n_sms,
                                opt.small_grid_cta0, opt.cta_scope_id);
      if (opt.verbose && scope == gcl::kScopeFirstCta)
        fprintf(stderr, "gcl_tracer: launch %llu: %llu CTAs on %d SMs: keeping CTA 0 (GCL_SMALL_GRID=cta0)\n",
                (unsigned long long)invocation_id, (unsigned long long)L.grid[0] * L.grid[1] * L.grid[2], n_sms);
      /* NVBit >= 1.7: one 64-bit launch value; its low 32 bits are launch_val32 offset 0.
       * The stream argument exists only after 1.7.1 (nvbit_compat.h picks the form). */
      GCL_SET_AT_LAUNCH(ctx, L.f, (uint64_t)scope, L.stream);
    }
    nvbit_enable_instrumented(ctx, L.f, traced);
    if (traced && opt.count_only) *gcl_warp_insts = 0; /* the previous launch was synchronized */
    launched_kernel_handle = false;
    shmem = func_attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, L.f, "SHARED_SIZE_BYTES") + (int)L.dyn_shmem;
    nregs = func_attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, L.f, "NUM_REGS");
    if (traced && !opt.count_only) {
      gcl::KernelHeaderInfo h;
      h.name = mangled;
      h.kernel_id = invocation_id;
      h.grid[0] = L.grid[0], h.grid[1] = L.grid[1], h.grid[2] = L.grid[2];
      h.block[0] = L.block[0], h.block[1] = L.block[1], h.block[2] = L.block[2];
      h.shmem = shmem;
      h.nregs = nregs;
      h.binary_version = func_attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION, L.f, "BINARY_VERSION");
      h.cuda_stream_id = (uint64_t)L.stream;
      h.shmem_base_addr = nvbit_get_shmem_base_addr(ctx);
      h.local_mem_base_addr = nvbit_get_local_mem_base_addr(ctx);
      h.nvbit_version = NVBIT_VERSION;
      h.lineinfo = opt.lineinfo != 0;
      /* GCL_VALUES=0: no `| reg_values` in the format line, which had said every such trace
       * carries values (gclsampler read it as one whose lines all lack them) */
      h.values = opt.values != 0;
      const std::string file = trace_file_name(invocation_id);
      pthread_mutex_lock(&launch_mu);
      cur = Launch();
      cur.path = opt.dir + "/" + file;
      cur.out = open_trace(cur.path, &cur.piped);
      if (!cur.out) {
        fprintf(stderr, "gcl_tracer: cannot write %s/%s (%s)\n", opt.dir.c_str(), file.c_str(), strerror(errno));
        exit(2);
      }
      std::string text;
      gcl::format_raw_header(h, text);
      fwrite(text.data(), 1, text.size(), cur.out);
      kernel_done = false;
      pthread_mutex_unlock(&launch_mu);
    }
    cuEventCreate(&ev_start, CU_EVENT_DEFAULT);
    cuEventCreate(&ev_stop, CU_EVENT_DEFAULT);
    gated = gate_host && opt.time_gate_us;
    if (gated) {
      GateDriver d{L.queue(), ev_start, ev_stop};
      gcl::gate_begin(d, gate_host);
    } else {
      cuEventRecord(ev_start, L.queue());
    }
    t_queued = now_s();
    return;
  }
  /* exit: the launch is queued; time it and, when traced, drain the channel */
  skip_callbacks = true;
  gate_opened = true;
  if (gated) {
    GateDriver d{L.queue(), ev_start, ev_stop};
    gate_opened = gcl::gate_end(d, gate_host);
    if (!gate_opened && !gate_timeouts++) gate_first_timeout = invocation_id - 1;
  } else {
    CUresult ran = CUDA_SUCCESS;
    cuEventRecord(ev_stop, L.queue());
    if (opt.verbose && traced) {
      /* poll, so that a kernel that never ends says so (and how many records left it) */
      wait_until([&] { return (ran = cuEventQuery(ev_stop)) != CUDA_ERROR_NOT_READY; }, true,
                 (unsigned long long)invocation_id, t_queued, "the kernel", &cur.records);
    } else {
      ran = cuEventSynchronize(ev_stop);
    }
    /* A fault kills the context: the channel's end marker would never come, and the
     * application's next call fails anyway. Say which launch, and stop. */
    if (ran != CUDA_SUCCESS && traced) {
      const char *msg = nullptr;
      cuGetErrorString(ran, &msg);
      fprintf(stderr, "gcl_tracer: launch %llu (%s) failed under instrumentation: %s\n",
              (unsigned long long)invocation_id, mangled.c_str(), msg ? msg : "unknown error");
      exit(1);
    }
  }
  float ms = 0.f;
  cuEventElapsedTime(&ms, ev_start, ev_stop);
  cuEventDestroy(ev_start);
  cuEventDestroy(ev_stop);
  const double t_ran = now_s();
  double t_flushed = t_ran, t_drained = t_ran;
  uint64_t records = 0;
  if (traced && opt.count_only) {
    cudaDeviceSynchronize();
    records = *gcl_warp_insts;
    /* trace_sm: the SM kept, -1 for every SM, cta0 for CTA 0 (GCL_SMALL_GRID), id:R/N for
     * the CTAs whose linear id is R modulo N (GCL_CTA_SCOPE=id) */
    const std::string kept = scope == gcl::kScopeFirstCta ? "cta0"
                             : scope == gcl::kScopeAllSms ? "-1"
                             : gcl::scope_is_by_id(scope)
                                 ? "id:" + std::to_string(gcl::scope_id_residue(scope)) + "/" +
                                       std::to_string(gcl::scope_id_sms(scope))
                                 : std::to_string(scope);
    fprintf(counts_csv, "%llu,\"%s\",\"(%u,%u,%u)\",\"(%u,%u,%u)\",%s,%llu\n",
            (unsigned long long)(invocation_id - 1), mangled.c_str(), L.grid[0], L.grid[1], L.grid[2], L.block[0],
            L.block[1], L.block[2], kept.c_str(), (unsigned long long)records);
    fflush(counts_csv);
  } else if (traced) {
    if (dev_buffer) {
      cudaDeviceSynchronize();
      t_flushed = now_s();
      drain_device_buffer();
    } else {
      if (opt.verbose) fprintf(stderr, "gcl_tracer: launch %llu: kernel done after %.3f s (GPU %.3f ms), %llu records so far; flushing\n",
                               (unsigned long long)invocation_id, t_ran - t_queued, (double)ms, (unsigned long long)cur.records);
      gcl_flush_channel<<<1, 1>>>(channel_dev);
      const cudaError_t fe = cudaDeviceSynchronize();
      t_flushed = now_s();
      if (fe != cudaSuccess) {
        /* the end marker cannot arrive now: waiting for it only burns the step's time limit */
        fprintf(stderr, "gcl_tracer: launch %llu: channel flush failed: %s; its records cannot all arrive\n",
                (unsigned long long)invocation_id, cudaGetErrorString(fe));
        exit(1);
      }
      wait_until([] { return kernel_done; }, opt.verbose, (unsigned long long)invocation_id, t_flushed,
                 "the channel's end marker", &cur.records);
    }
    t_drained = now_s();
    pthread_mutex_lock(&launch_mu);
    records = cur.records;
    const bool piped = cur.piped;
    const std::string trace_path = cur.path;
    const std::string trace_failed = gcl::close_trace(cur.out, piped);
    if (cur.dropped_by_cap)
      fprintf(stderr, "gcl_tracer: kernel %llu: %llu records over GCL_MAX_INSTS_PER_WARP not written\n",
              (unsigned long long)invocation_id, (unsigned long long)cur.dropped_by_cap);
    cur = Launch();
    pthread_mutex_unlock(&launch_mu);
    if (!trace_failed.empty()) { /* its trace is lost: say so now, not at grouping */
      fprintf(stderr, "%s\n", gcl::trace_failure((unsigned long long)invocation_id, trace_path, piped, opt.compress,
                                                 trace_failed).c_str());
      exit(2);
    }
    /* Listed once it is whole on disk: listed at the launch's entry, the trace of a launch that
     * faulted (or whose channel flush failed) stayed in kernelslist when the tool stopped, and
     * its compressor, reading end of input at the exit, closed a valid .zst of the records that
     * had arrived, which `gclsampler trace group` took as the launch's trace (a header alone
     * without a word, else with a warning that its warps end without EXIT). */
    fprintf(kernelslist, "%s\n", trace_file_name(invocation_id).c_str());
  }
  if (opt.verbose)
    fprintf(stderr, "gcl_tracer: launch %llu %s%s%s: setup %.3f s, launch+kernel %.3f s (GPU %.3f ms), "
            "flush %.3f s, drain %.3f s, %llu %s\n", (unsigned long long)invocation_id,
            traced ? (opt.count_only ? "counted" : "traced") : "timed",
            launched_kernel_handle ? " (CUkernel handle)" : "", gate_opened ? "" : " (gate timed out)",
            t_queued - t_entry, t_ran - t_queued, (double)ms, t_flushed - t_ran, t_drained - t_flushed, (unsigned long long)records,
            opt.count_only ? "warp instructions" : "records");
  double ns = (double)ms * 1e6;
  /* cycles from the SM clock: an estimate (boost clocks vary); prefer Nsight Compute's
   * sm__cycles_elapsed.max via `gclsampler profile import` where it matters */
  fprintf(profile_csv, "%llu,\"%s\",\"(%u,%u,%u)\",\"(%u,%u,%u)\",%.0f,%.0f,%d,%d\n",
          (unsigned long long)(invocation_id - 1), mangled.c_str(), L.grid[0], L.grid[1], L.grid[2],
          L.block[0], L.block[1], L.block[2], ns, ns * clock_khz / 1e6, nregs, shmem);
  fflush(profile_csv);
  if (kernelslist) fflush(kernelslist);
  skip_callbacks = false;
}

/* A CUDA-graph replay of a kernel this tool instrumented runs the instrumented code, and no
 * launch callback opened a trace for it: its records would reach the channel and, while a
 * launch on another stream is being traced, that launch's file (a GCL_COUNT_ONLY count too).
 * NVBit calls this for each kernel node of a graph launch; the node gets the scope that keeps
 * no warp. A release that cannot set a node's launch value gets one warning. */
void nvbit_at_graph_node_launch(CUcontext ctx, CUfunction func, CUstream stream, uint64_t launch_handle) {
  if (opt.time_only) return; /* nothing is instrumented */
  if (!GCL_SET_AT_GRAPH_NODE(ctx, func, (uint64_t)gcl::kScopeNone, stream, launch_handle)) {
    static bool warned = false;
    if (!warned)
      fprintf(stderr, "gcl_tracer: this NVBit release cannot set a CUDA-graph node's launch value: replays of "
              "traced kernels may add records to the launch being traced; trace with graphs off\n");
    warned = true;
  }
}

/* Every write is flushed here; the files close at nvbit_at_term, once, whichever context
 * ends last and in whatever order NVBit calls the two. */
static void flush_outputs() {
  for (FILE *f : {profile_csv, kernelslist, counts_csv})
    if (f) fflush(f);
}

void nvbit_at_ctx_term(CUcontext ctx) {
  flush_outputs();
  if (--live_contexts > 0) return; /* another context still launches into the files */
  recv_running = false;
  if (gate_timeouts)
    fprintf(stderr, "gcl_tracer: %llu launches (the first: invocation %llu) waited past GCL_TIME_GATE_US=%llu; "
            "their times include the launch call. Lazy module loading can do this: CUDA_MODULE_LOADING=EAGER\n",
            (unsigned long long)gate_timeouts, (unsigned long long)gate_first_timeout,
            (unsigned long long)opt.time_gate_us);
}

void nvbit_at_term() {
  for (FILE **f : {&profile_csv, &kernelslist, &counts_csv})
    if (*f) fclose(*f), *f = nullptr;
}
