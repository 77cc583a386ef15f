"""Noise schedules and the closed-form forward process."""

import math

import numpy as np
import pytest
import torch

from skdiff.diffusion import NoiseSchedule


def test_official_schedule_endpoints_and_shape():
    sched = NoiseSchedule.official()
    assert sched.T == 500
    assert sched.betas[0].item() == pytest.approx(3e-4, rel=1e-5)
    assert sched.betas.max().item() == pytest.approx(0.5, rel=1e-5)
    assert sched.betas[-1].item() == pytest.approx(0.5, rel=1e-5)
    # the released models' schedule: alpha_bar at the last level is about 2e-3
    assert 1e-3 < sched.alpha_bars[-1].item() < 4e-3
    assert sched.betas.dtype == torch.float32


@pytest.mark.parametrize("make", [
    lambda: NoiseSchedule.official(T=500),
    lambda: NoiseSchedule.linear(T=200, beta_start=1e-4, beta_end=0.05),
    lambda: NoiseSchedule.cosine(T=300),
])
def test_alpha_bar_monotone_and_consistent(make):
    sched = make()
    ab = sched.alpha_bars.double()
    assert torch.all(ab[1:] < ab[:-1])
    assert 0 < ab[-1] < ab[0] < 1
    ref = torch.cumprod(1 - sched.betas.double(), 0)
    torch.testing.assert_close(ab, ref, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(sched.alpha_bars_prev[1:], sched.alpha_bars[:-1])
    assert sched.alpha_bars_prev[0].item() == 1.0
    pv = sched.betas.double() * (1 - sched.alpha_bars_prev.double()) / (1 - ab)
    torch.testing.assert_close(sched.posterior_variance.double(), pv, rtol=1e-4, atol=1e-8)


def test_linear_endpoints():
    sched = NoiseSchedule.linear(T=10, beta_start=0.1, beta_end=0.2)
    assert sched.betas[0].item() == pytest.approx(0.1)
    assert sched.betas[-1].item() == pytest.approx(0.2)


def test_cosine_matches_nichol_dhariwal_alpha_bar():
    T, s = 100, 0.008
    sched = NoiseSchedule.cosine(T=T, s=s)
    f = lambda t: math.cos((t / T + s) / (1 + s) * math.pi / 2) ** 2  # noqa: E731
    for t in (0, 10, 50, 90):  # away from the clipped last steps
        assert sched.alpha_bars[t].item() == pytest.approx(f(t + 1) / f(0), rel=1e-4)


def test_q_sample_is_closed_form():
    sched = NoiseSchedule.official()
    y0 = torch.randn(4, 7, 1)
    noise = torch.randn(4, 7, 1)
    t = torch.tensor([0, 10, 250, 499])
    out = sched.q_sample(y0, t, noise)
    ab = sched.alpha_bars[t].view(4, 1, 1)
    torch.testing.assert_close(out, ab.sqrt() * y0 + (1 - ab).sqrt() * noise)
    # a scalar t applies to every batch element
    torch.testing.assert_close(sched.q_sample(y0, 3, noise),
                               sched.q_sample(y0, torch.full((4,), 3), noise))


def test_iterated_one_step_forward_matches_marginal_monte_carlo():
    """Iterating q(y_t | y_{t-1}) from clean data reproduces q(y_t | y_0) (mean and variance)."""
    sched = NoiseSchedule.official(T=100)
    g = torch.Generator().manual_seed(0)
    n = 20000
    y0 = torch.tensor([1.5, -0.5]).view(1, 2, 1).expand(n, 2, 1)
    y = y0.clone()
    for t in range(60):
        y = sched.q_step(y, t, torch.randn(y.shape, generator=g))
    ab = sched.alpha_bars[59].double().item()
    mean = y.double().mean(0).squeeze(-1)
    var = y.double().var(0).squeeze(-1)
    exp_mean = math.sqrt(ab) * torch.tensor([1.5, -0.5], dtype=torch.float64)
    sd_mean = math.sqrt((1 - ab) / n)
    assert torch.all((mean - exp_mean).abs() < 4 * sd_mean)
    sd_var = (1 - ab) * math.sqrt(2 / (n - 1))
    assert torch.all((var - (1 - ab)).abs() < 4 * sd_var)


def test_q_jump_composes_with_q_sample():
    """Jumping s -> t after q_sample at s has the marginal of level t (closed-form moments)."""
    sched = NoiseSchedule.official()
    y0 = torch.ones(50000, 1, 1) * 2.0
    g = torch.Generator().manual_seed(1)
    ys = sched.q_sample(y0, 100, torch.randn(y0.shape, generator=g))
    yt = sched.q_jump(ys, 100, 300, torch.randn(y0.shape, generator=g))
    ab = sched.alpha_bars[300].double().item()
    tol = 4 * math.sqrt(1 / 50000)
    assert yt.double().mean().item() == pytest.approx(2 * math.sqrt(ab), abs=tol)
    assert yt.double().var().item() == pytest.approx(1 - ab, abs=4 * math.sqrt(2 / 50000))
    # s = -1 is clean data: the jump equals q_sample
    noise = torch.randn(3, 4, 1)
    torch.testing.assert_close(sched.q_jump(y0[:3].expand(3, 4, 1), -1, 7, noise),
                               sched.q_sample(y0[:3].expand(3, 4, 1), 7, noise))


def test_buffers_move_with_module_and_repr():
    sched = NoiseSchedule.official(T=50)
    assert "T=50" in repr(sched)
    assert set(dict(sched.named_buffers())) >= {"betas", "alpha_bars", "sqrt_alpha_bars"}
    state = sched.state_dict()
    clone = NoiseSchedule(np.ones(50) * 0.1)
    clone.load_state_dict(state)
    torch.testing.assert_close(clone.alpha_bars, sched.alpha_bars)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_T(bad):
    with pytest.raises(ValueError, match="'T'"):
        NoiseSchedule.linear(T=bad)


def test_bad_betas():
    with pytest.raises(ValueError, match="beta must lie in"):
        NoiseSchedule([0.1, 1.0])
