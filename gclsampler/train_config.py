"""The training schedule's configuration (``train.*``), apart from training.

Why apart: composing train.py's config (``gclsampler.config``) needs the defaults and the
checks, not torch, which ``gclsampler.train`` imports (about 3 s with torch_geometric) and
every config error, ``--help`` and spawned worker process paid. ``gclsampler.train``
re-exports these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gclsampler.errors import GclError

PRECISIONS = ("auto", "fp32", "bf16")
_FLOAT32_MAX = 3.4028234663852886e38  # torch.finfo(torch.float32).max, without importing torch


class TrainConfigError(GclError):
    """Bad ``train.*`` value or unusable checkpoint (message names the key or file)."""


@dataclass
class TrainConfig:
    """Training schedule. Defaults: paper section 4 (AdamW 7e-4, cosine, tau 0.05, 80/20).

    ``epochs``/``max_train_graphs``/``max_nodes_per_batch`` bound the wall time on CPU
    (see docs/model.md for why these defaults keep ``python train.py workload=phi2`` short).
    ``patience`` 0 disables early stopping. ``device``: auto | cpu | cuda.
    ``precision``: auto | fp32 | bf16. ``bf16`` runs the encoder's training forward under
    bfloat16 autocast, which puts only the relational convolutions' GEMMs in bfloat16
    (features, LayerNorm, readout, projection head and loss stay float32); validation
    loss and embeddings are always computed in float32. ``auto`` is ``bf16`` only where the
    device multiplies bfloat16 natively (``native_bf16``): elsewhere oneDNN emulates it and
    the step is slower than fp32. See docs/model.md for the measured speed and validation
    loss of both.
    """

    epochs: int = 8
    batch_size: int = 32
    max_nodes_per_batch: int = 120000  # = conf/train/default.yaml
    lr: float = 7e-4
    weight_decay: float = 0.01
    tau: float = 0.05
    val_fraction: float = 0.2
    seed: int = 0
    patience: int = 3
    min_delta: float = 0.0
    max_train_graphs: int = 256
    embed_batch_size: int = 32
    device: str = "auto"
    threads: int = 0
    precision: str = "auto"
    deterministic: bool = True  # on CUDA: torch's deterministic kernels (deterministic_cuda)
    resume: bool = True
    progress: bool = True

    def validate(self) -> "TrainConfig":
        def bad(key: str, msg: str) -> TrainConfigError:
            return TrainConfigError(f"train.{key}: {msg}")

        if self.epochs < 0:
            raise bad("epochs", f"must be >= 0, got {self.epochs}")
        if self.batch_size < 2:
            raise bad("batch_size", f"InfoNCE needs >= 2 kernels per batch, got {self.batch_size}")
        # NaN passes every `<=` test and inf overflows the optimizer or the early-stopping test
        # (a NaN or infinite min_delta never counts an epoch as improved, so no model.pt is
        # written): every float needs finiteness and its sign checked, not only a comparison.
        for key, low, strict in (("lr", 0.0, True), ("tau", 0.0, True), ("weight_decay", 0.0, False),
                                 ("min_delta", 0.0, False)):
            v = getattr(self, key)
            if not (math.isfinite(v) and (v > low if strict else v >= low)):
                raise bad(key, f"must be a finite number {'>' if strict else '>='} {low:g}, got {v}")
        if self.tau * _FLOAT32_MAX < 1.0:  # the InfoNCE logits cos/tau are float32: inf, and a NaN loss
            raise bad("tau", f"must be at least {1.0 / _FLOAT32_MAX:.3g} (1/tau overflows the float32 logits), "
                             f"got {self.tau}")
        if self.max_nodes_per_batch < 0:
            raise bad("max_nodes_per_batch", f"must be >= 0 (0 = no cap), got {self.max_nodes_per_batch}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise bad("val_fraction", f"must be in [0, 1), got {self.val_fraction}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise bad("device", f"expected auto, cpu or cuda, got {self.device!r}")
        if self.patience < 0:
            raise bad("patience", f"must be >= 0, got {self.patience}")
        if self.precision not in PRECISIONS:
            raise bad("precision", f"expected one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.threads < 0:
            raise bad("threads", f"must be >= 0 (0 = torch's default), got {self.threads}")
        if self.embed_batch_size < 1:
            raise bad("embed_batch_size", f"must be >= 1, got {self.embed_batch_size}")
        if self.max_train_graphs < 0:
            raise bad("max_train_graphs", f"must be >= 0 (0 = all), got {self.max_train_graphs}")
        if self.max_train_graphs == 1:  # one training graph has no negative: fit() trained nothing, silently
            raise bad("max_train_graphs", "must be 0 (all) or >= 2 (InfoNCE needs two graphs to contrast), got 1")
        from gclsampler.errors import check_seed

        check_seed(self.seed, "train.seed", TrainConfigError)  # the root seed's range: fit() adds small offsets
        return self
