"""Would extra members per gcl cluster buy accuracy cheaply? A study on an evaluate.py run (SYNTHETIC).

gcl simulates one member per cluster, so a cluster of launches that look the same carries one
draw of the run-to-run jitter into the estimate. Simulating m members of the heavy clusters
shrinks that, at the price of speedup. This script asks how much error each extra percent of
simulated time removes, to decide whether gcl should spend it. It re-clusters each workload's
trained embeddings with the plan's own settings (the clusters gcl used), then, for each budget
(extra simulated time as a fraction of one member per cluster), allocates extra members greedily
by variance removed per unit cost, under the stratified-sampling model of equal relative jitter
in every cluster (sd proportional to the member cost) with the finite-population correction.

The cost a planner can know before simulating is the size vector's instructions on SM 0
(``--cost trace``, what gcl itself would have to use); ``--cost time`` uses the measured times
instead, an oracle no planner has, as an upper bound on what a better proxy could buy.
Errors are expectations over uniformly drawn members (``--draws``, seeded), like
``error_cycles_any_member``. The ``exact groups`` row is the floor of one-member sampling: the
clusters are the invocations with equal kernel name, grid and ``inst_executed``, so what is left
is the jitter. Usage::

    python evaluate.py suite=full out_dir=RUN data_dir=DATA_DIR       # the run studied
    python bench/extra_samples.py RUN DATA_DIR [--cost trace|time] [--budgets 0,0.05,0.1,0.2,0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["phi2", "pythia", "qwen1_5", "3mm", "lu", "bfs", "cfd", "lud", "nw", "backprop", "alexnet"]


def allocate(labels: np.ndarray, cost: np.ndarray, budget: float) -> np.ndarray:
    """Members to simulate per cluster: one each, then greedily the member that removes the most
    variance of the estimated total per unit of cost, while the extra cost stays within
    ``budget`` x the one-per-cluster cost."""
    n = np.bincount(labels)
    c = np.bincount(labels, weights=cost) / n
    m = np.ones_like(n)
    left = budget * c.sum()

    def var(mm: np.ndarray) -> np.ndarray:  # sd_j proportional to c_j: equal relative jitter
        return (n * c) ** 2 / mm * (n - mm) / np.maximum(n - 1, 1)

    while True:
        gain = (var(m) - var(np.minimum(m + 1, n))) / c
        gain[(m >= n) | (c > left)] = -1.0
        j = int(np.argmax(gain))
        if gain[j] <= 0:
            return m
        m[j] += 1
        left -= c[j]


def expected(labels: np.ndarray, m: np.ndarray, cycles: np.ndarray, time_ns: np.ndarray,
             draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw cycle error (%) and speedup when each cluster's m_j members are drawn uniformly
    without replacement and scaled by n_j / m_j."""
    rng = np.random.default_rng(seed)
    est = np.zeros(draws)
    sim = np.zeros(draws)
    for j, size in enumerate(np.bincount(labels)):
        members = np.flatnonzero(labels == j)
        keys = rng.random((draws, size))
        pick = members[np.argpartition(keys, m[j] - 1, axis=1)[:, :m[j]]] if m[j] < size else \
            np.broadcast_to(members, (draws, size))
        est += cycles[pick].mean(axis=1) * size
        sim += time_ns[pick].sum(axis=1)
    total = cycles.sum()
    return np.abs(est - total) / total * 100.0, time_ns.sum() / sim


def gcl_clusters(emb: np.ndarray, cfg: dict, times_ns: np.ndarray):
    """The clusters gcl made from these embeddings with its plan's ``config`` (``cfg``): k-means
    and the work split (``cluster_embeddings``), then the time cuts the plan's cluster settings
    turn on, on the times of the profile the plan was fitted on (``GclSampler._cluster``)."""
    from gclsampler.cluster import cluster_embeddings, cut_by_time, representative_work

    c = cfg["cluster"]
    res = cluster_embeddings(emb, c, cfg.get("cluster_random_state", 0))
    tol, share = c.get("time_split_tolerance", 0.0), c.get("time_split_share", 0.0)
    if tol > 0 or share > 0:
        res = cut_by_time(res, emb.astype(np.float64), times_ns, tol, c["representative"],
                          cfg.get("cluster_random_state", 0), share=share, work=representative_work(emb, c))
    return res


def suite_runs(run_dir: Path, data_dir: Path, arch: str):
    """(name, embeddings, gcl's plan.json, gcl's ClusterResult, profile of ``arch``) per suite
    workload of an evaluate.py run; the clusters are re-clustered with the plan's own settings,
    so they are the clusters gcl used. Workloads with a missing file are skipped with a line."""
    sys.path.insert(0, str(ROOT))
    from gclsampler.profile import read_profile

    for d in (run_dir, data_dir):  # eleven "skipped (no ...)" lines, then "nothing found", never said why
        if not d.is_dir():
            print(f"{d}: no such directory", file=sys.stderr)
            sys.exit(2)
    for name in SUITE:
        emb_path, plan_path = run_dir / "train" / name / "embeddings.npy", run_dir / "plans" / name / "gcl.json"
        prof_path, fit_path = data_dir / name / "profiles" / f"{arch}.csv", data_dir / name / "profile.csv"
        missing = [p for p in (emb_path, plan_path, prof_path, fit_path) if not p.exists()]
        if missing:
            print(f"{name}: skipped (no {missing[0]})", file=sys.stderr)
            continue
        emb = np.load(emb_path)
        plan = json.loads(plan_path.read_text())
        fitted = read_profile(fit_path)  # the times gcl's time cuts saw
        if emb.shape[0] != len(fitted) or plan.get("n_invocations") != len(fitted):
            print(f"{name}: {emb_path} has {emb.shape[0]} rows and its plan {plan.get('n_invocations')} "
                  f"invocations, but {fit_path} has {len(fitted)} rows: the run was not made from this data dir",
                  file=sys.stderr)
            sys.exit(2)
        yield name, emb, plan, gcl_clusters(emb, plan["config"], fitted["time_ns"].to_numpy(np.float64)), \
            read_profile(prof_path)


def print_study_table(title: str, header: list[str], rows: dict[str, list[tuple]], cells) -> None:
    """A study's markdown table: one line per variant, ``cells(rows_of_variant)`` giving the
    cells after its label, then each variant's per-workload errors (column 1 of its rows)."""
    print(title)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, r in rows.items():
        print(f"| {label} | " + " | ".join(cells(r)) + " |")
    print("per workload, error:")
    for label, r in rows.items():
        print(f"  {label}: " + ", ".join(f"{v[0]} {v[1]:.2f} %" for v in r))


def mean_and_worst(r: list[tuple], col: int = 1) -> str:
    """``"1.39 % (3.93 % bfs)"``: the mean of column ``col`` over workloads and its worst workload."""
    worst = max(r, key=lambda v: v[col])
    return f"{np.mean([v[col] for v in r]):.2f} % ({worst[col]:.2f} % {worst[0]})"


def cross_arch_cell(values: list[float]) -> str:
    """The cross-arch column's cell: the mean over workloads that have another arch's profile
    (nan marks one without), or ``n/a (no other arch)`` where none has; ``np.nanmean`` of only
    nans printed ``nan %`` beside numpy's "Mean of empty slice" warning."""
    scored = [v for v in values if not np.isnan(v)]
    return f"{np.mean(scored):.2f} %" if scored else "n/a (no other arch)"


def float_list(ap: argparse.ArgumentParser, option: str, text: str, empty_ok: bool = False) -> list[float]:
    """``text`` as comma-separated numbers, or argparse's error naming ``option`` (exit status 2)."""
    try:
        values = [float(x) for x in text.split(",") if x]
    except ValueError:
        values = None
    if values is None or not (values or empty_ok):
        ap.error(f"{option}: expected comma-separated numbers, got {text!r}")
    return values


def positive_int(text: str) -> int:
    """An argparse ``type=`` for counts and sizes: 0 or less gave a traceback (a division by zero,
    an empty ``min()``) or a meaningless ratio, so argparse refuses it naming the option (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _checked_float(text: str, ok, expected: str) -> float:
    """``float(text)`` when ``ok`` of it (nan never is), else argparse's refusal naming the option."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse ``type=`` for spreads and widths: a negative (or nan) value is a numpy
    ValueError traceback deep in the work, so argparse refuses it naming the option (exit 2)."""
    return _checked_float(text, lambda v: v >= 0, "a number >= 0")


def positive_float(text: str) -> float:
    """An argparse ``type=`` for sizes in MB and the like: 0, a negative or nan gave a traceback."""
    return _checked_float(text, lambda v: 0 < v < float("inf"), "a finite number > 0")


def epsilon_arg(text: str) -> float:
    """An argparse ``type=`` for an error bound: outside (0, 1) STEM raised its own error as a traceback."""
    return _checked_float(text, lambda v: 0 < v < 1, "a number in (0, 1)")


def nothing_found(prog: str, run_dir: Path, data_dir: Path, arch: str) -> int:
    """One line saying what was looked for, and exit status 2."""
    print(f"{prog}: no suite workload has train/<w>/embeddings.npy and plans/<w>/gcl.json under "
          f"{run_dir} and <w>/profiles/{arch}.csv under {data_dir}", file=sys.stderr)
    return 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="an evaluate.py out_dir (train/<w>/embeddings.npy, plans/<w>/gcl.json)")
    ap.add_argument("data_dir", type=Path, help="its data_dir (<w>/profiles/<arch>.csv)")
    ap.add_argument("--arch", default="turing")
    ap.add_argument("--cost", choices=["trace", "time"], default="trace")
    ap.add_argument("--budgets", default="0,0.05,0.1,0.2,0.5")
    ap.add_argument("--draws", type=positive_int, default=2000)
    args = ap.parse_args()
    budgets = float_list(ap, "--budgets", args.budgets)
    rows: dict[str, list[tuple[str, float, float, int]]] = {}
    for name, emb, plan, clusters, prof in suite_runs(args.run_dir, args.data_dir, args.arch):
        cfg, labels = plan["config"], clusters.labels
        cycles = prof["cycles"].to_numpy(np.float64)
        time_ns = prof["time_ns"].to_numpy(np.float64)
        # the size vector's log2(1 + instructions on SM 0); model.kfeat_scale 1 (the default)
        cost = time_ns if args.cost == "time" else np.exp2(emb[:, cfg["cluster"]["split_column"]].astype(np.float64))
        for b in budgets:
            m = allocate(labels, cost, b)
            err, speed = expected(labels, m, cycles, time_ns, args.draws, 0)
            rows.setdefault(f"gcl + {b:g}", []).append((name, err.mean(), speed.mean(), int(m.sum() - m.size)))
        key = prof["kernel_name"] + "|" + prof["grid"] + "|" + prof["inst_executed"].astype(str)
        exact = np.unique(key.to_numpy(), return_inverse=True)[1].reshape(-1)
        err, speed = expected(exact, np.ones(exact.max() + 1, dtype=np.int64), cycles, time_ns, args.draws, 0)
        rows.setdefault("exact groups", []).append((name, err.mean(), speed.mean(), 0))

    if not rows:
        return nothing_found("extra_samples", args.run_dir, args.data_dir, args.arch)
    print(f"SYNTHETIC, {args.arch}, cost = {args.cost}, {args.draws} draws; expected cycle error over drawn members")
    print("| plan | mean error | worst workload | arithmetic speedup | extra members |")
    print("|---|---|---|---|---|")
    for label, r in rows.items():
        worst = max(r, key=lambda x: x[1])
        print(f"| {label} | {np.mean([x[1] for x in r]):.2f} % | {worst[1]:.2f} % ({worst[0]}) | "
              f"{np.mean([x[2] for x in r]):.1f}x | {sum(x[3] for x in r)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
