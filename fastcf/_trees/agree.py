"""What every boosting parser shares: trees from node arrays, probe rows, and the check.

:func:`tree` builds a :class:`~fastcf._trees.forest.Tree` from a library's node arrays, keeping
only the nodes reachable from the root (XGBoost keeps pruned nodes in its arrays; a leaf no input
reaches must not be a leaf of the program) and returns the map from the library's node ids to
the kept positions. :func:`verify` is the check of each parser, as
:func:`fastcf._trees.parse_sklearn.check`: the parsed model against the library's own leaves
(where it reports them), raw scores, probabilities and ``predict`` on probe rows put on and next
to every split value (and on library-specific values, such as LightGBM's zero band).
"""

from __future__ import annotations

import numpy as np

from .forest import Forest, Tree

__all__ = ["require_classifier", "tree", "probe", "verify"]


def tree(feature, threshold, boundary, left, right, value, missing=None):
    """Return ``(Tree, position)``: the reachable nodes in depth-first order from node 0.

    Arguments are the library's arrays by its node id (``left < 0`` at leaves; ``value`` of
    shape (n, n_scores); ``missing``: where a NaN goes, 1 left, 0 right, None if the model
    refuses NaN); ``position[id]`` is the node's position in the Tree (−1: unreachable).
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    n = left.shape[0]
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        if left[i] >= 0:
            stack.append(int(right[i]))
            stack.append(int(left[i]))
    order = np.asarray(order, dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    pos[order] = np.arange(order.size)
    leaf = left[order] < 0
    return (
        Tree(
            feature=np.where(leaf, -1, np.asarray(feature, dtype=np.int64)[order]),
            threshold=np.where(leaf, np.nan, np.asarray(threshold, dtype=np.float64)[order]),
            boundary=np.where(leaf, np.nan, np.asarray(boundary, dtype=np.float64)[order]),
            left=np.where(leaf, -1, pos[np.maximum(left[order], 0)]),
            right=np.where(leaf, -1, pos[np.maximum(right[order], 0)]),
            value=np.where(leaf[:, None], np.asarray(value, dtype=np.float64)[order], 0.0),
            missing=None
            if missing is None
            else np.where(leaf, -1, np.asarray(missing, dtype=np.int8)[order]).astype(np.int8),
        ),
        pos,
    )


def probe(forest: Forest, n: int, seed: int = 0, extra=()):
    """Return probe rows on and next to split values, random rows around them, and ``extra``.

    :meth:`Forest.probe` rows, uniform rows over the range of the boundaries (and a tenth
    beyond), probe rows with about half their coordinates drawn from ``extra``, and, where the
    model routes NaN, rows with NaN cells (:func:`fastcf._trees.missing.probe_rows`).
    """
    rng = np.random.default_rng(seed)
    P = forest.probe(rng, n)
    lo, hi = forest.domain
    inner = ~forest.is_leaf
    b = forest.boundary[inner]
    b = b[np.isfinite(b) & (b >= lo) & (b <= hi)]
    a, z = (float(b.min()), float(b.max())) if b.size else (-1.0, 1.0)
    pad = max(1.0, z - a)
    R = rng.uniform(a - 0.1 * pad, z + 0.1 * pad, size=(n // 4, forest.n_features))
    R = np.clip(R, lo, hi)  # (a boundary at the domain's end: no probe beyond it)
    rows = [P, R]
    extra = np.asarray(extra, dtype=np.float64)
    if extra.size:
        E = P[: n // 2].copy()
        mask = rng.random(E.shape) < 0.5
        E[mask] = rng.choice(extra, size=int(mask.sum()))
        rows.append(E)
    from .missing import probe_rows

    return probe_rows(forest, np.vstack(rows), seed)


def verify(forest: Forest, name, P, *, classes, predict, scores=None, proba=None, leaves=None):
    """Raise ValueError where the parsed model and the library disagree on the rows P.

    Parameters
    ----------
    forest : Forest
    name : str
        The model's class name, for messages.
    P : ndarray of shape (N, D)
    classes : ndarray
        The model's ``classes_``.
    predict : ndarray of shape (N,)
        The library's ``predict`` at P.
    scores : ndarray of shape (N, S), optional
        The library's raw scores at P (the sums after ``divisor``).
    proba : ndarray of shape (N, K), optional
        The library's ``predict_proba`` at P.
    leaves : ndarray of shape (N, T), optional
        The leaf of every row in every tree, as positions of :class:`~fastcf._trees.forest.Tree`
        (−1 where the library's leaf is not a reachable node).
    """
    lv = forest.leaves(P)
    if leaves is not None:
        own = np.asarray(leaves).reshape(P.shape[0], -1)
        if own.shape != lv.shape or not np.array_equal(own, lv - forest.offset[None, :]):
            raise ValueError(
                f"model: fastcf's copy of this {name} routes probe rows to other leaves than the "
                f"model itself (split rule {forest.rule}); the model is not supported"
            )
    S = forest.scores(lv)
    u = float(np.finfo(forest.dtype).eps)
    tol = forest.delta / forest.divisor
    if scores is not None:
        ref = np.asarray(scores, dtype=np.float64).reshape(S.shape)
        if not np.all(np.abs(S - ref) <= tol + 4 * u * np.abs(ref)):
            raise ValueError(
                f"model: fastcf's copy of this {name} gives other raw scores than the model "
                "itself on probe rows; the model is not supported"
            )
    if proba is not None:
        mine = forest.link.proba(S)
        ref = np.asarray(proba, dtype=np.float64)
        # the probabilities of the same scores agree to a few ulps of the library's precision;
        # scores within the rounding bound of each other move them by at most ~tol
        if ref.shape != mine.shape or not np.all(np.abs(mine - ref) <= 64 * u + 2 * tol):
            raise ValueError(
                f"model: fastcf's copy of this {name} gives other probabilities than the model "
                "itself on probe rows; the model is not supported"
            )
    mine = np.asarray(classes)[forest.decision.predict(S)]
    band = float(getattr(forest.decision, "band", 0.0))
    if forest.delta > 0:
        clear = forest.decision.gap(S) > 2 * tol + 2 * band
    else:  # exact sums: every row, ties included
        clear = np.ones(len(S), dtype=bool)
    if not np.array_equal(np.asarray(predict)[clear], mine[clear]):
        raise ValueError(
            f"model: fastcf's copy of this {name} predicts other classes than the model itself "
            "on probe rows; the model is not supported"
        )


def require_classifier(model, cls, library):
    """Raise the TypeError of a model of ``library`` that is not its classifier ``cls``.

    A regressor or ranker is refused as such (inverse classification needs classes). A bare
    ``Booster`` is taken through :class:`~fastcf._trees.boosters.BoosterClassifier`.
    """
    if isinstance(model, cls):
        return
    from .boosters import BoosterClassifier

    if isinstance(model, BoosterClassifier) and model.library == library:
        return  # a bare Booster, read as its classifier (TreeExplainer wraps it)
    name = type(model).__name__
    if "Regressor" in name or "Ranker" in name:
        why = f"the regressor {name}: inverse classification needs classes"
    else:
        why = name
    raise TypeError(f"model must be {library}'s {cls.__name__}; got {why}")
