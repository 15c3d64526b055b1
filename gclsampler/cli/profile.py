"""``gclsampler profile``: bring profiler exports into ``profile.csv`` and summarise one."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from gclsampler.cli._args import path_arg


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="profile_command", metavar="SUBCOMMAND")

    imp = sub.add_parser(
        "import",
        help="convert an Nsight Compute / Nsight Systems / torch.profiler export to profile.csv",
        description=(
            "Convert a profiler export into profile.csv (one row per invocation, launch order). "
            "Formats: ncu = `ncu --csv --page raw`; nsys = `nsys stats --report cuda_gpu_trace` or "
            "`cuda_kern_exec_trace` with `--format csv`; torch = torch.profiler chrome trace JSON "
            "(.json or .json.gz)."
        ),
    )
    imp.add_argument("file", type=path_arg, help="the export to read")
    imp.add_argument("--out", type=path_arg, required=True, help="profile.csv to write (atomically)")
    imp.add_argument("--format", default="auto", choices=["auto", "ncu", "nsys", "torch", "profile"],
                     help="export format (default: detect from the content)")
    imp.add_argument("--clock-mhz", type=float, default=None,
                     help="fill missing cycles as time_ns * MHz / 1000 (nsys/torch record no cycle counter); "
                          "an estimate: real SM clocks vary")
    imp.set_defaults(handler=_import)

    info = sub.add_parser("info", help="summarise a profile.csv", description="Validate a profile.csv and summarise it.")
    info.add_argument("profile", type=path_arg)
    info.add_argument("--top", type=int, default=5, help="list the N kernel names with the most time (N >= 1, default 5)")
    info.set_defaults(handler=_info)


def _import(args: argparse.Namespace) -> int:
    from gclsampler.profile import import_profile, write_profile

    from gclsampler._safe_out import check_out_file
    from gclsampler.errors import GclError, located

    if args.clock_mhz is not None and not (math.isfinite(args.clock_mhz) and args.clock_mhz > 0):
        raise GclError(f"--clock-mhz {args.clock_mhz:g}: must be a finite number > 0 (the SM clock in MHz)")
    if Path(args.file).is_dir():  # else the output check answered first, "output lies inside the input"
        raise GclError(located(args.file, None, None, "is a directory; give the exported file (ncu/nsys CSV, "
                                                      "torch.profiler JSON)"))
    check_out_file(args.out, "profile", inputs=[args.file])
    notes: list[str] = []
    df = import_profile(args.file, args.format, clock_mhz=args.clock_mhz, notes=notes)
    write_profile(df, args.out, validated=True)  # import_profile returns a validated table
    print(f"{args.out}: {len(df)} invocations, {df['kernel_name'].nunique()} kernel names, "
          f"{len(df.columns)} columns")
    for note in notes:  # records left out on purpose: never silently
        print(f"gclsampler: warning: {note}", file=sys.stderr)
    return 0


def _info(args: argparse.Namespace) -> int:
    from gclsampler.errors import GclError
    from gclsampler.profile import OPTIONAL_COLUMNS, PKA_METRICS, REQUIRED_COLUMNS, read_profile

    if args.top < 1:  # -3 listed nothing without a word; refused as `trace info --top` is
        raise GclError(f"--top {args.top}: must be at least 1")
    df = read_profile(args.profile)
    total = float(df["time_ns"].sum())
    cycles_known = int(df["cycles"].notna().sum())
    optional = [c for c in OPTIONAL_COLUMNS if c in df.columns and c not in PKA_METRICS]
    pka = [c for c in PKA_METRICS if c in df.columns]
    extra = [c for c in df.columns if c not in REQUIRED_COLUMNS and c not in OPTIONAL_COLUMNS]
    print(f"profile      {args.profile}")
    print(f"invocations  {len(df)}")
    print(f"kernel names {df['kernel_name'].nunique()}")
    ms = total / 1e6
    print(f"total time   {ms:.3f} ms" if ms < 1e12 else f"total time   {ms:.6g} ms")  # not 300 digits
    print(f"cycles       {cycles_known}/{len(df)} rows" + ("" if cycles_known == len(df) else " (missing where the source has no cycle counter)"))
    print(f"metrics      {', '.join(optional) or '-'}")
    print(f"PKA metrics  {len(pka)}/12" + ("" if len(pka) in (0, 12) else f" (missing: {', '.join(c for c in PKA_METRICS if c not in pka)})"))
    if extra:
        print(f"other        {', '.join(map(str, extra))}")
    if len(df):
        per = df.groupby("kernel_name", sort=False)["time_ns"].agg(["size", "sum"]).sort_values("sum", ascending=False)
        print(f"top {min(args.top, len(per))} kernel names by time:")
        for name, row in per.head(args.top).iterrows():
            share = row["sum"] / total * 100.0 if total > 0 else 0.0  # divided first: 100 * 1e308 is inf
            print(f"  {share:5.1f}%  {int(row['size']):>8} x  {name}")
    return 0
