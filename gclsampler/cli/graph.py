"""``gclsampler graph``: build the graph cache of a workload and inspect graph sizes."""

from __future__ import annotations

import argparse
import json

from gclsampler.cli import shown
from gclsampler.cli._args import path_arg
from gclsampler.errors import GclError, located


class GraphCliError(GclError):
    """A path or invocation given on the ``graph`` command line does not exist."""


OPTIONS = {"max_warps": "--max-warps", "max_insts_per_warp": "--max-insts", "mem_granularity": "--granularity"}
"""The ``GraphConfig`` field each option sets, so a value out of range is reported by the
option the user typed (``--max-warps``), not by the config key train.py would name."""


def _dataset(path, cfg, args):
    """The workload's GraphDataset under ``--cache-dir``, a refusal of that directory naming the option."""
    from gclsampler._safe_out import OutputError
    from gclsampler.data import GraphDataset

    try:
        return GraphDataset(path, cfg, cache_dir=args.cache_dir, workers=args.workers)
    except OutputError as exc:
        raise OutputError(f"--cache-dir: {exc}") from None


def _option(field: str) -> str:
    return OPTIONS.get(field, f"graph.{field}")  # fields without an option keep their default


def _add_cfg_args(p: argparse.ArgumentParser) -> None:
    from gclsampler.graph import GraphConfig

    d = GraphConfig()
    p.add_argument(OPTIONS["max_warps"], type=int, default=d.max_warps,
                   help=f"warps per graph, 0 = all (default {d.max_warps})")
    p.add_argument(OPTIONS["max_insts_per_warp"], type=int, default=d.max_insts_per_warp,
                   help=f"instructions per warp, 0 = all (default {d.max_insts_per_warp})")
    p.add_argument(OPTIONS["mem_granularity"], default=d.mem_granularity, choices=["line", "sector", "address"],
                   help=f"memory variable unit (default {d.mem_granularity})")
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of text")


def _cfg(args):
    from gclsampler.graph import GraphConfig

    if args.workers < 1:
        raise GraphCliError(f"--workers {args.workers}: must be at least 1")

    cfg = GraphConfig(max_warps=args.max_warps, max_insts_per_warp=args.max_insts, mem_granularity=args.granularity)
    cfg.validate(key=_option)
    return cfg


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="graph_cmd", metavar="SUBCOMMAND")
    info = sub.add_parser("info", help="node/edge counts per type and sizes of invocation graphs",
                          description="Build (or reload from the cache) the graphs of DIR and print node and "
                                      "edge counts per type. DIR may also be a single trace file.")
    info.add_argument("dir", type=path_arg, help="workload directory or one kernel-<id>.traceg file")
    info.add_argument("--invocation", type=int, default=None, help="only this invocation (0-based)")
    info.add_argument("--cache-dir", type=path_arg, default=None, help="graph cache (default DIR/.graph-cache)")
    info.add_argument("--workers", type=int, default=2,
                      help="processes building graphs at once (default 2; 1 = in this process)")
    _add_cfg_args(info)
    info.set_defaults(handler=_info)
    build = sub.add_parser("build", help="build the graph cache of a workload in parallel",
                           description="Build every invocation's graph into the cache and report unique graphs.")
    build.add_argument("dir", type=path_arg, help="workload directory")
    build.add_argument("--cache-dir", type=path_arg, default=None, help="graph cache (default DIR/.graph-cache)")
    build.add_argument("--workers", type=int, default=2,
                      help="processes building graphs at once (default 2; 1 = in this process)")
    _add_cfg_args(build)
    build.set_defaults(handler=_build)


def _line(inv: int, name: str, s: dict) -> str:
    nt, et = s["nodes_by_type"], s["edges_by_type"]
    return (f"{inv:>6}  {shown(name)[:40]:<40}  warps {s['warps']:>3}  nodes {s['nodes']:>8} "
            f"(inst {nt['instruction']}, pseudo {nt['pseudo']}, var {nt['variable']})  "
            f"edges {s['edges']:>8} (ctrl {et['control']}, read {et['read']}, write {et['write']}, "
            f"addr {et['address']})  {s['bytes'] / 1e6:.2f} MB")


def _info(args) -> int:
    from gclsampler.graph import build_graph, graph_summary

    cfg = _cfg(args)
    path = args.dir  # a Path (path_arg)
    if not path.exists():
        raise GraphCliError(located(path, None, None, "no such file or directory"))
    if path.is_file():
        from gclsampler.trace import read_kernel

        if args.invocation is not None:  # it was ignored: the file's own invocation was shown instead
            raise GraphCliError(located(path, None, "--invocation", "picks an invocation of a workload directory; "
                                        "this is one trace file (give its directory, or drop --invocation)"))
        if args.cache_dir is not None:  # it was ignored: one file's graph is built, never cached
            raise GraphCliError(located(path, None, "--cache-dir", "caches a workload directory's graphs; this is "
                                        "one trace file, whose graph is built and not cached (drop --cache-dir)"))
        t = read_kernel(path)
        s = graph_summary(build_graph(t, cfg))
        print(json.dumps({"invocation": t.header.invocation, "kernel": t.header.name, **s})
              if args.json else _line(t.header.invocation, t.header.name, s))
        return 0
    if args.invocation is not None:
        from gclsampler.trace import list_invocations, read_kernel

        infos = {i.invocation: i for i in list_invocations(path)}
        if args.invocation not in infos:
            raise GraphCliError(located(path, None, "--invocation",
                                        f"no invocation {args.invocation} (have {min(infos)}..{max(infos)})"))
        info = infos[args.invocation]
        s = graph_summary(build_graph(read_kernel(path / info.path), cfg))
        print(json.dumps({"invocation": info.invocation, "kernel": info.header.name, **s})
              if args.json else _line(info.invocation, info.header.name, s))
        return 0
    from gclsampler.trace import list_invocations
    from gclsampler.validate import require_valid_workload

    require_valid_workload(path, profile=False, traces=True)  # headers only: seconds before minutes of graphs
    ds = _dataset(path, cfg, args)
    names = {i.invocation: i.header.name for i in list_invocations(path)}
    total_nodes = total_edges = 0
    for inv in ds.invocations.tolist():
        s = graph_summary(ds[inv])
        total_nodes += s["nodes"]
        total_edges += s["edges"]
        print(json.dumps({"invocation": inv, "kernel": names[inv], **s}) if args.json else _line(inv, names[inv], s))
    summary = {**ds.stats, "total_nodes": total_nodes, "total_edges": total_edges}
    print(json.dumps(summary) if args.json else
          f"{summary['invocations']} invocations, {summary['unique_graphs']} unique graphs, "
          f"{total_nodes} nodes, {total_edges} edges (cache {summary['cache_dir']})")
    return 0


def _build(args) -> int:
    from gclsampler.validate import require_valid_workload

    cfg = _cfg(args)
    require_valid_workload(args.dir, profile=False, traces=True)  # headers only: seconds before minutes of graphs
    ds = _dataset(args.dir, cfg, args)
    s = ds.stats
    print(json.dumps(s) if args.json else
          f"{s['invocations']} invocations -> {s['unique_graphs']} unique graphs "
          f"({s['built']} built, {s['parsed']} of them parsed, {s['cached']} from cache) in {s['seconds']:.2f} s; "
          f"cache {s['cache_dir']}")
    return 0
