"""``fastcf.counterfactual``: one call for any supported model."""

from __future__ import annotations

__all__ = ["signpost", "counterfactual", "explainer_for"]

_LVQ_ATTRS = (("prototypes_",), ("w_", "c_w_"))


_TREES = frozenset(
    {
        "DecisionTreeClassifier",
        "ExtraTreeClassifier",
        "RandomForestClassifier",
        "ExtraTreesClassifier",
        "GradientBoostingClassifier",
        "HistGradientBoostingClassifier",
        "XGBClassifier",
        "XGBRFClassifier",
        "LGBMClassifier",
        "Booster",  # xgboost.train / lightgbm.train (TreeExplainer reads it as its classifier)
    }
)
# models users reach for that no explainer takes yet, and what to say about them
_NOT_YET = {
    "SVC": "a kernel SVM other than kernel='linear' has no affine scores (LinearExplainer takes "
    "binary SVC(kernel='linear'))",
    "NuSVC": "a kernel SVM other than kernel='linear' has no affine scores",
    "KNeighborsClassifier": "a nearest-neighbour classifier's regions are Voronoi cells of the "
    "training data; no explainer takes them yet",
    "MLPClassifier": "a neural network's scores are not affine; no explainer takes them",
}
#: the one-line list of what fastcf covers, for refusals (the full list: docs/api/index.md)
COVERS = (
    "fastcf covers linear classifiers and pipelines of affine steps (LinearExplainer), "
    "ColumnTransformer pipelines on DataFrames (TabularExplainer(model, X_train)), LVQ models "
    "(LVQExplainer) and tree ensembles of scikit-learn, XGBoost and LightGBM (TreeExplainer)"
)


def _final(model):
    steps = getattr(model, "steps", None) if type(model).__name__ == "Pipeline" else None
    return steps[-1][1] if steps else model


def _has_column_transformer(model):
    steps = getattr(model, "steps", None) if type(model).__name__ == "Pipeline" else None
    return any(
        type(s).__name__ == "ColumnTransformer" or _has_column_transformer(s)
        for _, s in (steps or [])[:-1]
    )


def signpost(model):
    """Return one sentence: which explainer takes ``model``, or why none does.

    Every explainer's refusal of a model it does not take ends with it, so that a refusal
    always says what would work (or that nothing in fastcf does, and why).

    Examples
    --------
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> signpost(KNeighborsClassifier())[:55]
    'no fastcf explainer takes a KNeighborsClassifier: a nea'
    """
    if any(all(hasattr(model, a) for a in attrs) for attrs in _LVQ_ATTRS):
        return "fastcf.LVQExplainer takes this model"
    name = type(model).__name__
    if name in _TREES:
        return f"fastcf.TreeExplainer takes a {name}"
    if _has_column_transformer(model):
        return (
            "this Pipeline encodes DataFrame columns (ColumnTransformer): "
            "fastcf.TabularExplainer(model, X_train) takes it"
        )
    final = type(_final(model)).__name__
    if final in _TREES:
        return (
            f"a Pipeline ending in {final}: fastcf.TabularExplainer(model, X_train) takes it "
            f"on the raw DataFrame columns (fastcf.TreeExplainer takes the fitted {final} itself, "
            "on the transformed features)"
        )
    from .adapters import SUPPORTED_LINEAR

    if final in SUPPORTED_LINEAR and final not in ("SVC", "NuSVC"):
        return "fastcf.LinearExplainer takes this model"
    why = _NOT_YET.get(final)
    if why is None:
        return f"no fastcf explainer takes a {final}. {COVERS}"
    return f"no fastcf explainer takes a {final}: {why}. {COVERS}"


def explainer_for(model, X_train=None, **tabular):
    """Return the explainer that fits ``model``.

    Parameters
    ----------
    model : estimator
        A fitted linear classifier or a pipeline of affine steps ending in one
        (:class:`~fastcf.LinearExplainer`), an LVQ model (fastcf's own, sklearn-lvq's or sklvq's:
        :class:`~fastcf.LVQExplainer`), a tree classifier or ensemble of scikit-learn,
        XGBoost or LightGBM (:class:`~fastcf.TreeExplainer`), or, with ``X_train``, a pipeline
        that encodes DataFrame columns (``ColumnTransformer``) or ends in a tree model
        (:class:`~fastcf.TabularExplainer`).
    X_train : pandas.DataFrame, optional
        The training DataFrame: a ``ColumnTransformer`` pipeline, or a pipeline ending in a tree
        model, then goes to ``TabularExplainer(model, X_train, **tabular)`` (its schema, grids
        and MAD weights are read from it). Ignored by the other explainers.
    **tabular
        :class:`~fastcf.TabularExplainer`'s options (``immutable``, ``increase_only``, …),
        with ``X_train`` only.

    Returns
    -------
    LinearExplainer, LVQExplainer, TreeExplainer or TabularExplainer

    Raises
    ------
    TypeError
        If no explainer takes the model: the message says which explainer would (a
        ``ColumnTransformer`` pipeline needs ``X_train``), or why none fits.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> type(explainer_for(LogisticRegression(max_iter=500).fit(X, y))).__name__
    'LinearExplainer'
    """
    if tabular and X_train is None:
        raise TypeError(
            f"explainer_for got TabularExplainer options {sorted(tabular)} without X_train"
        )
    if any(all(hasattr(model, a) for a in attrs) for attrs in _LVQ_ATTRS):
        from .lvq import LVQExplainer

        return LVQExplainer(model)
    name = type(model).__name__
    if name in _TREES:
        from .trees import TreeExplainer

        return TreeExplainer(model)
    if X_train is not None and (
        _has_column_transformer(model) or type(_final(model)).__name__ in _TREES
    ):
        from .tabular import TabularExplainer

        return TabularExplainer(model, X_train, **tabular)
    if _has_column_transformer(model):
        raise TypeError(
            "this Pipeline encodes DataFrame columns (ColumnTransformer): explain it with "
            "fastcf.TabularExplainer(model, X_train), which needs the training DataFrame "
            "(or pass X_train= here)"
        )
    final = type(_final(model)).__name__
    if final in _TREES:
        raise TypeError(
            f"a Pipeline ending in {final}: explain it with fastcf.TabularExplainer(model, "
            f"X_train) on the raw DataFrame columns, which needs the training DataFrame (or "
            f"fastcf.TreeExplainer on the fitted {final} itself, on the transformed features; "
            "or pass X_train= here)"
        )
    from .linear import LinearExplainer

    try:
        return LinearExplainer(model)
    except TypeError as exc:
        from .adapters import SUPPORTED_LINEAR

        why = _NOT_YET.get(final)
        if why is None and ("pipeline step" in str(exc) or final in SUPPORTED_LINEAR):
            # a step of a linear pipeline, or a linear model LinearExplainer refused (multilabel,
            # one-vs-one voting): its own message says what and why
            raise
        tail = "" if why is None else f": {why}"
        raise TypeError(f"fastcf has no explainer for {name}{tail}. {COVERS}.") from exc


def counterfactual(model, x, target, *, X_train=None, **options):
    """Explain ``x`` with the explainer that fits ``model`` (built per call).

    For repeated queries, build the explainer once (:func:`explainer_for`,
    :class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`,
    :class:`~fastcf.TreeExplainer`) and call its ``explain``:
    the per-model set-up is then paid once.

    Parameters
    ----------
    model : estimator
    x : array_like of shape (D,) or (N, D)
    target : label or array_like of labels
    X_train : pandas.DataFrame, optional
        The training DataFrame of a ``ColumnTransformer`` pipeline (or of a pipeline ending in
        a tree model): the query is then answered by
        ``TabularExplainer(model, X_train).explain(x, target, **options)``, with ``x`` a
        DataFrame row.
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
    return explainer_for(model, X_train).explain(x, target, **options)
