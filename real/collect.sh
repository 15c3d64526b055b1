#!/usr/bin/env bash
# Collect the real workloads under real/ on one GPU host, in one time-boxed pass.
#
# Why one pass with a deadline: the GPU machine this ran on was lent for minutes, so
# every step gets a share of what is left (BUDGET_S), the cheap and essential runs go
# first (uninstrumented wall time, the timing profile, the SM-0 trace), Nsight Compute
# last, and whatever finished is packed into $OUT even when a later step ran out of
# time. Per program:
#   plain   uninstrumented run: wall time, for the tracer's slowdown
#   time    GCL_TIME_ONLY=1 under the tracer: profile.csv (cudaEvent time of every launch)
#   trace   GCL_TRACE_SM=0: every instruction of every CTA on SM 0, with register values
#   time_gated  the same timing with GCL_TIME_GATE_US (start event held until the launch is
#           queued); bfs's Nsight Compute kernel times, near the end, are what it is checked against
#   torch   (LLM) torch.profiler kernel times, without launch overhead
#   ncu     (CUDA programs) Nsight Compute metrics incl. PKA's, where time is left
#
#   bash real/collect.sh            # needs tracer/build/gcl_tracer.so and real/src/build/*
#
# Environment: NVBIT_PATH (the release's core/; default .nvbit/core in the repository),
# OUT (where the packed results go), BUDGET_S (seconds for the whole pass),
# LLM_LAYERS, NW_N, LUD_N, BFS_N; SKIP_DONE=1 leaves out the runs that need no tracer
# (torch.profiler, Nsight Compute, the checks) when an earlier pass has them.
set -u
OUT=${OUT:-$PWD/real-out}
W=${GCL_WORK:-/tmp/gclreal}
BUDGET=${BUDGET_S:-480}
RESERVE=${RESERVE_S:-50}
LLM_LAYERS=${LLM_LAYERS:-2}
NW_N=${NW_N:-2048}
LUD_N=${LUD_N:-512}
BFS_N=${BFS_N:-100000}
REPO=$PWD
NVBIT_CORE=${NVBIT_PATH:-$REPO/.nvbit/core}   # an NVBit release's core/ (nvbit.h, libnvbit.a)
SO=${GCL_TRACER_SO:-$REPO/tracer/build/gcl_tracer.so}
BIN=${GCL_REAL_BIN:-$REPO/real/src/build}
T0=$(date +%s)
mkdir -p "$OUT"; rm -rf "$W"; mkdir -p "$W"
export NOBANNER=1 PYTHONUNBUFFERED=1

now() { date +%s.%N; }
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/collect.log"; }

# step NAME CAP CMD...: run CMD with at most min(CAP, time left - RESERVE) seconds,
# stdout/stderr to $W/NAME.{out,err}, wall time to walls.csv
step() {
  local name=$1 cap=$2; shift 2
  local t=$(( $(left) - RESERVE ))
  [ "$t" -gt "$cap" ] && t=$cap
  if [ "$t" -lt 5 ]; then log "SKIP $name (no time left)"; echo "$name,skipped," >>"$W/walls.csv"; return 124; fi
  local s e rc
  s=$(now)
  timeout -s INT -k 10 "$t" "$@" >"$W/$name.out" 2>"$W/$name.err"; rc=$?
  e=$(now)
  local wall; wall=$(awk -v a="$s" -v b="$e" 'BEGIN{printf "%.3f", b-a}')
  log "$name rc=$rc wall=${wall}s (cap ${t}s)"
  echo "$name,$rc,$wall" >>"$W/walls.csv"
  return $rc
}

echo "step,rc,wall_s" >"$W/walls.csv"
{
  echo "date: $(date -u +%FT%TZ)"; uname -a; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  nvcc --version; command -v nvdisasm ncu zstd xz
  ncu --version 2>&1 | tail -1
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  lscpu | head -20
} >"$W/env.txt" 2>&1
log "env done"

# zstd for packing: the host's, else the carried one, else xz
ZSTD=""
for z in zstd "$REPO/.zstd/zstd"; do
  if "$z" --version >/dev/null 2>&1; then ZSTD=$z; break; fi
done
log "zstd: ${ZSTD:-none}"

# The tool is built here, where the driver's libcuda exists to link against (a build on a
# driverless host leaves the cu* symbols unresolved); the carried build is the fallback.
# The programs were built on the CPU host (nvcc 13.0, sm_90, cudart static).
if step build_tracer 120 make -C tracer all NVBIT_PATH="$NVBIT_CORE" ARCH=sm_90 BUILD=build-device \
    && [ -f tracer/build-device/gcl_tracer.so ]; then
  SO=$REPO/tracer/build-device/gcl_tracer.so
fi
log "tracer: $SO"; readelf -d "$SO" | grep NEEDED >>"$W/env.txt" 2>&1
if [ ! -x "$BIN/nw" ]; then step build_programs 120 make -C real/src ARCH=sm_90; fi

TRACER_OK=1
# How records leave the GPU in the traced runs: NVBit's channel (the default), or a device
# buffer copied back after each launch (GCL_BUFFER_MB), chosen by the probes below.
TRACE_SINK=()
BUFFER_MB=${GCL_BUFFER_MB:-16384}
records_in() {  # DIR: instruction lines in its raw traces (not header, not blank)
  cat "$1"/kernel-*.trace 2>/dev/null | grep -cv '^[-#]\|^$'
}
run_program() {  # NAME CAP_TRACE CMD...
  local name=$1 cap=$2; shift 2
  mkdir -p "$W/$name"
  step "$name.plain" 60 "$@"
  [ "$TRACER_OK" = 1 ] || return 0
  step "$name.time" 60 env CUDA_MODULE_LOADING=EAGER GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/$name/time" LD_PRELOAD="$SO" "$@"
  step "$name.trace" "$cap" env ${TRACE_SINK[@]+"${TRACE_SINK[@]}"} GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none GCL_TRACE_DIR="$W/$name/trace" LD_PRELOAD="$SO" "$@"
  du -sb "$W/$name/trace" 2>/dev/null | tee -a "$W/collect.log"
  step "$name.time_gated" 30 env CUDA_MODULE_LOADING=EAGER GCL_TIME_ONLY=1 GCL_TIME_GATE_US=20000 \
    GCL_TRACE_DIR="$W/$name/time_gated" LD_PRELOAD="$SO" "$@"
}

# a smoke test of the tool first: if it cannot time three vector adds, skip its runs
mkdir -p "$W/vecadd"
if ! step vecadd.smoke 25 env GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/vecadd/smoke" LD_PRELOAD="$SO" "$BIN/vecadd"; then
  log "the tool failed its smoke test: no tracer runs"; TRACER_OK=0
fi
# Probes of the traced mode, cheapest first: instruction counts alone (no channel; all SMs
# for 16 CTAs, then SM 0 of the full 4096-CTA vector add), then records of 16 CTAs with
# values off/on, all SMs/SM 0. Each GCL_VERBOSE line says where a launch's time goes
# (setup, kernel, channel flush, drain). On the first H200 runs a traced launch took ~11 s
# and wrote no records; these tell which part is at fault.
if [ "$TRACER_OK" = 1 ]; then
  step probe.count.allsm 15 env GCL_VERBOSE=1 GCL_COUNT_ONLY=1 GCL_TRACE_SM=-1 \
    GCL_TRACE_DIR="$W/probe/count_all" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  step probe.count.sm0 15 env GCL_VERBOSE=1 GCL_COUNT_ONLY=1 GCL_TRACE_SM=0 \
    GCL_TRACE_DIR="$W/probe/count_sm0" LD_PRELOAD="$SO" "$BIN/vecadd"
  step probe.novalues.allsm 15 env GCL_VERBOSE=1 GCL_VALUES=0 GCL_TRACE_SM=-1 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/a" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  step probe.values.allsm 15 env GCL_VERBOSE=1 GCL_TRACE_SM=-1 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/b" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  step probe.values.sm0 15 env GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/c" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  # the same through the device buffer: no channel, no host thread while the kernel runs
  step probe.buffer.sm0 15 env GCL_VERBOSE=1 GCL_BUFFER_MB=1024 GCL_TRACE_SM=0 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/d" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  ch=$(records_in "$W/probe/c"); bu=$(records_in "$W/probe/d")
  log "probe records on SM 0: channel ${ch:-0}, device buffer ${bu:-0}"
  if [ "${ch:-0}" -eq 0 ] && [ "${bu:-0}" -gt 0 ]; then
    TRACE_SINK=(GCL_BUFFER_MB="$BUFFER_MB"); log "traced runs use the device buffer (GCL_BUFFER_MB=$BUFFER_MB)"
  elif [ "${ch:-0}" -eq 0 ] && [ "${bu:-0}" -eq 0 ]; then
    # neither way delivered with values on: the uniform-register operands (new, GCL_UNIFORM) are
    # the one part of the values-on instrumentation the first H200 passes did not have
    step probe.nouniform.sm0 15 env GCL_VERBOSE=1 GCL_UNIFORM=0 GCL_TRACE_SM=0 GCL_COMPRESS=none \
      GCL_TRACE_DIR="$W/probe/e" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
    step probe.nouniform.buffer.sm0 15 env GCL_VERBOSE=1 GCL_UNIFORM=0 GCL_BUFFER_MB=1024 GCL_TRACE_SM=0 \
      GCL_COMPRESS=none GCL_TRACE_DIR="$W/probe/f" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
    nu=$(records_in "$W/probe/e"); nb=$(records_in "$W/probe/f")
    log "probe records on SM 0 without uniform registers: channel ${nu:-0}, device buffer ${nb:-0}"
    if [ "${nu:-0}" -gt 0 ]; then
      TRACE_SINK=(GCL_UNIFORM=0); log "traced runs leave uniform registers out (GCL_UNIFORM=0)"
    elif [ "${nb:-0}" -gt 0 ]; then
      TRACE_SINK=(GCL_UNIFORM=0 GCL_BUFFER_MB="$BUFFER_MB")
      log "traced runs leave uniform registers out and use the device buffer (GCL_UNIFORM=0 GCL_BUFFER_MB=$BUFFER_MB)"
    fi
  fi
  du -ab "$W/probe" 2>/dev/null | tee -a "$W/collect.log"
fi
run_program vecadd 60 "$BIN/vecadd"
if [ "$TRACER_OK" = 1 ] && ! ls "$W/vecadd/trace"/kernel-1.trace >/dev/null 2>&1; then
  if [ "$SO" != "$REPO/tracer/build/gcl_tracer.so" ] && [ -f "$REPO/tracer/build/gcl_tracer.so" ]; then
    SO=$REPO/tracer/build/gcl_tracer.so
  fi
  log "no vecadd trace: retrying with $SO"
  step vecadd.trace2 60 env ${TRACE_SINK[@]+"${TRACE_SINK[@]}"} GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none GCL_TRACE_DIR="$W/vecadd/trace" LD_PRELOAD="$SO" "$BIN/vecadd"
fi
run_program nw 90 "$BIN/nw" "$NW_N"
run_program bfs 60 "$BIN/bfs" "$BFS_N"
run_program lud 90 "$BIN/lud" "$LUD_N"

# the LLM: uninstrumented, torch.profiler, timing profile, trace
mkdir -p "$W/llm"
LLM=(python3 "$REPO/real/src/llm_infer.py" --layers "$LLM_LAYERS")
if [ "${SKIP_DONE:-0}" != 1 ]; then
  step llm.plain 90 "${LLM[@]}" --meta "$W/llm/model.json"
  step llm.torch 90 "${LLM[@]}" --profile "$W/llm/torch_trace.json"
fi
[ "$TRACER_OK" = 1 ] && step llm.time 90 env GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/llm/time" LD_PRELOAD="$SO" "${LLM[@]}"
# SM-0 warp instructions of every launch, cheaply (one atomic per warp instruction, no records):
# how many records a complete trace holds, and so whether it can fit what comes back
if [ "$TRACER_OK" = 1 ]; then
  step llm.count 60 env GCL_COUNT_ONLY=1 GCL_TRACE_SM=0 GCL_TRACE_DIR="$W/llm/count" LD_PRELOAD="$SO" "${LLM[@]}"
  [ -f "$W/llm/count/counts.csv" ] && log "llm: $(awk -F, 'NR>1{n++; s+=$NF} END{printf "%d launches, %d warp instructions on SM 0", n, s}' "$W/llm/count/counts.csv")"
fi
[ "$TRACER_OK" = 1 ] && step llm.trace 200 env ${TRACE_SINK[@]+"${TRACE_SINK[@]}"} GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none GCL_TRACE_DIR="$W/llm/trace" LD_PRELOAD="$SO" "${LLM[@]}"
du -sb "$W/llm/trace" 2>/dev/null | tee -a "$W/collect.log"

# the kernel times the gated and ungated tool times of bfs are compared with, on this GPU
step bfs.ncu_time 40 ncu --csv --page raw --clock-control none --metrics gpu__time_duration.sum \
  --log-file "$W/bfs/ncu_time.csv" "$BIN/bfs" "$BFS_N"

# Nsight Compute, cheapest program first, with whatever time is left
NCU_METRICS=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed.avg.per_cycle_elapsed,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_global_atom.sum,smsp__thread_inst_executed_per_inst_executed.ratio,launch__grid_size,launch__block_size,launch__registers_per_thread
[ "${SKIP_DONE:-0}" = 1 ] || for p in vecadd:"" bfs:"$BFS_N" lud:"$LUD_N" nw:"$NW_N"; do
  name=${p%%:*}; arg=${p#*:}
  step "$name.ncu" 120 ncu --csv --page raw --clock-control none --metrics "$NCU_METRICS" \
    --log-file "$W/$name/ncu.csv" "$BIN/$name" $arg
done

# the programs' own CPU-reference checks, last (they add CPU time to a run)
[ "${SKIP_DONE:-0}" = 1 ] || for p in vecadd:"" bfs:"$BFS_N" lud:"$LUD_N" nw:"$NW_N"; do
  name=${p%%:*}; arg=${p#*:}
  step "$name.check" 30 "$BIN/$name" $arg --check
done

# pack: small files in one archive; traces as one priority-ordered tar stream, so a
# stream cut at the size limit still holds every earlier kernel whole
log "packing"
( cd "$W" && find . -type f ! -name 'kernel-*.trace' ! -name 'torch_trace.json' | sort >"$W/small.lst"
  tar -cf - -T "$W/small.lst" | xz -T0 -6 >"$OUT/meta.tar.xz" )
[ -f "$W/llm/torch_trace.json" ] && xz -T0 -6 -c "$W/llm/torch_trace.json" >"$OUT/torch_trace.json.xz"
( cd "$W" && { find probe -name 'kernel-*.trace' 2>/dev/null | sort; for n in vecadd nw bfs lud llm; do
    [ -f "$n/trace/kernelslist" ] || continue
    grep -v '^Memcpy' "$n/trace/kernelslist" | sed "s|^|$n/trace/|"
  done; } >"$W/traces.lst"
  if [ -n "$ZSTD" ]; then tar -cf - -T "$W/traces.lst" 2>>"$W/pack.err" | "$ZSTD" -T0 -15 --long=27 -q -c
  else tar -cf - -T "$W/traces.lst" 2>>"$W/pack.err" | xz -T0 -6; fi \
    | head -c $((56 * 1024 * 1024)) | split -b 15000000 -d -a 1 - "$OUT/traces.tar.part" )
ls -l "$OUT" | tee -a "$W/collect.log"
log "done"
