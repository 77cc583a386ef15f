"""Checks that several estimator families' tests run alike."""

import threading

import numpy as np
import pytest


def predictions_while_sampling(fitted, predict, X, n_calls, n_samples):
    """``n_calls`` calls of ``predict(X)`` while another thread keeps drawing
    ``fitted.sample_posterior(X, n_samples, random_state=0)``: (the predictions, that
    thread's draws, the same draws taken alone beforehand)."""
    lone = fitted.sample_posterior(X, n_samples=n_samples, random_state=0)
    stop, draws = threading.Event(), []

    def sampler():
        while not stop.is_set():
            draws.append(fitted.sample_posterior(X, n_samples=n_samples, random_state=0))

    thread = threading.Thread(target=sampler)
    thread.start()
    try:
        preds = [predict(X) for _ in range(n_calls)]
    finally:
        stop.set()
        thread.join()
    return preds, draws, lone


def assert_the_fitted_head_is_kept(make, X, y, continue_fit, refusal):
    """``make(uncertainty)`` builds a regressor; fitted with one head, setting the other
    changes neither ``predict(return_std=True)`` nor ``sample_posterior`` until the next
    fit from scratch, and ``continue_fit(reg)`` (a warm start or ``partial_fit``) is refused
    with a message matching ``refusal.format(fitted=..., other=...)``."""
    for fitted, other in (("gaussian", "mc_dropout"), ("mc_dropout", "gaussian")):
        reg = make(fitted).fit(X, y)
        assert reg.uncertainty_ == fitted
        before = (*reg.predict(X[:5], return_std=True),
                  reg.sample_posterior(X[:5], n_samples=4, random_state=0))
        reg.set_params(uncertainty=other)
        after = (*reg.predict(X[:5], return_std=True),
                 reg.sample_posterior(X[:5], n_samples=4, random_state=0))
        for a, b in zip(before, after):
            np.testing.assert_array_equal(a, b)
        with pytest.raises(ValueError, match=refusal.format(fitted=fitted, other=other)):
            continue_fit(reg)
        assert reg.set_params(warm_start=False).fit(X, y).uncertainty_ == other
