"""The shared-documentation filler: entries expand with the defaults of their own signature."""

import inspect

import pytest

from skdiff import (
    DIFFormerClassifier,
    DIFFormerRegressor,
    FlowformerClassifier,
    FlowformerRegressor,
    NDPRegressor,
)
from skdiff._docs import fill_doc, parse_docs

DOCS = parse_docs("""
alpha : float
    Step size of the update. well-known-term well-known-term well-known-term
    well-known-term well-known-term well-known-term well-known-term well-known-term
    well-known-term well-known-term well-known-term well-known-term well-known-term
return_std : bool
    Also return the standard deviation.
""")


def test_class_and_method_placeholders_take_the_defaults_of_their_own_signature():
    @fill_doc(DOCS)
    class Model:
        """A model.

        Parameters
        ----------
        %(alpha)s
        """

        def __init__(self, alpha=0.5):
            self.alpha = alpha

        def predict(self, X, alpha=2.0, return_std=False):
            """Predict.

            Parameters
            ----------
            %(alpha)s
            %(return_std)s
            """

    assert "    alpha : float, default=0.5\n" in Model.__doc__
    assert "        alpha : float, default=2.0\n" in Model.predict.__doc__
    assert "        return_std : bool, default=False\n" in Model.predict.__doc__
    assert "%(" not in Model.__doc__ + Model.predict.__doc__
    # a hyphenated word is never split over two lines (reST would read two words)
    assert Model.__doc__.split().count("well-known-term") == 13


def test_a_decorated_function_takes_its_own_defaults_and_stays_the_same_function():
    def step(y, alpha=0.1):
        """Step.

        Parameters
        ----------
        %(alpha)s
        """
        return y + alpha

    assert fill_doc(DOCS)(step) is step
    assert "        alpha : float, default=0.1\n" in step.__doc__
    assert step(1.0) == 1.1


def test_an_unknown_placeholder_is_an_error():
    with pytest.raises(ValueError, match="fill_doc: no documentation for 'gamma'"):
        @fill_doc(DOCS)
        class Model:
            def fit(self, X, gamma=1):
                """Fit.

                %(gamma)s
                """


@pytest.mark.parametrize("method", [
    DIFFormerClassifier.fit, DIFFormerClassifier.partial_fit, DIFFormerClassifier.predict,
    DIFFormerClassifier.score, DIFFormerRegressor.score,
    FlowformerClassifier.partial_fit, FlowformerClassifier.predict,
    FlowformerClassifier.sample_posterior, NDPRegressor.predict, NDPRegressor.sample_posterior,
    NDPRegressor.sample_prior, NDPRegressor.sample_y, NDPRegressor.log_likelihood])
def test_estimator_methods_have_no_placeholder_left_and_document_every_parameter(method):
    doc = inspect.getdoc(method)
    assert "%(" not in doc
    for name, param in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        shown = f"**{name}" if param.kind is param.VAR_KEYWORD else name
        assert f"\n{shown} :" in doc or f"\n{shown}\n" in doc, (method.__qualname__, shown)


@pytest.mark.parametrize("estimator", [DIFFormerClassifier, DIFFormerRegressor,
                                       FlowformerClassifier, FlowformerRegressor, NDPRegressor])
def test_estimator_class_docstrings_have_no_placeholder_left(estimator):
    """The shared entries (``%(device)s`` and the like) are filled in the class docstring,
    which only happens when ``fill_doc`` decorates the class itself."""
    assert "%(" not in estimator.__doc__
