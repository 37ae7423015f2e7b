"""XGBoost's ``XGBClassifier`` (``gbtree``) as a :class:`~fastcf._trees.forest.Forest`.

The split rule (``src/predictor/predict_fn.h``, ``GetDecision``; the inputs are read as
``float`` by the data adapters, ``src/data/adapter.h``): a row goes to the "yes" (left) child
iff ``float32(x) < split_condition``, the condition a float32. With c⁻ the float32 below c,
``float32(x) < c`` ⟺ ``float32(x) <= c⁻`` ⟺ ``x <= b`` where b is the largest float64 that
float32 rounding sends to c⁻ or below: scikit-learn's rule on the threshold c⁻
(:func:`fastcf._trees.parse_sklearn.boundary`), checked split by split
(``float32(b) < c <= float32(nextafter(b))``). Values equal to the model's ``missing`` (NaN by
default) take the default child (``default_left``, read into :attr:`Tree.missing
<fastcf._trees.forest.Tree>`; a NaN of a query is answered by :mod:`fastcf._trees.missing`),
and a model whose ``missing`` is a number is refused (that one value would be routed apart from
its neighbours).
Inputs beyond the float32 range become ±inf: the domain is ``[-FLT_MAX, FLT_MAX]``.

Aggregation (``src/predictor/cpu_predictor.cc``, ``src/predictor/predictor.cc``): the margins
start at the float32 intercept and each tree adds its leaf value in **float32**, in tree order,
to the margin of its group (``tree_info``; one tree per class and iteration, or
``num_parallel_tree`` of them). The intercept is the model's ``base_score`` through the
objective's ``ProbToMargin``: for ``binary:logistic`` ``Logit(clip(base_score, 1e-6, 1 −
1e-6)) = −logf(1/p − 1)`` in float32 (``src/objective/regression_loss.h``,
``src/common/math.h``), computed with the C library's ``logf``; for ``multi:*`` the values
themselves (one per class). Only the trees of ``best_iteration`` and before count when the model
was fitted with early stopping, as in its own ``predict``.

Decisions (``xgboost/sklearn.py``): ``binary:logistic`` — ``p = Sigmoid(margin)`` in float32
and class 1 iff ``p > 0.5`` (so a margin within ~1e-7 above 0 is class 0); ``multi:softprob``
— the first argmax of the float32 softmax probabilities (margins a few float32 ulps apart may
tie); ``multi:softmax`` — the first argmax of the margins, ``predict_proba`` SciPy's softmax of
them. These are computed as the library computes them (:mod:`fastcf._trees.outputs`).

Categorical splits (``enable_categorical=True`` with ``feature_types=["c", ...]``, fitted on
numeric category codes 0, 1, …) are read as sets, with XGBoost's own reading of a value (the
node lists the categories that go right; a value that is no category goes left:
:mod:`fastcf._trees.categorical`); the explainer answers over the categories a query leaves
free, as for HistGradientBoosting.

Not supported (refused with the reason): ``gblinear`` and ``dart`` boosters, vector leaves
(``multi_strategy="multi_output_tree"``), other objectives, a numeric ``missing``, and a model
fitted on a DataFrame of pandas categories (XGBoost re-codes those by their labels; the explainer
reads numbers: fit on the codes with ``feature_types``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import math

import numpy as np

from . import outputs
from .agree import probe, require_classifier, tree, verify
from .forest import Argmax, Forest
from .parse_sklearn import boundary as f32_le_boundary

__all__ = ["parse", "check", "boundary", "go_left", "RULE", "DOMAIN"]

RULE = "float32(x) < split_condition (float32)"
_F32 = np.float32
_F32_MAX = float(np.finfo(np.float32).max)
DOMAIN = (-_F32_MAX, _F32_MAX)
_OBJECTIVES = ("binary:logistic", "multi:softprob", "multi:softmax")


def go_left(x, condition):
    """Return XGBoost's own rule ``float32(x) < condition`` (elementwise, in float32)."""
    with np.errstate(over="ignore"):
        x32 = np.asarray(x, dtype=np.float64).astype(_F32)
    return x32 < np.asarray(condition, dtype=_F32)


def boundary(condition):
    """Return the float64 b with ``float32(x) < condition`` ⟺ ``x <= b`` (module docstring)."""
    c = np.asarray(condition, dtype=_F32)
    with np.errstate(over="ignore"):  # the float32 below −FLT_MAX is −inf: nothing goes left
        below = np.nextafter(c, _F32(-np.inf))  # the largest float32 < c
    return f32_le_boundary(below.astype(np.float64))


def _logf(v):
    """Return the C library's ``logf`` of a float32 (NumPy's float32 log without one)."""
    name = ctypes.util.find_library("m")
    if name is not None:
        try:
            fn = ctypes.CDLL(name).logf
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            return _F32(fn(float(v)))
        except (OSError, AttributeError):  # pragma: no cover
            pass
    return np.log(_F32(v))  # pragma: no cover - no libm to load


def _intercept(objective, text, K):
    """Return the float32 margins the sums start from (the module docstring)."""
    vals = np.array([_F32(v) for v in text.strip("[]").split(",") if v.strip()], dtype=_F32)
    if objective == "binary:logistic":
        p = min(max(vals[0], _F32(1e-6)), _F32(1.0) - _F32(1e-6))
        return np.array([-_logf(_F32(_F32(1.0) / p - _F32(1.0)))], dtype=_F32)
    return np.broadcast_to(vals, (K,)).astype(_F32) if vals.size == 1 else vals


def _refuse(what, how=""):
    raise ValueError(f"model: {what} is not supported by TreeExplainer{how}")


def _config(model):
    """Return (booster, config, model json) with the unsupported configurations refused."""
    name = type(model).__name__
    try:
        booster = model.get_booster()
    except Exception as exc:  # XGBoost raises its own NotFittedError
        raise ValueError(
            f"model: this {name} is not fitted yet; call fit(X, y) before explaining it"
        ) from exc
    cfg = json.loads(booster.save_config())["learner"]
    kind = cfg["gradient_booster"]["name"]
    if kind != "gbtree":
        how = {
            "gblinear": ": a linear booster has affine scores (use booster='gbtree')",
            "dart": ": dart scales its trees by dropout weights at prediction (use "
            "booster='gbtree')",
        }.get(kind, "")
        _refuse(f"an XGBoost booster={kind!r}", how)
    objective = cfg["objective"]["name"]
    if objective not in _OBJECTIVES:
        _refuse(f"the XGBoost objective {objective!r}", f" (supported: {', '.join(_OBJECTIVES)})")
    if cfg.get("learner_train_param", {}).get("multi_strategy", "") == "multi_output_tree":
        _refuse("multi_strategy='multi_output_tree' (vector leaves)")
    missing = getattr(model, "missing", np.nan)
    if missing is not None and not (isinstance(missing, float) and math.isnan(missing)):
        _refuse(
            f"missing={missing!r}",
            ": XGBoost routes inputs equal to it to the default child, apart from their "
            "neighbours; fit with missing=np.nan",
        )
    return booster, cfg, json.loads(booster.save_raw("json"))["learner"]


def _n_iterations(model, n_rounds):
    try:
        best = model.best_iteration  # set by early stopping; predict() stops there
    except AttributeError:
        return n_rounds
    return min(n_rounds, int(best) + 1) if best is not None else n_rounds


def _classifier(model):
    """Raise the TypeError of a xgboost model that is not an ``XGBClassifier``."""
    from xgboost import XGBClassifier

    require_classifier(model, XGBClassifier, "xgboost")


def parse(model) -> Forest:
    """Return the :class:`~fastcf._trees.forest.Forest` of a fitted ``XGBClassifier``.

    Raises
    ------
    ValueError
        Not fitted, or a configuration the module docstring lists as not supported.
    TypeError
        Not a ``XGBClassifier``.
    """
    _classifier(model)
    booster, cfg, learner = _config(model)
    objective = cfg["objective"]["name"]
    gb = learner["gradient_booster"]["model"]
    K = len(model.classes_)
    if objective != "binary:logistic" and K == 2:
        _refuse(
            f"two classes with objective {objective!r}",
            " (XGBClassifier.predict then returns one-hot rows); use binary:logistic",
        )
    S = 1 if objective == "binary:logistic" else K
    D = int(getattr(model, "n_features_in_", booster.num_features()))
    info = np.asarray(gb["tree_info"], dtype=np.int64)
    if "iteration_indptr" in gb:
        indptr = np.asarray(gb["iteration_indptr"], dtype=np.int64)
    else:  # pragma: no cover - XGBoost < 2
        per = S * int(gb["gbtree_model_param"].get("num_parallel_tree", "1"))
        indptr = np.arange(0, info.size + 1, per)
    n_iter = _n_iterations(model, indptr.size - 1)
    if any(gb.get("cats", {}).get("enc", [])):
        _refuse(
            "an XGBoost model fitted on pandas categories (XGBoost re-codes them by label)",
            "; fit on numeric category codes 0, 1, ... with feature_types=['c', ...]",
        )
    trees, sets = [], []
    for i, t in enumerate(gb["trees"][: int(indptr[n_iter])]):
        if int(t["tree_param"].get("size_leaf_vector", "1")) > 1:
            _refuse("an XGBoost tree with vector leaves")
        left = np.asarray(t["left_children"], dtype=np.int64)
        feat = np.asarray(t["split_indices"], dtype=np.int64)
        cond = np.asarray(t["split_conditions"], dtype=np.float64).astype(_F32)
        inner = left >= 0
        is_cat = inner & (np.asarray(t.get("split_type", [0] * left.size)) != 0)
        c = np.where(inner, cond, _F32(0.0))
        b = np.where(is_cat, np.nan, boundary(c))  # (a set: fastcf._trees.categorical)
        _check_boundaries(b[inner & ~is_cat], c[inner & ~is_cat])
        value = np.zeros((left.size, S))
        value[:, int(info[i]) if S > 1 else 0] = cond.astype(np.float64)  # leaves: the values
        dl = np.asarray(t["default_left"], dtype=np.int8)  # a NaN's child (missing=np.nan)
        thr = np.where(is_cat, np.nan, c.astype(np.float64))
        out, pos = tree(feat, thr, b, left, t["right_children"], value, dl)
        trees.append(out)
        sets.append(_listed(t, pos, feat))
    if not trees:
        raise ValueError(f"model: this {type(model).__name__} has no trees")
    base = _intercept(objective, cfg["learner_model_param"]["base_score"], S)
    base = base.astype(np.float64)
    if objective == "binary:logistic":
        link = outputs.XGBLogistic()
        decision = outputs.binary(link, band=2.0**-22)
    elif objective == "multi:softprob":
        link = outputs.XGBSoftmax()
        decision = outputs.multiclass(link, K, band=2.0**-20)
    else:
        link, decision = outputs.XGBMarginSoftmax(), Argmax(K)
    forest = Forest(trees, base, 1.0, decision, link, D, DOMAIN, RULE, dtype=np.float32)
    if any(sets):
        forest.categories = _categories(forest, sets)
    return forest


def _listed(t, pos, feat):
    """Return ``(position, feature, listed categories)`` of a tree's categorical nodes."""
    nodes = np.asarray(t.get("categories_nodes", []), dtype=np.int64)
    seg = np.asarray(t.get("categories_segments", []), dtype=np.int64)
    size = np.asarray(t.get("categories_sizes", []), dtype=np.int64)
    flat = np.asarray(t.get("categories", []), dtype=np.float64)
    return [
        (int(pos[n]), int(feat[n]), flat[s : s + k])
        for n, s, k in zip(nodes, seg, size, strict=True)
        if pos[n] >= 0
    ]


def _categories(forest, sets):
    """Return the :class:`~fastcf._trees.categorical.Categories` of the categorical splits.

    A feature's categories are 0 up to one past the largest one a split lists (XGBoost's
    codes); a node's left set is every category it does not list. The last one stands for
    "any category no split lists", which goes left at every node of its feature: the categories
    below it may all be listed somewhere, and then no other offered category routes that way
    (a model's file does not say which categories its training data held).
    """
    from .categorical import Categories

    top = {}
    for per_tree in sets:
        for _, f, listed in per_tree:
            top[f] = max(top.get(f, 0.0), float(listed.max()) if listed.size else 0.0)
    values = {f: np.arange(int(m) + 2, dtype=np.float64) for f, m in top.items()}
    # a node lists the categories that go right
    return Categories.of_trees(
        forest, values, sets, lambda vals, listed: ~np.isin(vals, listed), reader="xgboost"
    )


def _check_boundaries(b, c):
    """Assert the rewrite: float32(b) < c and float32(next float64 above b) >= c."""
    lo, hi = DOMAIN
    inside = (b >= lo) & (b < hi)
    ok = go_left(b[inside], c[inside]) & ~go_left(np.nextafter(b[inside], np.inf), c[inside])
    if not ok.all():  # pragma: no cover - a bug in boundary(), never the user's fault
        i = int(np.flatnonzero(inside)[np.flatnonzero(~ok)[0]])
        raise AssertionError(f"split boundary {b[i]!r} is wrong for condition {c[i]!r}")


def check(forest: Forest, model, n_probe: int = 512, seed: int = 0):
    """Check the parsed model against the model itself on probe rows; raise if they disagree.

    The leaves must equal XGBoost's ``pred_leaf`` exactly; the margins its ``predict(...,
    output_margin=True)``, the probabilities its ``predict_proba`` and the classes its
    ``predict`` (away from ties) as :func:`fastcf._trees.agree.verify` asks.
    """
    import xgboost as xgb

    from .._confirm import model_input

    name = type(model).__name__
    P = probe(forest, n_probe, seed)
    R = model_input(model, P)
    booster = model.get_booster()
    it = _n_iterations(model, booster.num_boosted_rounds())
    types = getattr(model, "feature_types", None)
    dm = xgb.DMatrix(R, missing=np.nan, feature_types=types, enable_categorical=bool(types))
    node = booster.predict(dm, pred_leaf=True, iteration_range=(0, it)).reshape(P.shape[0], -1)
    gb = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]
    leaves = np.full(node.shape, -2, dtype=np.int64)  # (a wrong shape fails in verify)
    for t in range(min(node.shape[1], forest.n_trees)):
        leaves[:, t] = _positions(gb["trees"][t])[node[:, t].astype(np.int64)]
    verify(
        forest,
        name,
        P,
        classes=model.classes_,
        predict=np.asarray(model.predict(R)),
        scores=np.asarray(model.predict(R, output_margin=True), dtype=np.float64).reshape(
            P.shape[0], -1
        ),
        proba=np.asarray(model.predict_proba(R), dtype=np.float64),
        leaves=leaves,
    )


def _positions(t):
    """Return the map from an XGBoost tree's node ids to the parsed tree's positions."""
    left = np.asarray(t["left_children"], dtype=np.int64)
    zeros = np.zeros(left.size)
    _, pos = tree(zeros.astype(np.int64), zeros, zeros, left, t["right_children"], zeros[:, None])
    return pos
