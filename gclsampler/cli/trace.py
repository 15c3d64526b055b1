"""``gclsampler trace``: inspect, group and export NVBit/Accel-Sim kernel traces."""

from __future__ import annotations

import argparse
import json
import re
import sys

from gclsampler.cli import shown
from gclsampler.cli._args import path_arg
from gclsampler.trace.ampere import AS_AMPERE_HELP


def _parse_invocations(text: str | None) -> list[tuple[str, str, range]] | None:
    """``0,3,7-9`` or a file with one id per line (``@ids.txt``), as (text, range) pairs.

    Anything that is not a list of non-negative ids or ascending ranges is an error, and so
    is a list that selects nothing: ``5-2`` once wrote an empty kernelslist.g and exited 0.
    Ranges stay unexpanded until ``_expand_invocations`` has checked them against the
    workload: ``0-99999999999`` once built a list of 10^11 ids.
    """
    from gclsampler.errors import GclError

    if text is None:
        return None
    where = "--invocations"
    if text.startswith("@"):
        where = text[1:]
        if not where:
            raise GclError("--invocations: '@' must be followed by a file name (@ids.txt)")
        try:
            with open(text[1:], encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise GclError(f"{where}: cannot read the invocation list: {getattr(exc, 'strerror', None) or exc}") from None
        # each id or range keeps its line, so a bad one is reported as FILE:LINE
        tokens = [(f"{where}:{n}", part) for n, line in enumerate(lines, 1)
                  for part in line.replace("\t", ",").replace(" ", ",").split(",")]
    else:
        tokens = [(where, part) for part in text.replace(" ", ",").split(",")]
    out: list[tuple[str, str, range]] = []
    for at, part in tokens:
        if not part:
            continue
        # decimal digits only: Python's int() also takes 1_0 (as 10), +1 and non-ASCII digits
        if re.fullmatch(r"-[0-9]+", part):
            raise GclError(f"{at}: {part!r}: invocation ids are 0-based and not negative")
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if m is None:
            raise GclError(f"{at}: {part!r} is not an invocation id or range like 7-9")
        a = int(m[1])
        b = a if m[2] is None else int(m[2])
        if b < a:
            raise GclError(f"{at}: range {part!r} runs backwards (write {b}-{a})")
        ids = range(a, b + 1)
        out.append((at, part, ids))  # where it was written, as written, the ids
    if not out:
        raise GclError(f"{where}: selects no invocations")
    return out


def _expand_invocations(parts: list[tuple[str, str, range]] | None, infos, src) -> list[int] | None:
    """The ids of ``parts``, once every range is known to end inside the workload at ``src``
    (``infos``: its ``list_invocations``)."""
    from gclsampler.errors import GclError

    if parts is None:
        return None
    last = max(i.invocation for i in infos)
    for at, part, ids in parts:
        if ids.stop - 1 > last:
            raise GclError(f"{at}: {part!r} goes past the last invocation of {src} ({last})")
    return [i for _, _, ids in parts for i in ids]


def _info(args) -> int:
    from gclsampler.errors import GclError
    from gclsampler.trace import trace_info

    if args.top < 1:
        raise GclError(f"--top {args.top}: must be at least 1")
    if args.dir.is_dir():  # as graph info and export-accelsim: a trace kernelslist.g leaves out is named
        from gclsampler.validate import require_valid_workload

        require_valid_workload(args.dir, profile=False, traces=True)
    info = trace_info(args.dir, top=args.top)
    if args.json:
        json.dump(info, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    w = sys.stdout.write
    w(f"workload            {args.dir}\n")
    w(f"invocations         {info['invocations']}\n")
    w(f"unique kernel names {info['unique_kernel_names']}\n")
    w(f"instructions        {info['instructions']}  (warp-level, dynamic)\n")
    w(f"warps               {info['warps']}\n")
    w(f"CTAs                {info['ctas']}\n")
    w(f"bytes on disk       {info['bytes']}\n")
    w(f"top-{args.top} opcodes:\n")
    tot = max(info["instructions"], 1)
    for row in info["opcode_top"]:
        w(f"  {row['opcode']:<16} {row['count']:>12}  {100.0 * row['count'] / tot:5.1f}%\n")
    if args.per_invocation:
        w("invocation  instructions  warps  CTAs  kernel\n")
        for r in info["per_invocation"]:
            w(f"{r['invocation']:>10}  {r['instructions']:>12}  {r['warps']:>5}  {r['ctas']:>4}  {shown(r['kernel_name'])}\n")
    return 0


def _export(args) -> int:
    from gclsampler.trace import export_accelsim, list_invocations
    from gclsampler.trace.workload import describe_export

    from gclsampler._safe_out import check_out_dir, replace_dir

    from gclsampler.validate import require_valid_workload

    parts = _parse_invocations(args.invocations)
    check_out_dir(args.dst, "trace export-accelsim", inputs=[args.src])
    # duplicate ids would overwrite each other
    require_valid_workload(args.src, profile=False, traces=True, as_ampere=args.as_ampere)
    infos = list_invocations(args.src)
    inv = _expand_invocations(parts, infos, args.src)
    facts: list = []
    with replace_dir(args.dst, "trace export-accelsim", inputs=[args.src]) as tmp:
        paths = export_accelsim(args.src, tmp, invocations=inv, facts=facts, infos=infos, as_ampere=args.as_ampere)
    print(f"wrote {len(paths)} Accel-Sim traces and kernelslist.g to {args.dst}")
    for line in describe_export(facts):
        print(f"  note: {line}")
    return 0


_CUT_SHOWN = 5
"""Traces named one per line when warps end without EXIT; a capped workload has one per launch."""


def _group(args) -> int:
    from gclsampler.trace import group_raw_dir

    from gclsampler._safe_out import replace_dir

    facts: dict = {}
    with replace_dir(args.out_dir, "trace group", inputs=[args.raw_dir]) as tmp:
        paths = group_raw_dir(args.raw_dir, tmp, values=not args.no_values, compress=args.compress,
                              dedup_ldgsts=not args.keep_ldgsts_pairs, facts=facts)
    print(f"grouped {len(paths)} traces into {args.out_dir}")
    for path in facts.get("unlisted", []):
        print(f"gclsampler: warning: {path}: not in the kernelslist, so not grouped (a lost kernelslist line, "
              "or a trace added later: list it and group again)", file=sys.stderr)
    cut = facts.get("cut", [])
    for path, n, warps in cut[:_CUT_SHOWN]:
        print(f"gclsampler: warning: {path}: {n} of {warps} warps end without EXIT, so they hold a prefix only "
              "(an instruction cap such as GCL_MAX_INSTS_PER_WARP, or a trace that stopped early)", file=sys.stderr)
    if len(cut) > _CUT_SHOWN:
        print(f"gclsampler: warning: {len(cut) - _CUT_SHOWN} more traces have warps that end without EXIT",
              file=sys.stderr)
    if facts.get("ldgsts_removed"):
        print(f"  note: removed {facts['ldgsts_removed']} LDGSTS records, the first of each NVBit pair as "
              "Accel-Sim does (--keep-ldgsts-pairs keeps them)")
    if facts.get("ldgsts_unpaired"):
        print(f"gclsampler: warning: {facts['ldgsts_unpaired_at']}: opcode: {facts['ldgsts_unpaired']} LDGSTS "
              "record(s) without the second record of their pair (same warp and PC, next record) kept as "
              "instructions", file=sys.stderr)
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="trace_cmd", metavar="SUBCOMMAND")

    p = sub.add_parser("info", help="invocations, kernels, instructions, warps, CTAs, top opcodes, bytes")
    p.add_argument("dir", type=path_arg, help="workload directory (kernelslist.g + kernel-N.traceg[.gz|.xz|.zst])")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--top", type=int, default=10, help="opcodes in the histogram (default 10)")
    p.add_argument("--per-invocation", action="store_true", help="also list every invocation")
    p.set_defaults(handler=_info)

    p = sub.add_parser("export-accelsim",
                       help="plain Accel-Sim traces (values stripped, <=1 dst/<=4 src) + kernelslist.g")
    p.add_argument("src", type=path_arg, help="workload directory")
    p.add_argument("dst", type=path_arg, help="output directory for Accel-Sim")
    p.add_argument("--invocations", default=None,
                   help="0-based invocation ids, e.g. '0,5,7-9' or '@ids.txt' (default: all)")
    p.add_argument("--as-ampere", action="store_true", help=AS_AMPERE_HELP)
    p.set_defaults(handler=_export)

    p = sub.add_parser("group", help="raw NVBit kernel-N.trace[.xz] -> grouped kernel-N.traceg")
    p.add_argument("raw_dir", type=path_arg, help="directory with kernelslist and kernel-N.trace files")
    p.add_argument("out_dir", type=path_arg, help="output workload directory")
    p.add_argument("--compress", default="", type=lambda v: "." + v.lstrip(".") if v else v,
                   choices=["", ".gz", ".xz", ".zst"],
                   help="compress the grouped traces: gz, xz or zst (or .gz, .xz, .zst; default: plain text)")
    p.add_argument("--no-values", action="store_true", help="drop gclsampler register values")
    p.add_argument("--keep-ldgsts-pairs", action="store_true",
                   help="keep both NVBit records of each LDGSTS (Accel-Sim keeps the second)")
    p.set_defaults(handler=_group)
