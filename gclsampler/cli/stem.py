"""``gclsampler stem``: a STEM+ROOT sampling plan from profile.csv alone (no traces needed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gclsampler.cli._args import path_arg


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Group invocations by kernel name, split each group by execution time (ROOT) and size "
        "a random sample per leaf (STEM) so that the estimated total time is within ±epsilon of "
        "the truth with confidence z: the workload's total (--scope global, this project's default) or "
        "every kernel name's (--scope group, the STEM paper's per-kernel construction; more samples). "
        "Writes plan.json (gclsampler-plan/1)."
    )
    parser.add_argument("profile", type=path_arg, help="profile.csv (one row per invocation)")
    parser.add_argument("--out", type=path_arg, required=True, help="plan.json to write (atomically)")
    parser.add_argument("--epsilon", type=float, default=0.05,
                        help="relative error bound, a number in (0, 1) (default 0.05)")
    parser.add_argument("--z", type=float, default=1.96,
                        help="confidence z-score, a number in [0.01, 40] (default 1.96 = 95%%)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed of the draws, an integer in [0, 2**32) (default 0)")
    parser.add_argument("--min-samples", type=int, default=1,
                        help="minimum draws per leaf, capped at the leaf size (default 1; 30 = CLT rule of thumb)")
    parser.add_argument("--min-group", type=int, default=2, help="smallest leaf ROOT may split off (default 2)")
    parser.add_argument("--no-root", action="store_true", help="plain STEM: one leaf per kernel name")
    parser.add_argument("--scope", choices=["global", "group"], default="global",
                        help="what the bound covers: the workload's total time (global, default) or the total "
                             "of every kernel name (group: more samples)")
    parser.add_argument("--time-column", default="time_ns", help="profile column to size samples on (default time_ns)")
    parser.set_defaults(handler=_run)


def _workload_root(profile: Path) -> Path:
    """The directory whose workload.json names and labels the data: beside the profile, or
    above it for a workload's ``profiles/<arch>.csv`` (that plan was named "profiles" and not
    labelled SYNTHETIC)."""
    root = profile.resolve().parent
    if not (root / "workload.json").is_file() and root.name == "profiles" and (root.parent / "workload.json").is_file():
        root = root.parent
    return root


def _run(args: argparse.Namespace) -> int:
    from gclsampler.profile import read_profile
    from gclsampler.stem import StemRootSampler, scope_description
    from gclsampler.workload import Workload

    from gclsampler._safe_out import check_out_file
    from gclsampler.plan import check_seed, numeric_column

    check_seed(args.seed, "--seed")
    from gclsampler.stem import check_params

    check_params(args.epsilon, args.z, args.min_samples, args.min_group, args.scope,
                 key=lambda name: "--" + name.replace("_", "-"))
    check_out_file(args.out, "plan", inputs=[args.profile])
    profile = None
    if args.profile.name == "profile.csv" and (args.profile.parent / "kernelslist.g").exists():
        from gclsampler.validate import require_valid_workload

        profile = require_valid_workload(args.profile.parent)  # profile vs the traces beside it
    if profile is None:
        profile = read_profile(args.profile)
    from gclsampler.validate import check_profile_usable

    if args.time_column not in profile.columns:
        from gclsampler.errors import located
        from gclsampler.stem import StemError

        raise StemError(located(args.profile, 1, args.time_column, "no such column (--time-column)"))
    numeric_column(profile, args.time_column, args.profile)  # a text column (kernel_name, grid): one line
    check_profile_usable(profile, args.profile, args.time_column)
    wl = Workload.load(_workload_root(args.profile), profile=profile)  # name, label and arch as every loader reads them
    if not wl.meta:  # the plan cannot say what its data is
        print(f"gclsampler: warning: {args.profile}: no workload.json beside it (or above profiles/): the plan is not "
              "labelled SYNTHETIC, which says nothing about whether the times were measured", file=sys.stderr)
    name = wl.name
    sampler = StemRootSampler(epsilon=args.epsilon, z=args.z, min_samples=args.min_samples,
                              root=not args.no_root, random_state=args.seed, min_group=args.min_group,
                              scope=args.scope, time_column=args.time_column)
    plan = sampler.fit(wl)
    plan.save(args.out)
    res = sampler.result_
    t = profile["time_ns"].to_numpy(dtype=float)  # speedup is time, whichever column sized the plan
    print(f"{args.out}: stem_root plan{' (plain STEM, --no-root)' if args.no_root else ''} for {name}"
          + (f" ({wl.label})" if wl.label else ""))
    print(f"  invocations {len(profile)}, kernel names {plan.config['n_groups']}, ROOT leaves {res.n_leaves}")
    print(f"  samples {len(plan.samples)} invocations (drawn without replacement inside each leaf)")
    print(f"  {scope_description(res.scope)}")
    print(f"  predicted error bound of the total {100 * res.error_bound:.2f}% at z={args.z:g} "
          f"(target {100 * args.epsilon:g}%" + (", and for every kernel name" if res.scope == "group" else "") + ")")
    print(f"  {plan.speedup_text(t)}")
    return 0
