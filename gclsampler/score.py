"""Score a sampling plan against a ground-truth profile: error (GCL eq. 5), rate-metric errors, speedup (eq. 6).

Why a module of its own: the training pipeline (``train.py``'s report), the suite
(``python evaluate.py``), ``gclsampler simulate`` and ``report.md`` all score plans the same
way. Keeping the arithmetic here, below all of them and importing none of them, breaks
the import circle ``evaluate`` -> ``report`` -> ``evaluate`` (and ``pipeline`` <-> ``evaluate``)
and gives one place where the definitions live:

* cycle error  = |C_full - sum_s w_s C[s]| / C_full x 100 %, with C_full the sum of the
  ground-truth ``cycles`` of every invocation (eq. 5). NaN when the ground truth has no
  cycle counts at all (a wall-time profile: torch.profiler, Nsight Systems).
* time error (``error_time``): the same on ``time_ns``. Why: on real workloads the measured
  kernel time is the ground truth every profile has; cycles come only from Nsight Compute.
* rate metrics (``ipc``, ``l1_hit_rate``, ``l2_hit_rate``, ``achieved_occupancy``) are
  per-invocation ratios, so a weighted *sum* would have no meaning; the plan's estimate is
  the weighted mean sum_s w_s M[s] / N, compared against the true per-invocation mean
  (1/N) sum_i M[i] with the same relative-error formula.
* speedup = sum_i time_ns[i] / sum_s time_ns[s] over the sampled invocations (eq. 6),
  both from the evaluated arch's ground truth.
* any-member error (``error_cycles_any_member``): for deterministic plans that simulate one
  member per cluster, weighted by the cluster size, the mean cycle error over draws that replace each
  representative by a uniformly random member of its cluster. Why: with one sample per
  cluster, which member is picked moves the error by the cluster's run-to-run spread (on the
  synthetic suite 5 % for memory-bound kernels), so one plan's error ranks methods partly by
  luck; this column ranks their *clusters*.
* error on a second run (``error_cycles_rerun``): the cycle error of the same plan scored on
  ``profiles/<plan arch>_rerun.csv``, an independent second profile of the arch it was fitted
  on; NaN without one (``error_time_rerun``: the same on ``time_ns``, which a wall-time second
  run, nsys or torch.profiler, has without cycles). Why: a plan is otherwise scored on the very run it read, so a rule that
  uses measured times (STEM+ROOT's strata, gcl's time cuts) is also scored on the jitter it
  could fit. On a GPU the two runs are two profiler passes; the synthetic suite writes the
  second one itself (``suite.rerun``), and only the run-to-run jitter differs.
* representative spread (``spread_sd``): the standard deviation (% of the total time) of the
  plan's estimate over which members its samples are, from the spread of the *profiled* times
  inside each cluster. The same for every arch a plan is scored on: it needs only the profile
  the plan was fitted on, so a user has it before simulating anything.
* head to head (``head_to_head_counts``): on how many workloads one method's cycle error is
  lower, equal or higher than another's, beside the counts that chance alone would give
  (``chance_lower``). Why: a single table's "lower on 6 of 11" mixes better clusters with
  luckier representatives, and the spreads say how much of each to expect. Beside them, the
  Pareto counts: workloads where one plan is no worse on both error and speedup and better on
  one. A rival that is lower only by simulating every invocation is not ahead there.

``summarize`` averages over seeds (errors arithmetically; speedup both arithmetic, the GCL
paper's averaging, and harmonic, the STEM+ROOT paper's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler.errors import GclError
from gclsampler.plan import SamplingPlan, weighted_sum

__all__ = [
    "EvaluationError",
    "RATE_METRICS",
    "METHOD_ORDER",
    "RESULT_COLUMNS",
    "MethodRun",
    "harmonic_mean",
    "score_plan",
    "any_member_error",
    "representative_spread",
    "TIE",
    "chance_lower",
    "chance_at_least",
    "head_to_head_counts",
    "pareto_counts",
    "speedup_no_lower",
    "evaluate_workload",
    "summarize",
    "averaged_columns",
    "suite_averages",
    "method_sort_key",
    "write_results_csv",
]

TIE = 1e-9  # cycle errors closer than this (percentage points) are equal: the same plan, or 0 % for both
SPEEDUP_TIE = 1e-9  # relative: speedups this close are equal (the same simulated set)
RATE_METRICS: list[str] = ["ipc", "l1_hit_rate", "l2_hit_rate", "achieved_occupancy"]
METHOD_ORDER: list[str] = ["gcl", "gcl_paper", "gcl_stem", "stem_root", "pka", "sieve", "allegro", "random", "photon"]


class EvaluationError(GclError):
    """A plan and a ground truth that cannot be compared, or a bad evaluation config key."""


def harmonic_mean(x: Iterable[float]) -> float:
    """n / Σ 1/x over the values that are not NaN. An infinite value (a speedup whose sampled
    time is 0) counts with 1/inf = 0: dropping it, as this did, left the mean of the other
    values and understated the harmonic speedup of report.md and compare.md alike."""
    a = np.asarray(list(x), dtype=np.float64)
    a = a[~np.isnan(a)]
    if a.size == 0 or np.any(a <= 0):
        return float("nan")
    inv = float(np.sum(1.0 / a))
    return math.inf if inv == 0 else float(a.size / inv)


def _rel_error_pct(true: float, est: float) -> float:
    if not math.isfinite(true) or not math.isfinite(est):
        return float("nan")
    if true == 0:
        return 0.0 if est == 0 else float("inf")
    return abs(true - est) / abs(true) * 100.0


def score_plan(plan: SamplingPlan, truth, where: str = "ground truth") -> dict[str, Any]:
    """Error (%) of cycles and rate metrics, speedup and simulated invocations of one plan.

    ``truth`` is a profile table (row i = invocation i) of the arch being evaluated.
    Metric columns missing from ``truth`` give NaN errors.
    """
    n = len(truth)
    if n != plan.n_invocations:
        raise EvaluationError(
            f"{where}: n_invocations: plan {plan.workload!r}/{plan.method} has {plan.n_invocations} "
            f"invocations, the ground truth has {n} rows")
    inv, w = plan.invocations, plan.weights
    row: dict[str, Any] = {"n_invocations": n, "n_simulated": int(inv.size), "n_clusters": len(plan.clusters)}
    cycles = truth["cycles"].to_numpy(dtype=np.float64)
    no_cycles = np.isnan(cycles)
    if no_cycles.all():  # a wall-time profile (torch.profiler, nsys): no cycle error, the time error stands
        row["cycles_true"] = row["cycles_est"] = row["error_cycles"] = float("nan")
    elif no_cycles.any():  # some rows only: any estimate would silently drop their cycles
        raise EvaluationError(f"{where}: cycles: the ground truth has rows without a cycle count "
                              f"({int(no_cycles.sum())} of {n}, first invocation {int(np.flatnonzero(no_cycles)[0])})")
    else:
        row["cycles_true"] = float(cycles.sum())
        row["cycles_est"] = weighted_sum(w, cycles[inv])
        row["error_cycles"] = _rel_error_pct(row["cycles_true"], row["cycles_est"])
    for m in RATE_METRICS:
        if m in truth.columns:
            v = truth[m].to_numpy(dtype=np.float64)
            true_mean = float(np.mean(v))
            est_mean = weighted_sum(w, v[inv]) / n
            row[f"error_{m}"] = _rel_error_pct(true_mean, est_mean)
        else:
            row[f"error_{m}"] = float("nan")
    t = truth["time_ns"].to_numpy(dtype=np.float64)
    row["time_full_ns"] = float(t.sum())
    row["time_sampled_ns"] = float(t[inv].sum())
    row["error_time"] = _rel_error_pct(row["time_full_ns"], weighted_sum(w, t[inv]))
    row["speedup"] = row["time_full_ns"] / row["time_sampled_ns"] if row["time_sampled_ns"] > 0 else float("inf")
    return row


@dataclass
class MethodRun:
    """One fitted plan: which method, parameters, seed, and what it learned."""

    method: str
    seed: int
    epsilon: float | None
    sweep: bool
    plan: SamplingPlan
    labels: np.ndarray | None
    fit_seconds: float
    stochastic: bool
    params: dict[str, Any] = field(default_factory=dict)
    silhouette: dict[int, float] | None = None  # k -> score, for samplers that learn one (gcl)


def evaluate_workload(workload, runs: list[MethodRun], archs: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per run x arch: the plan (fitted on ``workload.arch``) against each arch's truth."""
    from gclsampler.profile import fitted_arch

    plan_arch = fitted_arch(workload.arch)
    archs = list(archs) if archs else [plan_arch]
    from gclsampler.profile import simulated_by

    truths = {}
    for arch in archs:
        if arch == plan_arch:
            truths[arch] = (workload.profile, f"{workload.root or workload.name}/profile.csv")
            continue
        path = (Path(workload.root) / "profiles" / f"{arch}.csv") if workload.root is not None else None
        if path is None or not path.exists():
            raise EvaluationError(f"{path or workload.name}: archs: no ground truth for arch {arch!r}")
        truths[arch] = (workload.ground_truth(arch), str(path))
    simulator = {arch: simulated_by(truths[arch][0], arch) for arch in archs}
    second = _second_run(workload, plan_arch)
    rows = []
    fitted_times = workload.profile["time_ns"].to_numpy(dtype=np.float64)
    for run in runs:
        spread = representative_spread(run.plan, fitted_times, run.labels) if run.labels is not None else None
        for arch in archs:
            truth, where = truths[arch]
            score = score_plan(run.plan, truth, where)
            again = score_plan(run.plan, *second) if second is not None and arch == plan_arch else {}
            score["error_cycles_rerun"] = again.get("error_cycles", float("nan"))
            # a wall-time second run (nsys, torch.profiler) has no cycles: scored on its times, as
            # the fitted run is, rather than left out of every table without a word
            score["error_time_rerun"] = again.get("error_time", float("nan"))
            # stochastic plans already redraw their members over seeds
            score["error_cycles_any_member"] = float("nan") if run.stochastic else any_member_error(
                run.plan, run.labels, truth["cycles"].to_numpy(dtype=np.float64))
            score["spread_sd"] = float("nan") if spread is None else spread[0]
            rows.append({
                "workload": workload.name, "method": run.method, "arch": arch, "plan_arch": plan_arch,
                "cross_arch": arch != plan_arch, "seed": run.seed,
                "epsilon": float("nan") if run.epsilon is None else run.epsilon,
                "sweep": run.sweep, "stochastic": run.stochastic,
                **score, "fit_seconds": run.fit_seconds,
                "synthetic": bool(getattr(workload, "synthetic", False)),
                "data": getattr(workload, "data_kind", "synthetic" if getattr(workload, "synthetic", False) else ""),
                "gpu": getattr(workload, "gpu", ""),
                "simulated_by": simulator[arch],
            })
    return rows


def _second_run(workload, plan_arch: str):
    """(profile, where) of ``profiles/<plan arch>_rerun.csv``, a second run of the arch the plans
    were fitted on, or None when the workload has none."""
    from gclsampler.profile import rerun_arch

    if workload.root is None:
        return None
    path = Path(workload.root) / "profiles" / f"{rerun_arch(plan_arch)}.csv"
    return (workload.ground_truth(rerun_arch(plan_arch)), str(path)) if path.exists() else None


def any_member_error(plan: SamplingPlan, labels: np.ndarray | None, cycles: np.ndarray,
                     draws: int = 1000, seed: int = 0) -> float:
    """Mean cycle error (%) when every cluster's one representative is redrawn uniformly from
    its members (``draws`` seeded draws, so the value is reproducible); NaN unless the plan
    simulates exactly one member of every cluster of ``labels`` with the cluster size as weight.
    """
    if labels is None:
        return float("nan")
    labels = np.asarray(labels)
    inv, w = plan.invocations, plan.weights
    if labels.shape != (plan.n_invocations,) or inv.size == 0:
        return float("nan")
    ids, lab = np.unique(labels, return_inverse=True)
    sizes = np.bincount(lab, minlength=ids.size)
    rep_lab = lab[inv]
    if inv.size != ids.size or np.unique(rep_lab).size != ids.size or not np.allclose(w, sizes[rep_lab]):
        return float("nan")
    c = np.asarray(cycles, dtype=np.float64)
    total = float(c.sum())
    if total <= 0:
        return float("nan")
    order = np.argsort(lab, kind="stable")
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    u = np.random.default_rng(seed).random((int(draws), ids.size))
    pick = order[start + np.minimum((u * sizes).astype(np.int64), sizes - 1)]
    est = c[pick] @ sizes.astype(np.float64)
    return float(np.mean(np.abs(est - total)) / total * 100.0)


def representative_spread(plan, times_ns: np.ndarray, labels: np.ndarray) -> tuple[float, dict[int, float]] | None:
    """Standard deviation (% of the total time) of the plan's estimate Σ w·t over which
    members its samples are, as simple random sampling without replacement inside each
    cluster: Var = Σ_k N_k² σ_k² / m_k · (N_k − m_k) / (N_k − 1), σ_k the population
    standard deviation of the members' times, m_k the cluster's samples. Also each cluster's
    share of that variance. None when the labels do not match the plan or a cluster's
    samples do not each weigh N_k / m_k (the estimator the formula describes).
    """
    t = np.asarray(times_ns, dtype=np.float64)
    lab = np.asarray(labels)
    if lab.shape != t.shape or not t.size or lab.dtype.kind not in "iu":
        return None
    ids = np.array([c.id for c in plan.clusters], dtype=np.int64)
    if ids.size == 0 or ids.min() < 0 or lab.min() < 0:
        return None
    k = int(max(ids.max(), lab.max())) + 1
    n = np.bincount(lab, minlength=k).astype(np.float64)
    if any(n[c.id] != c.size for c in plan.clusters):
        return None
    cl = np.array([smp.cluster for smp in plan.samples], dtype=np.int64)
    inv = np.array([smp.invocation for smp in plan.samples], dtype=np.int64)
    w = np.array([smp.weight for smp in plan.samples], dtype=np.float64)
    if cl.size == 0 or cl.min() < 0 or cl.max() >= k or inv.min() < 0 or inv.max() >= t.size:
        return None
    m = np.bincount(cl, minlength=k).astype(np.float64)
    if (lab[inv] != cl).any() or ((n > 0) & (m < 1)).any() or not np.allclose(w, n[cl] / m[cl]):
        return None
    mean = np.bincount(lab, t, minlength=k) / np.maximum(n, 1)
    dev = t - mean[lab]  # centred first: E[t²] − E[t]² cancels to noise on near-equal times
    var = np.bincount(lab, dev * dev, minlength=k) / np.maximum(n, 1)
    fpc = np.where(n > 1, np.maximum(n - m, 0) / np.maximum(n - 1, 1), 0.0)
    per = n ** 2 * var / np.maximum(m, 1) * fpc
    total_var = float(per.sum())
    total = float(t.sum())
    if total <= 0:
        return None
    share = {int(c): float(per[c] / total_var) for c in np.flatnonzero(per > 0)} if total_var > 0 else {}
    return 100.0 * np.sqrt(total_var) / total, share


def chance_lower(sd_ref, sd_other) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probabilities (lower, equal, higher) that the reference's absolute error is below the
    rival's when each is only the draw of its plan's members: independent normals with mean 0
    and standard deviation ``spread_sd``. For |X| and |Y| of N(0, a²) and N(0, b²),
    P(|X| < |Y|) = 2/π · atan(b / a). Both spreads within ``TIE`` of 0 (censuses, clusters of
    identical times) count as equal; NaN where either spread is unknown (stochastic methods).

    Why: it is the yardstick for a head-to-head count. A method whose clusters are as tight as
    its rival's wins half the workloads by luck; bias (a representative systematically off its
    cluster) is not in the model, so counts far from it point at cluster quality, not chance.
    """
    a = np.asarray(sd_ref, dtype=np.float64)
    b = np.asarray(sd_other, dtype=np.float64)
    a0, b0 = np.abs(a) <= TIE, np.abs(b) <= TIE
    equal = (a0 & b0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # b/a = inf: atan gives pi/2
        lower = np.where(a0, 1.0 - equal, 2.0 / np.pi * np.arctan(np.where(b0, 0.0, b) / a))
    higher = 1.0 - lower - equal
    unknown = ~(np.isfinite(a) & np.isfinite(b))
    return tuple(np.where(unknown, np.nan, x) for x in (lower, equal, higher))  # type: ignore[return-value]


def chance_at_least(p_lower, k: int) -> float:
    """Probability that at least ``k`` of independent workloads, each lower with probability
    ``p_lower[i]``, come out lower: the Poisson-binomial tail, by the exact recursion over
    workloads (tens of them, so no approximation is needed). NaN if any probability is unknown.

    Why: an expected count says what chance gives on average, but a target such as "lower on 8
    of 11" asks for a tail. Where the rival is exact on three workloads and a coin flip on the
    other eight, the expected count is four and the target holds one time in 256; the tail says
    whether a count is reachable by a luckier draw or needs tighter clusters."""
    p = np.asarray(p_lower, dtype=np.float64).ravel()
    if not np.isfinite(p).all():
        return float("nan")
    if k <= 0:
        return 1.0
    count = np.zeros(len(p) + 1)  # count[j]: probability that exactly j of the workloads so far are lower
    count[0] = 1.0
    for q in np.clip(p, 0.0, 1.0):
        count[1:] = count[1:] * (1.0 - q) + count[:-1] * q
        count[0] *= 1.0 - q
    return float(min(count[k:].sum(), 1.0))


def head_to_head_counts(summary, reference: str, arch: str, methods: Iterable[str] | None = None,
                        at_least: int | None = None):
    """Per rival of ``reference`` on ``arch`` (rows of ``summarize``): the workloads where the
    reference's cycle error is lower, equal (within ``TIE``) or higher (``n_workloads``: on how many
    both have an error, of the ``of_workloads`` with any row on ``arch``), and the counts that
    ``chance_lower`` expects from both plans' ``spread_sd`` (NaN unless every workload has both
    spreads). Ties are their own column because a census and a workload of one kernel per cluster
    give 0 % to every method that simulates them whole (not pka, whose 5 % rule may merge 3mm's
    GEMMs, nor random): a 0 % census against pka's 0.01 % at 3x counts as lower, and the Pareto
    column shows it is a trade-off. ``max_lower`` is the most workloads the reference could be lower on:
    those where the rival is not already exact (0 % within ``TIE``), so a reader sees when a
    target count asks for a clean sweep of the rest.

    ``dominates`` / ``dominated``: ``pareto_counts`` of the reference against the rival on error and
    arithmetic-mean speedup (NaN without a ``speedup_mean`` column).

    With ``at_least``, ``chance_at_least`` is the probability under the same chance model that the
    reference is lower on at least that many workloads (``chance_at_least``; NaN where the chance
    counts are).

    Chance counts model one draw per method: a method averaged over several seeds (stochastic)
    gets none. A workload on which both errors are equal counts as equal in the chance count too:
    equal estimates mean the two plans simulate the same members, so their errors are one draw,
    not two independent ones."""
    import pandas as pd

    s = summary[summary["arch"] == arch]
    if methods is None:
        methods = sorted(s["method"].unique(), key=method_sort_key)
    e = s.pivot_table(index="workload", columns="method", values="error_cycles", aggfunc="first", dropna=False)
    sd = None
    if "spread_sd" in s.columns:
        one_draw = s["n_seeds"] <= 1 if "n_seeds" in s.columns else True
        sd = (s.assign(spread_sd=s["spread_sd"].where(one_draw))
              .pivot_table(index="workload", columns="method", values="spread_sd", aggfunc="first", dropna=False)
              .reindex(index=e.index, columns=e.columns))
    su = None
    if "speedup_mean" in s.columns:
        su = (s.pivot_table(index="workload", columns="method", values="speedup_mean", aggfunc="first", dropna=False)
              .reindex(index=e.index, columns=e.columns))
    n_all = int(s["workload"].nunique())  # the table's workloads: a rival not run on some counts over fewer
    rows = []
    for other in methods:
        if other == reference:
            continue
        diff = (e[reference] - e[other]).to_numpy(dtype=np.float64)
        row = {"method": other, "lower": int((diff < -TIE).sum()), "tie": int((np.abs(diff) <= TIE).sum()),
               "higher": int((diff > TIE).sum()), "n_workloads": int(np.isfinite(diff).sum()), "of_workloads": n_all,
               "max_lower": int((np.isfinite(diff) & (np.abs(e[other].to_numpy(dtype=np.float64)) > TIE)).sum())}
        if sd is not None:
            # over the workloads the counts are over: an LLM with no cycle error has spreads, and its
            # chances were summed beside counts that leave it out ("2 / 0 / 1 (over 3 of 4)", chance 3.3 / 0 / 0.7)
            counted = np.isfinite(diff)
            lo, eq, hi = chance_lower(sd[reference].to_numpy(dtype=np.float64)[counted],
                                      sd[other].to_numpy(dtype=np.float64)[counted])
            one = (np.abs(diff[counted]) <= TIE) & np.isfinite(eq)  # equal estimates: one draw, not two
            p = (np.where(one, 0.0, lo), np.where(one, 1.0, eq), np.where(one, 0.0, hi))
        else:
            p = (np.full(len(diff), np.nan),) * 3
        for name, x in zip(("expected_lower", "expected_tie", "expected_higher"), p):
            row[name] = float(x.sum()) if len(x) and np.isfinite(x).all() else float("nan")
        if at_least is not None:
            row["chance_at_least"] = chance_at_least(p[0], at_least) if len(p[0]) else float("nan")
        row["dominates"] = row["dominated"] = float("nan")
        if su is not None:
            row["dominates"], row["dominated"] = pareto_counts(
                e[reference].to_numpy(dtype=np.float64), su[reference].to_numpy(dtype=np.float64),
                e[other].to_numpy(dtype=np.float64), su[other].to_numpy(dtype=np.float64))
        rows.append(row)
    columns = ["method", "lower", "tie", "higher", "n_workloads", "of_workloads", "max_lower",
               "expected_lower", "expected_tie", "expected_higher", "dominates", "dominated"]
    return pd.DataFrame(rows, columns=columns + (["chance_at_least"] if at_least is not None else []))


def pareto_counts(err_a, speedup_a, err_b, speedup_b) -> tuple[float, float]:
    """``(a dominates b, b dominates a)``: the workloads where one plan has cycle error no higher
    *and* speedup no lower than the other's, and is strictly better in one of them (errors equal
    within ``TIE`` points, speedups within ``SPEEDUP_TIE`` relative). Why: a lower error bought by
    simulating more is a trade-off, not a win; a reader choosing a sampler wants the plans that
    are better on both. A workload missing a number for either plan counts for neither; an infinite
    speedup (``score_plan``'s for a sampled time of 0) is no missing number (``speedup_no_lower``)."""
    ea, sa, eb, sb = (np.asarray(x, dtype=np.float64) for x in (err_a, speedup_a, err_b, speedup_b))
    # an infinite speedup (sampled time 0) is a number, the highest: it was counted as missing, so a
    # plan lower on error at speedup inf did not dominate the one it beats on both
    known = np.isfinite(ea) & ~np.isnan(sa) & np.isfinite(eb) & ~np.isnan(sb)
    ea, sa, eb, sb = ea[known], sa[known], eb[known], sb[known]
    de = ea - eb
    a_better = (de < -TIE) | ~speedup_no_lower(sb, sa)
    b_better = (de > TIE) | ~speedup_no_lower(sa, sb)
    return float((a_better & ~b_better).sum()), float((b_better & ~a_better).sum())


def speedup_no_lower(a, b) -> np.ndarray:
    """Elementwise: speedup ``a`` is no lower than ``b``, equal within ``SPEEDUP_TIE`` (relative)
    counting as no lower; two infinite speedups (sampled time 0 for both) are equal, and an
    infinite one is above every finite one. NaN is no lower than nothing (False).
    Why not ``a >= b - tol``: with an infinite speedup the tolerance is inf too, and inf - inf
    is NaN, so two equal inf speedups compared as unequal and inf against 10 as equal."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        close = (a == b) | (finite & (np.abs(a - b) <= SPEEDUP_TIE * np.maximum(np.abs(a), np.abs(b))))
        return (a > b) | close


RESULT_COLUMNS = [
    "workload", "method", "arch", "plan_arch", "cross_arch", "seed", "epsilon", "sweep", "stochastic",
    "n_invocations", "n_simulated", "n_clusters", "error_cycles", "error_time",
    *[f"error_{m}" for m in RATE_METRICS],
    "error_cycles_any_member", "error_cycles_rerun", "error_time_rerun", "spread_sd",
    "speedup", "cycles_true", "cycles_est", "time_full_ns", "time_sampled_ns", "fit_seconds", "synthetic",
    "data", "gpu",  # "synthetic" / "real" / "" (workload.json says neither); the GPU a real workload was measured on
    "simulated_by",  # the simulator whose cycles this row is scored on ("" when the ground truth is not simulated)
]


def averaged_columns(columns) -> list[str]:
    """The per-row percentages averaged arithmetically, over seeds and then over workloads:
    every ``error_*`` column and the representative spread, in the table's column order."""
    return [c for c in columns if c.startswith("error_") or c == "spread_sd"]


def summarize(results, sweep: bool = False):
    """Per workload x method x arch (x ε): mean errors over seeds, speedup arith + harmonic.

    Returns a DataFrame with ``error_*`` (arithmetic mean over seeds), ``speedup_mean``
    (arithmetic), ``speedup_hmean`` (harmonic), ``n_simulated`` (mean), ``n_seeds``.
    """
    df = results[results["sweep"] == sweep] if not sweep else results.copy()
    keys = ["workload", "method", "arch", "cross_arch"] + (["epsilon"] if sweep else [])
    if sweep:
        df = df[df["method"].isin(df.loc[df["sweep"], "method"].unique())]
    err_cols = averaged_columns(df.columns)
    g = df.groupby(keys, sort=False, dropna=False)
    out = g[err_cols].mean()
    out["speedup_mean"] = g["speedup"].mean()
    out["speedup_hmean"] = g["speedup"].agg(harmonic_mean)
    out["n_simulated"] = g["n_simulated"].mean()
    out["n_invocations"] = g["n_invocations"].first()
    out["n_seeds"] = g["seed"].nunique()
    return out.reset_index()


def suite_averages(summary):
    """Across workloads per method x arch: mean error; speedup arithmetic mean of per-workload
    arithmetic means (GCL style) and harmonic mean of per-workload harmonic means (STEM style)."""
    keys = [k for k in ("method", "arch", "cross_arch", "epsilon") if k in summary.columns]
    err_cols = averaged_columns(summary.columns)
    g = summary.groupby(keys, sort=False, dropna=False)
    out = g[err_cols].mean()
    out["speedup_mean"] = g["speedup_mean"].mean()
    out["speedup_hmean"] = g["speedup_hmean"].agg(harmonic_mean)
    out["n_simulated"] = g["n_simulated"].mean()
    out["n_workloads"] = g["workload"].nunique()
    return out.reset_index()


def method_sort_key(method: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER), method)


def write_results_csv(results, path: Path) -> Path:
    """Atomic, deterministic CSV (fixed float format, fixed column order)."""
    return write_text_atomic(Path(path), results.to_csv(index=False, float_format="%.10g", lineterminator="\n"))


# ---------------------------------------------------------------------------------------
# estimates from simulated (or measured) sampled invocations: totals and weighted means
# ---------------------------------------------------------------------------------------
_RATE_SUFFIXES = ("_rate", "_ratio", "_efficiency", "_pct", "_percent", "occupancy", "_mean")
PER_LAUNCH_ATTRIBUTES = ("nregs", "shmem")
"""profile.csv columns that describe one launch (registers per thread, shared memory per CTA):
averaged like rates, because their sum over the workload's launches means nothing."""


def is_rate_metric(name: str) -> bool:
    """True for per-invocation ratios (IPC, hit rates, occupancy, efficiencies, per-warp
    means) and per-launch attributes (``nregs``, ``shmem``).

    Why it matters: Σ w·M estimates the workload total of an additive metric (cycles,
    instructions, time), but the weighted *sum* of 256 IPCs is no IPC at all; a ratio is
    estimated by the weighted mean Σ w·M / N, the same quantity ``score_plan`` compares.
    """
    return (name in RATE_METRICS or name == "ipc" or name in PER_LAUNCH_ATTRIBUTES
            or name.endswith(_RATE_SUFFIXES))


def weighted_estimate(plan: SamplingPlan, values: dict[str, np.ndarray],
                      rates: Iterable[str] = ()) -> dict[str, dict[str, float | None]]:
    """``{"totals": {m: Σ w·M}, "means": {m: Σ w·M / N}}`` over the plan's samples.

    ``values[m]`` is indexed by invocation: an array of length ``n_invocations``, or a
    mapping from the sampled invocations to their values (a plan of a huge invocation
    count need not fit an array in memory; only the sampled entries are read). Rate metrics (``is_rate_metric`` or named in ``rates``) go to
    ``means``, every other metric to ``totals``. A metric missing (NaN) for some sampled
    invocation has no estimate (None): silently dropping a sample would reweight the rest.
    """
    extra = set(rates)
    inv, w, n = plan.invocations, plan.weights, plan.n_invocations
    out: dict[str, dict[str, float | None]] = {"totals": {}, "means": {}}
    for m, v in values.items():
        if isinstance(v, Mapping):
            s = np.array([v.get(int(i), np.nan) for i in inv], dtype=np.float64)
        else:
            s = np.asarray(v, dtype=np.float64)[inv]
        est = None if np.isnan(s).any() else weighted_sum(w, s)
        if is_rate_metric(m) or m in extra:
            out["means"][m] = None if est is None else est / n
        else:
            out["totals"][m] = est
    return out


def no_estimate_reasons(est: Mapping[str, Any]) -> dict[str, str]:
    """metric -> why ``est`` (``weighted_estimate``'s result, with an optional
    ``ipc_of_totals``) has no finite value for it: ``missing`` (no value for some sampled
    invocation) or ``overflow`` (beyond float64). Why: both become null in JSON, and a reader
    must know whether to fix the results file or rescale the metric."""
    why: dict[str, str] = {}
    for group in ("totals", "means"):
        for m, v in est.get(group, {}).items():
            if v is None:
                why[m] = "missing"
            elif not math.isfinite(v):
                why[m] = "overflow"
    v = est.get("ipc_of_totals")
    if v is not None and not math.isfinite(v):
        why["ipc_of_totals"] = "overflow"
    return why


def finite_or_null(o: Any) -> Any:
    """``o`` with every non-finite float as None (through dicts, lists and tuples; numpy
    floats become Python floats): NaN and Infinity are no JSON, and strict readers reject the
    whole document."""
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: finite_or_null(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [finite_or_null(v) for v in o]
    return o


def cluster_contributions(plan: SamplingPlan, values: np.ndarray) -> list[dict[str, Any]]:
    """Per cluster: size, samples, Σ w·M of its samples and its share of the plan's estimate.

    Why: a whole-workload estimate dominated by one cluster of a few samples is only as good
    as those samples; the table shows where the estimate comes from.
    """
    v = np.asarray(values, dtype=np.float64)
    total = plan.estimate(v)
    by: dict[int, list] = {}
    for s in plan.samples:
        by.setdefault(s.cluster, []).append(s)
    rows = []
    for c in sorted(plan.clusters, key=lambda c: c.id):
        members = by.get(c.id, [])
        contrib = float(sum(s.weight * v[s.invocation] for s in members))
        rows.append({"cluster": int(c.id), "size": int(c.size), "samples": len(members),
                     "estimate": contrib, "share": contrib / total if total else float("nan"),
                     "error_bound": c.error_bound})
    return rows
