"""Symmetric InfoNCE against eq. 2-4 written out with Python loops."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.loss import LossConfigError, symmetric_info_nce


def by_hand(z1, z2, tau):
    def norm(v):
        s = math.sqrt(sum(x * x for x in v))
        return [x / s for x in v]

    a = [norm(r) for r in z1.tolist()]
    b = [norm(r) for r in z2.tolist()]
    n = len(a)
    s = [[sum(x * y for x, y in zip(a[i], b[j])) / tau for j in range(n)] for i in range(n)]

    def ce(m):
        return -sum(m[i][i] - math.log(sum(math.exp(v) for v in m[i])) for i in range(n)) / n

    st_ = [[s[j][i] for j in range(n)] for i in range(n)]
    return 0.5 * (ce(s) + ce(st_))


@settings(max_examples=25, deadline=None)
@given(b=st.integers(2, 6), d=st.integers(2, 5), seed=st.integers(0, 10_000),
       tau=st.sampled_from([0.05, 0.1, 0.5, 1.0]))
def test_matches_equations_2_to_4(b, d, seed, tau):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=torch.float64)
    z2 = torch.randn(b, d, generator=g, dtype=torch.float64)
    assert symmetric_info_nce(z1, z2, tau).item() == pytest.approx(by_hand(z1, z2, tau), rel=1e-9, abs=1e-9)


def test_symmetric_in_the_two_views():
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(5, 8, generator=g), torch.randn(5, 8, generator=g)
    torch.testing.assert_close(symmetric_info_nce(z1, z2), symmetric_info_nce(z2, z1))


def test_scale_invariant_and_extremes():
    eye = torch.eye(4)
    # orthogonal positives aligned: loss -> 0 at small tau; identical rows: log(B)
    assert symmetric_info_nce(eye, 3 * eye, 0.05).item() < 1e-6
    same = torch.ones(4, 3)
    assert symmetric_info_nce(same, same, 0.05).item() == pytest.approx(math.log(4), rel=1e-6)


@pytest.mark.parametrize("tau", [0.0, -1.0])
def test_bad_temperature(tau):
    with pytest.raises(LossConfigError, match="train.tau"):
        symmetric_info_nce(torch.ones(2, 2), torch.ones(2, 2), tau)


def test_shape_mismatch():
    with pytest.raises(LossConfigError):
        symmetric_info_nce(torch.ones(2, 2), torch.ones(3, 2))


def test_default_temperature_is_the_papers_0_05():
    """Paper section 4 trains at tau = 0.05, and so does ``TrainConfig`` by default. If the
    loss's own default drifted from it, a caller that leaves tau out (a probe, a notebook,
    a validation-loss check) would score a different objective from the one training minimises."""
    from gclsampler.train_config import TrainConfig

    assert TrainConfig().tau == 0.05
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64)
    z2 = torch.randn(4, 3, generator=g, dtype=torch.float64)
    default = symmetric_info_nce(z1, z2).item()
    assert default == pytest.approx(by_hand(z1, z2, 0.05), rel=1e-9, abs=1e-9)
    assert default == pytest.approx(symmetric_info_nce(z1, z2, TrainConfig().tau).item(), rel=1e-12)
    assert default != pytest.approx(by_hand(z1, z2, 0.1), rel=1e-3)


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_views_that_are_not_batch_by_dim_are_named(shape):
    """Equal shapes are not enough: a 1-D or 3-D pair must be refused as a LossConfigError (the
    project's error), not reach torch as an IndexError/RuntimeError from normalize or .t()."""
    z = torch.ones(*shape)
    with pytest.raises(LossConfigError, match="views must have equal"):
        symmetric_info_nce(z, z.clone())


def test_a_nan_temperature_is_refused_not_a_nan_loss():
    """`tau <= 0` is false for NaN: the loss returned NaN instead of its LossConfigError."""
    with pytest.raises(LossConfigError, match="^train.tau: temperature must be > 0, got nan$"):
        symmetric_info_nce(torch.ones(2, 2), torch.eye(2), float("nan"))


def test_the_smallest_temperatures_give_a_finite_loss_or_are_refused():
    """Below 1/float32-max (about 2.9e-39) cos/tau overflowed to inf in the float32 logits and the
    loss and its gradients were NaN, for a tau that TrainConfig accepted (finite, > 0)."""
    from gclsampler.train_config import TrainConfig, TrainConfigError

    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(4, 8, generator=g)
    z2 = z1 + 0.1 * torch.randn(4, 8, generator=g)
    for tau in (1e-38, 1e-20, 1e-6, 1e30):  # accepted: finite loss and gradients
        z = z1.clone().requires_grad_()
        loss = symmetric_info_nce(z, z2, tau)
        loss.backward()
        assert math.isfinite(loss.item()) and bool(torch.isfinite(z.grad).all())
        TrainConfig(tau=tau).validate()
    for tau in (1e-39, 1e-45):
        with pytest.raises(LossConfigError, match=r"^train.tau: temperature .* too small for torch.float32 logits"):
            symmetric_info_nce(z1, z2, tau)
        with pytest.raises(TrainConfigError, match=r"^train.tau: must be at least 2.94e-39 .*got "):
            TrainConfig(tau=tau).validate()
    # float64 views have the range for it
    assert math.isfinite(symmetric_info_nce(z1.double(), z2.double(), 1e-39).item())
