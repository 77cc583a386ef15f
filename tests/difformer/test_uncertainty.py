"""DIFFormerRegressor's Gaussian head: calibrated intervals, the loss, detached variance rows."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_friedman1
from sklearn.model_selection import train_test_split

from skdiff import DIFFormerRegressor
from skdiff.nn import DIFFormer
from skdiff.nn.losses import GaussianNLL, WeightedMSE
from tests._shared import assert_the_fitted_head_is_kept

# dropout as with scarce labels: the Monte Carlo passes most tests here are about; the
# network's own head (not the ridge linear_fallback may predict with)
FAST = dict(n_layers=2, hidden_dim=32, max_epochs=80, dropout=0.2, linear_fallback=False,
            device="cpu")


@pytest.fixture(scope="module")
def friedman():
    X, y = make_friedman1(600, noise=1.0, random_state=0)
    return train_test_split(X, y, test_size=200, random_state=0)


def _coverage(y, mean, std, z=1.959964):
    return float(np.mean(np.abs(y - mean) <= z * std))


def _nll(y, mean, std):
    return float(np.mean(0.5 * np.log(2 * np.pi * std ** 2) + 0.5 * ((y - mean) / std) ** 2))


def test_gaussian_intervals_cover_held_out_rows_where_dropout_spread_does_not(friedman):
    """95 % intervals of the default head cover at least 90 % of unseen rows; the spread of
    Monte Carlo dropout (epistemic only) covers far fewer. The mean fits as well as the plain
    squared-error fit: the head's mean is trained by the same loss."""
    Xtr, Xte, ytr, yte = friedman
    gauss = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, ytr)
    mc = DIFFormerRegressor(**FAST, uncertainty="mc_dropout", random_state=0).fit(Xtr, ytr)
    m_g, s_g = gauss.predict(Xte, return_std=True)
    m_mc, s_mc = mc.predict(Xte, return_std=True)
    assert _coverage(yte, m_g, s_g) >= 0.9
    assert _coverage(yte, m_mc, s_mc) < 0.85
    # and a proper score agrees: the Gaussian negative log-likelihood per row is lower
    assert _nll(yte, m_g, s_g) < _nll(yte, m_mc, s_mc) - 0.1
    mse_g, mse_mc = np.mean((yte - m_g) ** 2), np.mean((yte - m_mc) ** 2)
    assert mse_g < 1.15 * mse_mc
    # without validation rows (early_stopping="auto" below 10,000 rows) nothing is rescaled
    np.testing.assert_array_equal(gauss.std_scale_, [1.0])


def test_std_is_calibrated_on_validation_rows(friedman):
    Xtr, Xte, ytr, yte = friedman
    valid = np.zeros(len(Xtr), dtype=bool)
    valid[::4] = True  # 100 validation rows
    reg = DIFFormerRegressor(**FAST, early_stopping=True, random_state=0).fit(
        Xtr, ytr, validation_mask=valid)
    assert reg.std_scale_.shape == (1,) and reg.std_scale_[0] != 1.0
    # the factor is split conformal: the head's 90 % intervals reach exactly the
    # ceil(0.9 (n + 1)) = 91st smallest of the 100 validation rows' standardised errors, on
    # the forward over the fitted rows that fit ends with (validation rows unlabelled in it)
    with reg._inference():
        raw = reg._joint_outputs(reg._inputs(Xtr, None, None, reset=False))[0][valid]
    z_valid = (ytr[valid] - reg.y_mean_) / reg.y_scale_
    head_std = np.sqrt(np.log1p(np.exp(raw[:, 1])) + 1e-6)
    score = np.sort(np.abs(z_valid - raw[:, 0]) / head_std)
    np.testing.assert_allclose(reg.std_scale_[0] * 1.6448536269514722, score[90], rtol=1e-5)
    # and it carries over to new rows
    mean, std = reg.predict(Xte, return_std=True)
    assert 0.8 <= _coverage(yte, mean, std, z=1.644854) <= 1.0
    # fewer than 20 validation rows: no factor
    few = DIFFormerRegressor(**FAST, early_stopping=True, validation_fraction=0.05,
                             random_state=0).fit(Xtr[:200], ytr[:200])
    np.testing.assert_array_equal(few.std_scale_, [1.0])


def test_samples_are_draws_from_the_predicted_gaussians_under_dropout(friedman):
    """A sample is one Monte Carlo dropout pass's Gaussian, drawn from; the returned std is
    their law-of-total-variance spread. Without dropout the passes are one network and the
    samples are draws from its Gaussian."""
    Xtr, Xte, ytr, _ = friedman
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, ytr)
    mean, std = reg.predict(Xte[:20], return_std=True)
    S = reg.sample_posterior(Xte[:20], n_samples=2000, random_state=0)
    assert S.shape == (20, 2000)
    np.testing.assert_allclose(S.std(-1), std, rtol=0.15)  # std from 30 passes
    assert np.corrcoef(S.mean(-1), mean)[0, 1] > 0.95
    np.testing.assert_array_equal(S, reg.sample_posterior(Xte[:20], n_samples=2000,
                                                          random_state=0))
    plain = DIFFormerRegressor(**{**FAST, "dropout": 0.0}, random_state=0).fit(Xtr, ytr)
    mean0, std0 = plain.predict(Xte[:20], return_std=True)
    with plain._inference():
        raw = plain._outputs(plain._prepare_predict(Xte[:20]))
    # calibrated on the validation rows that training without dropout holds out
    assert plain.early_stopping_ is True
    np.testing.assert_allclose(std0, np.sqrt(np.log1p(np.exp(raw[:, 1])) + 1e-6)
                               * plain.std_scale_[0] * plain.y_scale_, rtol=1e-5)
    S0 = plain.sample_posterior(Xte[:20], n_samples=4000, random_state=0)
    np.testing.assert_allclose(S0.mean(-1), mean0, atol=4 * std0.max() / np.sqrt(4000))
    np.testing.assert_allclose(S0.std(-1), std0, rtol=0.06)
    # the sample axis is last for several outputs too
    Y = np.c_[ytr, -ytr]
    two = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, Y)
    assert two.sample_posterior(Xte[:3], n_samples=5, random_state=0).shape == (3, 2, 5)
    assert two.predict(Xte[:3], return_std=True)[1].shape == (3, 2)


def test_few_labels_dropout_spread_widens_the_intervals(friedman):
    """With 50 labelled rows the head's variance, fitted to rows the network has memorised,
    understates the errors on the others; the spread of the dropout passes makes up for
    it."""
    Xtr, _, ytr, _ = friedman
    y = np.full(len(ytr), np.nan)
    y[:50] = ytr[:50]
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, y)
    mean, std = reg.predict(Xtr[50:], return_std=True)
    with reg._inference():
        raw = reg._outputs(reg._prepare_predict(Xtr[50:]))
    alone = np.sqrt(np.log1p(np.exp(raw[:, 1])) + 1e-6) * reg.y_scale_
    assert _coverage(ytr[50:], mean, alone) < _coverage(ytr[50:], mean, std)
    assert _coverage(ytr[50:], mean, std) >= 0.85


def test_gaussian_loss_trains_the_mean_by_squared_error_and_skips_unlabelled_rows():
    torch.manual_seed(0)
    pred = torch.randn(6, 4, requires_grad=True)  # 2 outputs: means, raw variances
    y = torch.randn(6, 2)
    y[1] = float("nan")  # an unlabelled row
    w = torch.rand(6)
    target = {"y": y, "w": w}
    loss = GaussianNLL(mean_weight=1.0)(pred, target)
    assert torch.isfinite(loss)
    loss.backward()
    g_gauss = pred.grad[:, :2].clone()
    pred.grad = None
    WeightedMSE()(pred[:, :2], target).backward()
    np.testing.assert_allclose(g_gauss.numpy(), pred.grad[:, :2].numpy(), rtol=1e-6)
    assert not pred.grad[1].any()  # the NaN row contributes nothing
    # the default weight is the Gaussian NLL's own one half
    pred.grad = None
    GaussianNLL()(pred, target).backward()
    np.testing.assert_allclose(pred.grad[:, :2].numpy(), 0.5 * g_gauss.numpy(), rtol=1e-6)


def test_variance_rows_read_detached_features():
    net = DIFFormer(5, 4, hidden_dim=8, n_layers=1, n_detached_outputs=2, dropout=0.0)
    x = torch.randn(10, 5)
    net(x)[:, 2:].sum().backward()  # the variance half's loss
    assert net.fc_in.weight.grad is None or not net.fc_in.weight.grad.any()
    assert net.fc_out.weight.grad[2:].abs().sum() > 0
    assert not net.fc_out.weight.grad[:2].any()
    with pytest.raises(ValueError, match="n_detached_outputs must be in"):
        DIFFormer(5, 4, n_detached_outputs=5)


def test_uncertainty_is_validated():
    with pytest.raises(ValueError, match="'uncertainty' parameter"):
        DIFFormerRegressor(uncertainty="ensemble").fit(np.zeros((5, 2)), np.arange(5.0))


def test_auto_dropout_of_the_regressor(friedman):
    """``dropout="auto"``: off for fully labelled rows, where the Gaussian head alone gives
    the spread and a validation split calibrates it; 0.2 with unlabelled rows, with too
    few rows for 20 validation rows, and with ``uncertainty="mc_dropout"``, whose spread
    is dropout's."""
    Xtr, Xte, ytr, yte = friedman
    kw = dict(FAST, dropout="auto", random_state=0)
    auto = DIFFormerRegressor(**kw).fit(Xtr, ytr)
    assert auto.dropout_ == 0.0 and auto.module_.dropout.p == 0.0
    assert auto.early_stopping_ is True and auto.std_scale_[0] != 1.0  # 40 validation rows
    with auto._inference():
        raw = auto._outputs(auto._prepare_predict(Xte))
    mean, std = auto.predict(Xte, return_std=True)
    np.testing.assert_allclose(std, np.sqrt(np.log1p(np.exp(raw[:, 1])) + 1e-6)
                               * auto.std_scale_[0] * auto.y_scale_, rtol=1e-5)
    assert _coverage(yte, mean, std) >= 0.85
    # the default is "auto"
    default = DIFFormerRegressor(max_epochs=2, random_state=0).fit(Xtr, ytr)
    assert default.dropout == "auto" and default.dropout_ == 0.0
    y_semi = np.where(np.arange(len(ytr)) % 2 == 0, ytr, np.nan)
    short = dict(kw, max_epochs=2)
    semi = DIFFormerRegressor(**short).fit(Xtr, y_semi)
    assert semi.dropout_ == 0.2 and semi.early_stopping_ is False
    # 19 validation rows: too few to calibrate the head (the linear fallback still
    # compares on them, without early stopping)
    few = DIFFormerRegressor(**dict(short, linear_fallback="auto")).fit(Xtr[:190], ytr[:190])
    assert few.dropout_ == 0.2 and few.early_stopping_ is False
    assert few.linear_fallback_ is not None
    no_fallback = DIFFormerRegressor(**short).fit(Xtr[:190], ytr[:190])
    assert no_fallback.dropout_ == 0.2 and no_fallback.early_stopping_ is False
    mc = DIFFormerRegressor(**short, uncertainty="mc_dropout").fit(Xtr, ytr)
    assert mc.dropout_ == 0.2 and mc.early_stopping_ is False


@pytest.mark.parametrize("uncertainty", ["gaussian", "mc_dropout"])
def test_draws_are_centred_on_predict(uncertainty):
    """A pass with dropout active is a thinned network, whose average is not the full
    network's output: the draws are centred on ``predict``'s mean, so that averaging them
    gives ``predict``'s point forecast (exactly, without the Gaussian noise), and their
    spread is that of ``predict(return_std=True)``."""
    X, y = make_friedman1(150, noise=1.0, random_state=0)
    reg = DIFFormerRegressor(n_layers=2, hidden_dim=16, max_epochs=15, dropout=0.2,
                             linear_fallback=False, uncertainty=uncertainty, device="cpu",
                             random_state=0).fit(X[:100], y[:100])
    Xq = X[100:]
    mean, std = reg.predict(Xq, return_std=True)
    np.testing.assert_array_equal(mean, reg.predict(Xq))
    if uncertainty == "gaussian":
        assert reg._gaussian_mc
        reg.std_scale_ = np.zeros(1)  # no noise: the draws are the passes' means
    S = reg.sample_posterior(Xq, n_samples=40, random_state=0)
    assert S.std(-1).min() > 0.01 * std.min()
    # uncentred, the passes' average was a median 0.05 (Gaussian head) and 0.2
    # (mc_dropout) predictive standard deviations away
    np.testing.assert_allclose(S.mean(-1), mean, rtol=0, atol=1e-12 * np.abs(mean).max())
    if uncertainty == "mc_dropout":
        # predict's std is the spread of the 30 draws of the fit's seed
        S30 = reg._draw_samples(reg._prepare_predict(Xq), 30, reg.seed_)
        np.testing.assert_allclose(S30.std(-1), std, rtol=1e-10)
    # a single draw is its pass as drawn: a loop of them keeps the passes' spread
    singles = np.stack([reg.sample_posterior(Xq, n_samples=1, random_state=r)[..., 0]
                        for r in range(20)], -1)
    assert np.median(singles.std(-1) / S.std(-1)) > 0.5


def test_the_fitted_head_predicts_whatever_uncertainty_is_set_to_after_fit():
    """``uncertainty_`` records the head the network was fitted with; predict and
    sample_posterior read it, so set_params(uncertainty=...) after a fit changes nothing
    until the next fit, and a continued fit with another head is refused."""
    X, y = make_friedman1(80, noise=1.0, random_state=0)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=3, dropout=0.2, linear_fallback=False,
              device="cpu", random_state=0)
    assert_the_fitted_head_is_kept(
        lambda head: DIFFormerRegressor(**kw, uncertainty=head), X, y,
        lambda reg: reg.partial_fit(X, y),
        r"partial_fit continues the fitted network, which was built with "
        r"uncertainty='{fitted}' \(now '{other}'\)\. Restore that value, or call "
        r"fit with warm_start=False to fit a new network")


def test_the_first_draws_do_not_depend_on_n_samples():
    """The Gaussian noise is drawn draw by draw: the first k draws of a call take the same
    noise whatever n_samples. Without dropout the draws are the Gaussian's alone and repeat
    exactly; with it the Monte Carlo passes repeat too, and the draws differ only by the
    shift to the centre of the call's passes, one per row and output."""
    X, y = make_friedman1(80, noise=1.0, random_state=0)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=3, linear_fallback=False, device="cpu",
              random_state=0)
    plain = DIFFormerRegressor(**kw, dropout=0.0).fit(X, y)
    np.testing.assert_array_equal(plain.sample_posterior(X[:5], 10, random_state=0),
                                  plain.sample_posterior(X[:5], 25, random_state=0)[:, :10])
    reg = DIFFormerRegressor(**kw, dropout=0.2).fit(X, y)
    assert reg._gaussian_mc
    inputs = reg._prepare_predict(X[:5])
    np.testing.assert_array_equal(reg._mc_outputs(inputs, 10, 7),
                                  reg._mc_outputs(inputs, 25, 7)[..., :10])
    shift = reg.sample_posterior(X[:5], 10, random_state=0) - \
        reg.sample_posterior(X[:5], 25, random_state=0)[:, :10]
    # the noise drawn as one (rows, outputs, n_samples) block changed with n_samples
    assert np.ptp(shift, axis=-1).max() < 1e-12 * np.abs(y).max()


def test_return_std_passed_positionally_is_named():
    """predict(X, True) puts True on ``adjacency``, the second positional argument: a bool
    there is named as such, with the keyword it was meant for, not taken for a graph (the
    classifier's and the other methods' adjacency are checked alike)."""
    from skdiff import DIFFormerClassifier

    X, y = make_friedman1(40, random_state=0)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    reg = DIFFormerRegressor(**kw).fit(X, y)
    clf = DIFFormerClassifier(**kw).fit(X, (y > y.mean()).astype(int))
    text = "'adjacency' must be an array-like or sparse matrix, got bool True"
    for flag in (True, np.True_):
        with pytest.raises(TypeError) as info:
            reg.predict(X, flag)
        assert str(info.value) == (f"{text}; to get the standard deviation pass "
                                   "return_std=True by keyword.")
    for call in (lambda: clf.predict(X, True), lambda: clf.predict_proba(X, True),
                 lambda: reg.attention_graph(X, True),
                 lambda: reg.sample_posterior(X, 3, adjacency=True),
                 lambda: DIFFormerRegressor(**kw).fit(X, y, True)):
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == f"{text}."
