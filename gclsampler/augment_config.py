"""The augmentation pool's configuration (``augment.*``), apart from the augmentations.

Why apart: composing train.py's config (``gclsampler.config``) needs the defaults and the
checks, not torch. ``gclsampler.augment`` imports torch and torch_geometric, about 3 s, which
every config error, ``--help`` and spawned worker process paid before a line of work.
``gclsampler.augment`` re-exports these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List

from gclsampler.errors import GclError

STRATEGIES = ("node_drop", "edge_drop", "feature_noise")


class AugmentConfigError(GclError):
    """Bad ``augment.*`` value (message names the key)."""


@dataclass
class AugmentConfig:
    """Paper defaults. ``pool`` is any non-empty subset of ``STRATEGIES``; each graph
    draws between ``min_strategies`` and ``max_strategies`` distinct strategies."""

    pool: List[str] = field(default_factory=lambda: list(STRATEGIES))
    node_drop: float = 0.15
    edge_drop: float = 0.15
    feature_noise: float = 0.01
    min_strategies: int = 1
    max_strategies: int = 2

    def validate(self) -> "AugmentConfig":
        if not self.pool:
            raise AugmentConfigError("augment.pool: must name at least one strategy")
        bad = [s for s in self.pool if s not in STRATEGIES]
        if bad:
            raise AugmentConfigError(f"augment.pool: unknown strategies {bad}; known: {list(STRATEGIES)}")
        if len(set(self.pool)) != len(self.pool):
            raise AugmentConfigError(f"augment.pool: duplicate strategies in {list(self.pool)}")
        for key in ("node_drop", "edge_drop"):
            v = getattr(self, key)
            if not 0.0 <= v < 1.0:
                raise AugmentConfigError(f"augment.{key}: rate must be in [0, 1), got {v}")
        # NaN fails no `< 0` test, and a NaN or infinite sigma turns every noised view's features into NaN/inf
        if not (math.isfinite(self.feature_noise) and self.feature_noise >= 0):
            raise AugmentConfigError(f"augment.feature_noise: sigma must be a finite number >= 0, got {self.feature_noise}")
        if not 0 <= self.min_strategies <= self.max_strategies:
            raise AugmentConfigError(
                f"augment.min_strategies/max_strategies: need 0 <= min <= max, got {self.min_strategies}, {self.max_strategies}")
        return self
