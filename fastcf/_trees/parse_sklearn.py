"""scikit-learn's tree classifiers as a :class:`~fastcf._trees.forest.Forest`.

The split rule (``sklearn/tree/_tree.pyx``): X is cast to float32 when the model predicts, and a
row goes left at a node iff ``float32(x_f) <= threshold`` (threshold is a float64, in general
between two float32 values). In float64 terms (:func:`boundary`): let v be the largest float32
``<= threshold``; then ``float32(x) <= threshold`` ⟺ ``float32(x) <= v`` ⟺ ``x <= b``, where b
is the largest float64 that float32 rounding sends to v or below. With v⁺ the next float32 above
v and m = (v + v⁺)/2 (exact in float64), round-to-nearest sends ``x < m`` to v (or below) and
``x > m`` to v⁺; at ``x = m`` the tie goes to the one of v, v⁺ with an even significand. So
``b = m`` when v is even and ``b = m⁻`` (the float64 below m) when v is odd; every parsed split
is checked (``float32(b) <= threshold < float32(nextafter(b))``), and the whole parsed model
against the model's own ``apply`` / ``predict_proba`` / ``decision_function`` / ``predict`` on
probe rows placed on and next to every threshold (:func:`check`).

Inputs beyond the float32 range become ±inf, which scikit-learn refuses: the domain is
``[-FLT_MAX, FLT_MAX]``. A NaN goes to the child ``missing_go_to_left`` names (scikit-learn >=
1.3; a node fitted without missing values sends them to the child with more samples), where the
model's own ``predict`` takes NaN at all (:func:`_takes_nan`; ``GradientBoostingClassifier``
does not); a NaN of a query is answered by :mod:`fastcf._trees.missing`.

Aggregation, as the models compute it:

* ``DecisionTreeClassifier`` (and ``ExtraTreeClassifier``): ``predict_proba`` is the leaf's
  ``tree_.value`` row (class fractions); ``predict`` its first argmax.
* ``RandomForestClassifier`` / ``ExtraTreesClassifier``: ``predict_proba`` adds the trees'
  ``predict_proba`` rows in order to zeros, then divides by the number of trees (with
  ``n_jobs > 1`` the order of the additions is the threads'; :class:`~.forest.Forest.delta`
  covers it); ``predict`` is the first argmax.
* ``GradientBoostingClassifier``: the raw score starts from the initial estimator's constant
  and adds ``learning_rate * value`` of each stage's tree (one tree per class and stage for
  K > 2 classes). Binary: class 1 iff ``decision_function >= 0`` (``_gb.py``: ``raw >= 0``),
  ``p_1 = expit(raw)`` (``expit(2 raw)`` for the exponential loss); multiclass: argmax, softmax.
"""

from __future__ import annotations

import numpy as np

from .._catalog import signpost
from .forest import Argmax, Forest, Identity, Logistic, Sign, Softmax, Tree

__all__ = ["parse", "check", "boundary", "go_left", "RULE", "DOMAIN"]

RULE = "float32(x) <= threshold"
_F32_MAX = float(np.finfo(np.float32).max)
DOMAIN = (-_F32_MAX, _F32_MAX)

_SUPPORTED = (
    "DecisionTreeClassifier, ExtraTreeClassifier, RandomForestClassifier, ExtraTreesClassifier "
    "and GradientBoostingClassifier"
)


def go_left(x, threshold):
    """Return scikit-learn's own rule ``float32(x) <= threshold`` (elementwise).

    Compared in float64 as its Cython code does (a float32 against a Python float would compare
    in float32).
    """
    with np.errstate(over="ignore"):
        x32 = np.asarray(x, dtype=np.float64).astype(np.float32)
    return x32.astype(np.float64) <= np.asarray(threshold, dtype=np.float64)


def boundary(threshold):
    """Return the float64 b with ``float32(x) <= threshold`` ⟺ ``x <= b`` (see the module doc).

    Returns ``-inf`` for a threshold below ``-FLT_MAX`` (every finite x goes right) and a value
    ``>= FLT_MAX`` for one at or above it (every x of the domain goes left).
    """
    t = np.asarray(threshold, dtype=np.float64)
    # (overflow to ±inf is meant: below −FLT_MAX nothing goes left, at FLT_MAX everything)
    with np.errstate(over="ignore"):
        v = t.astype(np.float32)  # the nearest float32; may be above t
        v = np.where(v.astype(np.float64) > t, np.nextafter(v, np.float32(-np.inf)), v)
        v = v.astype(np.float32)
        up = np.nextafter(v, np.float32(np.inf))
    mid = (v.astype(np.float64) + up.astype(np.float64)) / 2.0
    even = (v.view(np.uint32) & np.uint32(1)) == 0
    return np.where(even, mid, np.nextafter(mid, -np.inf))


def _check_boundaries(b, t):
    """Assert the rewrite: float32(b) <= t and float32(next float64 above b) > t."""
    lo, hi = DOMAIN
    inside = (b >= lo) & (b < hi)
    ok = go_left(b[inside], t[inside]) & ~go_left(np.nextafter(b[inside], np.inf), t[inside])
    if not ok.all():  # pragma: no cover - a bug in boundary(), never the user's fault
        i = int(np.flatnonzero(inside)[np.flatnonzero(~ok)[0]])
        raise AssertionError(f"split boundary {b[i]!r} is wrong for threshold {t[i]!r}")


def _tree(est, values, nan=False):
    """Return the :class:`Tree` of one fitted scikit-learn tree with leaf terms ``values``.

    ``nan``: the model's predict takes NaN, routed by the nodes' ``missing_go_to_left``.
    """
    tr = est.tree_
    left = np.asarray(tr.children_left, dtype=np.int64)
    leaf = left < 0
    t = np.where(leaf, np.nan, np.asarray(tr.threshold, dtype=np.float64))
    b = np.where(leaf, np.nan, boundary(np.where(leaf, 0.0, t)))
    _check_boundaries(b[~leaf], t[~leaf])
    return Tree(
        feature=np.where(leaf, -1, np.asarray(tr.feature, dtype=np.int64)),
        threshold=t,
        boundary=b,
        left=np.where(leaf, -1, left),
        right=np.where(leaf, -1, np.asarray(tr.children_right, dtype=np.int64)),
        value=np.where(leaf[:, None], values, 0.0),
        missing=_missing(tr, leaf) if nan else None,
    )


def _missing(tr, leaf):
    """Where each node sends a NaN (1 left, 0 right; −1 at leaves), or None if not stored."""
    go = getattr(tr, "missing_go_to_left", None)  # scikit-learn >= 1.3
    if go is None:  # pragma: no cover - older scikit-learn refuses NaN anyway
        return None
    return np.where(leaf, -1, np.asarray(go, dtype=np.int8)).astype(np.int8)


def _takes_nan(model, D):
    """Tell whether the model's own ``predict`` takes NaN (scikit-learn >= 1.3 trees, forests).

    Asked of the model itself (one row of NaN): its rules (the splitter, the criterion,
    ``monotonic_cst``, the version) are the library's to decide; ``GradientBoostingClassifier``
    refuses NaN.
    """
    from .._confirm import model_input

    try:
        model.predict(model_input(model, np.full((1, D), np.nan)))
    except ValueError:
        return False
    return True


def _refuse(model):
    """Raise the TypeError of a model that is not a supported tree classifier."""
    name = type(model).__name__
    if "Regressor" in name:
        raise TypeError(
            f"model must be a tree classifier ({_SUPPORTED}); got the regressor {name}: "
            "inverse classification needs classes"
        )
    raise TypeError(f"TreeExplainer takes tree classifiers; got {name}: {signpost(model)}")


def parse(model) -> Forest:
    """Return the :class:`~fastcf._trees.forest.Forest` of a fitted scikit-learn tree classifier.

    Raises
    ------
    TypeError
        Not a supported scikit-learn tree classifier (a regressor, another library's model).
    ValueError
        Not fitted; several outputs; an initial estimator of gradient boosting that depends on x.
    """
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(
        model,
        (
            DecisionTreeClassifier,
            RandomForestClassifier,
            ExtraTreesClassifier,
            GradientBoostingClassifier,
        ),
    ):
        _refuse(model)
    name = type(model).__name__
    check_is_fitted(
        model, msg=f"model: this {name} is not fitted yet; call fit(X, y) before explaining it"
    )
    if getattr(model, "n_outputs_", 1) != 1:
        raise ValueError(
            f"model must have one output; got a {name} with n_outputs_={model.n_outputs_}"
        )
    K = len(model.classes_)
    D = int(model.n_features_in_)
    nan = not isinstance(model, GradientBoostingClassifier) and _takes_nan(model, D)
    if isinstance(model, DecisionTreeClassifier):
        trees = [_tree(model, model.tree_.value[:, 0, :K], nan)]
        return Forest(trees, np.zeros(K), 1.0, Argmax(K), Identity(), D, DOMAIN, RULE)
    if isinstance(model, (RandomForestClassifier, ExtraTreesClassifier)):
        trees = [_tree(e, e.tree_.value[:, 0, :K], nan) for e in model.estimators_]
        T = len(trees)
        return Forest(trees, np.zeros(K), float(T), Argmax(K), Identity(), D, DOMAIN, RULE)
    return _boosting(model, K, D)


def _boosting(model, K, D):
    """Return the Forest of a fitted GradientBoostingClassifier."""
    from sklearn.dummy import DummyClassifier

    init = model.init_
    if not (
        (isinstance(init, str) and init == "zero")
        or (isinstance(init, DummyClassifier) and init.strategy in ("prior", "most_frequent"))
    ):
        raise ValueError(
            "model: a GradientBoostingClassifier whose init estimator depends on x is not "
            f"supported (init={init!r}); use init=None (the class prior) or init='zero'"
        )
    if not hasattr(model, "_raw_predict_init"):  # pragma: no cover - scikit-learn internals
        raise TypeError("this scikit-learn version's GradientBoostingClassifier is not supported")
    probe = np.zeros((2, D))
    probe[1] = 1.0
    # an array, also for a model fitted on a DataFrame: the private method validates the rows
    # with its first tree, fitted without feature names (a DataFrame warned)
    raw0 = np.asarray(model._raw_predict_init(probe), dtype=np.float64)
    base = raw0[0]
    lr = np.float64(model.learning_rate)
    n_out = model.estimators_.shape[1]
    trees = []
    for stage in model.estimators_:
        for k, est in enumerate(stage):
            v = np.zeros((est.tree_.node_count, n_out))
            v[:, k] = lr * est.tree_.value[:, 0, 0]  # the product the library adds
            trees.append(_tree(est, v))
    if n_out == 1:
        scale = 2.0 if getattr(model, "loss", "log_loss") == "exponential" else 1.0
        return Forest(trees, base, 1.0, Sign(), Logistic(scale), D, DOMAIN, RULE)
    return Forest(trees, base, 1.0, Argmax(K), Softmax(), D, DOMAIN, RULE)


def check(forest: Forest, model, n_probe: int = 512, seed: int = 0):
    """Check the parsed model against the model itself on probe rows; raise if they disagree.

    Probe rows put every feature on and next to split values (:meth:`Forest.probe`). The leaves
    must equal the model's ``apply`` exactly; the scores its ``predict_proba`` (forests, trees)
    or ``decision_function`` (boosting) within the rounding bound; the classes its ``predict``
    on every row whose scores are farther from a tie than that bound (on all rows where the sums
    are exact).
    """
    from sklearn.ensemble import GradientBoostingClassifier

    from .._confirm import model_input
    from .missing import probe_rows

    P = probe_rows(forest, forest.probe(np.random.default_rng(seed), n_probe), seed)
    R = model_input(model, P)
    name = type(model).__name__
    leaves = forest.leaves(P)
    # GradientBoostingClassifier.apply validates the rows with its first tree, fitted without
    # feature names: an array (a DataFrame warned)
    own = np.asarray(model.apply(P if isinstance(model, GradientBoostingClassifier) else R))
    own = own.reshape(P.shape[0], -1)
    if own.shape != leaves.shape or not np.array_equal(own, leaves - forest.offset[None, :]):
        raise ValueError(
            f"model: fastcf's copy of this {name} routes probe rows to other leaves than the "
            f"model's own apply() (split rule {forest.rule}); the model is not supported"
        )
    S = forest.scores(leaves)
    if isinstance(model, GradientBoostingClassifier):
        ref = np.asarray(model.decision_function(R), dtype=np.float64).reshape(S.shape)
    else:
        ref = np.asarray(model.predict_proba(R), dtype=np.float64)
    tol = forest.delta / forest.divisor
    if ref.shape != S.shape or not np.all(np.abs(S - ref) <= tol + 4 * 2.0**-53 * np.abs(ref)):
        raise ValueError(
            f"model: fastcf's copy of this {name} gives other scores than the model itself on "
            "probe rows; the model is not supported"
        )
    mine = np.asarray(model.classes_)[forest.decision.predict(S)]
    # where the sums are exact the classes must agree on every row, ties included
    clear = forest.decision.gap(S) > 2 * tol if forest.delta > 0 else np.ones(len(S), bool)
    if not np.array_equal(np.asarray(model.predict(R))[clear], mine[clear]):
        raise ValueError(
            f"model: fastcf's copy of this {name} predicts other classes than the model itself "
            "on probe rows; the model is not supported"
        )
