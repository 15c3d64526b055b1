"""``gclsampler simulate``: run the user's Accel-Sim on a plan's invocations, or on all of them.

    gclsampler simulate PLAN WL --out DIR     # sampled: DIR/simulated.csv, DIR/estimate.json
    gclsampler simulate --all WL --out DIR    # full: + WL/profiles/accelsim-<config>.csv

The work is in ``gclsampler.simulate``; this module parses flags, prints the one-screen
summary and maps outcomes to exit statuses: 0 done, 1 some simulations failed (each named
with its log; finished ones stay cached, so rerunning retries only the failed ones),
2 bad input or no usable simulator (one line saying what to install or set), 130 interrupted,
143 terminated (SIGTERM),
129 hung up (SIGHUP).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import sys
from pathlib import Path

from gclsampler.cli._args import path_arg
from gclsampler._guard import interrupt_outcome, stderr_line
from gclsampler.errors import GclError
from gclsampler.trace.ampere import AS_AMPERE_HELP
from gclsampler.trace.kernel_names import same_kernel


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run Accel-Sim (your own build) on a plan's sampled invocations and estimate the whole workload "
        "(simulated.csv, estimate.json), or with --all on every invocation (the full simulation, written as "
        "WL/profiles/accelsim-<config>.csv for `python evaluate.py`). One simulator process per invocation "
        "(cold caches); results are cached and a killed run resumes. Exit 1 when a simulation failed.")
    parser.usage = ("gclsampler simulate PLAN WL --out DIR [options]\n"
                    "       gclsampler simulate --all WL --out DIR [options]")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="plan.json and the workload directory; with --all only the workload directory")
    parser.add_argument("--all", action="store_true",
                        help="simulate every invocation and write WL/profiles/accelsim-<config>.csv")
    parser.add_argument("--out", type=path_arg, required=True, help="output directory")
    parser.add_argument("--accelsim-root", default=None,
                        help="your accel-sim-framework checkout, built (default: $ACCELSIM_ROOT)")
    parser.add_argument("--config", default=None,
                        help="tested config of that build (default SM86_RTX3070)")
    parser.add_argument("--sim-arg", action="append", default=[], metavar="'-FLAG VALUE'",
                        help="more simulator flags, split like a shell line; repeatable. Write it as "
                             "--sim-arg='-gpgpu_clock_domains 1500:1500:1500:3500' (with '=') since it starts "
                             "with '-'. A run stopped by -gpgpu_max_cycle or -gpgpu_max_insn counts as failed: "
                             "its cycles are not the kernel's")
    parser.add_argument("--full-gpu", action="store_true",
                        help="simulate the config's whole GPU, not one SM (for traces of complete grids)")
    parser.add_argument("--deadlock-detect", action="store_true",
                        help="keep Accel-Sim's deadlock detector on (off by default: it false-alarms on long "
                             "tensor-core GEMMs)")
    parser.add_argument("--jobs", type=int, default=1, help="simulator processes at once on this machine (default 1)")
    parser.add_argument("--launcher", choices=["local", "slurm", "submitit-local"], default="local",
                        help="local (default; --jobs at a time), slurm (a submitit job array; pip install "
                             "'gclsampler[slurm]'), or submitit-local (submitit's local executor, to try the "
                             "slurm path on one machine)")
    parser.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE",
                        help="a submitit slurm parameter without the slurm_ prefix, e.g. partition=gpu, "
                             "mem_gb=8, array_parallelism=64; repeatable")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="kill a simulation that runs longer (default: no limit)")
    parser.add_argument("--cache-dir", type=path_arg, default=None,
                        help="where runs and their logs are kept (default OUT/runs); share it between plans "
                             "of one workload to reuse simulations (a second command on it waits for the first)")
    parser.add_argument("--dedup", action="store_true",
                        help="simulate byte-identical traces once and reuse the result (off by default)")
    parser.add_argument("--as-ampere", action="store_true", help=AS_AMPERE_HELP)
    parser.add_argument("--keep-traces", action="store_true",
                        help="keep each run's exported trace next to its log (default: deleted after success)")
    parser.add_argument("--json", action="store_true", help="print estimate.json instead of the summary (not with --all)")
    parser.set_defaults(handler=_simulate)


def _paths(args) -> tuple[Path | None, Path]:
    if args.all:
        if len(args.paths) != 1:
            raise GclError(f"simulate --all: expected one workload directory, got {len(args.paths)} paths")
        return None, Path(args.paths[0])
    if len(args.paths) != 2:
        raise GclError(f"simulate: expected PLAN and WL (or --all WL), got {len(args.paths)} path(s)")
    return Path(args.paths[0]), Path(args.paths[1])


def _sim_args(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        try:
            out += shlex.split(v)
        except ValueError as exc:
            raise GclError(f"--sim-arg {v!r}: {exc}") from None
    return out


def _slurm_params(values: list[str]) -> dict[str, str]:
    params = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k.strip():
            raise GclError(f"--slurm {v!r}: expected KEY=VALUE (e.g. partition=gpu)")
        params[k.strip().removeprefix("slurm_")] = val.strip()
    return params


def _g(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _pct(share) -> str:
    """A cluster's share of the cycles; '-' when it has none (a cycles total that overflowed
    makes every share null, and the text summary stopped with a TypeError there)."""
    return "-" if share is None or (isinstance(share, float) and math.isnan(share)) else f"{100 * share:.1f}%"


def _simulate(args: argparse.Namespace) -> int:
    from gclsampler._safe_out import holding_dirs

    with holding_dirs():  # --out, held while this command writes into it
        return _simulate_held(args)


def _simulate_held(args: argparse.Namespace) -> int:
    from gclsampler import simulate as S
    from gclsampler.profile import SIMULATED_PREFIX
    from gclsampler.trace.workload import describe_export

    plan_path, wdir = _paths(args)
    if args.all and args.json:
        raise GclError("--json: prints estimate.json, which --all does not write (it writes the profile)")
    if args.jobs < 1:
        raise GclError(f"--jobs {args.jobs}: must be at least 1")
    if args.timeout is not None and not 0 < args.timeout < 10**9:  # inf: the submitit launchers' int() crashed
        raise GclError(f"--timeout {args.timeout}: must be a positive number of seconds below 1e9 (omit it for no limit)")
    if not (wdir / "kernelslist.g").is_file():
        raise GclError(f"{wdir}: not a workload directory (no kernelslist.g)")
    slurm = _slurm_params(args.slurm)
    S.check_launcher(args.launcher, slurm)  # before --out is claimed: a refused launcher leaves nothing behind
    from gclsampler._safe_out import MARKER, RUN_LOCK, OutputError, check_out_dir, claim_dir, hold_dir

    # --out is also the default run cache, so simulate writes into it (a rerun continues
    # there); that is safe only in a directory simulate made, and never inside its inputs
    check_out_dir(args.out, "simulate", inputs=[wdir, plan_path])
    if args.cache_dir is not None:
        _check_cache_dir(args.cache_dir, [wdir, plan_path], args.out)
    extra = _sim_args(args.sim_arg)
    flags = S.default_flags(one_sm=not args.full_gpu, deadlock_detect=args.deadlock_detect, extra=extra)

    plan = None
    if plan_path is not None:
        from gclsampler.plan import SamplingPlan

        plan = SamplingPlan.load(plan_path)
    sim = S.locate_simulator(args.accelsim_root, args.config or S.DEFAULT_CONFIG, flags)
    if not math.isfinite(sim.core_clock_mhz) or sim.core_clock_mhz <= 0:
        raise GclError(f"{sim.config_dir / 'gpgpusim.config'}: -gpgpu_clock_domains: no core clock")

    from gclsampler.trace import list_invocations

    infos = {i.invocation: i for i in list_invocations(wdir)}
    from gclsampler.trace.workload import ids_not_one_to_n

    problem = ids_not_one_to_n(infos, wdir, "simulate")  # --all also needs them for the profile it writes
    if problem:
        raise GclError(problem)
    if plan is not None:
        if len(infos) != plan.n_invocations:
            raise GclError(f"{wdir}: kernelslist.g: {len(infos)} kernel invocations, but {plan_path} covers "
                           f"{plan.n_invocations}")
        for s in sorted(plan.samples, key=lambda s: s.invocation):
            got = infos[s.invocation].header.name if s.invocation in infos else None
            if got is not None and not same_kernel(got, s.kernel_name):
                # a plan of another workload with as many invocations: its weights would scale
                # the wrong kernels (plan export-accelsim and plan reconstruct refuse it too)
                raise GclError(f"{plan_path}: samples: invocation {s.invocation} is {s.kernel_name!r}, but "
                               f"{wdir / infos[s.invocation].path} traces {got!r}: a plan of another workload?")
        wanted = sorted(int(i) for i in plan.invocations)
    else:
        wanted = sorted(infos)
    if plan is None:
        _check_own_profile(wdir / "profiles" / f"{SIMULATED_PREFIX}{sim.config}.csv")
    from gclsampler.workload import declared_data_kind

    synthetic = declared_data_kind(wdir) == "synthetic" or bool(plan is not None and plan.synthetic)
    # a failure before any simulation ran leaves --out as it found it: absent, or an empty directory
    made = not Path(args.out).exists()
    was_empty = not made and Path(args.out).is_dir() and not any(Path(args.out).iterdir())
    out = claim_dir(args.out, "simulate", inputs=[wdir, plan_path])
    # before anything in it is removed: a second command on this --out deleted the first's
    # simulated.csv and estimate.json and wrote its own beside the first's run.json
    busy = hold_dir(out, f"--out: {out}: in use by another simulate command; give each command its own --out "
                         "(they may share a --cache-dir)")
    if busy:
        raise OutputError(busy)
    for old in ("simulated.csv", "estimate.json"):  # an earlier run's: this one writes them only if it succeeds
        (out / old).unlink(missing_ok=True)
    cache = args.cache_dir or out / "runs"
    if not args.json:
        n = len(wanted)
        what = (f"{n} sampled invocation{'s' * (n != 1)}" if plan is not None
                else f"all {n} invocation{'s' * (n != 1)}")
        print(f"simulating {what} of {wdir} with Accel-Sim {sim.config} "
              f"({args.launcher}{', ' + str(args.jobs) + ' at a time' if args.launcher == 'local' else ''}); "
              f"runs and logs in {cache}", file=sys.stderr)
    try:
        run = S.simulate(sim, wdir, wanted, cache, flags=flags, jobs=args.jobs, launcher=args.launcher,
                         timeout_s=args.timeout, dedup=args.dedup, keep_traces=args.keep_traces,
                         slurm_params=slurm, as_ampere=args.as_ampere)
    except KeyboardInterrupt as exc:  # Ctrl-C, a SIGTERM (a scheduler's) or a SIGHUP: live simulators were killed
        word, status = interrupt_outcome(exc)
        stderr_line(f"gclsampler: {word}; finished simulations are cached in {cache}: rerun the same command "
                    "to continue")
        return status
    except GclError:
        # a bad trace stops the export before anything ran: a directory this call made holds
        # nothing worth keeping (simulate leaves no finished run's cache behind on this path)
        if (made or was_empty) and all(p.name in (MARKER, RUN_LOCK, "runs") for p in out.iterdir()):
            _remove_unused(out, made)
        raise
    run_info = {"wall_s": round(run.wall_s, 3), "simulated_now": run.n_run, "from_cache": run.n_cached,
                "deduplicated": run.n_dedup, "launcher": run.launcher, "jobs": run.jobs,
                "sim_wall_s": {str(r.invocation): r.sim_wall_s for r in run.records if r.source == "run"},
                "failures": [r.error for r in run.failures], "flags": run.flags}
    from gclsampler._atomic import write_text_atomic
    from gclsampler.score import finite_or_null

    write_text_atomic(out / "run.json", json.dumps(run_info, indent=1) + "\n")
    broken = [r for r in run.failures if r.broken]
    if broken:
        raise S.SimulatorNotFound(broken[0].error)
    if run.failures:
        for r in run.failures[:10]:
            print(f"gclsampler: error: {r.error}", file=sys.stderr)
        more = len(run.failures) - 10
        print(f"gclsampler: {len(run.failures)} of {len(run.records)} simulations failed"
              + (f" ({more} more in {out / 'run.json'})" if more > 0 else "")
              + ("; the others are cached: rerun to retry only the failed ones"
                 if len(run.failures) < len(run.records) else "; rerun to retry them"), file=sys.stderr)
        return 1

    S.write_simulated_csv(out / "simulated.csv", run, plan, synthetic)
    label = S.provenance(run, synthetic)
    notes = describe_export(run.export_facts)
    if plan is None:
        prof = wdir / "profiles" / f"{SIMULATED_PREFIX}{sim.config}.csv"
        S.write_profile(prof, run, synthetic, len(infos))
        _summary_all(run, wdir, out, prof, label, notes)
        return 0
    doc = S.estimate_document(plan, plan_path, wdir, run, synthetic)
    doc["trace_export"] = {"notes": notes, "per_invocation": run.export_facts}
    doc = finite_or_null(doc)
    write_text_atomic(out / "estimate.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    _summary_plan(doc, run, out, label, notes)
    return 0


def _check_cache_dir(cache: Path, inputs: list, out: Path) -> None:
    """``--cache-dir`` holds only run directories (named by their key), so a user's directory,
    a file or a path inside the inputs is refused before anything is written, as ``--out`` is,
    and so is ``--out`` itself or a directory holding it: the first run wrote its outputs there,
    and the identical rerun refused them as not a run's."""
    import re

    from gclsampler import simulate as S
    from gclsampler._safe_out import OutputError, _is_within, _resolve, check_not_input, foreign_entries

    try:
        check_not_input(cache, inputs, directory=True)
    except OutputError as exc:
        raise OutputError(f"--cache-dir: {exc}") from None
    if _is_within(_resolve(out), _resolve(cache)):
        raise OutputError(f"--cache-dir: {cache}: is --out or holds it; the cache holds only run directories: "
                          f"give another directory, or leave --cache-dir out to cache in {Path(out) / 'runs'}")
    if cache.exists() and not cache.is_dir():
        raise OutputError(f"--cache-dir: {cache}: is a file, not a run cache directory")
    # run directories are named by their 32-hex key; submitit/ holds the SLURM launcher's job files;
    # .lock keeps a second command out while one uses the cache
    other = foreign_entries(cache, lambda p: (p.is_dir() and (re.fullmatch(r"[0-9a-f]{32}", p.name) is not None
                                                               or p.name == "submitit"))
                            or (p.name == S.LOCK_NAME and p.is_file() and not p.is_symlink()))
    if other:
        raise OutputError(f"--cache-dir: {cache}: holds {other[0]!r}, which is not a simulate run; a run cache "
                          "holds only run directories (give an empty or new directory, or an earlier OUT/runs)")


def _check_own_profile(prof: Path) -> None:
    """``--all`` replaces ``profiles/accelsim-<config>.csv`` only when an earlier ``--all`` wrote it
    (its sidecar JSON says so): the user's own file of that name is refused, not overwritten."""
    from gclsampler._safe_out import OutputError, _special_file

    side = prof.with_suffix(".json")
    for p in (prof, side):  # a FIFO there was replaced by a regular file
        what = _special_file(p) or ("a directory" if p.is_dir() else None)
        if what:
            raise OutputError(f"{p}: is {what}, not a file `gclsampler simulate --all` wrote; not replaced")
    try:
        ours = json.loads(side.read_text()).get("format") == "gclsampler-simulated-profile/1"
    except (OSError, ValueError, AttributeError):
        ours = False
    if side.exists() and not ours:  # the user's notes of that name were overwritten
        raise OutputError(f"{side}: exists and was not written by `gclsampler simulate --all`; not replaced: "
                          "move it, or pass --config")
    if not prof.exists():
        return
    if not ours:
        raise OutputError(f"{prof}: exists and was not written by `gclsampler simulate --all` (no "
                          f"{prof.with_suffix('.json').name} beside it); not replaced: move it, or pass --config")


def _remove_unused(out: Path, made: bool) -> None:
    """Leave ``--out`` as it was found (absent, or empty) when nothing was simulated into it.

    Why under the cache lock, without waiting: a second command with the same ``--out`` may be
    using ``out/runs`` as its cache by now; its runs are not this command's to remove.
    """
    import contextlib

    from gclsampler import simulate as S
    from gclsampler._safe_out import MARKER

    runs = out / "runs"
    with contextlib.suppress(OSError), (S.cache_lock(runs, wait=False) if runs.is_dir()
                                        else contextlib.nullcontext(True)) as lock:
        if lock is None or not _empty_cache(runs):
            return
        if made:
            shutil.rmtree(out, ignore_errors=True)
        else:
            shutil.rmtree(runs, ignore_errors=True)
            (out / MARKER).unlink(missing_ok=True)


def _empty_cache(cache: Path) -> bool:
    """True when the run cache holds no directory (no finished or started simulation)."""
    try:
        return not any(p.is_dir() for p in cache.iterdir())
    except FileNotFoundError:
        return True


def _run_line(run) -> str:
    return (f"  runs: {run.n_run} simulated now, {run.n_cached} from the cache"
            + (f", {run.n_dedup} reused from byte-identical traces" if run.n_dedup else "")
            + f"; wall time {run.wall_s:.1f} s")


def _summary_plan(doc: dict, run, out: Path, label: str, notes: list[str]) -> None:
    from gclsampler import simulate as S

    w = sys.stdout.write
    w(f"{doc['plan']}: {doc['method']} plan for {doc['workload']}: {doc['n_simulated']} of "
      f"{doc['n_invocations']} invocations simulated\n")
    w(f"  {label}\n")
    w(f"  flags: {' '.join(run.flags)}\n")
    if S.deadlock_detect_off(run.flags):
        w("    (-gpgpu_deadlock_detect 0: the detector false-alarms on long tensor-core GEMMs)\n")
    for n in notes:
        w(f"  note: {n}\n")
    w(_run_line(run) + "\n")
    t, m = doc["totals"], doc["means"]
    w("  SIMULATED whole-workload estimate (totals: sum of weight x metric; rates: weighted mean per invocation):\n")
    iv = doc.get("interval")
    w(f"    cycles        {_g(t.get('cycles'))}"
      + (f"   (totals within the plan's error bound of {100 * iv['error_bound']:.2f}%: {_g(iv['low'])} .. "
         f"{_g(iv['high'])})" if iv else "") + "\n")
    w(f"    instructions  {_g(t.get('instructions'))}\n")
    w(f"    time          {_g(t.get('time_ns'))} ns at {run.simulator.core_clock_mhz:g} MHz\n")
    w(f"    IPC           {_g(m.get('ipc'))} (weighted mean);  {_g(doc.get('ipc_of_totals'))} (instructions / cycles)\n")
    for k, name in (("l1_hit_rate", "L1 hit rate"), ("l2_hit_rate", "L2 hit rate"),
                    ("achieved_occupancy", "occupancy")):
        w(f"    {name:<13} {_g(m.get(k))}\n")
    cl = sorted(doc["clusters"], key=lambda c: -(c["estimate"] or 0))
    w(f"  clusters by share of the cycles ({len(cl)}):\n")
    w(f"    {'cluster':>7} {'size':>7} {'samples':>7} {'cycles':>16} {'share':>7}\n")
    for c in cl[:8]:
        w(f"    {c['cluster']:>7} {c['size']:>7} {c['samples']:>7} {_g(c['estimate']):>16} "
          f"{_pct(c['share']):>7}\n")
    if len(cl) > 8:
        w(f"    ... {len(cl) - 8} more in estimate.json\n")
    w(f"  wrote {out / 'simulated.csv'}, {out / 'estimate.json'}\n")


def _summary_all(run, wdir: Path, out: Path, prof: Path, label: str, notes: list[str]) -> None:
    import numpy as np

    w = sys.stdout.write
    cyc = np.array([r.stats["cycles"] for r in run.records])
    ins = np.array([r.stats["instructions"] for r in run.records])
    ipc = np.array([r.stats.get("ipc", np.nan) for r in run.records])
    w(f"{wdir}: all {len(run.records)} invocations simulated\n")
    w(f"  {label}\n")
    w(f"  flags: {' '.join(run.flags)}\n")
    for n in notes:
        w(f"  note: {n}\n")
    w(_run_line(run) + "\n")
    w(f"  SIMULATED totals: cycles {_g(float(cyc.sum()))}, instructions {_g(float(ins.sum()))}, "
      f"time {_g(float(cyc.sum()) * 1000.0 / run.simulator.core_clock_mhz)} ns; mean IPC {_g(float(np.mean(ipc)))}\n")
    w(f"  wrote {out / 'simulated.csv'} and the simulated profile {prof}\n")
    w(f"  score every method against it: {_evaluate_command(wdir, prof)} (docs/simulate.md)\n")


def _evaluate_command(wdir: Path, prof: Path) -> str:
    """The evaluate.py line that scores plans on ``prof``. ``generate=false`` because the suite
    would otherwise synthesize a workload made with other knobs again, over the directory that
    now holds the simulated profile (it refuses to); ``suite.trace_arch`` fits the plans on the
    profile the workload was made for."""
    from gclsampler._sweep import hydra_value
    from gclsampler.workload import declared_arch

    try:
        arch = declared_arch(wdir)
    except (GclError, OSError):  # the profile is written: a broken workload.json only loses the hint
        arch = None
    where = wdir.resolve()
    args = [f"suite.workloads=[{hydra_value(where.name)}]", f"suite.data_dir={hydra_value(str(where.parent))}"]
    if arch:
        args.append(f"suite.trace_arch={arch}")
    args += [f"suite.archs=[{prof.stem}]", "generate=false"]
    return "python evaluate.py " + " ".join(shlex.quote(a) for a in args)
