"""Compiled (numba) loop of Photon's online assignment (``photon.photon_assign``).

Why compiled: the assignment is sequential by definition (each launch is compared with the
representatives chosen before it), so it cannot be one array operation. In Python, each
launch paid one ``np.intersect1d`` per candidate representative; on launches whose BBVs
differ with their data, most launches become representatives and the loop grew as N^2
numpy calls (84 s for 20k launches). Here a launch's similarities to every candidate are
summed in one pass over the representatives that share each of its blocks.
Imported on first use, as ``trace._jit`` is, so commands that never run Photon do not pay
numba's import; compiled once and cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def assign(indptr, indices, data, n_blocks, threshold):
    """``(labels, representatives)`` for a CSR matrix of normalised BBVs with sorted indices;
    the contract and tie rule of ``photon.photon_assign``."""
    n = indptr.shape[0] - 1
    labels = np.empty(n, np.int64)
    reps = np.empty(n, np.int64)
    n_reps = 0
    # block -> the representatives that execute it, as linked lists in flat arrays
    head = np.full(n_blocks, -1, np.int64)
    nxt = np.empty(indices.shape[0], np.int64)
    entry_rep = np.empty(indices.shape[0], np.int64)
    entry_val = np.empty(indices.shape[0], np.float64)
    n_entries = 0
    sim = np.zeros(n, np.float64)
    seen = np.zeros(n, np.bool_)
    touched = np.empty(n, np.int64)
    for i in range(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        n_touched = 0
        for p in range(lo, hi):  # blocks ascending, so each sum runs in block order
            v = data[p]
            e = head[indices[p]]
            while e >= 0:
                r = entry_rep[e]
                if not seen[r]:
                    seen[r] = True
                    touched[n_touched] = r
                    n_touched += 1
                sim[r] += min(v, entry_val[e])
                e = nxt[e]
        cand = np.sort(touched[:n_touched])
        best = -1
        best_sim = -1.0
        for r in cand:  # earliest on ties: a later one must be more similar by 1e-12
            if sim[r] > best_sim + 1e-12:
                best = r
                best_sim = sim[r]
        for r in cand:
            sim[r] = 0.0
            seen[r] = False
        if best >= 0 and best_sim >= threshold:
            labels[i] = best
        else:
            labels[i] = n_reps
            for p in range(lo, hi):
                c = indices[p]
                entry_rep[n_entries] = n_reps
                entry_val[n_entries] = data[p]
                nxt[n_entries] = head[c]
                head[c] = n_entries
                n_entries += 1
            reps[n_reps] = i
            n_reps += 1
    return labels, reps[:n_reps].copy()
