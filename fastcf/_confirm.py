"""``verify="model"``: every success confirmed by the model the user gave, not only by a copy.

fastcf certifies each answer with its own copy of the model (the folded scores ``A x + b``, the
prototypes), which is checked against the model once when the explainer is built
(:func:`fastcf._fold.check_scores`). ``verify="model"`` adds one call of the model's own
``predict`` (and, for ``proba=``, its ``predict_proba``) per answer that succeeded, each answer
alone, as a user checks one (a batch call can round a row's scores by the rows beside it), and
turns every success the model does not confirm into ``success=False`` with status 4: the answer
lies within the two computations' rounding of the decision boundary (or of τ). Its cost is those
calls: about 50–200 µs an answer for a scikit-learn pipeline, more than a single linear query
itself. (The linear family asks the model for ``proba=`` in its judge, which re-aims what the
model refuses: :class:`fastcf._linear.dual.FoldGap`.)
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from ._status import Status

__all__ = ["model_input", "confirm", "check_verify", "ask", "forest_proba"]

MODEL_MESSAGE = (
    "the model's own predict{what} does not confirm this answer: it lies within rounding of the "
    "decision boundary as the model computes it; ask for a larger margin= (or proba=)"
)


def check_verify(verify, model):
    """Return ``verify`` checked: ``"fold"`` or ``"model"`` (which needs the model itself)."""
    if verify not in ("fold", "model"):
        raise ValueError(f"verify must be 'fold' or 'model'; got {verify!r}")
    if verify == "model" and model is None:
        raise ValueError(
            "verify='model' needs the fitted model itself; this explainer was built from arrays "
            "(from_arrays), so there is no model to ask: use verify='fold'"
        )
    return verify


def model_input(model, X):
    """Return rows ``X`` in the model's input format (a DataFrame if it was fitted on one)."""
    names = getattr(model, "feature_names_in_", None)
    if names is None or hasattr(X, "columns"):
        return X
    import pandas as pd

    return pd.DataFrame(np.asarray(X), columns=list(names))


def ask(model, X, proba=True):
    """Return ``(model.predict(X), model.predict_proba(X))``: the model's own verdicts.

    The same arrays as the two calls (``proba=False``: ``None`` for the second), with the work
    they share done once where the model's own code would do it twice:

    * a scikit-learn ``Pipeline`` (the class itself, not a subclass) transforms ``X`` once
      through its steps and asks its final step (recursively), which is what its ``predict``
      and ``predict_proba`` do, each on its own;
    * a scikit-learn forest classifier (a class whose ``predict`` and ``predict_proba`` are
      ``ForestClassifier``'s, one output) has its ``predict`` defined as
      ``classes_.take(argmax(predict_proba(X)))``; that is computed here from one
      ``predict_proba``, itself summed over the trees as the forest does (:func:`forest_proba`)
      without the forest's per-tree dispatch (milliseconds at one row).

    * a few rows of a gradient-boosting model (XGBoost, LightGBM, HistGradientBoosting) are
      asked on one thread (:func:`_one_thread`: no OpenMP team started for a judge's row),
      where that gives the model's own bits.

    Any other model is simply called twice.
    """
    Pipeline, ForestClassifier = _sklearn_types()
    if Pipeline is not None and type(model) is Pipeline:
        Xt = X
        for _, step in model.steps[:-1]:
            if step is not None and not (isinstance(step, str) and step == "passthrough"):
                Xt = step.transform(Xt)
        final = model.steps[-1][1]
        if final is not None and not isinstance(final, str):
            return ask(final, Xt, proba)
    if (
        ForestClassifier is not None
        and isinstance(model, ForestClassifier)
        and type(model).predict is ForestClassifier.predict
        and type(model).predict_proba is ForestClassifier.predict_proba
        and not {"predict", "predict_proba"} & vars(model).keys()  # (no method set on it)
        and getattr(model, "n_outputs_", None) == 1
    ):
        P = forest_proba(model, X)
        if P is None:
            P = model.predict_proba(X)
        return model.classes_.take(np.argmax(P, axis=1), axis=0), (P if proba else None)
    one = _one_thread(model, X, proba)
    if one is not None:
        return one
    label = model.predict(X)
    return label, (model.predict_proba(X) if proba else None)


#: at most this many rows are asked of a gradient-boosting model on one thread (a judge asks one)
FEW_ROWS = 16
_ONE_THREAD = weakref.WeakKeyDictionary()  # model -> (its one-thread verdicts, or None; key)


def _one_thread(model, X, proba):
    """Return ``ask(model, X, proba)`` computed on one thread, or ``None`` (ask the model).

    For a few rows (at most :data:`FEW_ROWS`: a judge's one row) of XGBoost's
    ``XGBClassifier``, LightGBM's ``LGBMClassifier`` and scikit-learn's
    ``HistGradientBoostingClassifier``, whose ``predict`` runs an OpenMP team on every core
    (seconds for one row on a loaded machine: the team's start-up, not the trees). Neither the
    model nor any process-wide setting changes:

    * XGBoost: a shallow copy of the classifier holding a copy of its booster with
      ``nthread=1`` (made once per booster, kept here);
    * LightGBM: ``predict``/``predict_proba`` with ``num_threads=1`` (a prediction keyword);
    * HistGradientBoosting: its ``_raw_predict(X, n_threads=1)`` (private; the one sum its
      ``predict`` and ``predict_proba`` each compute), then their own decision and link.

    Each row's prediction is the same sum in the same order on any number of threads; still,
    the first time a model is asked, the verdicts are compared bit for bit with the model's
    own ``predict`` and ``predict_proba`` on the same rows, and a model where they differ (or
    that is not the class itself, a method set on it, a copy that fails) is always asked
    itself.
    """
    n = getattr(X, "shape", (FEW_ROWS + 1,))[0]
    if n > FEW_ROWS:
        return None
    try:
        hit = _ONE_THREAD.get(model)
    except TypeError:  # (not weak-referenceable or not hashable)
        return None
    key = _twin_key(model)
    if hit is not None and hit[1] is key:
        fn = hit[0]
        return None if fn is None else fn(X, proba)
    fn = _twin(model)
    if fn is not None:
        try:
            mine = fn(X, True)
            own = model.predict(X), model.predict_proba(X)
            same = all(
                np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
                for a, b in zip(mine, own, strict=True)
            )
        except Exception:  # noqa: BLE001 - any failure: the model itself is asked
            same = False
        fn = fn if same else None
        _ONE_THREAD[model] = (fn, key)
        return own if proba else (own[0], None)
    _ONE_THREAD[model] = (None, key)
    return None


def _twin_key(model):
    """Return what a model's one-thread verdicts were made from (a refit replaces it)."""
    return vars(model).get("_Booster", vars(model).get("_predictors"))


def _twin(model):
    """Return ``fn(X, proba) -> (label, P or None)``: the model's verdicts on one thread."""
    kind = type(model).__module__.split(".")[0]
    if {"predict", "predict_proba"} & vars(model).keys():
        return None
    try:
        if kind == "xgboost" and type(model).__name__ == "XGBClassifier":
            import copy

            from xgboost import XGBClassifier

            if type(model) is not XGBClassifier:
                return None
            twin = copy.copy(model)  # (the user's classifier untouched)
            booster = model.get_booster().copy()
            booster.set_param({"nthread": 1})
            twin._Booster = booster
            twin.n_jobs = 1
            return lambda X, proba: (twin.predict(X), twin.predict_proba(X) if proba else None)
        if kind == "lightgbm" and type(model).__name__ == "LGBMClassifier":
            from lightgbm import LGBMClassifier

            if type(model) is not LGBMClassifier:
                return None
            return lambda X, proba: (
                model.predict(X, num_threads=1),
                model.predict_proba(X, num_threads=1) if proba else None,
            )
        if kind == "sklearn" and type(model).__name__ == "HistGradientBoostingClassifier":
            return _hist_twin(model)
    except Exception:  # noqa: BLE001 - no twin: the model itself is asked
        return None
    return None


def _hist_twin(model):
    """HistGradientBoostingClassifier's ``predict``/``predict_proba`` on one thread, or None."""
    import inspect

    from sklearn.ensemble import HistGradientBoostingClassifier as H

    if type(model) is not H or "n_threads" not in inspect.signature(H._raw_predict).parameters:
        return None

    def fn(X, proba):
        raw = model._raw_predict(X, n_threads=1)
        if raw.shape[1] == 1:  # (as its predict: "> 0", not ">= 0")
            label = model.classes_[(raw.ravel() > 0).astype(int)]
        else:
            label = model.classes_[np.argmax(raw, axis=1)]
        return label, (model._loss.predict_proba(raw) if proba else None)

    return fn


_FOREST_SUMS = weakref.WeakKeyDictionary()  # forest -> its trees' sum equals its predict_proba


def forest_proba(forest, X):
    """Return ``forest.predict_proba(X)`` summed over its trees here, or ``None``.

    What ``ForestClassifier.predict_proba`` computes with one job: the rows as float32, each
    tree's own ``predict_proba(X32, check_input=False)`` added in the order of
    ``estimators_`` into float64 zeros, then divided by the number of trees; here without its
    per-tree dispatch (``joblib``) and each tree's ``check_is_fitted``, calling each tree's
    compiled ``tree_.predict`` as its ``predict_proba`` does. The first time a forest is asked,
    the sum is compared bit for bit with the forest's own ``predict_proba`` of the same rows; if
    they differ (another scikit-learn's arithmetic), that forest is always asked itself.

    ``None`` (ask the forest itself) for input the forest would check or convert in another way:
    anything but a 2-D float ndarray (or, for a forest fitted with feature names, a DataFrame of
    float64 columns with those names), values that are not finite as float32 (the forest raises
    or routes them), and a forest with ``n_jobs`` other than None or 1 (its threads add the trees
    in the order they finish).
    """
    if getattr(forest, "n_jobs", None) not in (None, 1):
        return None
    names = getattr(forest, "feature_names_in_", None)
    if names is None:
        if not (isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64)):
            return None
        X32 = X
    else:
        columns = getattr(X, "columns", None)
        if columns is None or list(columns) != list(names):
            return None
        if not all(d == np.float64 for d in X.dtypes):
            return None
        X32 = X.to_numpy(dtype=np.float64)
    if X32.ndim != 2 or X32.shape[1] != getattr(forest, "n_features_in_", -1):
        return None
    with np.errstate(over="ignore"):  # (a value past float32 is inf: the forest raises)
        X32 = np.ascontiguousarray(X32, dtype=np.float32)
    if not np.isfinite(X32).all():
        return None
    k = int(forest.n_classes_)
    P = np.zeros((X32.shape[0], k), dtype=np.float64)
    for tree in forest.estimators_:
        # = tree.predict_proba(X32, check_input=False) without its check_is_fitted: one row
        # through 100 trees 0.6 instead of 1.5 ms (side by side, one process, 2026-11-27);
        # scikit-learn 1.6-1.9 return tree_.predict(X)[:, :k]
        P += tree.tree_.predict(X32)[:, :k]
    P /= len(forest.estimators_)
    same = _FOREST_SUMS.get(forest)
    if same is None:
        own = np.asarray(forest.predict_proba(X))
        same = _FOREST_SUMS[forest] = bool(own.shape == P.shape and np.array_equal(own, P))
    return P if same else None


def _sklearn_types():
    """Return (Pipeline, ForestClassifier), or ``None`` for either scikit-learn lacks."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        Pipeline = None
    try:
        from sklearn.ensemble._forest import ForestClassifier
    except ImportError:  # pragma: no cover - a private path scikit-learn might move
        ForestClassifier = None
    return Pipeline, ForestClassifier


def confirm(model, res, classes, proba=None):
    """Return ``res`` with each success that ``model.predict`` does not confirm made a failure.

    Parameters
    ----------
    model : estimator
        The model the user gave.
    res : Counterfactual or CounterfactualBatch
    classes : ndarray
        The explainer's ``classes_`` (the order of ``res.proba`` and of ``predict_proba``).
    proba : float, optional
        τ of a ``proba=`` query: the model's ``predict_proba`` must reach it too.
    """
    single = np.ndim(res.x) == 1
    X = np.atleast_2d(res.x)
    success = np.atleast_1d(np.asarray(res.success, dtype=bool))
    rows = np.flatnonzero(success)
    if rows.size == 0:
        return res
    targets = np.atleast_1d(np.asarray(res.target, dtype=object))
    R = model_input(model, X[rows])
    # each answer alone, as a user checks one: a batch call can round a row's scores by the
    # rows beside it (a matrix product's blocking, a pipeline's steps), and an answer sits on
    # the decision boundary (a tie) or at p = τ (docs/scripts/soak_net.py, seed 62, example 36)
    index = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
    ok = np.zeros(rows.size, dtype=bool)
    for i, t in enumerate(np.asarray(targets[rows]).tolist()):
        label, P = ask(model, R[i : i + 1], proba is not None)
        ok[i] = np.asarray(label, dtype=object)[0] == t
        if proba is not None and ok[i]:
            ok[i] = float(np.asarray(P, dtype=np.float64)[0, index[t]]) >= proba
    if ok.all():
        return res
    bad = np.zeros(success.shape, dtype=bool)
    bad[rows[~ok]] = True
    msg = MODEL_MESSAGE.format(what="/predict_proba" if proba is not None else "")
    if single:
        return dataclasses.replace(res, success=False, status=int(Status.NUMERIC), message=msg)
    return dataclasses.replace(
        res,
        success=success & ~bad,
        status=np.where(bad, int(Status.NUMERIC), res.status),
        message=[msg if b else m for b, m in zip(bad, res.message, strict=True)],
    )
