"""LightGBM's ``LGBMClassifier`` as a :class:`~fastcf._trees.forest.Forest`.

The split rule (``include/LightGBM/tree.h``, ``NumericalDecision``): ``x <= threshold`` in
double, after two rewrites of the input:

* the dense-matrix reader keeps only the values with ``|x| > kZeroThreshold`` (``src/c_api.cpp``,
  ``RowPairFunctionFromDenseMatric``; ``kZeroThreshold = 1e-35f``, ``include/LightGBM/meta.h``),
  so every x in the zero band ``[-kZ, kZ]`` reaches the trees as 0.0;
* with ``missing_type == "Zero"`` a zero (so the whole band) takes the default child
  (``default_left``), and with ``"NaN"`` a NaN does; under ``"None"`` and ``"Zero"`` a NaN is
  read as 0.0 first (:func:`nan_left`, read into :attr:`Tree.missing
  <fastcf._trees.forest.Tree>`; a NaN of a query is answered by :mod:`fastcf._trees.missing`).

The map x ↦ (0 on the band, x elsewhere) is monotone, so without the Zero rule *left iff x <=
b* holds with b = the threshold, except for a threshold t in the band: ``-kZ <= t < 0`` gives b
= the float64 below −kZ, ``0 <= t < kZ`` gives b = kZ. With the Zero rule
(``zero_as_missing=True``) the band goes to the default side: that is still an interval (b = t,
kZ or the float64 below −kZ) unless numbers lie between the band and the threshold on the band's
far side (default left with t below the float64 under −kZ, default right with t > kZ): then the
inputs that go left are two intervals, and the split is written as three interval splits on the
same feature, at t and the band's two edges, each child's subtree walked twice
(:func:`_zero_chain`; a NaN, read as 0.0, takes the band's path). Every boundary, and every such
chain, is checked against the rule on the values around it, −kZ, 0 and kZ; the parse's leaves are
checked against LightGBM's own (``pred_leaf``) by leaf index, a copied leaf at each position.

Aggregation (``src/boosting/gbdt_prediction.cpp``): the raw scores start at 0.0 and add the trees
of each iteration in order, in double (tree i to score ``i % num_tree_per_iteration``), the
initial score already folded into the first trees; ``boosting="rf"`` (``average_output``) then
divides them by the number of iterations. The dumped trees are those ``predict`` uses
(``best_iteration`` when early stopping set one). Decisions (``lightgbm/sklearn.py``: the first
argmax of ``predict_proba``): binary — ``p = 1 / (1 + exp(−σ raw))`` and ``[1 − p, p]``
(``binary_objective.hpp``), so class 1 iff ``p > 0.5``; ``cross_entropy`` (xentropy, labels in
[0, 1]) — the same with σ = 1 (``xentropy_objective.hpp``: ``p = 1 / (1 + exp(−raw))``), read
as binary; multiclass — the softmax of ``include/LightGBM/utils/common.h``
(:mod:`fastcf._trees.outputs`).

Categorical splits (``categorical_feature=``; ``decision_type "=="``, the threshold listing the
categories that go left) are read as sets of categories, with LightGBM's own reading of a value
(its integer cast: :mod:`fastcf._trees.categorical`); the explainer answers over the categories a
query leaves free, as for HistGradientBoosting.

Not supported (refused with the reason): linear trees, the objectives other than ``binary``,
``cross_entropy`` and ``multiclass`` (the message names the objective and why: a regression or
ranking objective predicts no class, ``multiclassova``'s probabilities do not sum to 1,
``cross_entropy_lambda`` predicts no probability), a custom objective, prediction early stopping.
"""

from __future__ import annotations

import numpy as np

from . import outputs
from .agree import probe, require_classifier, tree, verify
from .forest import Forest

__all__ = ["parse", "check", "boundary", "go_left", "nan_left", "RULE", "DOMAIN", "ZERO"]

RULE = "x <= threshold (float64; |x| <= 1e-35 read as 0)"
ZERO = float(np.float32(1e-35))  # kZeroThreshold, a float widened to double
#: LightGBM writes every threshold through ``Common::AvoidInf`` (``include/LightGBM/utils/
#: common.h``): one of 1e300 or more (+inf: every number left, NaN right) is dumped as 1e300, so
#: the dump cannot tell them apart beyond ±1e300 (a fuzz find: 1.02e300 went left of a dumped
#: 1e300). Inside this domain both read alike; values beyond it are refused by name.
DOMAIN = (float(np.nextafter(-1e300, 0.0)), 1e300)
_BELOW = float(np.nextafter(-ZERO, -np.inf))


def go_left(x, threshold, missing_type="None", default_left=True):
    """Return LightGBM's own rule for inputs x at one split (elementwise)."""
    x = np.asarray(x, dtype=np.float64)
    band = np.abs(x) <= ZERO
    fx = np.where(band, 0.0, x)
    left = fx <= threshold
    if missing_type == "Zero":
        left = np.where(band, bool(default_left), left)
    return left


def nan_left(threshold, missing_type="None", default_left=True):
    """Tell whether LightGBM sends a NaN left at one split (``NumericalDecision``).

    A NaN takes the default child where ``missing_type`` is ``"NaN"``; elsewhere it is read as
    0.0 first, which takes the default child under ``"Zero"`` and is compared with the
    threshold under ``"None"``.
    """
    if missing_type in ("NaN", "Zero"):
        return bool(default_left)
    return 0.0 <= float(threshold)


def boundary(threshold, missing_type="None", default_left=True):
    """Return b with LightGBM's rule ⟺ ``x <= b``, or None where the rule is no interval."""
    t = float(threshold)
    if missing_type == "Zero":  # the band goes to the default side
        if default_left:
            return t if t >= ZERO else (ZERO if t >= _BELOW else None)
        return t if t < -ZERO else (_BELOW if t <= ZERO else None)
    if -ZERO <= t < 0.0:
        return _BELOW
    if 0.0 <= t < ZERO:
        return ZERO
    return t


def _check_boundary(b, t, missing_type, default_left):
    """Assert the rewrite on the values around b, t, −kZ, 0 and kZ."""
    pts = np.array([b, t, -ZERO, 0.0, ZERO])
    pts = np.concatenate([pts, np.nextafter(pts, np.inf), np.nextafter(pts, -np.inf)])
    pts = pts[np.isfinite(pts)]
    if not np.array_equal(go_left(pts, t, missing_type, default_left), pts <= b):
        raise AssertionError(f"split boundary {b!r} is wrong for threshold {t!r}")


def _refuse(what, how=""):
    raise ValueError(f"model: {what} is not supported by TreeExplainer{how}")


def _zero_chain(node, t, dl):
    """Return the splits that route a Zero split whose left inputs are no interval.

    With ``missing_type == "Zero"`` the zero band takes the default child; when the threshold
    lies on the band's far side (:func:`boundary` gives None) the inputs that go left are two
    intervals: ``(−inf, t] ∪ band`` (default left, ``t`` below the band) or ``(−inf, −kZ) ∪
    (kZ, t]`` (default right, ``t`` above it). Three interval splits on the same feature (left
    iff ``x <= b``) send each of the four pieces to its child, each child's subtree then walked
    twice (the copies' leaves keep LightGBM's leaf index). A NaN, read as 0.0, takes the band's
    path: each new split sends it where it sends 0.0.
    """
    f = node["split_feature"]
    L, R = node["left_child"], node["right_child"]

    def split(b, left, right):
        return {"split_feature": f, "_boundary": b, "_threshold": t, "left_child": left,
                "right_child": right}  # fmt: skip

    if dl:  # x <= t left; t < x < −kZ right; the band left; x > kZ right
        return split(t, L, split(_BELOW, R, split(ZERO, L, R)))
    # x < −kZ left; the band right; kZ < x <= t left; x > t right
    return split(_BELOW, L, split(ZERO, R, split(t, L, R)))


def _check_chain(chain, node, t, missing_type, default_left):
    """Assert that the chain of :func:`_zero_chain` routes as LightGBM's rule at ``node``."""
    pts = np.array([t, -ZERO, 0.0, ZERO, _BELOW])
    pts = np.concatenate([pts, np.nextafter(pts, np.inf), np.nextafter(pts, -np.inf)])
    pts = pts[np.isfinite(pts)]
    own = go_left(pts, t, missing_type, default_left)
    for x, want in zip(pts, own, strict=True):
        at = chain
        while at is not node["left_child"] and at is not node["right_child"]:
            at = at["left_child"] if x <= at["_boundary"] else at["right_child"]
        if (at is node["left_child"]) != bool(want):
            raise AssertionError(f"the zero-band splits are wrong for threshold {t!r} at {x!r}")


#: A tree whose zero-band chains (:func:`_zero_chain`) copy it past this many nodes is refused.
MAX_NODES = 1 << 16


def _walk(root, n_scores, k, names):
    """Return (Tree, position by leaf index, leaf index by position, categorical nodes).

    The maps between LightGBM's leaf indices and the positions of the Tree: a leaf of a subtree
    that a Zero split's chain (:func:`_zero_chain`) copies lies at several positions with the
    same index (the position by leaf index: its first); the leaf index of a split is −1. The
    categorical nodes: ``(position, feature, left categories)`` of each split on a set of
    categories (``decision_type == "=="``; its threshold lists the categories that go left).
    """
    feat, thr, bnd, left, right, val, leaf_of = [], [], [], [], [], [], []
    nan, cats = [], []
    chained = False  # a zero-band chain copied subtrees
    stack = [(root, -1, 0)]  # (node, parent id, side)
    while stack:
        node, parent, side = stack.pop()
        i = len(feat)
        if chained and i >= MAX_NODES:
            _refuse(
                f"a LightGBM tree of more than {MAX_NODES} nodes once its zero_as_missing "
                "splits whose zeros cross the threshold are written as intervals"
            )
        if parent >= 0:
            (left if side == 0 else right)[parent] = i
        left.append(-1)
        right.append(-1)
        v = np.zeros(n_scores)
        if "split_feature" not in node:  # a leaf (or a tree of one leaf)
            if node.get("leaf_coeff"):
                _refuse("a LightGBM linear tree (linear_tree=True)")
            v[k] = float(node["leaf_value"])
            feat.append(-1)
            nan.append(-1)
            thr.append(np.nan)
            bnd.append(np.nan)
            leaf_of.append(int(node.get("leaf_index", 0)))
            val.append(v)
            continue
        f = int(node["split_feature"])
        label = repr(str(names[f])) if names is not None else str(f)
        kind = node.get("decision_type", "<=")
        if "_boundary" in node:  # a split of a zero-band chain: x <= b, NaN read as 0.0
            t, b = node["_threshold"], node["_boundary"]
            to_left = int(0.0 <= b)
        elif kind == "==":  # a set of categories (fastcf._trees.categorical); NaN goes right
            codes = [int(c) for c in str(node["threshold"]).split("||") if c != ""]
            cats.append((i, f, np.array(codes, dtype=np.float64)))
            t = b = np.nan
            to_left = 0
        else:
            if kind != "<=":  # pragma: no cover - LightGBM writes no other
                _refuse(f"the split of kind {kind!r} on feature {label}")
            t = float(node["threshold"])
            mt, dl = str(node.get("missing_type", "None")), bool(node.get("default_left", True))
            b = boundary(t, mt, dl)
            if b is None:  # zero_as_missing, the band across the threshold: three splits
                chain = _zero_chain(node, t, dl)
                _check_chain(chain, node, t, mt, dl)
                chained = True
                left.pop()
                right.pop()
                stack.append((chain, parent, side))
                continue
            _check_boundary(b, t, mt, dl)
            to_left = int(nan_left(t, mt, dl))
        feat.append(f)
        nan.append(to_left)
        thr.append(t)
        bnd.append(b)
        val.append(v)
        leaf_of.append(-1)
        stack.append((node["right_child"], i, 1))
        stack.append((node["left_child"], i, 0))
    out, pos = tree(feat, thr, bnd, left, right, np.array(val), nan)
    by_pos = np.full(out.feature.size, -1, dtype=np.int64)
    by_pos[pos[pos >= 0]] = np.asarray(leaf_of, dtype=np.int64)[pos >= 0]
    at = np.flatnonzero(by_pos >= 0)
    by_leaf = np.full(int(by_pos.max()) + 1, out.feature.size, dtype=np.int64)
    np.minimum.at(by_leaf, by_pos[at], at)  # (a copied leaf: its first position)
    by_leaf[by_leaf == out.feature.size] = -1
    cats = [(int(pos[i]), f, c) for i, f, c in cats if pos[i] >= 0]
    return out, by_leaf, by_pos, cats


def _dump(model):
    name = type(model).__name__
    booster = getattr(model, "_Booster", None)
    if booster is None:
        raise ValueError(
            f"model: this {name} is not fitted yet; call fit(X, y) before explaining it"
        )
    if callable(getattr(model, "objective", None)):
        _refuse("a LightGBM model with a custom objective", " (no probabilities or classes)")
    params = dict(getattr(booster, "params", {}) or {})
    for key in ("pred_early_stop", "predict_early_stop"):
        if str(params.get(key, False)).lower() in ("true", "1"):
            _refuse("LightGBM prediction early stopping (pred_early_stop=True)")
    return booster.dump_model()


#: What the LightGBM objectives fastcf does not read are, and why each is refused.
_REGRESSION = (
    "regression", "regression_l1", "huber", "fair", "poisson", "quantile", "mape", "gamma",
    "tweedie",
)  # fmt: skip
_RANKING = ("lambdarank", "rank_xendcg")
_ACCEPTED = (
    "TreeExplainer explains classifiers: the objectives binary, cross_entropy (read as binary: "
    "class 1 iff p > 0.5) and multiclass"
)


def _objective_refusal(model, kind):
    """Raise the ValueError of a LightGBM objective that is no classifier fastcf reads."""
    from .boosters import BoosterClassifier

    this = "Booster" if isinstance(model, BoosterClassifier) else type(model).__name__
    if kind in _REGRESSION:
        why = "a regression objective: the model predicts a number, not a class"
    elif kind in _RANKING:
        why = "a ranking objective: the model scores rows to order them, not to classify them"
    elif kind == "multiclassova":
        why = (
            "one-vs-all multiclass: its class probabilities are K separate sigmoids that do not "
            "sum to 1, which fastcf does not read (train with objective='multiclass')"
        )
    elif kind == "cross_entropy_lambda":
        why = (
            "its predict gives the intensity log(1 + exp(raw score)), not a probability (train "
            "with objective='cross_entropy' or 'binary')"
        )
    elif kind == "":
        raise ValueError(
            f"model: this LightGBM {this} records no objective (a custom objective: its predict "
            f"gives raw scores, no probabilities); {_ACCEPTED}"
        )
    else:
        why = "an objective fastcf does not read"
    raise ValueError(
        f"model: this LightGBM {this} was trained with the objective {kind!r}, {why}; {_ACCEPTED}"
    )


def _walk_all(model):
    """Return the trees of a fitted LightGBM classifier and what the parse reads with them.

    A tuple (trees, positions by leaf, dump, kind, objective, S, categorical nodes, leaves by
    position): S the trees per iteration, the maps as :func:`_walk` gives them; ``kind``
    ``"binary"`` (``cross_entropy`` too: its ``predict`` is the sigmoid of the raw score,
    ``xentropy_objective.hpp``) or ``"multiclass"``.
    """
    d = _dump(model)
    objective = str(d.get("objective", "")).split()
    kind = objective[0] if objective else ""
    if kind not in ("binary", "cross_entropy", "multiclass"):
        _objective_refusal(model, kind)
    if kind == "cross_entropy":  # p = 1 / (1 + exp(-raw)): binary's link with sigma 1
        kind, objective = "binary", ["binary"]
    S = int(d["num_tree_per_iteration"])
    names = getattr(model, "feature_names_in_", None)
    trees, maps, index, cats = [], [], [], []
    for i, info in enumerate(d["tree_info"]):
        t, m, x, c = _walk(info["tree_structure"], S, i % S, names)
        trees.append(t)
        maps.append(m)
        index.append(x)
        cats.append(c)
    return trees, maps, d, kind, objective, S, cats, index


def _classifier(model):
    """Raise the TypeError of a lightgbm model that is not an ``LGBMClassifier``."""
    from lightgbm import LGBMClassifier

    require_classifier(model, LGBMClassifier, "lightgbm")


def parse(model) -> Forest:
    """Return the :class:`~fastcf._trees.forest.Forest` of a fitted ``LGBMClassifier``.

    Raises
    ------
    ValueError
        Not fitted, or a configuration the module docstring lists as not supported.
    TypeError
        Not a ``LGBMClassifier``.
    """
    _classifier(model)
    trees, _, d, kind, objective, S, cats, _ = _walk_all(model)
    if not trees:
        raise ValueError(f"model: this {type(model).__name__} has no trees")
    K = len(model.classes_)
    D = int(model.n_features_in_)
    divisor = float(len(trees) // S) if d.get("average_output", False) else 1.0
    base = np.zeros(S)
    if kind == "binary":
        sigma = 1.0
        for part in objective[1:]:
            if part.startswith("sigmoid:"):
                sigma = float(part.split(":", 1)[1])
        link = outputs.LGBLogistic(sigma)
        decision = outputs.binary(link, band=2.0**-48 / sigma)
    else:
        link = outputs.LGBSoftmax()
        decision = outputs.multiclass(link, K, band=2.0**-46)
    forest = Forest(trees, base, divisor, decision, link, D, DOMAIN, RULE)
    if any(cats):
        forest.categories = _categories(forest, d, cats)
    return forest


def _categories(forest, d, cats):
    """Return the :class:`~fastcf._trees.categorical.Categories` of the categorical splits.

    A feature's categories: the values its model file lists (``feature_infos``; the negative
    ones, which every split sends right, left out) and those of its splits' bitsets.
    """
    from .categorical import Categories

    infos = d.get("feature_infos", {})
    names = d.get("feature_names", [])
    values = {}
    for per_tree in cats:
        for _, f, codes in per_tree:
            seen = infos.get(names[f], {}).get("values", []) if f < len(names) else []
            v = np.concatenate([values.get(f, []), np.asarray(seen, dtype=np.float64), codes])
            values[f] = np.unique(v[v >= 0.0])
    return Categories.of_trees(forest, values, cats, np.isin, reader="lightgbm")


def check(forest: Forest, model, n_probe: int = 512, seed: int = 0):
    """Check the parsed model against the model itself on probe rows; raise if they disagree.

    The leaves must equal LightGBM's ``pred_leaf`` exactly; the raw scores its ``raw_score``
    (divided as ``average_output`` divides), the probabilities its ``predict_proba`` and the
    classes its ``predict`` (away from ties) as :func:`fastcf._trees.agree.verify` asks. The
    probe rows also hold values of the zero band (±kZ, 0 and their neighbours).
    """
    from .._confirm import model_input

    name = type(model).__name__
    band = np.array([ZERO, -ZERO, 0.0, np.nextafter(ZERO, 1.0), _BELOW, ZERO / 2])
    P = probe(forest, n_probe, seed, extra=band)
    R = model_input(model, P)
    index = _walk_all(model)[-1]
    own = np.asarray(model.predict(R, pred_leaf=True)).reshape(P.shape[0], -1).astype(np.int64)
    # the parsed leaf of each row where its LightGBM leaf index is the model's own, else -2 (a
    # leaf copied by a zero-band chain has one index at several positions)
    mine = forest.leaves(P) - forest.offset[None, :]
    leaves = np.full(own.shape, -2, dtype=np.int64)
    for t in range(min(own.shape[1], len(index), mine.shape[1])):
        same = index[t][mine[:, t]] == own[:, t]
        leaves[:, t] = np.where(same, mine[:, t], -2)
    raw = np.asarray(model.predict(R, raw_score=True), dtype=np.float64).reshape(P.shape[0], -1)
    verify(
        forest,
        name,
        P,
        classes=model.classes_,
        predict=np.asarray(model.predict(R)),
        scores=raw / forest.divisor if forest.divisor != 1.0 else raw,
        proba=np.asarray(model.predict_proba(R), dtype=np.float64),
        leaves=leaves,
    )
