"""partial_fit's ridge skip: the moments of the rows seen against dense references."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score

from skdiff import FlowformerRegressor
from skdiff._rows import row_hashes
from skdiff.datasets import make_windows
from skdiff.flowformer._data import (
    RIDGE_PENALTIES,
    RIDGE_SPLITS,
    RidgeMoments,
    ridge_skip,
    updated_ridge_skip,
)

ANCHOR = (2, slice(3, None))


@pytest.fixture
def rows():
    """Features laid out as the skip's (mean, std, last, window) and two targets."""
    rng = np.random.default_rng(0)
    window = rng.normal(size=(400, 12)).cumsum(1)
    F = np.column_stack([window.mean(1), window.std(1), window[:, -1], window])
    Y = window[:, -1:] + window[:, -3:-1] @ np.array([[0.3, -0.2], [0.5, 0.1]]) \
        + 0.5 * rng.normal(size=(400, 2))
    w = rng.uniform(0.5, 2.0, 400)
    return F, Y, w


def _ridge(F, Y, w, alpha):
    """Slow reference: scikit-learn's Ridge, the weights normalised to sum to one (the
    penalty is then relative to the weighted covariance, as the skip's is)."""
    return Ridge(alpha=alpha).fit(F, Y, sample_weight=w / w.sum())


def _anchored(F, Y):
    A = F.copy()
    A[:, ANCHOR[1]] -= F[:, 2:3]
    return A, Y - F[:, 2:3]


def test_moments_solve_and_score_as_the_rows_themselves(rows):
    F, Y, w = rows
    a, b = RidgeMoments.of(F[:250], Y[:250], w[:250]), RidgeMoments.of(F[250:], Y[250:], w[250:])
    both = a + b
    W, bias = both.solve(0.1)
    ref = _ridge(F, Y, w, 0.1)
    np.testing.assert_allclose(W, ref.coef_.T, atol=1e-8)
    np.testing.assert_allclose(bias, ref.intercept_, atol=1e-8)
    # the weighted MSE of any solution on some rows, from their moments
    err = (F[250:] @ W + bias - Y[250:]) ** 2
    np.testing.assert_allclose(b.residual(W, bias), w[250:] @ err / w[250:].sum(), rtol=1e-8)
    # moments subtract: all rows less the last 150 are the first 250
    rest = both - b
    np.testing.assert_allclose(rest.solve(0.1)[0], a.solve(0.1)[0], atol=1e-8)
    assert rest.n == 250


@pytest.mark.parametrize("n_first", [60, 10])
def test_a_streamed_skip_is_the_ridge_of_every_row_with_the_prequential_penalty(rows, n_first):
    # a first batch of 10 rows: the parts that follow it are scored only once more rows
    # than the skip's 15 features came before them
    F, Y, w = rows
    first = np.arange(n_first)
    *_, state = ridge_skip(F, Y, first, 4, weights=w, anchor=ANCHOR, return_state=True)
    given = copy.deepcopy(state)
    batches = [np.arange(n_first + 40 * i, n_first + 40 * (i + 1)) for i in range(8)]
    for batch in batches:
        skip, _, state = updated_ridge_skip(state, F[batch], Y[batch], w[batch],
                                            row_hashes(F[batch], Y[batch]))
    # the caller's state is left as it was (a failed partial_fit restores the old one)
    assert given.moments.n == n_first and not given.errors.any()
    n = n_first + 320
    assert state.moments.n == n
    # slow reference of the penalty: every part of every batch (up to RIDGE_SPLITS parts)
    # scored by each penalty's ridge of all the rows before it, squared errors summed
    A, Z = _anchored(F, Y)
    errors = np.zeros(len(RIDGE_PENALTIES))
    seen = list(first)
    for batch in batches:
        for part in np.array_split(batch, min(RIDGE_SPLITS, len(batch))):
            for i, alpha in enumerate(RIDGE_PENALTIES):
                if len(seen) > A.shape[1]:
                    pred = _ridge(A[seen], Z[seen], w[seen], alpha).predict(A[part])
                    errors[i] += w[part] @ ((pred - Z[part]) ** 2).mean(1)
            seen += list(part)
    np.testing.assert_allclose(state.errors, errors, rtol=1e-6)
    alpha = RIDGE_PENALTIES[int(np.argmin(errors))]
    assert state.alpha == alpha
    # the skip: the anchored ridge of all rows, as the same map of the features
    ref = _ridge(A[:n], Z[:n], w[:n], alpha)
    pred = F[:n] @ skip[0][:2].T + skip[1][:2]
    np.testing.assert_allclose(pred, ref.predict(A[:n]) + F[:n, 2:3], atol=1e-7)
    # the Gaussian head's variance biases: the ridge's residual variances
    resid = w[:n] @ (ref.predict(A[:n]) - Z[:n]) ** 2 / w[:n].sum()
    np.testing.assert_allclose(np.log1p(np.exp(skip[1][2:])), resid, rtol=1e-7)


def test_rows_given_again_count_once_and_held_out_rows_are_taken_out(rows):
    F, Y, w = rows
    *_, state = ridge_skip(F, Y, np.arange(60), 2, weights=w, anchor=ANCHOR,
                           return_state=True)
    state.seen = row_hashes(F[:60], Y[:60])
    batch = np.r_[np.arange(60, 160), np.arange(60, 70)]  # ten rows twice in one call
    skip, _, once = updated_ridge_skip(state, F[batch], Y[batch], w[batch],
                                       row_hashes(F[batch], Y[batch]))
    assert once.moments.n == 160
    # an epoch loop: the same rows again, and the first call's rows, change nothing
    for again in (np.arange(60, 160), np.arange(0, 60)):
        skip2, _, twice = updated_ridge_skip(once, F[again], Y[again], w[again],
                                             row_hashes(F[again], Y[again]))
        assert twice.moments.n == 160 and twice.alpha == once.alpha
        np.testing.assert_array_equal(twice.errors, once.errors)
        np.testing.assert_allclose(skip2[0], skip[0], atol=1e-12)
    # the solution without a call's held-out rows, for the calibration
    held = np.zeros(len(batch), dtype=bool)
    held[80:100] = True  # rows 140..159
    _, unseen, _ = updated_ridge_skip(state, F[batch], Y[batch], w[batch],
                                      row_hashes(F[batch], Y[batch]), held_out=held)
    A, Z = _anchored(F, Y)
    ref = _ridge(A[:140], Z[:140], w[:140], once.alpha)
    np.testing.assert_allclose(F[:140] @ unseen[0].T + unseen[1],
                               ref.predict(A[:140]) + F[:140, 2:3], atol=1e-7)


def test_row_hashes_are_those_of_the_rows_whatever_the_batch():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(50, 7)).astype(np.float32), rng.normal(size=(50, 1))
    h = row_hashes(X, y)
    np.testing.assert_array_equal(row_hashes(X[10:20], y[10:20]), h[10:20])
    assert len(np.unique(h)) == 50
    y2 = y.copy()
    y2[3] += 1e-12  # another target: another row
    assert row_hashes(X, y2)[3] != h[3]


def test_partial_fit_on_a_stream_ends_near_the_ridge_of_all_its_rows():
    # the skip used to stay the ridge of the first call's 25 rows (test R2 0.56 after the
    # whole stream); now it is refitted on every row given (1.00, as fit)
    X, y = make_regression(n_samples=975, n_features=20, n_informative=10, noise=1.0,
                           random_state=0)
    X_test, y_test = X[475:], y[475:]
    kw = dict(n_layers=1, hidden_dim=16, random_state=0)
    reg = FlowformerRegressor(**kw).partial_fit(X[:25], y[:25])
    first = r2_score(y_test, reg.predict(X_test))
    for i in range(30):
        reg.partial_fit(X[25 + 15 * i:40 + 15 * i], y[25 + 15 * i:40 + 15 * i])
    assert first < 0.7
    assert r2_score(y_test, reg.predict(X_test)) > 0.99
    # the state travels with the estimator: a pickled one continues the same way
    again = pickle.loads(pickle.dumps(reg))
    for est in (reg, again):
        est.partial_fit(X[:60], y[:60])
    np.testing.assert_array_equal(again.predict(X_test), reg.predict(X_test))
    # an epoch loop over the same rows fits the skip to them once
    loop = FlowformerRegressor(**kw).partial_fit(X[:25], y[:25])
    loop.partial_fit(X[25:475], y[25:475])
    kept = loop.module_.skip.weight.detach().clone()
    loop.partial_fit(X[25:475], y[25:475])
    np.testing.assert_array_equal(loop.module_.skip.weight.detach(), kept)
    assert r2_score(y_test, loop.predict(X_test)) > 0.99


def test_a_continued_fit_trains_on_the_correction_the_last_call_set_aside():
    # when the one-standard-error test sets the encoder's correction aside (its head's mean
    # rows zeroed for predict), the next partial_fit starts from the trained correction,
    # not from zero, so training accumulates over calls
    from skorch.callbacks import Callback

    class HeadAtStart(Callback):
        def on_train_begin(self, net, **kwargs):
            self.weight_ = net.module_.head.weight.detach().clone()

    X, y = make_regression(n_samples=300, n_features=16, noise=1.0, random_state=0)
    probe = HeadAtStart()
    reg = FlowformerRegressor(n_layers=1, hidden_dim=16, max_epochs=3, random_state=0,
                              callbacks=[probe]).fit(X, y)
    assert not reg.encoder_used_  # a linear target: the ridge forecast alone
    k = reg.n_outputs_
    assert not reg.module_.head.weight[:k].any()
    set_aside = reg._unused_head_[0].copy()
    assert np.abs(set_aside).max() > 0
    reg.partial_fit(X[:100], y[:100])
    np.testing.assert_array_equal(probe.weight_[:k].numpy(), set_aside)


def test_a_continued_call_with_few_validation_rows_keeps_the_calibration_and_the_choice(
        monkeypatch):
    # a partial_fit call of 30 windows holds out 3: too few to calibrate the intervals
    # (they were reset to an uncalibrated scale of 1) or to judge the encoder's correction
    # (a one-standard-error test on 3 rows); both stay as the last call left them
    import skdiff.flowformer._estimators as flow

    rng = np.random.default_rng(0)
    s = np.cumsum(rng.normal(size=700))
    X, y = make_windows(s, 16, 2)
    reg = FlowformerRegressor(n_layers=1, hidden_dim=16, max_epochs=3,
                              random_state=0).fit(X[:400], y[:400])
    scale, used = reg.std_scale_.copy(), reg.encoder_used_
    assert not np.allclose(scale, 1.0)

    def no_test(*args, **kwargs):
        raise AssertionError("a continued call of 3 validation rows ran the comparison")

    monkeypatch.setattr(flow, "beats_by_se", no_test)
    reg.partial_fit(X[400:430], y[400:430])
    np.testing.assert_array_equal(reg.std_scale_, scale)
    assert reg.encoder_used_ == used
    # a fresh fit on as few rows does compare (there is nothing to keep)
    with pytest.raises(AssertionError, match="ran the comparison"):
        FlowformerRegressor(n_layers=1, hidden_dim=16, max_epochs=1,
                            random_state=0).fit(X[:30], y[:30])
