"""The cluster table of ``report.md``: what each cluster of a plan stands for.

Why: a plan lists the invocations to simulate and their weights, but a reader of the
report cannot see which part of the workload each sample represents, or whether a
cluster that holds most of the run time is represented by a single invocation. One
row per cluster: id, size (invocations), representative(s), weight, and the cluster's
share of the workload's time. The share is measured (sum of its members' time) when
the per-invocation labels are known, else the plan's estimate (sum of weight x time
over its samples), and the column header says which.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


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
    if labels is not None:
        lab = np.asarray(labels)
        sizes = {c.id: c.size for c in plan.clusters}
        if lab.shape == t.shape and all(int((lab == cid).sum()) == size for cid, size in sizes.items()):
            measured = True
            for cid in sizes:
                share[cid] = float(t[lab == cid].sum())
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
        rows.append([str(c.id), str(c.size), reps or "-", weight or "-", f"{pct:.1f}"])
    header = ["cluster", "size", "representative (invocation: kernel)", "weight",
              "share of time (%)" if measured else "share of time (%, estimated from samples)"]
    text = _md(rows, header, ["r", "r", "l", "r", "r"])
    if len(order) > max_rows:
        rest = sum(share.get(c.id, 0.0) for c in order[max_rows:])
        text += (f"\n\n{len(order) - max_rows} more clusters hold "
                 f"{100.0 * rest / total if total > 0 else float('nan'):.1f} % of the time.")
    return text


def chosen_k(plan, labels: np.ndarray | None = None) -> int:
    """Number of clusters the plan uses: distinct labels when known, else its cluster list.

    The silhouette plot marks this k, not the curve's maximum: k selection may prefer a
    smaller k within a tolerance of the best score.
    """
    if labels is not None and len(labels):
        return int(np.unique(np.asarray(labels)).size)
    return int(len(plan.clusters))
