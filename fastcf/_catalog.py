"""The catalog of the models fastcf explains, and the signposts of those it does not.

The bottom layer of the package (it imports nothing of fastcf): which explainer takes which
model (:func:`signpost`, whose sentence ends every explainer's refusal of a model it does not
take), the tree and linear models by class name, and the models users reach for that no
explainer takes yet, with the reason. :mod:`fastcf.dispatch` routes by it; the explainers'
model readers (``adapters``, the tree and LVQ parsers, the tabular fold) read it without
importing the router above them.
"""

from __future__ import annotations

__all__ = [
    "signpost",
    "final_step",
    "has_column_transformer",
    "TREE_MODELS",
    "LINEAR_MODELS",
    "SCORE_MODELS",
    "COVERS",
    "dual_scores",
]

_LVQ_ATTRS = (("prototypes_",), ("w_", "c_w_"))


TREE_MODELS = frozenset(
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
}
#: the one-line list of what fastcf covers, for refusals (the full list: docs/api/index.md)
COVERS = (
    "fastcf covers linear classifiers and affine pipelines (LinearExplainer), ColumnTransformer "
    "pipelines on DataFrames (TabularExplainer(model, X_train)), LVQ models (LVQExplainer), "
    "scikit-learn, XGBoost and LightGBM trees (TreeExplainer) and ReLU MLPs, incl. PyTorch "
    "(NetExplainer)"
)


def final_step(model):
    steps = getattr(model, "steps", None) if type(model).__name__ == "Pipeline" else None
    return steps[-1][1] if steps else model


def has_column_transformer(model):
    steps = getattr(model, "steps", None) if type(model).__name__ == "Pipeline" else None
    return any(
        type(s).__name__ == "ColumnTransformer" or has_column_transformer(s)
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
    if name in TREE_MODELS:
        return f"fastcf.TreeExplainer takes a {name}"
    if has_column_transformer(model):
        return (
            "this Pipeline encodes DataFrame columns (ColumnTransformer): "
            "fastcf.TabularExplainer(model, X_train) takes it"
        )
    final = type(final_step(model)).__name__
    if final in TREE_MODELS:
        return (
            f"a Pipeline ending in {final}: fastcf.TabularExplainer(model, X_train) takes it "
            f"on the raw DataFrame columns (fastcf.TreeExplainer takes the fitted {final} itself, "
            "on the transformed features)"
        )
    if final in LINEAR_MODELS and final not in ("SVC", "NuSVC"):
        return "fastcf.LinearExplainer takes this model"
    why = _NOT_YET.get(final)
    if why is None:
        return f"no fastcf explainer takes a {final}. {COVERS}"
    return f"no fastcf explainer takes a {final}: {why}. {COVERS}"


#: classifiers that predict the argmax of ``coef_ @ x + intercept_`` (one row: its sign), read
#: by their ``coef_`` and ``intercept_`` (scikit-learn's LinearClassifierMixin)
SCORE_MODELS = frozenset(
    {
        "LogisticRegression",
        "LogisticRegressionCV",
        "SGDClassifier",
        "LinearSVC",
        "RidgeClassifier",
        "RidgeClassifierCV",
        "Perceptron",
        "PassiveAggressiveClassifier",
        "LinearDiscriminantAnalysis",
    }
)
#: the final steps LinearExplainer reads (SVC and NuSVC with kernel="linear" only)
LINEAR_MODELS = SCORE_MODELS | {"SVC", "NuSVC", "OneVsRestClassifier"}


def dual_scores(model):
    """Return whether ``model`` (a fitted linear classifier or pipeline) scores by a dual sum.

    The final step of a pipeline, or an estimator of a ``OneVsRestClassifier``, is an ``SVC``
    or ``NuSVC`` (those ``LinearExplainer`` takes have a linear kernel): libsvm decides by
    ``Σ_i α_i y_i ⟨s_i, x⟩ + b`` over its support vectors, not by ``coef_ @ x + intercept_``,
    and rounds otherwise (:mod:`fastcf._linear.dual`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.svm import SVC, LinearSVC
    >>> X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1])
    >>> dual_scores(SVC(kernel="linear").fit(X, y)), dual_scores(LinearSVC().fit(X, y))
    (True, False)
    """
    while type(model).__name__ == "Pipeline":
        model = model.steps[-1][1]
    name = type(model).__name__
    if name == "OneVsRestClassifier":
        return any(dual_scores(e) for e in getattr(model, "estimators_", ()))
    return name in ("SVC", "NuSVC")
