"""The cluster table of ``report.md``: what each cluster of a plan stands for.

Why: a plan lists the invocations to simulate and their weights, but a reader of the
report cannot see which part of the workload each sample represents, or whether a
cluster that holds most of the run time is represented by a single invocation. One
row per cluster: id, size (invocations), representative(s), weight, and the cluster's
share of the workload's time. The share is measured (sum of its members' time) when
the per-invocation labels are known, else the plan's estimate (sum of weight x time
over its samples), and the column header says which.

With the labels known the table also gives each cluster's spread of time (CoV) and, below
it, how far the plan's total could move had other members been simulated: a cluster that
holds a fifth of the time at 5 % CoV moves the total by about 1 % with one sample, and a
reader should know that before trusting a single plan's error to a tenth of a percent.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gclsampler.score import representative_spread


def _md(rows: Sequence[Sequence[str]], header: Sequence[str], align: Sequence[str]) -> str:
    sep = ["---:" if a == "r" else "---" for a in align]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _name(s: str, width: int = 48) -> str:
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def cluster_table(plan, times_ns: np.ndarray, labels: np.ndarray | None = None, max_rows: int = 30) -> str:
    """Markdown table of ``plan``'s clusters, largest share of time first.

    ``times_ns`` (N,) per-invocation time on the plan's arch; ``labels`` (N,) the cluster
    of every invocation when known (must match the plan's cluster ids and sizes, else it
    is ignored and the share is estimated from the samples).
    """
    t = np.asarray(times_ns, dtype=np.float64)
    total = float(t.sum())
    by_cluster: dict[int, list] = {}
    for s in sorted(plan.samples, key=lambda s: s.invocation):
        by_cluster.setdefault(s.cluster, []).append(s)
    measured = False
    share: dict[int, float] = {}
    cov: dict[int, float] = {}
    if labels is not None:
        lab = np.asarray(labels)
        sizes = {c.id: c.size for c in plan.clusters}
        if lab.shape == t.shape and all(int((lab == cid).sum()) == size for cid, size in sizes.items()):
            measured = True
            for cid in sizes:
                member = t[lab == cid]
                share[cid] = float(member.sum())
                cov[cid] = float(member.std() / member.mean()) if member.size and member.mean() > 0 else float("nan")
    if not measured:
        for cid, samples in by_cluster.items():
            share[cid] = float(sum(s.weight * t[s.invocation] for s in samples))
    rows = []
    order = sorted(plan.clusters, key=lambda c: (-share.get(c.id, 0.0), c.id))
    for c in order[:max_rows]:
        samples = by_cluster.get(c.id, [])
        reps = ", ".join(f"{s.invocation}: `{_name(s.kernel_name)}`" for s in samples[:2])
        if len(samples) > 2:
            reps += f", … (+{len(samples) - 2})"
        weight = ", ".join(f"{s.weight:g}" for s in samples[:2]) + (", …" if len(samples) > 2 else "")
        pct = 100.0 * share.get(c.id, 0.0) / total if total > 0 else float("nan")
        row = [str(c.id), str(c.size), reps or "-", weight or "-"]
        row += [f"{100.0 * cov.get(c.id, float('nan')):.1f}"] if measured else []
        rows.append(row + [f"{pct:.1f}"])
    header = ["cluster", "size", "representative (invocation: kernel)", "weight"]
    header += ["time CoV (%)", "share of time (%)"] if measured else ["share of time (%, estimated from samples)"]
    text = _md(rows, header, ["r", "r", "l", "r"] + ["r"] * (len(header) - 4))
    if len(order) > max_rows:
        rest = sum(share.get(c.id, 0.0) for c in order[max_rows:])
        text += (f"\n\n{len(order) - max_rows} more clusters hold "
                 f"{100.0 * rest / total if total > 0 else float('nan'):.1f} % of the time.")
    spread = representative_spread(plan, t, np.asarray(labels)) if measured else None
    if spread is not None:
        sd, parts = spread
        top = [kv for kv in sorted(parts.items(), key=lambda kv: (-kv[1], kv[0]))[:3] if kv[1] >= 0.005]
        most = ", ".join(f"cluster {cid} ({100.0 * f:.0f} %)" for cid, f in top)
        text += (f"\n\nHad other members of each cluster been simulated (drawn at random), this plan's "
                 f"estimate of the total time would move by **±{sd:.2f} %** (one standard deviation, from the "
                 "time spread inside each cluster)")
        if not parts:
            text += ": every cluster's members take the same time."
        else:
            text += (f"; the largest parts of that variance: {most}." if top else ".")
    return text


def chosen_k(plan, labels: np.ndarray | None = None) -> int:
    """Number of clusters the plan uses: distinct labels when known, else its cluster list.

    The silhouette plot marks this k, not the curve's maximum: k selection may prefer a
    smaller k within a tolerance of the best score.
    """
    if labels is not None and len(labels):
        return int(np.unique(np.asarray(labels)).size)
    return int(len(plan.clusters))
