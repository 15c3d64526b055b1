"""``report.md`` and PNG plots from evaluation results (``results.csv`` rows).

Tables mirror the papers so numbers can be read side by side: the per-workload
error/speedup comparison of GCL-Sampler Fig. 4-5 and STEM+ROOT Table 3, the
cross-architecture Table 3 of GCL-Sampler, the micro-architectural metric errors of
GCL-Sampler Fig. 6 and the error-bound sweep of STEM+ROOT Fig. 11. A report says in its
first lines what its ground truth is: SYNTHETIC (``gclsampler.synth``), REAL (measured on the
GPU its workload.json names), SIMULATED (a simulator's cycles, ``simulated_by``), or several,
with each row labelled (``data_banner``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from gclsampler._atomic import atomic_path, write_text_atomic
from gclsampler.plan import SamplingPlan
from gclsampler.profile import fitted_arch, rerun_of
from gclsampler.score import (RESULT_COLUMNS, RATE_METRICS, TIE, MethodRun, evaluate_workload, head_to_head_counts,
                               method_sort_key, summarize, suite_averages, write_results_csv)

__all__ = ["write_report", "write_text_atomic", "plot_speedup_vs_error", "plot_per_workload_bars",
           "plot_cluster_histograms", "plot_silhouette", "plot_epsilon_sweep", "SYNTHETIC_BANNER",
           "write_workload_report", "data_banner", "data_kinds", "workload_kinds", "plot_stamp"]

SYNTHETIC_BANNER = ("> **SYNTHETIC DATA.** Every number below comes from synthetic workloads written by "
                    "`gclsampler.synth`, not from hardware measurements.")


def _savefig(fig, path: Path, synthetic: bool = False, legend_of=None) -> Path:
    """Atomic PNG write with fixed metadata (no timestamp) so reruns give equal bytes; the
    figure is closed after (each is drawn once, and pyplot keeps open ones alive).

    ``synthetic`` stamps "SYNTHETIC DATA" on the figure: a plot copied out of the report
    (into slides, a paper) must still say its numbers are not hardware measurements. A string
    is the stamp itself (``plot_stamp``: "REAL DATA (NVIDIA H200 ...)", or the kinds present); every
    ``plot_*`` function's ``synthetic`` argument is passed here as it is.
    ``legend_of``: an axes whose legend goes outside it, to the right, where it hides no point.
    """
    import matplotlib.pyplot as plt

    path = Path(path)
    if legend_of is not None:
        legend_of.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    stamp = synthetic if isinstance(synthetic, str) else ("SYNTHETIC DATA" if synthetic else None)
    if stamp:
        # below everything drawn (bbox_inches="tight" grows the image to hold it): inside, it covered
        # the x label of the bottom-right panel, and at the figure's edge rotated tick labels
        bottom = min(0.0, fig.get_tightbbox(fig.canvas.get_renderer()).y0 / fig.get_figheight())
        fig.text(0.99, bottom, stamp, ha="right", va="top", fontsize=9, color="tab:red",
                 alpha=0.8, fontweight="bold")
    with atomic_path(path, suffix=".png", make_parents=False) as tmp:  # matplotlib picks the format from it
        fig.savefig(tmp, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _plain_log_ticks(ax) -> None:
    """Label a log axis 1.3, 2, 50 instead of 1.3×10^0 when it spans less than a decade or two."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_formatter(fmt)
    if hi / max(lo, 1e-300) < 30:
        ax.yaxis.set_minor_formatter(fmt)


def _maybe_symlog(ax, values) -> str:
    """Symmetric-log y axis when errors span 0..>20 %, so 0.5 % and 200 % are both readable."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size and v.max() > 20:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(0, float(v.max()) * 2.0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        return ", symlog scale"
    return ""


def _fmt_err(x: float) -> str:
    """An error in % for report.md; "<0.01" only for 0 <= x < 0.01: a negative error (a
    malformed row) must not read as the best score."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return "<0.01" if 0 <= x < 0.01 else f"{x:.2f}"


def _fmt_su(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.2f}×"


INFINITE_SPEEDUP = ("n/a speedup: a plan whose sampled invocations all took 0 ns (sampled time 0) has "
                    "speedup inf, and so has an arithmetic mean over it; such a cell is not a missing number.")
"""What an n/a speedup cell is, in one wording for every table that prints one (report.md,
compare.md, ``bench/targets.py``): each printed n/a as for a missing number, and targets.py
alone said why, in words of its own."""

INFINITE_SPEEDUP_NOTE = INFINITE_SPEEDUP + " The harmonic mean counts it as 1/inf = 0."
"""``INFINITE_SPEEDUP`` under a table that also shows harmonic-mean speedups (report.md,
compare.md), where the same plan does not make the mean n/a."""


def has_infinite_speedup(*speedups) -> bool:
    """Whether any of the speedup columns given holds an infinite value: only then is an n/a
    cell what ``INFINITE_SPEEDUP`` says it is."""
    return any(np.isinf(np.asarray(s, dtype=np.float64)).any() for s in speedups)


def infinite_speedup_note(*speedups) -> list[str]:
    """``[INFINITE_SPEEDUP_NOTE, ""]`` when ``has_infinite_speedup`` (a report's lines to add),
    else ``[]``."""
    return [INFINITE_SPEEDUP_NOTE, ""] if has_infinite_speedup(*speedups) else []


INFINITE_LABEL = "∞: speedup inf (sampled time 0), drawn past the highest finite speedup"
"""The legend entry of an infinite speedup in a plot; drawn as nothing, it looked like a method not run."""

INFINITE_MARKER = {"marker": ">", "s": 70, "edgecolors": "k", "linewidths": 0.6, "zorder": 3}
"""How a point at an infinite speedup is drawn on a speedup axis: a triangle pointing off the axis."""


def infinite_edge(speedups) -> float:
    """Where an infinite speedup is drawn on a log speedup axis: 4x past the largest finite one
    (10x when none is finite), so it stands apart from every measured value."""
    v = np.asarray(speedups, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return float(v.max()) * 4.0 if v.size else 10.0


def mark_infinite_x(ax, edge: float, speedups) -> None:
    """On a log speedup x axis holding points drawn at ``edge`` (``INFINITE_MARKER``): a dotted
    line there, "∞" beside it and a legend entry, so the points do not read as speedup ``edge``."""
    if not has_infinite_speedup(speedups):
        return
    ax.axvline(edge, color="0.5", ls=":", lw=1)
    ax.text(edge, 0.98, " ∞", transform=ax.get_xaxis_transform(), ha="left", va="top", fontsize=11)
    ax.scatter([], [], color="0.7", label=INFINITE_LABEL, **INFINITE_MARKER)
    lo, _ = ax.get_xlim()
    ax.set_xlim(lo, edge * 2.0)


def _methods(df) -> list[str]:
    return sorted(df["method"].unique(), key=method_sort_key)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------
_COLORS = {"gcl": "tab:red", "gcl_stem": "tab:orange", "stem_root": "tab:green", "pka": "tab:blue",
           "sieve": "tab:purple", "allegro": "tab:brown", "random": "tab:gray", "photon": "tab:olive",
           "gcl_paper": "tab:pink"}


def plot_speedup_vs_error(summary, path: Path, arch: str, synthetic: bool = False) -> Path:
    """STEM+ROOT Fig. 9 style: one point per workload, speedup (log x) vs cycle error."""
    plt = _plt()
    df = summary[summary["arch"] == arch]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    edge = infinite_edge(df["speedup_mean"])
    for m in _methods(df):
        d = df[df["method"] == m]
        su, err = d["speedup_mean"].to_numpy(dtype=np.float64), d["error_cycles"].to_numpy(dtype=np.float64)
        inf = np.isposinf(su)
        ax.scatter(su[~inf], err[~inf], label=m, color=_COLORS.get(m), alpha=0.8,
                   edgecolors="k", linewidths=0.4, s=36)
        if inf.any():
            ax.scatter(np.full(int(inf.sum()), edge), err[inf], color=_COLORS.get(m), alpha=0.8,
                       **INFINITE_MARKER)
    ax.set_xscale("log")
    mark_infinite_x(ax, edge, df["speedup_mean"])
    ax.set_xlabel("speedup (×, log scale; arithmetic mean over seeds)")
    ax.set_ylabel("cycle error (%)" + _maybe_symlog(ax, df["error_cycles"]))
    ax.set_title(f"speedup vs error per workload ({arch})")
    ax.grid(True, which="both", alpha=0.3)
    return _savefig(fig, path, synthetic, legend_of=ax)


def plot_per_workload_bars(summary, path_error: Path, path_speedup: Path | None, arch: str,
                           synthetic: bool = False, error_column: str = "error_cycles") -> tuple[Path, Path | None]:
    """GCL-Sampler Fig. 4 and 5: per-workload grouped bars of error and speedup (log).

    ``error_column="error_time"`` plots the error on measured time (real workloads); a
    ``path_speedup`` of None draws the error bars only."""
    plt = _plt()
    df = summary[summary["arch"] == arch]
    workloads = list(dict.fromkeys(df["workload"]))
    methods = _methods(df)
    x = np.arange(len(workloads))
    width = 0.8 / max(1, len(methods))
    outs = []
    label = "time error (%)" if error_column == "error_time" else "cycle error (%)"
    for col, ylabel, path, log in ((error_column, label, path_error, False),
                                   ("speedup_mean", "speedup (×, log scale)", path_speedup, True)):
        if path is None:
            outs.append(None)
            continue
        fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(workloads) + 2), 4.2))
        edge = infinite_edge(df[col]) if log else math.nan
        for j, m in enumerate(methods):
            d = df[df["method"] == m].set_index("workload")
            vals = np.array([float(d.loc[w, col]) if w in d.index else np.nan for w in workloads])
            at = x + (j - (len(methods) - 1) / 2) * width
            if log:
                vals = np.where(vals > 0, vals, np.nan)
                inf = np.isposinf(vals)
                if inf.any():  # was drawn as nothing, like a method not run (and matplotlib warned)
                    ax.bar(at[inf], np.full(int(inf.sum()), edge), width, color="none",
                           edgecolor=_COLORS.get(m) or "k", hatch="//", linewidth=0.8)
                    for xi in at[inf]:
                        ax.text(xi, edge, "∞", ha="center", va="bottom", fontsize=10)
                    vals = np.where(inf, np.nan, vals)
            ax.bar(at, vals, width, label=m, color=_COLORS.get(m))
        ax.set_xticks(x, workloads, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            if has_infinite_speedup(df[col]):
                ax.set_ylim(top=edge * 3)
                ax.bar([np.nan], [np.nan], color="none", edgecolor="k", hatch="//", label=INFINITE_LABEL)
        else:
            ax.set_ylabel(ylabel + _maybe_symlog(ax, df[col]))
        ax.set_title(f"{ylabel.split(' (')[0]} per workload ({arch})")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        outs.append(_savefig(fig, path, synthetic, legend_of=ax))
    return outs[0], outs[1]


def plot_cluster_histograms(times_ns: np.ndarray, labels: np.ndarray, path: Path, title: str,
                            representatives: Iterable[int] = (), max_clusters: int = 12,
                            synthetic: bool = False) -> Path:
    """Execution-time histogram of each cluster (largest first), representatives marked."""
    plt = _plt()
    times = np.asarray(times_ns, dtype=np.float64) / 1e3
    labels = np.asarray(labels)
    ids, sizes = np.unique(labels, return_counts=True)
    order = ids[np.argsort(-sizes, kind="stable")][:max_clusters]
    reps = set(int(r) for r in representatives)
    n = len(order)
    cols = min(4, n)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols, 2.4 * rows), squeeze=False)
    for ax, c in zip(axes.ravel(), order):
        idx = np.flatnonzero(labels == c)
        t = times[idx]
        ax.hist(t, bins=min(40, max(5, idx.size // 3)), color="tab:blue", alpha=0.8)
        for r in idx[np.isin(idx, list(reps))]:
            ax.axvline(times[r], color="tab:red", lw=1)
        cov = float(t.std() / t.mean()) if t.mean() > 0 else 0.0
        ax.set_title(f"cluster {int(c)}: n={idx.size}, CoV={cov:.3f}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("time (µs)", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("invocations", fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    shown = f"{n} largest of {ids.size} clusters" if ids.size > n else f"{ids.size} clusters"
    fig.suptitle(f"{title}: {shown} (red: sampled invocations)", fontsize=9)
    fig.tight_layout()
    return _savefig(fig, path, synthetic)


def plot_silhouette(curves: dict[str, Any], path: Path, chosen: dict[str, int] | None = None,
                    synthetic: bool = False) -> Path | None:
    """Silhouette score vs k, one line per workload (from ``silhouette.csv`` files: k,score).

    ``chosen``: workload -> the k its plan uses; that point gets the star. K selection
    may take a smaller k within a tolerance of the best score, so starring the maximum
    pointed at a clustering the plan does not use. Without ``chosen`` the maximum is
    starred and the title says so.
    """
    import pandas as pd

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    drawn = 0
    chosen = chosen or {}
    for name, src in curves.items():
        df = pd.read_csv(src) if not isinstance(src, pd.DataFrame) else src
        if not {"k", "score"} <= set(df.columns) or df.empty:
            continue
        df = df.sort_values("k")
        line = ax.plot(df["k"], df["score"], marker="o", ms=3, label=name)[0]
        if name in chosen:
            k = int(chosen[name])
            at = df[df["k"] == k]
            if len(at):
                ax.scatter([k], [float(at["score"].iloc[0])], marker="*", s=110, color="k", zorder=3)
            else:  # the plan's k was not scored (e.g. fewer distinct embeddings than k_min)
                ax.axvline(k, color=line.get_color(), ls="--", lw=1)
        elif not chosen:
            best = df.loc[df["score"].idxmax()]
            ax.scatter([best["k"]], [best["score"]], marker="*", s=80, color="k", zorder=3)
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("k (clusters)")
    ax.set_ylabel("silhouette score")
    ax.set_title("silhouette curve (★ = k the plan uses)" if chosen else "silhouette curve (★ = max)")
    ax.grid(True, alpha=0.3)
    return _savefig(fig, path, synthetic, legend_of=ax)


def plot_epsilon_sweep(sweep_avg, path: Path, arch: str, synthetic: bool = False) -> Path | None:
    """STEM+ROOT Fig. 11: error and (harmonic-mean) speedup against the error bound ε."""
    plt = _plt()
    df = sweep_avg[(sweep_avg["arch"] == arch)].dropna(subset=["epsilon"])
    if df.empty:
        return None
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for m in _methods(df):
        d = df[df["method"] == m].sort_values("epsilon")
        a1.plot(d["epsilon"], d["speedup_hmean"], marker="o", label=m, color=_COLORS.get(m))
        a2.plot(d["epsilon"], d["error_cycles"], marker="o", label=m, color=_COLORS.get(m))
    a1.set_yscale("log")
    _plain_log_ticks(a1)
    a1.set_xlabel("error bound ε")
    a1.set_ylabel("speedup (×, harmonic mean over workloads)")
    a2.set_xlabel("error bound ε")
    a2.set_ylabel("cycle error (%, arithmetic mean)")
    for a in (a1, a2):
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(f"error-bound sweep ({arch})", fontsize=10)
    fig.tight_layout()
    return _savefig(fig, path, synthetic)


# ---------------------------------------------------------------------------------------
# report.md
# ---------------------------------------------------------------------------------------
def _over(avg_by_method, method: str, n: int) -> str:
    """" (k of n workloads)" after an AVG cell whose method has rows on only k of the table's n
    workloads (``suite_averages``' ``n_workloads``; real data without a method's inputs), else "".
    Why in every table with an AVG: the time, metric and cross-arch tables averaged such a
    method over the workloads it ran on and said nothing, so its mean over 2 workloads sat beside
    the others' over 3 as if alike (only the comparison table said it)."""
    k = int(avg_by_method.loc[method, "n_workloads"]) if "n_workloads" in avg_by_method.columns else n
    return f" ({k} of {n} workloads)" if k < n else ""


def _comparison_table(summary, avg, arch: str, unavailable=()) -> str:
    """``unavailable``: (workload, method) pairs whose cell says "not run" (the method could not
    run on that workload's data), not "—" (absent for another reason)."""
    df = summary[summary["arch"] == arch]
    methods = _methods(df)
    workloads = list(dict.fromkeys(df["workload"]))
    header = ["workload", "N"] + [f"{m} E(%) / SU / sim" for m in methods]
    rows = []
    for w in workloads:
        d = df[df["workload"] == w].set_index("method")
        n = int(d["n_invocations"].iloc[0])
        cells = [w, str(n)]
        for m in methods:
            if m in d.index:
                r = d.loc[m]
                cells.append(f"{_fmt_err(r['error_cycles'])} / {_fmt_su(r['speedup_mean'])} / {r['n_simulated']:.0f}")
            else:
                cells.append("not run" if (w, m) in unavailable else "—")
        rows.append(cells)
    a = avg[avg["arch"] == arch].set_index("method")
    rows.append(["**AVG (arith.)**", ""] + [
        f"{_fmt_err(a.loc[m, 'error_cycles'])} / {_fmt_su(a.loc[m, 'speedup_mean'])} / {a.loc[m, 'n_simulated']:.0f}"
        + _over(a, m, len(workloads)) if m in a.index else "—" for m in methods])
    rows.append(["**speedup h-mean**", ""] + [  # over fewer workloads said as the AVG row says it
        f"{_fmt_su(a.loc[m, 'speedup_hmean'])}" + _over(a, m, len(workloads)) if m in a.index else "—"
        for m in methods])
    return _md_table(header, rows)


TIME_ONLY_CELL = " (time)"
"""Marks a cross-arch cell scored on ``time_ns``: that arch's profile has no cycle counts."""


def _cross_arch_error(row) -> str:
    """A cross-arch cell's error: on cycles, else on ``time_ns`` marked as such. Why: an arch
    whose profile came from Nsight Systems or torch.profiler (no cycles) showed n/a, with no
    word of why and no score, though its times score the plan as the fitted run's do."""
    cyc, t = row["error_cycles"], row.get("error_time", float("nan"))
    if cyc != cyc and t == t:  # NaN cycles, a time error
        return _fmt_err(t) + TIME_ONLY_CELL
    return _fmt_err(cyc)


def _cross_arch_table(summary, method: str, archs: list[str]) -> str:
    """One method's error and speedup per workload on each arch. Every workload of ``summary``
    gets a row ("—" where the method has none, e.g. not run on a REAL workload's data), so the
    AVG says "(k of n workloads)" when it is over fewer than the other methods' tables."""
    df = summary[summary["method"] == method]
    workloads = list(dict.fromkeys(summary["workload"]))
    header = ["program"]
    for a in archs:
        header += [f"{a} E(%)", f"{a} SU"]
    rows = []
    for w in workloads:
        d = df[df["workload"] == w].set_index("arch")
        cells = [w]
        for a in archs:
            if a in d.index:
                cells += [_cross_arch_error(d.loc[a]), _fmt_su(d.loc[a, "speedup_mean"])]
            else:
                cells += ["—", "—"]
        rows.append(cells)
    cells = ["**AVG**"]
    for a in archs:
        d = df[df["arch"] == a]
        # an arch without some workloads' ground truth (a REAL workload measured on one GPU) averages
        # over fewer of them than the column beside it: said, as the comparison table's AVG row says it
        k = d.loc[d["error_cycles"].notna(), "workload"].nunique()  # the mean skips workloads without a number
        over = f" ({k} of {len(workloads)} workloads)" if 0 < k < len(workloads) else ""
        cells += [_fmt_err(d["error_cycles"].mean()) + over, _fmt_su(d["speedup_mean"].mean())]
    rows.append(cells)
    return _md_table(header, rows)


def _workload_rows(df, methods: list[str], cell) -> list[list[str]]:
    """One row per workload of ``df`` (in order of appearance): ``cell(rows of that workload by
    method, method)`` for each method it has, "—" where it has none."""
    rows = []
    for w in dict.fromkeys(df["workload"]):
        d = df[df["workload"] == w].set_index("method")
        rows.append([w] + [cell(d, m) if m in d.index else "—" for m in methods])
    return rows


def _any_member_table(summary, arch: str) -> str | None:
    """Plan error next to the mean error over random representatives, and the spread the profile
    predicts for that (``spread_sd``), for one-per-cluster plans."""
    if "error_cycles_any_member" not in summary.columns:
        return None
    df = summary[(summary["arch"] == arch) & summary["error_cycles_any_member"].notna()]
    methods = _methods(df)
    if not methods:
        return None
    spread = "spread_sd" in df.columns

    def cell(d, m) -> str:
        text = f"{_fmt_err(d.loc[m, 'error_cycles'])} / {_fmt_err(d.loc[m, 'error_cycles_any_member'])}"
        return text + (f" / ±{_fmt_err(d.loc[m, 'spread_sd'])}" if spread else "")

    header = ["workload"] + [f"{m} E(%) / any member" + (" / spread" if spread else "") for m in methods]
    rows = _workload_rows(df, methods, cell)
    # over the workloads shown, as the second-run table: a plan's error averaged over workloads
    # without an any-member error sat beside an any-member mean over the others
    cols = ["error_cycles", "error_cycles_any_member"] + (["spread_sd"] if spread else [])
    mean = df.groupby("method")[cols].mean()
    rows.append(["**AVG**"] + [cell(mean, m) for m in methods])
    return _md_table(header, rows)


def _rerun_table(summary, arch: str, on: str = "cycles") -> str | None:
    """Each method's error on the run its plan was fitted on and on a second run of the same
    arch (``error_cycles_rerun``), where the workloads have one. ``on="time"``: the same on
    ``time_ns`` (``error_time_rerun``) for the workloads whose second run has no cycles (a
    wall-time profile), which the cycle table leaves out."""
    rerun = f"error_{on}_rerun"
    if rerun not in summary.columns:
        return None
    df = summary[(summary["arch"] == arch) & summary[rerun].notna()]
    if on == "time" and "error_cycles_rerun" in df.columns:
        df = df[df["error_cycles_rerun"].isna()]
    methods = _methods(df)
    if not methods:
        return None

    def cell(d, m) -> str:
        return f"{_fmt_err(d.loc[m, f'error_{on}'])} / {_fmt_err(d.loc[m, rerun])}"

    rows = _workload_rows(df, methods, cell)
    # averaged over the same workloads on both runs, so the two numbers compare
    mean = df.groupby("method")[[f"error_{on}", rerun]].mean()
    rows.append(["**AVG**"] + [cell(mean, m) for m in methods])
    what = "E(%)" if on == "cycles" else "time E(%)"
    return _md_table(["workload"] + [f"{m} {what} fitted run / second run" for m in methods], rows)


def h2h_cell(row) -> str:
    """``lower / equal / higher``, then "(over k of n workloads)" when both methods have an error on
    fewer than all the table's workloads (a rival not run on some: the counts summed to k, and the
    cell did not say so), then what chance expects when every spread is known, then the most the
    reference could be lower on when the rival is exact somewhere."""
    text = f"{int(row['lower'])} / {int(row['tie'])} / {int(row['higher'])}"
    n, of = row.get("n_workloads", float("nan")), row.get("of_workloads", float("nan"))
    if np.isfinite(n) and np.isfinite(of) and n < of:  # the rival not run (or not scored) on some: said, as AVG does
        text += f" (over {int(n)} of {int(of)} workloads)"
    exp = [row.get(k, float("nan")) for k in ("expected_lower", "expected_tie", "expected_higher")]
    if all(np.isfinite(exp)):
        text += f" (chance {exp[0]:.1f} / {exp[1]:.1f} / {exp[2]:.1f})"
    most, n = row.get("max_lower", float("nan")), row.get("n_workloads", float("nan"))
    if np.isfinite(most) and np.isfinite(n) and most < n:
        text += f"; at most {int(most)} possible"
    dom, domd = row.get("dominates", float("nan")), row.get("dominated", float("nan"))
    if np.isfinite(dom) and np.isfinite(domd):
        text += f"; Pareto {int(dom)} / {int(domd)}"
    return text


H2H_CHANCE_TEXT = ("In brackets, what chance alone would give: if each plan's error were only the draw of its "
                   "members (normal, mean 0, sd = `spread_sd`), the reference is lower on a workload with "
                   "probability 2/π·atan(sd_rival / sd_reference); these are summed over workloads (shown only "
                   "where both methods have a spread on every workload). Counts well above chance mean tighter "
                   "clusters or a biased rival; counts near it mean the ranking is luck. \"At most N possible\": "
                   "the rival is exact (0 %) on the other workloads, so no plan can be lower there. "
                   "\"Pareto A / B\": on A workloads the reference's plan has cycle error no higher and speedup no "
                   "lower than the rival's, better in one; on B the rival's plan beats the reference's that way. "
                   "The other workloads are trade-offs, such as a lower error bought by simulating more.")


H2H_OVER_TEXT = ("\"Over k of n workloads\": the two methods both have an error on k of the table's n workloads "
                 "only (the rival, or the reference, did not run or has no cycle error on the others), so the "
                 "counts sum to k.")
"""Said under a head-to-head table where a cell counts over fewer workloads than the table has."""


def _head_to_head_table(summary, arch: str, reference: str = "gcl") -> str | None:
    """The reference method against every other, on ``arch``: observed and chance counts."""
    methods = _methods(summary)
    if reference not in methods or len(methods) < 2:
        return None
    c = head_to_head_counts(summary, reference, arch, methods)
    over = H2H_OVER_TEXT + "\n\n" if (c["n_workloads"] < c["of_workloads"]).any() else ""
    return over + _md_table(["method", f"`{reference}` lower / equal / higher"],
                     [[r["method"], h2h_cell(r)] for _, r in c.iterrows()])


def strata_table(plans: dict[str, SamplingPlan]) -> str | None:
    """Which strata each workload's ``gcl_stem`` plan started ROOT from, with every candidate's
    expected simulated time: readers see where gcl_stem *is* stem_root's plan (``kernel_name``)."""
    rows = []
    for w, plan in plans.items():
        cost = plan.config.get("strata_expected_time")
        if not cost:
            continue
        best = plan.config.get("strata_chosen")
        cells = [f"**{v:.4g}**" if k == best else f"{v:.4g}" for k, v in
                 ((k, cost.get(k)) for k in ("gcl", "kernel_name_gcl", "kernel_name")) if v is not None]
        rows.append([w, str(best), str(plan.config.get("n_strata", "")), " / ".join(cells)])
    if not rows:
        return None
    return _md_table(["workload", "strata", "strata count", "expected simulated time: gcl / kernel_name_gcl / kernel_name"],
                     rows)


def _metric_table(avg, arch: str, n_workloads: int) -> str:
    """Each method's mean metric errors over the ``n_workloads`` of the report (fewer, and said,
    where it did not run on all)."""
    df = avg[avg["arch"] == arch]
    header = ["method", "cycles"] + RATE_METRICS
    rows = []
    a = df.set_index("method")
    for m in _methods(df):
        r = a.loc[m]
        rows.append([m + _over(a, m, n_workloads)] + [_fmt_err(r[f"error_{c}"]) for c in ["cycles", *RATE_METRICS]])
    return _md_table(header, rows)


def _sweep_table(sweep_avg, arch: str) -> str:
    df = sweep_avg[sweep_avg["arch"] == arch].dropna(subset=["epsilon"])
    header = ["method", "ε", "cycle E(%) (arith.)", "SU arith.", "SU harmonic", "simulated (mean)"]
    rows = []
    for m in _methods(df):
        for _, r in df[df["method"] == m].sort_values("epsilon").iterrows():
            rows.append([m, f"{r['epsilon']:g}", _fmt_err(r["error_cycles"]), _fmt_su(r["speedup_mean"]),
                         _fmt_su(r["speedup_hmean"]), f"{r['n_simulated']:.1f}"])
    return _md_table(header, rows)


def data_kinds(results):
    """Per row, what its ground truth is: ``"synthetic"``, ``"real"`` (measured on a GPU),
    ``"simulated"`` or ``""`` (unlabelled).

    The ``synthetic`` flag decides synthetic; ``"real"`` needs the ``data`` column to say so
    (workload.json's explicit ``"synthetic": false``) and the flag to agree. A row of a
    workload that is not synthetic, scored on a simulator's cycles (``simulated_by``, or an
    ``accelsim-<config>`` arch in results.csv files written before that column), is
    ``"simulated"``: its traces may be real, its ground truth is not a measurement. Anything
    else, including results.csv files written before the ``data`` column, is labelled neither.
    """
    synth = results["synthetic"].astype(bool)
    data = workload_kinds(results)
    return data.where(synth | ~_simulated_rows(results), "simulated")


def workload_kinds(results):
    """Per row, what its *workload* is (``"synthetic"``, ``"real"`` or ``""``), whatever ground
    truth the row is scored on: the traces and profile a REAL workload brought are real even in
    its rows scored on a simulation."""
    synth = results["synthetic"].astype(bool)
    data = results["data"].astype(object).fillna("").astype(str) if "data" in results.columns else synth.map(lambda _: "")
    return data.where(~synth, "synthetic").where(synth | (data == "real"), "")


def _simulated_rows(results):
    """Rows scored on a simulated profile (``simulated_by`` set, or an ``accelsim-`` arch)."""
    import pandas as pd

    from gclsampler.profile import SIMULATED_PREFIX

    none = pd.Series(False, index=results.index)
    by = results["simulated_by"].astype(object).fillna("").astype(str).str.strip() != "" \
        if "simulated_by" in results.columns else none
    return by | (results["arch"].astype(str).str.startswith(SIMULATED_PREFIX) if "arch" in results.columns else none)


def _simulators_of(results, kinds) -> dict[str, list[str]]:
    """Simulator (its ``simulated_by`` label, else the arch) -> the workloads scored on it, for
    the rows whose ground truth is ``"simulated"``."""
    sim = results[kinds == "simulated"]
    label = sim["simulated_by"].astype(object).fillna("").astype(str) if "simulated_by" in sim.columns \
        else sim["workload"].map(lambda _: "")
    out: dict[str, list[str]] = {}
    archs = sim["arch"].astype(str) if "arch" in sim.columns else sim["workload"].map(lambda _: "?")
    for w, arch, by in zip(sim["workload"], archs, label):
        names = out.setdefault(f"`{arch}`" + (f" ({by})" if by else ""), [])
        if w not in names:
            names.append(w)
    return out


def _gpus_of(results, kinds, kind: str = "real") -> dict[str, list[str]]:
    """GPU name -> the workloads of rows of ``kind`` measured (or, for simulated rows, traced) on it
    (in first-appearance order)."""
    real = results[kinds == kind]
    gpu = real["gpu"].fillna("").astype(str) if "gpu" in real.columns else real["workload"].map(lambda _: "")
    out: dict[str, list[str]] = {}
    for w, g in zip(real["workload"], gpu):
        names = out.setdefault(g or "a GPU workload.json does not name", [])
        if w not in names:
            names.append(w)
    return out


def data_banner(results) -> list[str]:
    """The report's first lines: what the ground truth of its rows is. Synthetic data says
    SYNTHETIC (``SYNTHETIC_BANNER``), measured data REAL with the GPU its workload.json names,
    simulated ground truth SIMULATED with the simulator and the workloads it ran; a mix says
    each and which rows are which; unlabelled rows are named as such."""
    kinds = data_kinds(results)
    present = set(kinds)
    if present == {"synthetic"}:
        return [SYNTHETIC_BANNER, ""]
    lines = []
    gpus = "; ".join(f"{', '.join(ws)} on {g}" for g, ws in _gpus_of(results, kinds).items())
    if present >= {"synthetic", "real"}:
        lines.append("> **MIXED DATA: SYNTHETIC and REAL workloads.** Rows marked (SYNTHETIC) come from "
                     "`gclsampler.synth` (ground truth from an analytical timing model, not hardware); rows marked "
                     f"(REAL) are scored against times measured on the GPU: {gpus}. Averages over all workloads "
                     "mix the two kinds.")
    elif "synthetic" in present:  # with unlabelled or simulated rows: the banner cannot say "every number"
        lines.append("> **SYNTHETIC DATA in rows marked (SYNTHETIC):** they come from `gclsampler.synth` "
                     "(ground truth from an analytical timing model), not from hardware measurements.")
    elif "real" in present:
        only = "" if "simulated" not in present else " (the rows on measured profiles)"
        lines.append(f"> **REAL DATA{only}.** Ground truth measured on the GPU: {gpus} (workload.json). Where a "
                     "workload has traces, they are NVBit SASS traces of the same program, scoped to SM 0; a workload "
                     "with a profile alone is scored by the methods that read profiles only, and the others are listed "
                     "as not run (`docs/real.md`). Nothing here is synthetic.")
    if "simulated" in present:
        sims = "; ".join(f"of {', '.join(ws)} on {g}" for g, ws in _simulators_of(results, kinds).items())
        traced = "; ".join(f"{', '.join(ws)} on {g}" for g, ws in _gpus_of(results, kinds, "simulated").items())
        lines.append(f"> **SIMULATED GROUND TRUTH.** Rows {sims} are scored against cycles a simulator computed "
                     f"from the workloads' traces (traced: {traced}), not against a measurement: they say how well a "
                     "plan predicts the simulator, not the GPU.")
    unlabelled = list(dict.fromkeys(results.loc[kinds == "", "workload"]))
    if unlabelled:
        lines.append(f"> Workloads {', '.join(unlabelled)}: workload.json does not say `\"synthetic\": true` or "
                     "`false`, so their rows are labelled neither synthetic nor measured.")
    return [line for text in lines for line in (text, ">")][:-1] + [""] if lines else []


def plot_stamp(results, labelled_in: str = "report.md") -> str | None:
    """What every plot of these rows is stamped with (a figure copied out of the report must
    still say what its numbers are): SYNTHETIC DATA, REAL DATA (gpu), SIMULATED DATA, or the
    kinds present joined by +, then with the document that labels each row (``labelled_in``:
    compare's plot is next to compare.md)."""
    per_row = data_kinds(results)
    kinds = set(per_row)
    gpus = [g for g in _gpus_of(results, per_row) if "workload.json" not in g]
    real = "REAL DATA" + (f" ({gpus[0]})" if len(gpus) == 1 else "")
    words = [w for k, w in (("synthetic", "SYNTHETIC"), ("real", "REAL"), ("simulated", "SIMULATED"),
                            ("", "UNLABELLED")) if k in kinds]
    if len(words) > 1:
        return f"{' + '.join(words)} DATA (rows labelled in {labelled_in})"
    if "synthetic" in kinds:
        return "SYNTHETIC DATA"
    if "simulated" in kinds:
        return "SIMULATED DATA (not measured on hardware)"
    return real if "real" in kinds else None


def _workload_tags(results) -> dict[str, str] | None:
    """workload -> ``name (REAL)`` / ``name (SYNTHETIC)`` for tables of a report that is not
    all synthetic (a mixed suite labels each row); None when no tag is needed."""
    kinds = data_kinds(results)
    if set(kinds) <= {"synthetic"}:
        return None
    first: dict[str, str] = {}
    for w, k in zip(results["workload"], kinds):  # a REAL workload with some rows simulated is REAL
        if first.get(w, "simulated") == "simulated":
            first[w] = k
    return {w: w + {"synthetic": " (SYNTHETIC)", "real": " (REAL)", "simulated": " (SIMULATED)", "": ""}[k]
            for w, k in first.items()}


def _time_table(summary, avg, arch: str, unavailable=()) -> str:
    """Per workload: the plan's error on the measured ``time_ns`` (every real profile has it;
    cycles come only from Nsight Compute), beside the speedup."""
    df = summary[summary["arch"] == arch]
    methods = _methods(df)
    rows = []
    for w in dict.fromkeys(df["workload"]):
        d = df[df["workload"] == w].set_index("method")
        rows.append([w] + [f"{_fmt_err(d.loc[m, 'error_time'])} / {_fmt_su(d.loc[m, 'speedup_mean'])}"
                           if m in d.index else "not run" if (w, m) in unavailable else "n/a" for m in methods])
    a = avg[avg["arch"] == arch].set_index("method")
    n = len(rows)
    rows.append(["**AVG (arith.)**"] + [f"{_fmt_err(a.loc[m, 'error_time'])} / {_fmt_su(a.loc[m, 'speedup_mean'])}"
                                        + _over(a, m, n) for m in methods])
    return _md_table(["workload"] + [f"{m} time E(%) / SU" for m in methods], rows)


def _plan_arch_block(results, plan_arch: str, out: Path, stamp, want_plots: bool, suffix: str,
                     unavailable: dict[tuple[str, str], str]):
    """Markdown lines and plots of the rows whose plans were fitted on ``plan_arch``.

    ``unavailable`` is keyed by the workload names the tables show (tagged in a mixed report)."""
    summary = summarize(results, sweep=False)
    avg = suite_averages(summary)
    archs = list(dict.fromkeys([plan_arch, *results["arch"].unique()]))
    kinds = data_kinds(results)
    at = f" ({plan_arch} plans)" if suffix else ""
    lines: list[str] = [f"## Error and speedup per workload on {plan_arch} (GCL-Sampler Fig. 4–5, STEM+ROOT Table 3)", "",
                        _comparison_table(summary, avg, plan_arch, unavailable), ""]
    lines += infinite_speedup_note(summary["speedup_mean"])
    own = results[results["arch"] == plan_arch]
    no_cycles = list(dict.fromkeys(own.loc[own["cycles_true"].isna(), "workload"]))
    if no_cycles:
        lines += [f"Cycle error is n/a for {', '.join(no_cycles)}: the ground truth has no cycle counts (a wall-time "
                  "profile, e.g. torch.profiler); the time table below scores it. Averages over workloads leave it "
                  "out.", ""]
    if (kinds != "synthetic").any():
        lines += [f"## Error on measured time (`time_ns`), {plan_arch}", "",
                  "|Σ time_ns − Σ w·time_ns| / Σ time_ns, the same formula as the cycle error on the profile's "
                  "kernel times (for REAL workloads measured on the GPU, the ground truth every profile has).", "",
                  _time_table(summary, avg, plan_arch, unavailable), ""]
    any_member = _any_member_table(summary, plan_arch)
    if any_member:
        lines += [f"## Cluster quality apart from the representative, {plan_arch}", "",
                  "For plans that simulate one member per cluster: the plan's cycle error, then the mean error over "
                  "1000 draws that replace every representative by a random member of its cluster "
                  "(`error_cycles_any_member`). One plan's error also measures which member it happened to pick; "
                  "the second number measures the clusters. The third (`spread_sd`) is what the plan's profile "
                  "predicts before anything is simulated: one standard deviation of the estimate over random "
                  "members, from the time spread inside each cluster (a normal error averages 0.8 of it).",
                  "", any_member, ""]
    rerun = _rerun_table(summary, plan_arch)
    if rerun:
        lines += [f"## Error on a second run of {plan_arch}", "",
                  f"Each plan's cycle error on the profile it was fitted on, then on a second, independent profile "
                  f"of the same arch (`profiles/{plan_arch}_rerun.csv`, `error_cycles_rerun`): the same launches, "
                  "only the run-to-run jitter drawn again. Methods that read measured times (stem_root's and "
                  "gcl_stem's strata, allegro, gcl's time cuts) can fit the first run's jitter; the second column is what "
                  "such a rule is worth when the run it is judged by is not the one it read.", "", rerun, ""]
    rerun_time = _rerun_table(summary, plan_arch, on="time")
    if rerun_time:
        lines += [f"## Error on a second run of {plan_arch}, on measured time (`time_ns`)", "",
                  "Each plan's error on `time_ns` on the profile it was fitted on, then on a second, independent "
                  f"profile of the same arch (`profiles/{plan_arch}_rerun.csv`, `error_time_rerun`), for the "
                  "workloads whose second run has no cycle counts (a wall-time profile: Nsight Systems, "
                  "torch.profiler).", "", rerun_time, ""]
    h2h = _head_to_head_table(summary, plan_arch)
    if h2h:
        lines += [f"## `gcl` head to head, {plan_arch}", "",
                  f"Workloads on which `gcl` has lower / equal / higher cycle error than each method (equal: within "
                  f"{TIE:g} points, e.g. both 0 % on a census). " + H2H_CHANCE_TEXT, "", h2h, ""]
    plots: list[tuple[str, Path | None]] = []
    if want_plots:
        plots.append(("Speedup vs error" + at, plot_speedup_vs_error(
            summary, out / "plots" / f"speedup_vs_error{suffix}.png", plan_arch, stamp)))
        pe, ps = plot_per_workload_bars(summary, out / "plots" / f"error_per_workload{suffix}.png",
                                        out / "plots" / f"speedup_per_workload{suffix}.png", plan_arch, stamp)
        plots += [("Cycle error per workload" + at, pe), ("Speedup per workload" + at, ps)]
        if (kinds != "synthetic").any():
            pt, _ = plot_per_workload_bars(summary, out / "plots" / f"time_error_per_workload{suffix}.png", None,
                                           plan_arch, stamp, error_column="error_time")
            plots.append(("Error on measured time per workload" + at, pt))
    single = list(dict.fromkeys(results.loc[kinds == "real", "workload"]))
    single = [w for w in single if not results.loc[results["workload"] == w, "cross_arch"].any()]
    if len(archs) > 1:
        lines += ["## Cross-architecture (GCL-Sampler Table 3): plans from " + plan_arch, ""]
        if single:
            lines += [f"REAL workloads {', '.join(single)} were measured on one GPU only: their cells for other archs "
                      "are — (no ground truth), not a score.", ""]
        tables = [(m, _cross_arch_table(summary, m, archs)) for m in _methods(summary)]
        if any(TIME_ONLY_CELL in t for _, t in tables):
            lines += [f"Cells marked{TIME_ONLY_CELL} are errors on `time_ns`: that arch's profile has no cycle counts "
                      "(a wall-time profile: Nsight Systems, torch.profiler). They are left out of the AVG row, "
                      "which is on cycles.", ""]
        for m, table in tables:
            lines += [f"### {m}", "", table, ""]
    elif single:
        lines += [f"## Cross-architecture (GCL-Sampler Table 3): not evaluated{at}", "",
                  f"REAL workloads {', '.join(single)} were measured on one GPU only ({plan_arch}); there is no other "
                  "arch's ground truth to score their plans on, so this report has no cross-architecture rows.", ""]
    lines += [f"## Micro-architectural metric errors (%), mean over workloads, {plan_arch} (GCL-Sampler Fig. 6)", "",
              _metric_table(avg, plan_arch, summary.loc[summary["arch"] == plan_arch, "workload"].nunique()), ""]
    if results["sweep"].any():
        sweep_sum = summarize(results, sweep=True)
        sweep_avg = suite_averages(sweep_sum)
        lines += [f"## Error-bound sweep (STEM+ROOT Fig. 11), {plan_arch}", "", _sweep_table(sweep_avg, plan_arch), ""]
        if want_plots:
            plots.append(("Error-bound sweep" + at, plot_epsilon_sweep(
                sweep_avg, out / "plots" / f"epsilon_sweep{suffix}.png", plan_arch, stamp)))
    return lines, plots


def write_report(results, out_dir: str | Path, *, title: str = "gclsampler evaluation",
                 synthetic: bool | None = None, wall_time_s: float | None = None,
                 started_at: float | None = None,
                 plan_arch: str | None = None, notes: Iterable[str] = (),
                 histograms: Iterable[dict[str, Any]] = (), silhouette: dict[str, Any] | None = None,
                 config_text: str | None = None, plots: bool = True,
                 silhouette_k: dict[str, int] | None = None, sections: Iterable[tuple[str, str]] = (),
                 unavailable: Iterable[tuple[str, str, str]] = ()) -> Path:
    """Write ``report.md`` and its PNGs into ``out_dir`` from a results DataFrame.

    ``histograms``: dicts with ``workload, method, times_ns, labels, representatives``.
    ``silhouette``: workload -> silhouette.csv path (or DataFrame with k, score);
    ``silhouette_k``: workload -> the k its plan uses (starred in the plot).
    ``sections``: extra (heading, markdown) sections placed before the plots.
    ``started_at`` (a ``time.perf_counter()`` value) makes the report state the wall time
    up to its own completion. ``plots=False`` writes the tables only (matplotlib costs seconds per figure).
    ``unavailable``: ``(workload, method, reason)`` of methods that could not run on a
    workload's data; their cells say n/a and a table gives the reasons.

    What the data is comes from the rows (``data_banner``): SYNTHETIC, REAL (with the GPU),
    or both with each row labelled; ``synthetic`` is accepted for older callers and not used
    (a suite-wide flag mislabelled the real rows of a mixed suite).
    Rows whose plans were fitted on another arch than ``plan_arch`` (a real workload measured
    on one GPU, in a suite of synthetic ones) get their own sections.
    """
    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    unavailable = {(w, m): why for w, m, why in unavailable}
    banner = data_banner(results)
    tags = _workload_tags(results)
    stamp = plot_stamp(results)
    if tags:
        unavailable_rows = [(tags.get(w, w), m, why) for (w, m), why in unavailable.items()]
        unavailable = {(tags.get(w, w), m): why for (w, m), why in unavailable.items()}
        results = results.assign(workload=results["workload"].map(lambda w: tags.get(w, w)))
    else:
        unavailable_rows = [(w, m, why) for (w, m), why in unavailable.items()]
    if plan_arch is None:
        plan_arch = str(results["plan_arch"].iloc[0])
    plan_archs = [a for a in dict.fromkeys([plan_arch, *results["plan_arch"].astype(str)])
                  if (results["plan_arch"].astype(str) == a).any()] or [plan_arch]
    # the fitted arch first, as the rows have it: a suite's own workload measured elsewhere (h200 rows
    # only, plan_arch turing) was said to be "scored on turing, h200 ground truth"
    archs = list(dict.fromkeys([plan_archs[0], *results["arch"].unique()])) if len(plan_archs) == 1 else \
        list(dict.fromkeys(results["arch"]))
    lines: list[str] = [f"# {title}", ""]
    lines += banner
    workloads = list(dict.fromkeys(results["workload"]))
    if len(plan_archs) == 1:
        fitted = f"Plans are fitted on the **{plan_archs[0]}** profile"
    else:
        fitted = "Plans are fitted on " + "; ".join(
            f"the **{a}** profile ({', '.join(dict.fromkeys(results.loc[results['plan_arch'] == a, 'workload']))})"
            for a in plan_archs)
    real_rows = (data_kinds(results) != "synthetic").any()
    lines += [
        f"Workloads: {', '.join(workloads)}. {fitted} and scored on "
        f"{', '.join(archs)} ground truth. Methods: {', '.join(_methods(results))}.",
        "",
        "Definitions: error = |C_full − Σ w·C| / C_full (GCL-Sampler eq. 5) on `cycles`; rate metrics compare the "
        "weighted mean Σ w·M / N with the true per-invocation mean; speedup = Σ time_ns(all) / Σ time_ns(sampled) "
        "(eq. 6) on the evaluated arch; *sim* = simulated invocations. "
        + ("*time E(%)* is the same error on `time_ns`. " if real_rows else "")
        + (f"Stochastic methods: mean over {int(results.loc[results['stochastic'], 'seed'].nunique())} seeds. "
           if results["stochastic"].any() else "") +
        "Errors are arithmetic means. `SU` and *AVG (arith.)* are arithmetic means (GCL-Sampler's averaging); "
        "*speedup h-mean* is the harmonic mean over workloads of per-workload harmonic means over seeds "
        "(STEM+ROOT's averaging).",
        "",
    ]
    sim_archs = set(results.loc[_simulated_rows(results), "arch"].astype(str))  # the banner's rule, not a 2nd one
    simulated = [a for a in archs if str(a) in sim_archs]
    if simulated:
        lines += [f"Ground truth {', '.join(f'`{a}`' for a in simulated)} is SIMULATED by Accel-Sim "
                  "(`gclsampler simulate --all`; one SM unless run with --full-gpu, so cycles are SM 0's share; "
                  "time_ns = cycles / the config's core clock), not measured on hardware.", ""]
    wall_at = len(lines)
    for note in notes:
        lines += [f"- {note}"]
    if notes:
        lines.append("")
    want_plots = plots
    plots: list[tuple[str, Path | None]] = []
    for i, pa in enumerate(plan_archs):
        block, block_plots = _plan_arch_block(results[results["plan_arch"].astype(str) == pa], pa, out, stamp,
                                              want_plots, "" if i == 0 else f"_{pa}", unavailable)
        lines += block
        plots += block_plots
    if unavailable_rows:
        lines += ["## Methods that could not run (n/a)", "",
                  "Not fitted on these workloads because their data lacks what the method reads; their cells above "
                  "say *not run* and the averages leave them out (also in `unavailable.csv`).", "",
                  _md_table(["workload", "method", "reason"], [[w, m, why] for w, m, why in unavailable_rows]), ""]
    for h in histograms if want_plots else ():
        p = plot_cluster_histograms(h["times_ns"], h["labels"], out / "plots" / f"clusters_{h['workload']}_{h['method']}.png",
                                    f"{h['workload']} / {h['method']}: execution time per cluster",
                                    h.get("representatives", ()), h.get("max_clusters", 12), stamp)
        plots.append((f"Execution time per cluster: {h['workload']} / {h['method']}", p))
    if silhouette and want_plots:
        plots.append(("Silhouette curve", plot_silhouette(silhouette, out / "plots" / "silhouette.png",
                                                                silhouette_k, stamp)))
    for heading, body in sections:
        lines += [f"## {heading}", "", body, ""]
    lines += ["## Plots", ""]
    for caption, p in plots:
        if p is not None:
            lines += [f"![{caption}](plots/{Path(p).name})", ""]
    if started_at is not None:
        import time

        wall_time_s = time.perf_counter() - started_at
    if wall_time_s is not None:
        lines[wall_at:wall_at] = [f"Wall time of this run (fitting, scoring, plots): {wall_time_s:.1f} s.", ""]
    if config_text:
        lines += ["## Configuration", "", "```yaml", config_text.rstrip(), "```", ""]
    return write_text_atomic(out / "report.md", "\n".join(lines))


def write_workload_report(workload, plans, out_dir: str | Path, *, labels: dict[str, np.ndarray] | None = None,
                          silhouette: str | Path | None = None, archs: list[str] | None = None,
                          plots: bool = True) -> Path:
    """Single-workload ``report.md`` (+ results.csv, plots) for ``python train.py``.

    ``plans``: a SamplingPlan, a list of them, or method -> plan. Scored on the workload's
    own profile and on every ``profiles/<arch>.csv`` present (or ``archs``).
    """
    import pandas as pd

    if isinstance(plans, SamplingPlan):
        plans = [plans]
    if isinstance(plans, dict):
        plans = list(plans.values())
    if archs is None:
        archs = [fitted_arch(workload.arch)]
        if workload.root is not None and (Path(workload.root) / "profiles").is_dir():
            archs += sorted(p.stem for p in (Path(workload.root) / "profiles").glob("*.csv")
                            if p.stem != workload.arch and rerun_of(p.stem) is None)  # a second run is its own column
    from gclsampler.samplers import SAMPLERS

    runs = [MethodRun(p.method, 0, p.config.get("epsilon"), False, p, (labels or {}).get(p.method), 0.0,
                      bool(getattr(SAMPLERS.get(p.method), "stochastic", False))) for p in plans]
    results = pd.DataFrame(evaluate_workload(workload, runs, archs), columns=RESULT_COLUMNS)
    out = Path(out_dir)
    write_results_csv(results, out / "results.csv")
    hist = []
    for m, lab in (labels or {}).items():
        plan = next((p for p in plans if p.method == m), None)
        hist.append({"workload": workload.name, "method": m, "times_ns": workload.profile["time_ns"].to_numpy(),
                     "labels": lab, "representatives": plan.invocations if plan is not None else ()})
    sil = {workload.name: silhouette} if silhouette is not None and Path(silhouette).exists() else None
    from gclsampler.cluster_table import chosen_k, cluster_table

    times = workload.profile["time_ns"].to_numpy()
    sections = [(f"Clusters of the {p.method} plan ({workload.arch or 'native'} time)",
                 cluster_table(p, times, (labels or {}).get(p.method))) for p in plans]
    gcl = next((p for p in plans if p.method == "gcl"), plans[0] if len(plans) == 1 else None)
    sil_k = {workload.name: chosen_k(gcl, (labels or {}).get(gcl.method))} if sil and gcl is not None else None
    return write_report(results, out, title=f"{workload.name}: sampling plans",
                        synthetic=bool(workload.synthetic), plan_arch=fitted_arch(workload.arch),
                        histograms=hist, silhouette=sil, plots=plots, silhouette_k=sil_k, sections=sections)
