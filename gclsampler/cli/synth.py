"""``gclsampler synth WORKLOAD --out DIR [--arch turing] [--seed 0] [--no-rerun] [key=value ...]``.

Writes a SYNTHETIC workload directory (see docs/synth.md). ``key=value`` pairs
override the workload's synth knobs; an unknown key fails before any work.

Its defaults are the request ``train.py`` and ``evaluate.py`` make (plans on turing, a second
run of it), so that a directory synthesized here is the one ``train.py workload=NAME`` uses;
with other defaults train.py found it stale and synthesized it again.
"""

from __future__ import annotations

import argparse

from gclsampler.errors import GclError, check_seed


def register(parser: argparse.ArgumentParser) -> None:
    # written out: argparse's own shows [--out OUT], which only --list may leave out
    parser.usage = ("%(prog)s WORKLOAD --out DIR [--arch ARCH] [--seed SEED] [--jobs N] [--no-rerun] [--quiet] "
                    "[KEY=VALUE ...]\n       %(prog)s [WORKLOAD] --list")
    parser.add_argument("workload", nargs="?", help="workload name (see `gclsampler synth --list`)")
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="KEY=VALUE ...",
                        help="synth knob overrides, e.g. layers=2 decode=4 (options may be mixed in); "
                             "archs=[turing,ampere] limits the ground-truth archs")
    parser.add_argument("--out", metavar="DIR", help="required: output workload directory (replaced atomically when empty or an earlier synth output; anything else is refused)")
    parser.add_argument("--arch", default="turing",
                        help="arch whose ground truth becomes profile.csv (default turing, as train.py's and evaluate.py's)")
    parser.add_argument("--rerun", action=argparse.BooleanOptionalAction, default=True,
                        help="also write profiles/<arch>_rerun.csv, a second run of --arch (only the jitter drawn "
                             "again) that reports score plans on, as train.py asks for (default on)")
    parser.add_argument("--seed", type=int, default=0, help="synthesis seed: inputs and run-to-run jitter (default 0)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="processes (default 2: the timing model in a worker; output identical)")
    parser.add_argument("--list", action="store_true", help="list workloads with their default knobs (only WORKLOAD's when one is named)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar / summary line")
    parser.set_defaults(handler=_run)


class SynthUsageError(GclError):
    pass


def _run(args) -> int:
    from gclsampler.synth import generate, workload_defaults, workload_names

    if {"-h", "--help"} & set(args.rest) and getattr(args, "_cli_parser", None) is not None:
        # REMAINDER took it after WORKLOAD (`synth bfs --help`): "unrecognized arguments: --help", exit 2
        args._cli_parser.print_help()
        return 0
    if args.list and not args.rest:
        return _list(args.workload)
    if not args.workload:  # it printed the list and exited 0: `synth --out d && train.py ...` went on with no data
        raise SynthUsageError(f"synth: WORKLOAD is required, one of {', '.join(workload_names())} "
                              "(gclsampler synth --list gives their knobs)")
    class Tail(argparse.ArgumentParser):
        def error(self, message: str):  # one line, as every other error (argparse printed its usage block first)
            raise SynthUsageError(f"synth: {message}")

    tail = Tail(prog="gclsampler synth", add_help=False)
    tail.add_argument("--out", default=args.out)
    tail.add_argument("--arch", default=args.arch)
    tail.add_argument("--seed", type=int, default=args.seed)
    tail.add_argument("--quiet", action="store_true", default=args.quiet)
    tail.add_argument("--jobs", type=int, default=args.jobs)
    tail.add_argument("--rerun", action=argparse.BooleanOptionalAction, default=args.rerun)
    tail.add_argument("--list", action="store_true", default=args.list)
    tail.add_argument("overrides", nargs="*")
    args = tail.parse_intermixed_args(args.rest, namespace=argparse.Namespace(workload=args.workload))
    if args.list:  # `synth phi2 --list` (argparse's REMAINDER took --list after the workload)
        if args.overrides:
            raise SynthUsageError(f"synth: --list takes no KEY=VALUE (got {args.overrides[0]!r})")
        return _list(args.workload)
    params = {}
    for ov in args.overrides:
        if "=" not in ov:
            raise SynthUsageError(f"synth: override {ov!r} is not KEY=VALUE")
        key, val = ov.split("=", 1)
        key = key.removeprefix("synth.")
        if key in params:  # the last one won, silently
            raise SynthUsageError(f"synth: {key} given twice ({key}={params[key]}, {key}={val}); give it once")
        params[key] = val
    if not args.out:
        raise SynthUsageError("synth: --out DIR is required")
    if args.jobs < 1:
        raise SynthUsageError(f"synth: --jobs {args.jobs}: must be at least 1")
    check_seed(args.seed, "synth: --seed", SynthUsageError)  # the range every other seed of gclsampler takes
    workload_defaults(args.workload)  # unknown workload -> clear error
    if args.rerun:
        from gclsampler.profile import rerun_of
        from gclsampler.synth.generate import with_second_run

        if rerun_of(args.arch):  # it asked for a second run of the second run, named in the error
            raise SynthUsageError(f"synth: --arch {args.arch} is a second run itself; give --arch "
                                  f"{rerun_of(args.arch)} (its second run is written by default) or add --no-rerun")

        params = with_second_run(args.workload, params, args.arch)
    from gclsampler._guard import stderr_line
    from gclsampler._safe_out import synthesizing_workload
    from gclsampler.synth.generate import check_request

    check_request(args.workload, params, args.arch, args.seed)  # a bad knob: no lock file made beside --out

    # before any work: never replace a directory synth did not write; then wait for the train.py
    # and evaluate.py jobs reading it, as they wait for each other
    with synthesizing_workload(args.out, "gclsampler synth", lambda line: stderr_line(f"gclsampler: {line}")):
        generate(args.workload, args.out, params=params, arch=args.arch, seed=args.seed, progress=not args.quiet,
                 jobs=args.jobs)
    return 0


def _list(workload: str | None) -> int:
    """Every workload's default knobs, or only WORKLOAD's when one is named."""
    from gclsampler.synth import workload_defaults, workload_names

    for name in [workload] if workload else workload_names():
        d = workload_defaults(name)  # an unknown name -> the clear error
        print(name + ": " + " ".join(f"{k}={v}" for k, v in sorted(d.items())))
    return 0
