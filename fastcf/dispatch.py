"""``fastcf.counterfactual``: one call for any supported model."""

from __future__ import annotations

__all__ = ["counterfactual", "explainer_for"]

_LVQ_ATTRS = (("prototypes_",), ("w_", "c_w_"))


def explainer_for(model):
    """Return the explainer that fits ``model``.

    Parameters
    ----------
    model : estimator
        A fitted linear probabilistic classifier (or pipeline, see :class:`LinearExplainer`), or
        an LVQ model (fastcf's own, sklearn-lvq's or sklvq's).

    Returns
    -------
    LinearExplainer or LVQExplainer

    Raises
    ------
    TypeError
        If no explainer supports the model.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> type(explainer_for(LogisticRegression(max_iter=500).fit(X, y))).__name__
    'LinearExplainer'
    """
    from .adapters import SUPPORTED_LINEAR

    if any(all(hasattr(model, a) for a in attrs) for attrs in _LVQ_ATTRS):
        from .lvq import LVQExplainer

        return LVQExplainer(model)
    from .linear import LinearExplainer

    try:
        return LinearExplainer(model)
    except TypeError as exc:
        raise TypeError(
            f"fastcf has no explainer for {type(model).__name__}. Supported: "
            f"{SUPPORTED_LINEAR}; LVQ models (fastcf.lvq.GLVQ/GMLVQ/LGMLVQ, sklearn-lvq, sklvq)"
        ) from exc


def counterfactual(model, x, target, **options):
    """Explain ``x`` with the explainer that fits ``model`` (built per call).

    For repeated queries, build the explainer once (:func:`explainer_for`,
    :class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`) and call its ``explain``:
    the per-model set-up is then paid once.

    Parameters
    ----------
    model : estimator
    x : array_like of shape (D,) or (N, D)
    target : label or array_like of labels
    **options
        Passed to the explainer's ``explain``.

    Returns
    -------
    Counterfactual or CounterfactualBatch

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> res = counterfactual(model, X[0], target=1, proba=0.9)
    >>> bool(res.success), round(float(model.predict_proba(res.x[None])[0, 1]), 9)
    (True, 0.9)
    """
    return explainer_for(model).explain(x, target, **options)
