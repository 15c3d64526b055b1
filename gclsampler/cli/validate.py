"""``gclsampler validate WL``: every consistency problem of a workload, one line each.

Exit status 2 when any error is found (the workload would give a wrong or no plan),
0 when there are only warnings or nothing at all; see ``gclsampler.validate``.
"""

from __future__ import annotations

import argparse
import sys

from gclsampler.cli._args import path_arg


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check a workload directory before any expensive work: kernelslist.g, every trace header and "
        "profile.csv (and profiles/*.csv) against each other. Prints one line per problem; exit 2 on "
        "any error, 0 with warnings only. Trace bodies are read only with --full."
    )
    parser.add_argument("workload", type=path_arg, help="workload directory (kernelslist.g, traces, profile.csv)")
    parser.add_argument("--no-profile", action="store_true", help="check the traces only (no profile.csv yet)")
    parser.add_argument("--full", action="store_true",
                        help="also parse every trace whole, as the graph stage does (catches a body cut short or "
                             "malformed after the header; a synthetic phi2's 537 MB of .zst traces on 2 cores: 11 s with "
                             "--workers 2, 20 s with 1)")
    parser.add_argument("--workers", type=int, default=2,
                        help="traces --full parses at once, in processes (default 2; 1 = in this process). "
                             "Each holds one decompressed trace in memory")
    parser.add_argument("--quiet", action="store_true", help="no summary line when the workload is clean")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from gclsampler.validate import check_workload, errors_and_warnings

    from gclsampler._guard import one_line
    from gclsampler.errors import GclError

    if args.workers < 1:
        raise GclError(f"--workers {args.workers}: must be at least 1")
    problems = check_workload(args.workload, profile=not args.no_profile, bodies=args.full,
                              progress=not args.quiet, workers=args.workers, scored=False)
    errors, warnings = errors_and_warnings(problems)
    for p in problems:
        print(f"gclsampler: {p.severity}: {one_line(p.text)}", file=sys.stderr)  # one line per problem
    if errors:
        return 2
    if not args.quiet:
        from gclsampler.trace.workload import no_traces

        scope = "" if args.full else " (trace headers; --full also parses every trace body)"
        if not args.no_profile and no_traces(args.workload):
            scope = (" as a profile-only workload (profile.csv, no traces): train.py and the methods that read "
                     "traces refuse it; `gclsampler sample --list` says which run")
        print(f"{args.workload}: ok{scope}" + (f" ({len(warnings)} warning(s))" if warnings else ""))
    return 0
