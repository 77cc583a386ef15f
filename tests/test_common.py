"""scikit-learn's estimator checks on every skdiff estimator.

Each estimator runs with a small network and few epochs so the ~50 checks per estimator stay
fast; the checks are about the API contract, not accuracy. Every expected failure carries the
reason a user would accept.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdiff import (
    DIFFormerClassifier,
    DIFFormerRegressor,
    FlowformerClassifier,
    FlowformerRegressor,
    NDPRegressor,
)

_FAST = dict(device="cpu", random_state=0)
_FLOW = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=20, lr=1e-2, batch_size=32,
             pooling="flatten")

ESTIMATORS = [
    DIFFormerClassifier(n_layers=1, hidden_dim=16, max_epochs=20, lr=0.1, early_stopping=False,
                        **_FAST),
    DIFFormerRegressor(n_layers=1, hidden_dim=16, max_epochs=30, lr=0.03, **_FAST),
    # The checks' X has no sequence structure: the flatten head makes the network MLP-like.
    FlowformerRegressor(**_FLOW, **_FAST),
    FlowformerClassifier(**{**_FLOW, "max_epochs": 10}, **_FAST),
    NDPRegressor(n_samples=4, n_sampling_steps=3, n_resample=0, max_context=32, **_FAST),
]

_SEMI_SUPERVISED = (
    "-1 marks unlabelled rows (the LabelSpreading convention), so the labels {-1, 1} of this "
    "check leave one class; scikit-learn exempts its own semi-supervised classifiers from it "
    "by name."
)

_JOINT_MC = (
    "predict is a Monte Carlo mean over joint posterior samples of all query points, so a "
    "different subset or order of the rows draws different random numbers, and the network "
    "attends across the query points, whose joint samples are consistent under "
    "marginalisation only approximately (docs/user_guide/ndp.md); the predictions' "
    "agreement is tested in tests/ndp/test_estimator.py."
)

_ATTENTION_ACROSS_ROWS = (
    "every row takes part in every other row's attention, so removing or repeating a row "
    "changes the representation of the others; a sample weight scales a row's loss only (a "
    "zero weight equals marking the row unlabelled, tested in tests/difformer)."
)

_MINIBATCH_SGD = (
    "trained by mini-batch gradient descent: a row repeated twice lands in other batches than "
    "a row of weight 2, so the two fits differ by optimisation noise; the per-row weighting "
    "of the loss is tested in tests/flowformer."
)

EXPECTED_FAILED = {
    "DIFFormerClassifier": {
        "check_classifiers_classes": _SEMI_SUPERVISED,
        "check_sample_weight_equivalence_on_dense_data": _ATTENTION_ACROSS_ROWS,
        "check_sample_weight_equivalence_on_sparse_data": _ATTENTION_ACROSS_ROWS,
    },
    "DIFFormerRegressor": {
        "check_sample_weight_equivalence_on_dense_data": _ATTENTION_ACROSS_ROWS,
        "check_sample_weight_equivalence_on_sparse_data": _ATTENTION_ACROSS_ROWS,
    },
    "FlowformerRegressor": {
        "check_sample_weight_equivalence_on_dense_data": _MINIBATCH_SGD,
    },
    "FlowformerClassifier": {
        "check_sample_weight_equivalence_on_dense_data": _MINIBATCH_SGD,
    },
    "NDPRegressor": {
        "check_methods_subset_invariance": _JOINT_MC,
        "check_methods_sample_order_invariance": _JOINT_MC,
        "check_regressors_train": (
            "the shipped NDP priors are pretrained on GP functions of 1 to 3 input dimensions; "
            "this check fits a 10-feature linear target, for which the nearest prior (3-D, "
            "used with a warning) does not reach R^2 > 0.5. Train a prior for the dimension "
            "with pretrained=False."
        ),
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
