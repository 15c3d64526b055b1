#!/usr/bin/env bash
# Collect the real workloads under real/ on one GPU host, in one time-boxed pass.
#
# Why one pass with a deadline: the GPU machine this ran on was lent for minutes, so
# every step gets a share of what is left (BUDGET_S), the cheap and essential runs go
# first (uninstrumented wall time, the timing profiles, the LLM's instruction count, bfs's
# Nsight Compute kernel times), then the probes of the traced mode, then the full SM-0
# traces, Nsight Compute last, and whatever finished is packed into $OUT even when a later
# step ran out of time. Per program:
#   plain   uninstrumented run: wall time, for the tracer's slowdown
#   time    GCL_TIME_ONLY=1 under the tracer: profile.csv (cudaEvent time of every launch)
#   time_gated  the same timing with GCL_TIME_GATE_US (start event held until the launch is
#           queued); bfs's Nsight Compute kernel times (bfs.ncu_time) are what it is checked against
#   trace   GCL_TRACE_SM=0: every instruction of every CTA on SM 0 (CTA 0 of a grid with fewer
#           CTAs than SMs, GCL_SMALL_GRID's default), with register values
#   torch   (LLM) torch.profiler kernel times, without launch overhead
#   ncu     (CUDA programs) Nsight Compute metrics incl. PKA's, where time is left
#
#   bash real/collect.sh     # builds the tool (needs an NVBit release's core/, see below) and,
#                            # when real/src/build/nw is missing, the programs; falls back to a
#                            # carried tracer/build/gcl_tracer.so when the tool's build fails
#
# Environment: NVBIT_PATH (the release's core/; default .nvbit/core in the repository),
# OUT (where the results go; made absolute), BUDGET_S (seconds for the whole pass),
# LLM_LAYERS, NW_N, LUD_N, BFS_N; SKIP_CHEAP=1 leaves out section 1 (plain, timing and count
# runs: for a second pass after one that packed them); SKIP_DONE=1 leaves out the runs an earlier pass committed:
# llm.plain, llm.torch (torch.profiler), every program's full Nsight Compute pass (*.ncu) and
# the CPU-reference checks (*.check). bfs.ncu_time (Nsight Compute, one metric) still runs.
#
# $OUT, kept up to date as the pass goes (so a pass killed early still says how far it got):
#   collect.log, walls.csv (one line per step: rc or "skipped", wall seconds), env.txt;
# at the end: meta.tar.xz (every small file), torch_trace.json.xz, traces.tar.part*
# (one tar stream, zstd or else xz), and pack.err when packing an archive failed.
#
# Exit status:
#   0  the tool passed its smoke test, at least one workload step under it exited 0, all packed
#      (and for --help)
#   2  bad settings, before anything ran: an argument (the script takes none but --help; its
#      settings are the environment variables above), BUDGET_S or RESERVE_S not a whole number
#      of seconds, or OUT cannot be made
#   3  no tool: it could not be built (no NVBit core/) and no carried build exists; nothing
#      ran on the GPU (collect.log and env.txt in $OUT say what is missing)
#   4  the tool was found but failed its smoke test (no profile rows): only runs without it ran
#   5  no workload step under the tool exited 0 (all failed, timed out or were skipped)
#   6  packing failed (see pack.err) or meta.tar.xz was not written
# (6 is reported before 4, 4 before 5.)
set -u
case $# in
  0) ;;
  *) if [ "$1" = --help ] || [ "$1" = -h ]; then  # this header, without its comment marks
       awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0
     fi
     echo "collect.sh: takes no arguments, not '$*' (its settings are environment variables: OUT, BUDGET_S, ...; see --help)" >&2
     exit 2 ;;
esac
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
SO_CARRIED=$SO                                # the build that came with the working tree
BIN=${GCL_REAL_BIN:-$REPO/real/src/build}
# the step caps are shell arithmetic: "480s" or "abc" there made every step "no time left"
for v in BUDGET_S:"$BUDGET" RESERVE_S:"$RESERVE"; do
  case ${v#*:} in
    ''|*[!0-9]*) echo "collect.sh: ${v%%:*}=${v#*:} is not a whole number of seconds" >&2; exit 2 ;;
  esac
done
BUDGET=$((10#$BUDGET)); RESERVE=$((10#$RESERVE))  # 0480 is not octal
T0=$(date +%s)
# absolute: packing runs from inside $W
if ! mkdir -p "$OUT" || ! OUT=$(cd "$OUT" && pwd -P); then
  echo "collect.sh: cannot make OUT=$OUT" >&2; exit 2
fi
rm -rf "$W"; mkdir -p "$W"
# a pass killed before packing must not leave an earlier pass's archives looking like its own
rm -f "$OUT/collect.log" "$OUT/walls.csv" "$OUT/env.txt" "$OUT/pack.err" "$OUT/meta.tar.xz" \
  "$OUT/torch_trace.json.xz" "$OUT"/traces.tar.part*
export NOBANNER=1 PYTHONUNBUFFERED=1

now() { date +%s.%N; }
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# the log and the step walls go to $W (packed) and $OUT (there even if the pass is killed)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/collect.log" "$OUT/collect.log"; }
wall() { echo "$1" | tee -a "$W/walls.csv" >>"$OUT/walls.csv"; }

# step NAME CAP CMD...: run CMD with at most min(CAP, time left - RESERVE) seconds,
# stdout/stderr to $W/NAME.{out,err}, wall time to walls.csv; a failed step's last
# stderr lines go to the log. SKIPPED=1 after a step left out for want of time.
SKIPPED=0
step() {
  local name=$1 cap=$2; shift 2
  local t=$(( $(left) - RESERVE ))
  [ "$t" -gt "$cap" ] && t=$cap
  SKIPPED=0
  if [ "$t" -lt 5 ]; then log "SKIP $name (no time left)"; wall "$name,skipped,"; SKIPPED=1; return 124; fi
  local s e rc
  s=$(now)
  timeout -s INT -k 10 "$t" "$@" >"$W/$name.out" 2>"$W/$name.err"; rc=$?
  e=$(now)
  local w; w=$(awk -v a="$s" -v b="$e" 'BEGIN{printf "%.3f", b-a}')
  log "$name rc=$rc wall=${w}s (cap ${t}s)"
  wall "$name,$rc,$w"
  [ "$rc" = 0 ] || tail -n 3 "$W/$name.err" 2>/dev/null | cut -c1-300 | sed 's/^/    /' | tee -a "$W/collect.log" >>"$OUT/collect.log"
  return $rc
}
# tstep: a workload's step under the tool; TOOL_STEPS_OK counts those that exited 0
TOOL_STEPS_OK=0
tstep() { step "$@" && TOOL_STEPS_OK=$((TOOL_STEPS_OK + 1)); }

# finish CODE WHY: the last log line, then exit
finish() { log "exit $1: $2"; exit "$1"; }

echo "step,rc,wall_s" | tee "$W/walls.csv" >"$OUT/walls.csv"
{
  echo "date: $(date -u +%FT%TZ)"; uname -a; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  nvcc --version; command -v nvdisasm ncu zstd xz
  ncu --version 2>&1 | tail -1
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  lscpu | head -20
} >"$W/env.txt" 2>&1
cp "$W/env.txt" "$OUT/env.txt"
log "env done"

# zstd for packing: the host's, else the carried one, else xz
ZSTD=""
for z in zstd "$REPO/.zstd/zstd"; do
  if "$z" --version >/dev/null 2>&1; then ZSTD=$z; break; fi
done
log "zstd: ${ZSTD:-none (the trace stream will be xz)}"

# The tool is built here, where the driver's libcuda exists to link against (a build on a
# driverless host leaves the cu* symbols unresolved); the carried build is the fallback.
# The programs were built on the CPU host (nvcc 13.0, sm_90, cudart static).
if step build_tracer 120 make -C tracer all NVBIT_PATH="$NVBIT_CORE" ARCH=sm_90 BUILD=build-device \
    && [ -f tracer/build-device/gcl_tracer.so ]; then
  SO=$REPO/tracer/build-device/gcl_tracer.so
elif [ ! -f "$NVBIT_CORE/nvbit.h" ]; then
  log "the tool was not built: no NVBit here ($NVBIT_CORE/nvbit.h is missing)"
else
  log "the tool's build failed (build_tracer.err)"
fi
if [ ! -f "$SO" ]; then
  # LD_PRELOAD of a missing file is ignored by ld.so and the program exits 0: every step
  # would run without the tool and look like a pass. Stop before the GPU is used.
  log "STOP: no NVBit tool to run. Building it needs an NVBit release's core/ (nvbit.h, libnvbit.a) at"
  log "  $NVBIT_CORE (.nvbit/core in the repository, or NVBIT_PATH), and no prebuilt $SO exists."
  log "  docs/real.md ('Before a GPU session') and tracer/README.md say how to provide it."
  finish 3 "no tool; nothing ran on the GPU"
fi
log "tracer: $SO"; readelf -d "$SO" 2>&1 | grep NEEDED >>"$W/env.txt"
if [ ! -x "$BIN/nw" ]; then step build_programs 120 make -C real/src ARCH=sm_90; fi

TRACER_OK=1
SMOKE=ok
# How records leave the GPU in the traced runs: NVBit's channel (the default), or a device
# buffer copied back after each launch (GCL_BUFFER_MB), chosen by the probes below.
TRACE_SINK=()
BUFFER_MB=${GCL_BUFFER_MB:-16384}
records_in() {  # DIR: instruction lines in its raw traces (not header, not blank)
  cat "$1"/kernel-*.trace 2>/dev/null | grep -cv '^[-#]\|^$'
}
rows_in() {  # CSV: data rows (0 when missing)
  [ -f "$1" ] && awk 'NR>1 && NF' "$1" | wc -l || echo 0
}
PROGS=(vecadd:"" nw:"$NW_N" bfs:"$BFS_N" lud:"$LUD_N")

# a smoke test of the tool first: it must time three vector adds and write their profile
# rows (a tool that ld.so could not preload leaves the program to run alone, exit 0)
mkdir -p "$W/vecadd"
if ! step vecadd.smoke 25 env GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/vecadd/smoke" LD_PRELOAD="$SO" "$BIN/vecadd"; then
  if [ "$SKIPPED" = 1 ]; then SMOKE=skipped; log "no time for the smoke test: no tracer runs"
  else SMOKE=failed; log "the tool failed its smoke test: no tracer runs"; fi
  TRACER_OK=0
elif [ "$(rows_in "$W/vecadd/smoke/profile.csv")" -eq 0 ]; then
  SMOKE=failed
  log "the tool failed its smoke test: vecadd exited 0 but $W/vecadd/smoke/profile.csv has no rows (the tool did not load or did not run): no tracer runs"
  TRACER_OK=0
fi

# 1. the cheap, essential steps: uninstrumented runs, timing profiles (ungated and gated),
# the LLM's timing and count, bfs's Nsight Compute kernel times; no full trace yet
# SKIP_CHEAP=1 leaves this section out: a second pass of the same session, whose first pass
# packed them, spends its minutes on the probes and the traces instead.
[ "${SKIP_CHEAP:-0}" = 1 ] && log "SKIP_CHEAP=1: the plain, timing and count runs are left out" && PROGS=()
for p in ${PROGS[@]+"${PROGS[@]}"}; do
  name=${p%%:*}; arg=${p#*:}
  mkdir -p "$W/$name"
  step "$name.plain" 60 "$BIN/$name" $arg
  [ "$TRACER_OK" = 1 ] || continue
  tstep "$name.time" 60 env CUDA_MODULE_LOADING=EAGER GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/$name/time" LD_PRELOAD="$SO" "$BIN/$name" $arg
  tstep "$name.time_gated" 30 env CUDA_MODULE_LOADING=EAGER GCL_TIME_ONLY=1 GCL_TIME_GATE_US=20000 \
    GCL_TRACE_DIR="$W/$name/time_gated" LD_PRELOAD="$SO" "$BIN/$name" $arg
done
mkdir -p "$W/llm"
LLM=(python3 "$REPO/real/src/llm_infer.py" --layers "$LLM_LAYERS")
if [ "${SKIP_DONE:-0}" != 1 ]; then
  step llm.plain 90 "${LLM[@]}" --meta "$W/llm/model.json"
  step llm.torch 90 "${LLM[@]}" --profile "$W/llm/torch_trace.json"
fi
if [ "$TRACER_OK" = 1 ] && [ "${SKIP_CHEAP:-0}" != 1 ]; then
  tstep llm.time 90 env GCL_TIME_ONLY=1 GCL_TRACE_DIR="$W/llm/time" LD_PRELOAD="$SO" "${LLM[@]}"
  # SM-0 warp instructions of every launch, cheaply (one atomic per warp instruction, no records):
  # how many records a complete trace holds, and so whether it can fit what comes back
  tstep llm.count 90 env GCL_COUNT_ONLY=1 GCL_TRACE_SM=0 GCL_TRACE_DIR="$W/llm/count" LD_PRELOAD="$SO" "${LLM[@]}"
  [ -f "$W/llm/count/counts.csv" ] && log "llm: $(awk -F, 'NR>1{n++; s+=$NF} END{printf "%d launches, %d warp instructions in scope (SM 0; CTA 0 of a grid smaller than the GPU)", n, s}' "$W/llm/count/counts.csv")"
fi
# the kernel times the gated and ungated tool times of bfs are compared with, on this GPU
[ "${SKIP_CHEAP:-0}" = 1 ] || step bfs.ncu_time 40 ncu --csv --page raw --clock-control none --metrics gpu__time_duration.sum \
  --log-file "$W/bfs/ncu_time.csv" "$BIN/bfs" "$BFS_N"

PROBES_EMPTY=0
# 2. Probes of the traced mode, cheapest first: instruction counts alone (no channel; all SMs
# for 16 CTAs, then SM 0 of the full 4096-CTA vector add), then records of 16 CTAs with
# values off/on, all SMs/SM 0. Each GCL_VERBOSE line says where a launch's time goes
# (setup, kernel, channel flush, drain). On the first H200 runs a traced launch took ~11 s
# and wrote no records; these tell which part is at fault.
if [ "$TRACER_OK" = 1 ]; then
  mkdir -p "$W/probe"
  step probe.count.allsm 15 env GCL_VERBOSE=1 GCL_COUNT_ONLY=1 GCL_TRACE_SM=-1 \
    GCL_TRACE_DIR="$W/probe/count_all" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  step probe.count.sm0 15 env GCL_VERBOSE=1 GCL_COUNT_ONLY=1 GCL_TRACE_SM=0 \
    GCL_TRACE_DIR="$W/probe/count_sm0" LD_PRELOAD="$SO" "$BIN/vecadd"
  # SM 0's round-robin share by CTA id (GCL_CTA_SCOPE=id): about 4096 / SMs CTAs, against the
  # share SM 0 runs while only its warps pay the instrumentation (8-16 of them on the H200)
  step probe.count.id0 15 env GCL_VERBOSE=1 GCL_COUNT_ONLY=1 GCL_TRACE_SM=0 GCL_CTA_SCOPE=id \
    GCL_TRACE_DIR="$W/probe/count_id0" LD_PRELOAD="$SO" "$BIN/vecadd"
  # hung NAME DIR: the step just run used its whole time (not skipped for want of it) and left no
  # record in DIR. Passes 2-4 hung that way on every traced launch: the probes of the same sink
  # after it would each spend their 15 s too, so they are left out
  hung() { [ "$1" = 124 ] && [ "$SKIPPED" = 0 ] && [ "$(records_in "$2")" -eq 0 ]; }
  CHANNEL_HUNG=0; BUFFER_HUNG=0
  step probe.novalues.allsm 15 env GCL_VERBOSE=1 GCL_VALUES=0 GCL_TRACE_SM=-1 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/a" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  if hung $? "$W/probe/a"; then
    CHANNEL_HUNG=1; log "probe.novalues.allsm ran out of time without a record: the channel's other probes are left out"
  else
    step probe.values.allsm 15 env GCL_VERBOSE=1 GCL_TRACE_SM=-1 GCL_COMPRESS=none \
      GCL_TRACE_DIR="$W/probe/b" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
    step probe.values.sm0 15 env GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none \
      GCL_TRACE_DIR="$W/probe/c" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  fi
  # the same through the device buffer: no channel, no host thread while the kernel runs
  step probe.buffer.sm0 15 env GCL_VERBOSE=1 GCL_BUFFER_MB=1024 GCL_TRACE_SM=0 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/probe/d" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
  if hung $? "$W/probe/d"; then BUFFER_HUNG=1; fi
  ch=$(records_in "$W/probe/c"); bu=$(records_in "$W/probe/d")
  log "probe records on SM 0: channel ${ch:-0}, device buffer ${bu:-0}"
  if [ "${ch:-0}" -eq 0 ] && [ "${bu:-0}" -gt 0 ]; then
    TRACE_SINK=(GCL_BUFFER_MB="$BUFFER_MB"); log "traced runs use the device buffer (GCL_BUFFER_MB=$BUFFER_MB)"
  elif [ "${ch:-0}" -eq 0 ] && [ "${bu:-0}" -eq 0 ]; then
    # neither way delivered with values on: the uniform-register operands (new, GCL_UNIFORM) are
    # the one part of the values-on instrumentation the first H200 passes did not have
    [ "$CHANNEL_HUNG" = 1 ] || step probe.nouniform.sm0 15 env GCL_VERBOSE=1 GCL_UNIFORM=0 GCL_TRACE_SM=0 \
      GCL_COMPRESS=none GCL_TRACE_DIR="$W/probe/e" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
    [ "$BUFFER_HUNG" = 1 ] || step probe.nouniform.buffer.sm0 15 env GCL_VERBOSE=1 GCL_UNIFORM=0 GCL_BUFFER_MB=1024 \
      GCL_TRACE_SM=0 GCL_COMPRESS=none GCL_TRACE_DIR="$W/probe/f" LD_PRELOAD="$SO" "$BIN/vecadd" 4096
    nu=$(records_in "$W/probe/e"); nb=$(records_in "$W/probe/f")
    log "probe records on SM 0 without uniform registers: channel ${nu:-0}, device buffer ${nb:-0}"
    if [ "${nu:-0}" -gt 0 ]; then
      TRACE_SINK=(GCL_UNIFORM=0); log "traced runs leave uniform registers out (GCL_UNIFORM=0)"
    elif [ "${nb:-0}" -gt 0 ]; then
      TRACE_SINK=(GCL_UNIFORM=0 GCL_BUFFER_MB="$BUFFER_MB")
      log "traced runs leave uniform registers out and use the device buffer (GCL_UNIFORM=0 GCL_BUFFER_MB=$BUFFER_MB)"
    fi
  fi
  du -ab "$W/probe" 2>/dev/null | tee -a "$W/collect.log" >>"$OUT/collect.log"
  n=0; for d in c d e f; do n=$(( n + $(records_in "$W/probe/$d") )); done
  [ "$n" -gt 0 ] || PROBES_EMPTY=1
fi

# 3. the full SM-0 traces, with what is left
trace_program() {  # NAME CAP CMD...
  local name=$1 cap=$2; shift 2
  mkdir -p "$W/$name"
  tstep "$name.trace" "$cap" env ${TRACE_SINK[@]+"${TRACE_SINK[@]}"} GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none \
    GCL_TRACE_DIR="$W/$name/trace" LD_PRELOAD="$SO" "$@"
  du -sb "$W/$name/trace" 2>/dev/null | tee -a "$W/collect.log" >>"$OUT/collect.log"
}
# vecadd's full run (4096 CTAs) is the one traced run scoped to SM 0: the probes' 16 CTAs are
# fewer than the SMs, so the tool keeps their CTA 0 (GCL_SMALL_GRID). When it delivers no record
# the full traces would spend their minutes writing headers (the first H200 passes: 11 s a
# launch, no records; the large grids' SM-0 traces), so the rest wait for records.
if [ "$TRACER_OK" = 1 ]; then
  trace_program vecadd 60 "$BIN/vecadd"
  if ! ls "$W/vecadd/trace"/kernel-1.trace >/dev/null 2>&1; then
    # a retry is worth its time only with another build of the tool (the carried one)
    if [ "$SO" != "$SO_CARRIED" ] && [ -f "$SO_CARRIED" ]; then
      SO=$SO_CARRIED
      log "no vecadd trace: retrying with $SO (the later traces use it too)"
      tstep vecadd.trace2 60 env ${TRACE_SINK[@]+"${TRACE_SINK[@]}"} GCL_VERBOSE=1 GCL_TRACE_SM=0 GCL_COMPRESS=none \
        GCL_TRACE_DIR="$W/vecadd/trace" LD_PRELOAD="$SO" "$BIN/vecadd"
    else
      log "no vecadd trace, and no other build of the tool to retry with"
    fi
  fi
  if [ "$(records_in "$W/vecadd/trace")" -eq 0 ]; then
    [ "$PROBES_EMPTY" = 1 ] && why="no probe and no vecadd trace delivered a record" \
      || why="the probes (CTA 0 of 16) delivered, but vecadd's SM-0 trace holds no record"
    log "$why: the full traces of nw, bfs, lud and the LLM are left out"
    TRACE_REST=0
  else
    TRACE_REST=1
  fi
fi
if [ "$TRACER_OK" = 1 ] && [ "$TRACE_REST" = 1 ]; then
  trace_program nw 90 "$BIN/nw" "$NW_N"
  trace_program bfs 60 "$BIN/bfs" "$BFS_N"
  trace_program lud 90 "$BIN/lud" "$LUD_N"
  trace_program llm 200 "${LLM[@]}"
fi

# 4. Nsight Compute, cheapest program first, with whatever time is left
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
# stream cut at the size limit still holds every earlier kernel whole. Every archive's
# tar/xz/zstd errors go to $OUT/pack.err; PACK_OK=0 when one failed.
log "packing"
PACK_OK=1
pack_check() {  # WHAT RC...: a pipeline's statuses, all 0 or packing WHAT failed
  local what=$1 rc; shift
  for rc in "$@"; do
    if [ "$rc" != 0 ]; then PACK_OK=0; log "packing $what failed (statuses $*): see pack.err"; echo "$what: statuses $*" >>"$OUT/pack.err"; return 1; fi
  done
}
( cd "$W" && find . -type f ! -name 'kernel-*.trace' ! -name 'torch_trace.json' | sort >"$W/small.lst" )
( cd "$W" && tar -cf - -T "$W/small.lst" 2>>"$OUT/pack.err" | xz -T0 -6 >"$OUT/meta.tar.xz" 2>>"$OUT/pack.err"
  echo "${PIPESTATUS[*]}" >"$W/meta.rc" )
pack_check meta.tar.xz $(cat "$W/meta.rc" 2>/dev/null || echo 1)
[ -s "$OUT/meta.tar.xz" ] || { PACK_OK=0; log "meta.tar.xz was not written"; }
if [ -f "$W/llm/torch_trace.json" ]; then
  xz -T0 -6 -c "$W/llm/torch_trace.json" >"$OUT/torch_trace.json.xz" 2>>"$OUT/pack.err"
  pack_check torch_trace.json.xz $?
fi
( cd "$W" && { find probe -name 'kernel-*.trace' 2>/dev/null | sort; for n in vecadd nw bfs lud llm; do
    [ -f "$n/trace/kernelslist" ] || continue
    grep -v '^Memcpy' "$n/trace/kernelslist" | sed "s|^|$n/trace/|"
  done; } >"$W/traces.lst" )
rm -f "$OUT"/traces.tar.part*
if [ -s "$W/traces.lst" ]; then
  if [ -n "$ZSTD" ]; then COMP=("$ZSTD" -T0 -15 --long=27 -q -c); else COMP=(xz -T0 -6); fi
  ( cd "$W" && tar -cf - -T "$W/traces.lst" 2>>"$OUT/pack.err" | "${COMP[@]}" 2>>"$OUT/pack.err" \
      | head -c $((56 * 1024 * 1024)) | split -b 15000000 -d -a 1 - "$OUT/traces.tar.part" 2>>"$OUT/pack.err"
    echo "${PIPESTATUS[*]}" >"$W/traces.rc" )
  # head cuts the stream at its size limit, and tar and the compressor then fail writing to it
  # (141, SIGPIPE, or their own write error where SIGPIPE is ignored): only then is that expected
  size=$(cat "$OUT"/traces.tar.part* 2>/dev/null | wc -c)
  if [ "$size" -ge $((56 * 1024 * 1024)) ]; then
    log "the trace stream was cut at 56 MiB: the last kernel in it is partial"
    read -r rt rc rh rs <"$W/traces.rc"; pack_check traces.tar.part "$rh" "$rs"
  else
    pack_check traces.tar.part $(cat "$W/traces.rc" 2>/dev/null || echo 1)
  fi
else
  log "no traces to pack"
fi
[ -s "$OUT/pack.err" ] || rm -f "$OUT/pack.err"
ls -l "$OUT" | tee -a "$W/collect.log" >>"$OUT/collect.log"
for f in "$OUT"/*; do  # the device hands back files under 16 MiB
  [ "$(stat -c %s "$f")" -lt 16777216 ] || log "WARNING: $f is over 16 MiB and may not come back"
done

if [ "$PACK_OK" = 0 ]; then finish 6 "packing failed (pack.err)"; fi
if [ "$SMOKE" = failed ]; then finish 4 "the tool failed its smoke test: only runs without it ran"; fi
if [ "$TOOL_STEPS_OK" = 0 ]; then finish 5 "no workload step under the tool exited 0"; fi
finish 0 "done: $TOOL_STEPS_OK workload steps under the tool exited 0"
