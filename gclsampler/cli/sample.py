"""``gclsampler sample``: a sampling plan from any registered method, without the Hydra suite.

``python evaluate.py`` compares methods against ground truth; this is the single step a
user takes for their own workload: pick a method, get ``plan.json``, hand it to the
simulator (``gclsampler plan export-accelsim``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gclsampler.cli._args import path_arg


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Fit one sampling method on a workload directory and write its plan.json "
        "(gclsampler-plan/1). Methods: pka, sieve, allegro, random, stem_root read profile.csv; "
        "photon reads the traces; gcl, gcl_paper and gcl_stem need the embeddings a training run "
        "wrote (--embeddings; gcl_paper those of a model=paper run: the project encoder's are refused). "
        "Method parameters are the keyword arguments of its class, "
        "e.g. --set threshold=0.9 for photon or --set epsilon=0.1 for stem_root "
        "(epsilon of stem_root, gcl_stem and allegro: a number in (0, 1); z in [0.01, 40])."
    )
    parser.epilog = ("examples:\n"
                     "  gclsampler sample pka work/phi2 --out plan_pka.json\n"
                     "  gclsampler sample photon work/phi2 --out plan_photon.json --set threshold=0.9\n"
                     "  gclsampler sample gcl work/phi2 --embeddings outputs/phi2/<time>/embeddings.npy --out plan.json\n"
                     "  gclsampler sample --list")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    # both required: with two optional positionals argparse bound "pka --out p.json WL" as
    # METHOD=pka, WORKLOAD=None and refused WL; --list, which needs neither, acts as --help does
    parser.add_argument("method", help="method name (see --list)")
    parser.add_argument("workload", type=path_arg,
                        help="workload directory (profile.csv, kernelslist.g, traces, workload.json)")
    parser.add_argument("--out", type=path_arg, required=True, help="plan.json to write (atomically)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random_state of the method, an integer in [0, 2**32) (default 0)")
    parser.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                        help="method parameter; repeatable (values parsed as YAML: 0.1, true, [1,2], text)")
    parser.add_argument("--embeddings", type=path_arg,
                        help="embeddings.npy (row i = invocation i) for gcl, gcl_paper and gcl_stem; refused for the other methods, which do not read it; "
                             "a warning when the clusters.csv of its run names other kernels than this workload's profile")
    parser.add_argument("--list", action=_ListMethods, help="list the methods and their parameters, then exit")
    parser.set_defaults(handler=_run)


class _ListMethods(argparse.Action):
    """``--list``: print the methods and exit 0 while parsing, before the positionals are required."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from gclsampler._guard import run_guarded

        parser.exit(run_guarded(_list_methods, "gclsampler"))  # `sample --list | head` is no traceback


# YAML 1.1 (PyYAML) reads 5e-2 and 1e3 as strings: a float needs a dot and a signed exponent
# there. Plain numbers in scientific notation are floats here, as in YAML 1.2 and Python.
_SCI_FLOAT = r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"


def _yaml_loader():
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_SCI_FLOAT), list("-+0123456789."))
    return Loader


def _parse_params(items: list[str]) -> dict:
    import yaml

    from gclsampler.errors import GclError

    loader = _yaml_loader()
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GclError(f"--set {item!r}: expected KEY=VALUE")
        if key.strip() in out:  # the last one silently won: a sweep typed by hand ran one value
            raise GclError(f"--set {key.strip()}: given twice")
        try:
            out[key.strip()] = yaml.load(value, Loader=loader) if value.strip() else ""
        except yaml.YAMLError as exc:
            reason = str(getattr(exc, "problem", None) or exc).splitlines()[0]
            raise GclError(f"--set {item!r}: value is not valid YAML ({reason})") from None
    if "random_state" in out:  # the constructor would get it twice ("multiple values for keyword")
        raise GclError("--set random_state: use --seed instead")
    return out


def _list_methods() -> int:
    import inspect
    import textwrap

    from gclsampler.evaluate import _registry

    for name, cls in sorted(_registry().items()):
        sig = inspect.signature(cls.__init__)
        params = ", ".join(f"{p.name}={p.default!r}" for p in list(sig.parameters.values())[1:]
                           if p.name != "random_state" and p.default is not inspect.Parameter.empty)
        # the docstring's first paragraph, whole: its first line alone can stop mid-sentence
        doc = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
        print(textwrap.fill(doc, width=100, initial_indent=f"{name:10s} ", subsequent_indent=" " * 11))
        if params:
            print(f"{'':10s} {params}")
    return 0


def _check_params(sampler, method: str) -> None:
    """Run the method's own parameter check (if it has one) before any data is read; an error
    names the option as typed (``--set threshold``), not the method or a config key."""
    from gclsampler.validate import check_sampler_params

    check_sampler_params(sampler, f"--set ({method})", key="--set {}".format)


def _check_columns(params: dict, profile, path: Path) -> None:
    """A ``--set *_column`` (time_column, inst_column) that profile.csv lacks, named as typed.

    Why: the method finds it missing only inside fit, where its message names the method or a
    config key (``stem.time_column``, ``sampler.params.time_column``), not ``--set``.
    """
    from gclsampler.errors import GclError

    for key, value in params.items():
        if key.endswith("_column") and not (isinstance(value, str) and value in profile.columns):
            raise GclError(f"--set {key}: profile.csv has no column {value!r} ({path})")


def _require_paper_encoder(path: Path, n_columns: int, method: str) -> None:
    """Refuse, for ``gcl_paper``, embeddings that the project's encoder wrote.

    Why: the method is the paper's only with the paper's encoder; clustering the project's
    embeddings (instruction statistics, size vector) under its name was silent before.
    """
    from gclsampler.embeddings import not_paper_encoder
    from gclsampler.errors import GclError

    why = not_paper_encoder(path, n_columns)
    if why:
        raise GclError(f"--embeddings: {path}: {why}; {method} clusters the paper's encoder's embeddings: "
                       "give the embeddings.npy of a `python train.py model=paper` run (or use gcl)")


def _warn_if_other_workload(path: Path, wl, profile: Path) -> None:
    """Say so when the embeddings' own run clustered other kernels. A warning, not a refusal:
    a profile imported again under other kernel spellings (mangled, demangled) is the same
    workload, and only the user knows which it is."""
    from gclsampler._guard import stderr_line
    from gclsampler.embeddings import other_workload

    why = other_workload(path, wl.profile["kernel_name"].to_numpy())
    if why:
        stderr_line(f"gclsampler: warning: --embeddings: {path}: {why} ({profile}); these look like another "
                    "workload's embeddings (row i must be invocation i), so the plan may sample the wrong kernels")


def _require_size_vector(path: Path, n_columns: int, sampler, method: str) -> None:
    """Refuse embeddings without the size vector for a gcl whose cluster settings read it (the
    work split, the ``work_mean`` representative): they would cut on a learned column."""
    from gclsampler.embeddings import without_size_vector
    from gclsampler.errors import GclError

    uses = sampler.size_vector_uses()
    why = without_size_vector(path, n_columns) if uses else None
    if why:
        raise GclError(f"--embeddings: {path}: {why}; {method} with {' and '.join(uses)} reads the size vector's "
                       "work column: give the embeddings.npy of a default `python train.py` run, use gcl_paper, or "
                       "--set 'cluster={split_tolerance: 0, representative: medoid}'")


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    from gclsampler.errors import GclError

    from gclsampler.evaluate import EMBEDDING_METHODS, _registry
    from gclsampler.workload import Workload

    reg = _registry()
    if args.method not in reg:
        raise GclError(f"sample: unknown method {args.method!r}; available: {', '.join(sorted(reg))}")
    from gclsampler._safe_out import check_out_file
    from gclsampler.plan import check_seed

    if not args.workload.is_dir():
        raise GclError(f"{args.workload}: not a workload directory")
    if not (args.workload / "profile.csv").exists():
        raise GclError(f"{args.workload}/profile.csv: no such file (a workload directory needs one)")
    check_out_file(args.out, "plan", inputs=[args.workload / "profile.csv", args.workload / "kernelslist.g",
                                             args.workload / "workload.json", args.embeddings])
    check_seed(args.seed, "--seed")
    params = _parse_params(args.params)
    from gclsampler.samplers import unknown_param

    problem = unknown_param(reg[args.method], params, "--set ")
    if problem:
        raise GclError(problem)
    try:
        sampler = reg[args.method](**params, random_state=args.seed)
    except TypeError as exc:
        raise GclError(f"--set: {args.method} does not take that parameter ({exc}); see gclsampler sample --list") from None
    _check_params(sampler, args.method)
    if args.embeddings is None and args.method in EMBEDDING_METHODS:
        raise GclError(f"sample {args.method}: needs --embeddings (embeddings.npy from `python train.py`)")
    if args.embeddings is not None and args.method not in EMBEDDING_METHODS:
        # Loaded and then ignored, the file would read as if it had shaped the plan.
        raise GclError(f"--embeddings: {args.method} does not read embeddings (only {', '.join(EMBEDDING_METHODS)} do); "
                       "leave it out")
    from gclsampler.validate import require_valid_workload

    profile = require_valid_workload(args.workload)  # profile vs traces, before any fitting
    wl = Workload.load(args.workload, profile=profile)
    _check_columns(params, wl.profile, args.workload / "profile.csv")
    if args.embeddings is not None:
        from gclsampler.embeddings import load_embeddings

        emb = load_embeddings(args.embeddings, wl.n_invocations, args.workload / "profile.csv")
        attr = getattr(sampler, "embedding_attr", "embeddings")
        if attr == "paper_embeddings":
            _require_paper_encoder(args.embeddings, emb.shape[1], args.method)
        elif hasattr(sampler, "effective_cluster_config"):
            _require_size_vector(args.embeddings, emb.shape[1], sampler, args.method)
        _warn_if_other_workload(args.embeddings, wl, args.workload / "profile.csv")
        setattr(wl, attr, emb)
    plan = sampler.fit(wl)
    plan.save(args.out)
    t = wl.profile["time_ns"].to_numpy(dtype=np.float64) if "time_ns" in wl.profile else None
    tag = f" ({wl.label})" if wl.label else ""
    print(f"{args.out}: {args.method} plan for {wl.name}{tag}")
    print(f"  invocations {wl.n_invocations}, clusters {len(plan.clusters)}, "
          f"simulated invocations {len(plan.samples)}")
    if t is not None:
        print(f"  {plan.speedup_text(t)}")
    return 0
