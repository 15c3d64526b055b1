r"""Symmetric InfoNCE (GCL-Sampler paper 3.3.3, eq. 2-4).

.. math::
    S = \frac{1}{\tau} \hat Z_1 \hat Z_2^\top, \qquad
    \mathcal{L} = \tfrac12\left[\mathrm{CE}(S, I) + \mathrm{CE}(S^\top, I)\right]

with :math:`\hat Z` the L2-normalised projections of the two views; row i of both
views comes from the same kernel (positive pair), every other row is a negative.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from gclsampler.errors import GclError


class LossConfigError(GclError):
    """Bad loss input or config (temperature, batch shape)."""


def symmetric_info_nce(z1: Tensor, z2: Tensor, tau: float = 0.05) -> Tensor:
    """Mean of the two cross-entropies over ``S`` and ``S^T``.

    Shapes: ``z1``, ``z2`` (B, D) -> scalar. Both directions are averaged so
    neither augmentation view is the privileged anchor (paper eq. 4).
    """
    if not tau > 0:  # NaN fails every comparison: `tau <= 0` let it through to a NaN loss
        raise LossConfigError(f"train.tau: temperature must be > 0, got {tau}")
    if z1.shape != z2.shape or z1.dim() != 2:
        raise LossConfigError(f"views must have equal (B, D) shapes, got {tuple(z1.shape)} and {tuple(z2.shape)}")
    if z1.is_floating_point() and tau * torch.finfo(z1.dtype).max < 1.0:
        # cos / tau overflows to inf and the cross-entropy of a row holding inf is NaN
        raise LossConfigError(f"train.tau: temperature {tau} too small for {z1.dtype} logits (1/tau overflows)")
    s = F.normalize(z1, dim=1) @ F.normalize(z2, dim=1).t() / tau
    target = torch.arange(s.size(0), device=s.device)
    return 0.5 * (F.cross_entropy(s, target) + F.cross_entropy(s.t(), target))
