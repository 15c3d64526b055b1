"""The encoder's configuration (``model.*``), apart from the encoder.

Why apart: choosing and checking embeddings (``gclsampler.embeddings``, ``gclsampler sample``)
needs the encoder's defaults and widths, not torch; ``gclsampler.model`` imports torch, which
takes seconds. ``gclsampler.model`` re-exports both names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from gclsampler.errors import GclError
from gclsampler.graph_schema import EDGE_TYPE_NAMES, N_KERNEL_FEATURES, N_STATS, NUM_EDGE_TYPES


class ModelConfigError(GclError):
    """A model config value is out of range (message names the ``model.*`` key)."""


@dataclass
class ModelConfig:
    """Paper section 4 "Model Configuration" defaults.

    ``num_bases``: the paper says basis decomposition without a count; with 4 edge
    types, 2 bases halve the relation parameters. ``conv``: ``fast`` or ``pyg``
    (reference). ``basis_mixing``: in the fast conv, mix the per-relation means
    with the basis coefficients before the matmul (B+1 weight blocks instead of
    R+1); ``auto`` does it when ``num_bases < num_relations``. Default ``never``:
    on the 2-core CPU the saved FLOPs cost more in memory traffic than they save
    (bench/rgcn_step.py: 1.49x vs 1.77x over PyG on phi2 graphs).
    """

    in_dim: int = 64
    hidden_dim: int = 128
    out_dim: int = 256
    num_layers: int = 3
    num_relations: int = NUM_EDGE_TYPES
    num_bases: Optional[int] = 2
    dropout: float = 0.1
    proj_hidden: int = 128
    proj_dim: int = 64
    inst_token_dim: int = 64
    var_token_dim: int = 32
    pseudo_token_dim: int = 16
    n_stats: int = N_STATS
    stats_scale: float = 0.0625
    conv: str = "fast"
    basis_mixing: str = "never"
    inst_stats: bool = True
    """Deviation from the paper: instruction nodes also carry the repetition count of their PC
    in the warp, the warp's length and the immediate (graph ``stats`` columns 0-2), so a window
    of a loop says how many trips the loop made."""
    kernel_features: bool = True
    """Deviation from the paper: the readout appends the invocation's size vector ``kfeat``
    (instructions per warp, warps, CTAs on the SM, grid; log2) scaled by ``kfeat_scale`` to z,
    so z has ``out_dim + 8`` columns. Mean pooling alone cannot see how much work there was."""
    kfeat_scale: float = 1.0
    # vocabulary sizes; None = take gclsampler.graph.vocab_sizes()
    vocab_instruction: Optional[int] = None
    vocab_pseudo: Optional[int] = None
    vocab_variable: Optional[int] = None

    def validate(self) -> "ModelConfig":
        """Refuse, naming the key, any value the encoder cannot use or would use wrongly.

        Why each size has a floor: a zero width divides by zero in the initialisers or leaves a
        projection of width 0, whose InfoNCE loss is a constant, so the plan would come from an
        untrained encoder. Why ``num_relations`` and ``n_stats`` must equal what the graph stage
        writes: fewer relations make ``typed_adjacency`` index ``dst * R + type`` into another
        node's slots, and the variable statistics are copied whole into ``n_stats`` columns.
        """
        def bad(key: str, msg: str) -> ModelConfigError:
            return ModelConfigError(f"model.{key}: {msg}")

        for key in ("in_dim", "hidden_dim", "out_dim", "proj_hidden", "proj_dim", "var_token_dim", "pseudo_token_dim"):
            if getattr(self, key) < 1:
                raise bad(key, f"must be >= 1, got {getattr(self, key)}")
        if self.inst_token_dim < 2 or self.inst_token_dim % 2:
            raise bad("inst_token_dim", f"must be an even number >= 2 (the PC encoding is sine/cosine pairs), "
                                        f"got {self.inst_token_dim}")
        if self.n_stats != N_STATS:
            raise bad("n_stats", f"must be {N_STATS}, the value statistics each graph node carries, "
                                 f"got {self.n_stats}")
        if self.num_relations != NUM_EDGE_TYPES:
            raise bad("num_relations", f"must be {NUM_EDGE_TYPES}, the graphs' edge types "
                                       f"({', '.join(EDGE_TYPE_NAMES)}): fewer mix one node's messages into "
                                       f"another's, more add weights no edge trains; got {self.num_relations}")
        for key in ("vocab_instruction", "vocab_pseudo", "vocab_variable"):
            v = getattr(self, key)
            if v is not None and v < 1:
                raise bad(key, f"must be >= 1 or null (null = the graph stage's vocabulary), got {v}")
        if self.conv not in ("fast", "pyg"):
            raise ModelConfigError(f"model.conv: expected 'fast' or 'pyg', got {self.conv!r}")
        if self.basis_mixing not in ("auto", "always", "never"):
            raise ModelConfigError(f"model.basis_mixing: expected auto/always/never, got {self.basis_mixing!r}")
        if self.num_layers < 1:
            raise ModelConfigError(f"model.num_layers: must be >= 1, got {self.num_layers}")
        if self.num_bases is not None and self.num_bases < 1:
            raise ModelConfigError(f"model.num_bases: must be >= 1 or null, got {self.num_bases}")
        if not 0.0 <= self.dropout < 1.0:
            raise ModelConfigError(f"model.dropout: must be in [0, 1), got {self.dropout}")
        if self.var_token_dim + self.n_stats > self.in_dim:
            raise ModelConfigError("model.var_token_dim: variable token + stats exceed model.in_dim")
        if max(self.inst_token_dim, self.pseudo_token_dim) > self.in_dim:
            raise ModelConfigError("model.inst_token_dim/pseudo_token_dim: larger than model.in_dim")
        for key in ("stats_scale", "kfeat_scale"):  # NaN passes no comparison: it would reach every embedding
            v = getattr(self, key)
            if not (math.isfinite(v) and v >= 0):
                raise bad(key, f"must be a finite number >= 0, got {v}")
        return self

    @property
    def embedding_dim(self) -> int:
        """Columns of z (embeddings.npy): the pooled RGCN output, plus the size vector if on."""
        return self.out_dim + (N_KERNEL_FEATURES if self.kernel_features else 0)
