"""The graph layout's constants: node and edge types, statistics columns, the size vector.

Why a module of their own: the model's config (``gclsampler.model_config``) and the command
line need them, and ``gclsampler.graph`` imports torch, which takes seconds; ``gclsampler
sample gcl`` on a plan-sized job should not pay for it. ``gclsampler.graph`` re-exports them.
"""

from __future__ import annotations

NUM_NODE_TYPES = 3
NUM_EDGE_TYPES = 4
N_STATS = 8
"""Value statistics per node (mean, std, median, min, max, p25, p75, skewness): the model's
``n_stats`` must match."""
NODE_INSTRUCTION, NODE_PSEUDO, NODE_VARIABLE = 0, 1, 2
EDGE_CONTROL, EDGE_READ, EDGE_WRITE, EDGE_ADDRESS = 0, 1, 2, 3
NODE_TYPE_NAMES = ("instruction", "pseudo", "variable")
EDGE_TYPE_NAMES = ("control", "read", "write", "address")

N_KERNEL_FEATURES = 8
"""Columns of ``kfeat``, the per-invocation size vector (see ``gclsampler.graph.kernel_features``)."""
KERNEL_FEATURE_NAMES = ("insts_per_warp_mean", "insts_per_warp_max", "insts_on_sm", "warps_on_sm",
                        "ctas_on_sm", "grid_ctas", "threads_per_cta", "addresses_per_warp")
