"""``fastcf.counterfactual``: one call for any supported model."""

from __future__ import annotations

from ._catalog import (
    _LVQ_ATTRS,
    _NOT_YET,
    COVERS,
    LINEAR_MODELS,
    TREE_MODELS,
    final_step,
    has_column_transformer,
    signpost,
)
from ._net.pytorch import is_torch
from ._options import split, stage_of

__all__ = ["signpost", "counterfactual", "explainer_for"]


def _family(model, X_train, options=()):
    """Return the family (a key of :data:`fastcf._options.FAMILIES`) that answers ``model``.

    A linear or tree model (or a linear pipeline) goes to ``"tabular"`` when the user gives the
    training DataFrame and an option only :class:`~fastcf.TabularExplainer` takes
    (``immutable=``, ``increase_only=``, ``levels=``, ``allowed=``, …): it answers the same
    model on the DataFrame's columns, with those constraints. Raises the refusal of
    :func:`explainer_for` when no family answers (a linear model is tried by :func:`_build`,
    whose refusal says why).
    """
    if any(all(hasattr(model, a) for a in attrs) for attrs in _LVQ_ATTRS):
        return "lvq"
    if type(model).__name__ in TREE_MODELS:
        return "tabular" if _wants_tabular(X_train, options, "trees") else "trees"
    if is_torch(model):
        return "net"
    final = type(final_step(model)).__name__
    if final == "MLPClassifier" and not has_column_transformer(model):
        return "net"
    if X_train is not None and (has_column_transformer(model) or final in TREE_MODELS):
        return "tabular"
    if has_column_transformer(model):
        raise TypeError(
            "this Pipeline encodes DataFrame columns (ColumnTransformer): explain it with "
            "fastcf.TabularExplainer(model, X_train), which needs the training DataFrame "
            "(or pass X_train= here)"
        )
    if final in TREE_MODELS:
        raise TypeError(
            f"a Pipeline ending in {final}: explain it with fastcf.TabularExplainer(model, "
            f"X_train) on the raw DataFrame columns, which needs the training DataFrame (or "
            f"fastcf.TreeExplainer on the fitted {final} itself, on the transformed features; "
            "or pass X_train= here)"
        )
    return "tabular" if _wants_tabular(X_train, options, "linear") else "linear"


def _wants_tabular(X_train, options, family):
    """Tell whether the DataFrame ``X_train`` came with an option ``family`` does not take.

    Only :class:`~fastcf.TabularExplainer` taking it: that explainer then answers the model on
    the DataFrame's columns.
    """
    return _is_frame(X_train) and any(
        stage_of(n, "tabular") is not None and stage_of(n, family) is None for n in options
    )


def _is_frame(X):
    """Tell whether ``X`` is a pandas DataFrame (without importing pandas)."""
    return type(X).__name__ == "DataFrame" and hasattr(X, "columns")


def _build(family, model, X_train, options):
    """Return the explainer of ``family`` for ``model`` (``options``: its constructor's)."""
    if family == "lvq":
        from .lvq import LVQExplainer

        return LVQExplainer(model, **options)
    if family == "trees":
        from .trees import TreeExplainer

        return TreeExplainer(model, **options)
    if family == "tabular":
        from .tabular import TabularExplainer

        return TabularExplainer(model, X_train, **options)
    if family == "net":
        from .net import NetExplainer

        return NetExplainer(model, **options)
    from .linear import LinearExplainer

    try:
        return LinearExplainer(model, **options)
    except TypeError as exc:
        last = final_step(model)
        final = type(last).__name__
        # (a linear-kernel SVM that LinearExplainer refused, e.g. a multiclass one: not the
        # sentence of the kernel SVMs, its own)
        linear_svm = final in ("SVC", "NuSVC") and getattr(last, "kernel", None) == "linear"
        why = None if linear_svm else _NOT_YET.get(final)
        if why is None and ("pipeline step" in str(exc) or final in LINEAR_MODELS):
            # a step of a linear pipeline, or a linear model LinearExplainer refused (multilabel,
            # one-vs-one voting): its own message says what and why
            raise
        tail = "" if why is None else f": {why}"
        raise TypeError(
            f"fastcf has no explainer for {type(model).__name__}{tail}. {COVERS}."
        ) from exc


def _tabular_needs_data(options, X_train, where):
    """Refuse TabularExplainer's construction options given without its training data."""
    if X_train is not None:
        return
    build = sorted(n for n in options if n != "weights" and stage_of(n, "tabular") == "build")
    if build:
        raise TypeError(
            f"{where} got TabularExplainer options {build} without X_train: pass the "
            "training DataFrame as X_train="
        )


def explainer_for(model, X_train=None, **options):
    """Return the explainer that fits ``model``.

    Parameters
    ----------
    model : estimator
        A fitted linear classifier or a pipeline of affine steps ending in one
        (:class:`~fastcf.LinearExplainer`), an LVQ model (fastcf's own, sklearn-lvq's or sklvq's:
        :class:`~fastcf.LVQExplainer`), a tree classifier or ensemble of scikit-learn,
        XGBoost or LightGBM (:class:`~fastcf.TreeExplainer`), or, with ``X_train``, a pipeline
        that encodes DataFrame columns (``ColumnTransformer``; ending in a linear model, a tree
        model or a ReLU ``MLPClassifier``) or ends in a tree model
        (:class:`~fastcf.TabularExplainer`); a ReLU ``MLPClassifier`` alone or after affine steps
        (:class:`~fastcf.NetExplainer`).
    X_train : pandas.DataFrame, optional
        The training DataFrame: a ``ColumnTransformer`` pipeline, or a pipeline ending in a tree
        model, then goes to ``TabularExplainer(model, X_train, **options)`` (its schema, grids
        and MAD weights are read from it), and so does a linear or tree model given an
        option only that explainer takes (``immutable=``, ``increase_only=``, …). Ignored by
        the other explainers.
    **options
        The chosen explainer's construction options (:class:`~fastcf.TabularExplainer`'s
        ``immutable``, ``increase_only``, …; :class:`~fastcf.LVQExplainer`'s
        ``feature_names``), from the one table of options (:mod:`fastcf._options`): one it
        does not take is a ``TypeError`` naming it.

    Returns
    -------
    LinearExplainer, LVQExplainer, TreeExplainer, NetExplainer or TabularExplainer

    Raises
    ------
    TypeError
        If no explainer takes the model: the message says which explainer would (a
        ``ColumnTransformer`` pipeline needs ``X_train``), or why none fits; or for an option
        the explainer does not take when it is built.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> type(explainer_for(LogisticRegression(max_iter=500).fit(X, y))).__name__
    'LinearExplainer'
    """
    _tabular_needs_data(options, X_train, "explainer_for")
    family = _family(model, X_train, options)
    build, query = split(family, options, where="explainer_for")
    if query:
        raise TypeError(
            f"explainer_for takes the options of an explainer's construction; {sorted(query)} "
            "are options of its queries: give them to explain (or use fastcf.counterfactual)"
        )
    return _build(family, model, X_train, build)


def counterfactual(model, x, target, *, X_train=None, **options):
    """Explain ``x`` with the explainer that fits ``model`` (built per call): the front door.

    For repeated queries, build the explainer once (:func:`explainer_for`,
    :class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`,
    :class:`~fastcf.TreeExplainer`) and call its ``explain``:
    the per-model set-up is then paid once.

    Parameters
    ----------
    model : estimator
    x : array_like of shape (D,) or (N, D)
    target : label or array_like of labels
    X_train : array_like or pandas.DataFrame, optional
        The training data. A ``ColumnTransformer`` pipeline (or a pipeline ending in a tree
        model) is then answered by ``TabularExplainer(model, X_train, ...)``, with ``x`` a
        DataFrame row, and so is a linear or tree model given a DataFrame with an option
        only that explainer takes (``immutable=``, ``increase_only=``, ``allowed=``, …); for
        the other explainers it gives ``weights="mad"`` its MAD (``fit_mad``; a tree model's
        ``fit_data`` for ``plausible=True``).
    **options
        Every option of the explainer the model goes to, from the one table of options
        (:mod:`fastcf._options`): its construction's (``immutable=``, ``increase_only=``,
        ``levels=``, … of :class:`~fastcf.TabularExplainer`) and its queries' (``region=``,
        ``proba=``, ``metric=``, ``weights=``, ``bounds=``, ``frozen=``, ``max_changes=``,
        ``exact=``, ``time_limit=``, …). An option that explainer does not take is a
        ``TypeError`` that names it, and the explainers that take it or the closest word.

    Returns
    -------
    Counterfactual or CounterfactualBatch (a tabular one for a DataFrame pipeline)

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
    _tabular_needs_data(options, X_train, "counterfactual")
    family = _family(model, X_train, options)
    build, query = split(family, options, where="counterfactual")
    ex = _build(family, model, X_train, build)
    if X_train is not None and family != "tabular":
        if (family == "trees" and query.get("plausible")) or family == "net":
            ex.fit_data(X_train)  # (a network's: the box of its queries, and the MAD)
        else:
            ex.fit_mad(X_train)
    return ex.explain(x, target, **query)
