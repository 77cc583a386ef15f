"""Training an NDP prior: loss, strata, LR schedule, EMA, data stream, weights files."""

import json
import math

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from skdiff.datasets import make_gp_functions
from skdiff.diffusion import NoiseSchedule, PriorConfig, train_prior
from skdiff.diffusion.priors import (
    DEFINING_FIELDS,
    PriorWeightsError,
    available_priors,
    get_prior_config,
    load_prior,
    save_prior,
    weights_dir,
)
from skdiff.diffusion.training import (
    EMA,
    GPFunctionBatches,
    NoisePredictionLoss,
    stratified_timesteps,
    warmup_cosine,
)

TINY = PriorConfig(kernel="se", lengthscale=0.5, n_points=(12, 20), hidden_dim=16, n_layers=1,
                   n_heads=4, batch_size=16, warmup_steps=5, lr=3e-3)


@pytest.fixture(scope="module")
def trained():
    return train_prior(TINY, max_epochs=4, steps_per_epoch=15, pool_size=64, random_state=0)


def test_a_few_steps_reduce_the_loss_on_a_fixed_pool(trained):
    module, ema, history = trained
    losses = history[:, "train_loss"]
    assert len(losses) == 4
    # zero-initialised output: E|eps| = sqrt(2/pi) ~ 0.80 at the start
    assert losses[0] == pytest.approx(math.sqrt(2 / math.pi), abs=0.12)
    assert losses[-1] < 0.85 * losses[0]


def test_lr_follows_warmup_then_cosine(trained):
    _, _, history = trained
    lrs = [b["event_lr"] for epoch in history for b in epoch["batches"]]
    f = warmup_cosine(60, 5, 3e-3, TINY.init_lr, TINY.end_lr)
    np.testing.assert_allclose(lrs, [3e-3 * f(s) for s in range(60)], rtol=1e-6)
    assert f(0) * 3e-3 == pytest.approx(TINY.init_lr)
    assert f(5) == pytest.approx(1.0)
    assert f(60) * 3e-3 == pytest.approx(TINY.end_lr)


def test_ema_state_is_returned_and_differs_from_raw_weights(trained):
    module, ema, _ = trained
    raw = module.state_dict()
    assert set(ema) == set(raw)
    assert any(not torch.allclose(ema[k], raw[k].cpu()) for k in raw)


def test_ema_update_rule():
    lin = torch.nn.Linear(2, 1)

    class FakeNet:
        module_ = lin

    cb = EMA(decay=0.9).initialize()
    net = FakeNet()
    w0 = lin.weight.detach().clone()
    cb.on_train_begin(net)
    with torch.no_grad():
        lin.weight.add_(1.0)
    cb.on_batch_end(net, training=True)
    cb.on_batch_end(net, training=False)  # validation batches do not count
    with torch.no_grad():
        lin.weight.add_(1.0)
    cb.on_batch_end(net, training=True)
    # ema = 0.9 * (0.9 * w0 + 0.1 * (w0 + 1)) + 0.1 * (w0 + 2) = w0 + 0.29
    torch.testing.assert_close(cb.state_dict()["weight"], w0 + 0.29)
    assert cb.n_updates_ == 2


def test_stratified_timesteps_one_per_stratum():
    rng = np.random.RandomState(0)
    t = stratified_timesteps(32, 500, rng)
    assert t.min() >= 0 and t.max() <= 499
    np.testing.assert_array_equal(np.floor(t / (500 / 32)).astype(int), np.arange(32))


def test_masked_loss_ignores_padding():
    eps_hat = torch.tensor([[[0.5], [1.0], [9.0]], [[0.0], [0.0], [0.0]]])
    target = torch.tensor([[[0.0, 1], [0.0, 1], [0.0, 0]], [[1.0, 1], [-2.0, 1], [3.0, 1]]])
    assert NoisePredictionLoss("l1")(eps_hat, target).item() == pytest.approx(
        (0.75 + 2.0) / 2)
    assert NoisePredictionLoss("l2")(eps_hat, target).item() == pytest.approx(
        (0.625 + 14 / 3) / 2)
    with pytest.raises(ValueError, match="'loss' must be 'l1' or 'l2'; got 'l3'"):
        NoisePredictionLoss("l3")


def test_dataset_noises_pool_functions_by_the_closed_form():
    ds = GPFunctionBatches(TINY, 3, pool_size=20, random_state=5)
    feats, target = ds[0]
    b, n = feats["y_t"].shape[:2]
    assert feats["x"].shape == (b, n, 1) and target.shape == (b, n, 2)
    mask = feats["mask"]
    assert torch.all(target[..., 1] == (~mask).float())
    sab = NoiseSchedule.official().sqrt_alpha_bars[feats["t"]][:, None]
    y0 = (feats["y_t"][..., 0] - (1 - sab**2).sqrt() * target[..., 0]) / sab
    # every recovered function is one of the pool's
    pool = torch.as_tensor(ds.pool.y, dtype=torch.float32)
    for i in range(b):
        dist = (pool[:, :n] - y0[i]).abs().masked_fill(mask[i], 0).amax(dim=1)
        assert dist.min() < 1e-3
    # same seed, same stream; the next item is new data
    ds2 = GPFunctionBatches(TINY, 3, pool_size=20, random_state=5)
    torch.testing.assert_close(ds2[0][0]["y_t"], feats["y_t"])
    assert not torch.allclose(ds2[1][0]["t"].float(), feats["t"].float())


def test_prior_config_round_trip_and_errors():
    c = get_prior_config("gp", 2)
    assert PriorConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert c.points == (40, 80)
    assert get_prior_config("se", 3).points == (80, 80)
    assert get_prior_config("se", 4).lengthscale_sampler() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="Unknown prior 'matern'; registered priors are"):
        get_prior_config("matern")
    with pytest.raises(ValueError, match="'loss' must be 'l1' or 'l2'"):
        PriorConfig(loss="huber")
    with pytest.raises(ValueError, match="'noise' is an observation-noise variance"):
        PriorConfig(noise=-1e-4)
    # a low-noise variant of a registered prior: its functions carry that noise
    quiet = c.replace(noise=1e-4)
    f = quiet.draw_functions(200, random_state=0)
    assert np.var((f.y - f.f)[~f.mask]) == pytest.approx(1e-4, rel=0.1)  # mask: padding


@pytest.mark.parametrize("name, n_dims, n_points, width", [
    ("gp", 1, 3, 3.6), ("gp", 1, 12, 3.6), ("gp", 2, 6, 1.0), ("se", 1, 5, 3.6),
    ("matern52", 3, 8, 3.6)])
def test_expected_sample_variance_matches_drawn_functions(name, n_dims, n_points, width):
    """The closed form (kernel matrices averaged over kernels and lengthscale quantiles)
    against the variance of the prior's own training functions drawn at the same inputs."""
    config = get_prior_config(name, n_dims)
    X = np.random.RandomState(1).uniform(-width / 2, width / 2, (n_points, n_dims))
    draws = make_gp_functions(  # the kernels, lengthscales and noise of training
        20000, n_points, n_dims, X=X, kernel=list(config.kernels),
        lengthscale=config.lengthscale_sampler(), variance=config.variance,
        noise=config.noise, random_state=2)
    empirical = draws.y.var(axis=1).mean()
    expected = config.expected_sample_variance(X)
    assert expected == pytest.approx(empirical, rel=0.03)
    # few points close together vary less than the marginal variance, and far less than it
    # when they are closer than the lengthscales
    assert expected < config.variance + config.noise
    assert config.expected_sample_variance(X / 10) < 0.5 * expected


@pytest.mark.parametrize("name, n_dims, anisotropic", [
    ("gp", 1, False), ("gp", 2, False), ("gp", 2, True), ("se", 3, False)])
def test_log_evidence_is_the_mixture_of_the_components_densities(name, n_dims, anisotropic):
    """The batched log evidence against a loop over the components' Gaussian densities
    (scipy), averaged in probability; a prior's own draw is far likelier than the same
    function at four times the prior's amplitude."""
    from itertools import product

    from scipy.special import logsumexp
    from scipy.stats import multivariate_normal

    from skdiff.datasets._gp import gp_kernel

    config = get_prior_config(name, n_dims).replace(anisotropic=anisotropic)
    draw = config.draw_functions(1, 3)
    X, y = draw.X[0, :9], draw.y[0, :9]  # a training function's values at its inputs
    if anisotropic:
        per_dim = max(4, round(16 ** (1 / n_dims)))
        grid = [np.asarray(c) for c in product(config.lengthscale_quantiles(per_dim),
                                               repeat=n_dims)]
    else:
        grid = [np.full(n_dims, v) for v in config.lengthscale_quantiles(16)]
    dense = [multivariate_normal(np.zeros(len(X)),
                                 gp_kernel(X / lengths, X / lengths, kernel, 1.0,
                                           config.variance) + config.noise * np.eye(len(X)))
             .logpdf(y) for kernel in config.kernels for lengths in grid]
    expected = logsumexp(dense) - np.log(len(dense))
    assert config.log_evidence(X, y) == pytest.approx(expected, rel=1e-10)
    assert config.log_evidence(X, y) > config.log_evidence(X, 4 * y) + 5


def test_context_covariance_weighs_the_components_by_their_evidence():
    """The Gaussian approximation behind the Tweedie correction: a one-kernel prior's own
    covariance; for the mixture, the components averaged with weights proportional to their
    densities of the context (against a loop over them), so a smooth context gives a
    covariance of longer reach than a rough one at the same inputs; refused for a prior
    trained on functions."""
    from scipy.stats import multivariate_normal

    from skdiff.datasets._gp import gp_kernel

    X = np.linspace(-2, 2, 9)[:, None]
    se = get_prior_config("se", 1)
    np.testing.assert_allclose(se.context_covariance(X, np.zeros(3)),
                               gp_kernel(X, X, "se", 0.25) + se.noise * np.eye(9))
    gp = get_prior_config("gp", 1)
    C = 4
    smooth, rough = np.sin(X[:C, 0] / 2), np.array([1.0, -1.0, 1.0, -1.0])
    for y in (smooth, rough):
        comps = [gp_kernel(X, X, k, ell) for k in gp.kernels
                 for ell in gp.lengthscale_quantiles(16)]
        w = np.array([multivariate_normal(np.zeros(C), K[:C, :C] + gp.noise * np.eye(C))
                      .pdf(y) for K in comps])
        expected = sum(wi * K for wi, K in zip(w / w.sum(), comps)) + gp.noise * np.eye(9)
        np.testing.assert_allclose(gp.context_covariance(X, y), expected, atol=1e-10)
    # the components one by one: the same matrices, the same weights
    every, w_all = gp.context_components(X, smooth)
    some, w_some = gp.context_components(X, smooth, components=[40, 3])
    np.testing.assert_array_equal(some, every[[40, 3]])
    np.testing.assert_array_equal(w_some, w_all)
    assert w_all.shape == (64,) and w_all.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"'components' must be positions in \[0, 64\); "
                                         r"got \[64\]"):
        gp.context_components(X, smooth, components=[64])
    # neighbours 0.5 apart: correlated in the smooth context's approximation, less so in
    # the rough one's
    assert gp.context_covariance(X, smooth)[4, 5] > gp.context_covariance(X, rough)[4, 5] + 0.3
    assert np.linalg.eigvalsh(gp.context_covariance(X, rough)).min() >= gp.noise * 0.999
    t = np.linspace(0, 1, 5)[:, None]
    family = gp.for_functions([(t, np.arange(5.0)), (t, np.arange(5.0) ** 2)])
    with pytest.raises(ValueError, match="trained on a family of functions has no kernel"):
        family.context_covariance(X, smooth)


@pytest.mark.parametrize("n_dims, n_points", [(2, 6), (3, 8)])
def test_anisotropic_prior_draws_and_expects_per_dimension_lengthscales(n_dims, n_points):
    """An anisotropic configuration trains on ARD draws; its expected sample variance (a
    quadrature over per-dimension quantiles) matches them; with one fixed lengthscale it is
    the isotropic one; its dict carries the flag, an isotropic one's does not."""
    config = get_prior_config("gp", n_dims).replace(anisotropic=True)
    X = np.random.RandomState(1).uniform(-0.5, 0.5, (n_points, n_dims))
    draws = make_gp_functions(
        20000, n_points, n_dims, X=X, kernel=list(config.kernels),
        lengthscale=config.lengthscale_sampler(), anisotropic=True,
        variance=config.variance, noise=config.noise, random_state=2)
    assert config.expected_sample_variance(X) == pytest.approx(draws.y.var(axis=1).mean(),
                                                               rel=0.03)
    fixed = PriorConfig(lengthscale=0.6, n_dims=n_dims)
    assert fixed.replace(anisotropic=True).expected_sample_variance(X) == pytest.approx(
        fixed.expected_sample_variance(X), rel=1e-12)
    assert config.draw_functions(4, 0).lengthscale.shape == (4, n_dims)
    assert PriorConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["anisotropic"] is True
    assert "anisotropic" not in config.replace(anisotropic=False).to_dict()
    with pytest.raises(ValueError, match="'anisotropic' must be True or False; got 1"):
        PriorConfig(anisotropic=1)
    with pytest.raises(ValueError, match="'periodic' kernel does not take"):
        PriorConfig(kernel=("se", "periodic"), anisotropic=True)


@pytest.mark.parametrize("lengthscale, n_dims, expected", [
    (0.5, 1, [0.5]), (0.5, 4, [1.0]),
    (("uniform", 0.1, 0.5), 1, [0.15, 0.25, 0.35, 0.45]),
    (("loguniform", 0.1, 1.6), 1, [0.1 * 2 ** (i + 0.5) for i in range(4)]),
    (("lognormal", math.log(0.4), 0.5), 4, None)])
def test_lengthscale_quantiles(lengthscale, n_dims, expected):
    """Quantile midpoints of the lengthscale distribution, with the sqrt(D) scaling."""
    config = PriorConfig(lengthscale=lengthscale, n_dims=n_dims)
    q = config.lengthscale_quantiles(4)
    if expected is not None:
        np.testing.assert_allclose(q, expected)
    else:  # lognormal: symmetric in log about log(0.4 * sqrt(4)); the 0.625 quantile
        np.testing.assert_allclose(np.log(q).mean(), math.log(0.8))
        np.testing.assert_allclose(q[2], 0.8 * math.exp(0.5 * 0.3186393639643752))
    assert PriorConfig(kernel="se").kernels == ("se",)
    assert PriorConfig(kernel=("se", "matern12")).kernels == ("se", "matern12")


def test_save_load_round_trip_and_checksum_errors(tmp_path, trained):
    _, ema, _ = trained
    cfg = TINY.replace(n_dims=1)
    import skdiff.diffusion.priors as priors

    priors.PRIORS["tiny_test"] = cfg
    try:
        save_prior("tiny_test", cfg, ema, directory=tmp_path, steps=60, command="test")
        module, config = load_prior("tiny_test", 1, directory=tmp_path)
        assert config == cfg and not module.training
        for k, v in module.state_dict().items():  # stored as float16
            torch.testing.assert_close(v, ema[k], atol=2e-3, rtol=1e-3)
        assert ("tiny_test", 1) in available_priors(tmp_path)
        manifest = json.loads((tmp_path / "tiny_test_d1.json").read_text())
        assert manifest["steps"] == 60 and len(manifest["sha256"]) == 64

        # corrupt one byte -> checksum error
        pt = tmp_path / "tiny_test_d1.pt"
        data = bytearray(pt.read_bytes())
        data[len(data) // 2] ^= 0xFF
        pt.write_bytes(bytes(data))
        with pytest.raises(PriorWeightsError, match="Checksum mismatch .*corrupt or was rep"):
            load_prior("tiny_test", 1, directory=tmp_path)

        # a manifest that is JSON but not an object, or not text at all
        save_prior("tiny_test", cfg, ema, directory=tmp_path)
        js = tmp_path / "tiny_test_d1.json"
        for content, why in ((b"null", "holds a JSON NoneType, not an object"),
                             (b"[1, 2]", "holds a JSON list, not an object"),
                             (b"\xff\xfe\x00garbage", "is not valid JSON")):
            js.write_bytes(content)
            with pytest.raises(PriorWeightsError, match=why):
                load_prior("tiny_test", 1, directory=tmp_path)

        # registry changed since training -> stale
        save_prior("tiny_test", cfg, ema, directory=tmp_path)
        priors.PRIORS["tiny_test"] = cfg.replace(noise=0.01)
        with pytest.raises(PriorWeightsError, match=r"stale.*'noise': \(0.0025, 0.01\)"):
            load_prior("tiny_test", 1, directory=tmp_path)
        with pytest.raises(PriorWeightsError, match="No pretrained weights for prior "
                                                    "'tiny_test' with n_dims=2"):
            load_prior("tiny_test", 2, directory=tmp_path)
    finally:
        del priors.PRIORS["tiny_test"]


def test_shipped_default_prior_loads_and_is_recorded():
    module, config = load_prior("gp", 1)
    registered = get_prior_config("gp", 1)
    assert all(getattr(config, k) == getattr(registered, k) for k in DEFINING_FIELDS)
    manifest = json.loads((weights_dir() / "gp_d1.json").read_text())
    assert manifest["steps"] >= 1000 and "pretrain_ndp.py" in manifest["command"]
    x = torch.linspace(-2, 2, 30)[None, :, None]
    y = torch.sin(3 * x)
    eps = module(x, y, torch.tensor([10]))
    assert eps.shape == (1, 30, 1) and eps.abs().max() > 0


def test_one_network_several_input_dimensions():
    ds = GPFunctionBatches([TINY.replace(n_dims=1), TINY.replace(n_dims=3)], 8, random_state=0)
    dims = {ds[i][0]["x"].shape[2] for i in range(8)}
    assert dims == {1, 3}
    with pytest.raises(ValueError, match="fixed pool .* needs a single configuration"):
        GPFunctionBatches([TINY, TINY.replace(n_dims=2)], 2, pool_size=4)


def test_a_resumed_run_equals_an_uninterrupted_one_bit_for_bit(tmp_path):
    kw = dict(max_epochs=4, steps_per_epoch=3, random_state=3)
    _, ema_full, hist_full = train_prior(TINY, **kw)
    ckpt = tmp_path / "run.ckpt"
    # the first two epochs, checkpointed after each, then a resume for the remaining two
    with pytest.raises(KeyboardInterrupt, match="resume=True"):
        train_prior(TINY, max_epochs=4, steps_per_epoch=3, random_state=3, checkpoint=ckpt,
                    checkpoint_every=0, callbacks=[_StopAfter(2)])
    module, ema, hist = train_prior(TINY, **kw, checkpoint=ckpt, resume=True)
    assert len(hist) == 4
    for k in ema_full:
        assert torch.equal(ema[k], ema_full[k]), k
    np.testing.assert_array_equal(hist[:, "train_loss"], hist_full[:, "train_loss"])


def test_resume_refuses_a_checkpoint_of_another_run(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    train_prior(TINY, max_epochs=1, steps_per_epoch=2, random_state=0, checkpoint=ckpt)
    with pytest.raises(ValueError, match="belongs to another run: seed stored 0, "
                                         r"asked 1\. Resume it with the same arguments") as e:
        train_prior(TINY, max_epochs=1, steps_per_epoch=2, random_state=1, checkpoint=ckpt,
                    resume=True)
    assert len(str(e.value)) < 400  # the differences, not both descriptions whole
    with pytest.raises(ValueError, match="max_epochs stored 1, asked 3"):
        train_prior(TINY, max_epochs=3, steps_per_epoch=2, random_state=0, checkpoint=ckpt,
                    resume=True)


class _StopAfter(Callback):
    """Interrupt training after ``n`` epochs, as a killed process would (after its checkpoint)."""

    def __init__(self, n):
        self.n = n

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) >= self.n:
            raise KeyboardInterrupt


def test_a_time_budget_ends_the_call_with_a_checkpoint_and_resume_finishes_it(tmp_path):
    """``max_seconds``: the call returns (no error) after the first epoch past the budget,
    having written the checkpoint; resuming finishes the run bit for bit."""
    kw = dict(max_epochs=3, steps_per_epoch=2, random_state=0)
    _, ema_full, hist_full = train_prior(TINY, **kw)
    ckpt = tmp_path / "run.ckpt"
    saved = []
    _, _, hist = train_prior(TINY, **kw, checkpoint=ckpt, checkpoint_every=1e9,
                             on_checkpoint=lambda net: saved.append(len(net.history)),
                             max_seconds=0)
    assert len(hist) == 1 and saved == [1] and ckpt.exists()
    _, ema, hist = train_prior(TINY, **kw, checkpoint=ckpt, resume=True)
    assert len(hist) == 3
    for k in ema_full:
        assert torch.equal(ema[k], ema_full[k]), k
    np.testing.assert_array_equal(hist[:, "train_loss"], hist_full[:, "train_loss"])


@pytest.mark.parametrize("kw, message", [
    ({"max_epochs": 0}, "'max_epochs' must be an integer >= 1; got 0"),
    ({"max_epochs": 1.9}, "'max_epochs' must be an integer >= 1; got 1.9"),
    ({"steps_per_epoch": 0}, "'steps_per_epoch' must be an integer >= 1; got 0"),
    ({"random_state": None}, "'random_state' must be an integer seed"),
])
def test_train_prior_refuses_bad_counts_and_seeds(kw, message):
    with pytest.raises(ValueError, match=message):
        train_prior(TINY, **kw)


def test_save_prior_refuses_a_name_that_leaves_its_directory(tmp_path):
    module = TINY.network()
    for name in ("../evil", "a/b", "", ".."):
        with pytest.raises(ValueError, match="name must be a non-empty file name"):
            save_prior(name, TINY, module.state_dict(), directory=tmp_path / "sub")
    assert not any(tmp_path.rglob("*.pt"))
