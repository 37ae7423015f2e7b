"""The parsed tree model: plain arrays, one split rule, and the library's own arithmetic.

Every library compares a feature with a threshold in its own way (scikit-learn: ``float32(x) <=
t`` with a float64 t; XGBoost: ``float32(x) < t``; LightGBM: ``x <= t`` in float64). Each of
these is monotone in x, so on the float64 inputs a user gives it is the same as

    go left  ⟺  x <= boundary

for one float64 ``boundary`` per split, which the library's parser computes once (and checks).
Everything downstream (the leaf boxes of one tree, the threshold intervals of the MILP, the
decoding of an answer into a concrete x) uses only that rule: the closed intervals of float64
values ``[nextafter(b_k), b_{k+1}]`` between consecutive boundaries of a feature are exactly the
sets of inputs the model cannot tell apart on that feature, and a point of such an interval is a
representable input on the correct side of every split, with no epsilon.

A NaN takes the child the library routes missing values to (:attr:`Tree.missing`, read by each
parser; None where the model's own ``predict`` refuses NaN), and :mod:`fastcf._trees.missing`
conditions a forest on the features a query leaves missing.

A model's class scores are ``Z = base + Σ_t value_t[leaf_t(x)]``, added term by term in tree
order as the library adds them (``np.add.accumulate``, not a pairwise sum; in float32 where the
library sums in float32, as XGBoost does), then divided by ``divisor`` (a random forest averages
its trees). The class is decided by an :class:`Argmax` (ties to the first class, as
``np.argmax``), by a :class:`Sign` (binary gradient boosting: class 1 iff the score is ``>= 0``,
or ``> 0``) or by a library's own decision on its probabilities
(:mod:`fastcf._trees.outputs`); the probabilities by a link (:class:`Identity`,
:class:`Logistic`, :class:`Softmax`, or a library's own arithmetic).

Rounding: the solvers reason about the exact sums of the terms. Where every term is a multiple
of 2^-e and the sums stay below 2^40 (random forests of pure leaves: votes), the library's
float64 sums are exact and :attr:`Forest.unit` is the smallest nonzero difference of two
scores; otherwise :attr:`Forest.delta` bounds the difference between the exact sum and the
library's (a γ_n bound of sequential summation, doubled for a difference of two scores, with
the unit roundoff of the library's precision), plus the ``band`` of a decision taken on rounded
probabilities (the scores within which such a decision may differ from the exact comparison).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._kernels.tree_walk import leaf_sums, walk

__all__ = ["Tree", "Forest", "Argmax", "Sign", "Identity", "Logistic", "Softmax"]

_U = 2.0**-53  # unit roundoff of float64


class Tree(NamedTuple):
    """One tree as plain arrays (node ids are positions in them; node 0 is the root)."""

    feature: np.ndarray  # (n,) int64, -1 at leaves
    threshold: np.ndarray  # (n,) float64, the library's own threshold (NaN at leaves)
    boundary: np.ndarray  # (n,) float64: go left iff x <= boundary (the library's rule)
    left: np.ndarray  # (n,) int64, -1 at leaves
    right: np.ndarray  # (n,) int64, -1 at leaves
    value: np.ndarray  # (n, n_scores) float64: the terms the library adds at each leaf
    #: (n,) int8, where a NaN goes at each split: 1 left, 0 right, -1 not routed (leaves: -1);
    #: None for a model whose own predict refuses NaN (:mod:`fastcf._trees.missing`)
    missing: np.ndarray | None = None


# ---------------------------------------------------------------------------------- decisions
class Argmax:
    """The class is the first index of the largest score (``np.argmax``: ties to the first)."""

    def __init__(self, n_classes: int):
        self.n_scores = int(n_classes)

    def predict(self, S):
        return np.argmax(S, axis=1)

    def forms(self, t: int):
        """Return ``[(a, strict)]``: x is in class t iff ``a·S >= 0`` (``> 0`` if strict), all."""
        out = []
        for j in range(self.n_scores):
            if j != t:
                a = np.zeros(self.n_scores)
                a[t], a[j] = 1.0, -1.0
                out.append((a, j < t))  # an earlier class wins a tie
        return out

    def gap(self, S):
        """Return the distance of each row's scores to a tie (best minus second best)."""
        if S.shape[1] < 2:
            return np.full(S.shape[0], np.inf)
        part = np.sort(S, axis=1)
        return part[:, -1] - part[:, -2]


class Sign:
    """One score; class 1 iff the score is ``>= 0`` (``at_zero=1``) or ``> 0`` (``at_zero=0``).

    scikit-learn's ``GradientBoostingClassifier`` gives a score of exactly 0 to class 1 (``raw
    >= 0``), its ``HistGradientBoostingClassifier`` to class 0 (``raw > 0``).
    """

    n_scores = 1

    def __init__(self, at_zero: int = 1):
        self.at_zero = int(at_zero)

    def predict(self, S):
        if self.at_zero == 1:
            return (S[:, 0] >= 0.0).astype(np.int64)
        return (S[:, 0] > 0.0).astype(np.int64)

    def forms(self, t: int):
        if t == 1:
            return [(np.ones(1), self.at_zero == 0)]
        return [(-np.ones(1), self.at_zero == 1)]

    def gap(self, S):
        return np.abs(S[:, 0])


# ---------------------------------------------------------------------------------- links
class Identity:
    """The scores are the probabilities (random forests, one tree)."""

    def proba(self, S):
        return S

    def forms(self, t, tau, divisor, n_scores):
        """Necessary conditions of ``p_t >= tau`` as ``[(a, r)]``: ``a·Z >= r`` on the sums Z."""
        a = np.zeros(n_scores)
        a[t] = 1.0
        return [(a, tau * divisor)]

    def slack(self, tau):
        return 4.0 * _U * tau

    def cut(self, t, tau, Z):
        return None


class Logistic:
    """Binary: ``p_1 = expit(scale · S)`` (scale 1: log-loss; 2: exponential loss)."""

    def __init__(self, scale: float):
        self.scale = float(scale)

    def proba(self, S):
        from scipy.special import expit

        p = expit(self.scale * S[:, 0])
        return np.column_stack([1.0 - p, p])

    def forms(self, t, tau, divisor, n_scores):
        ell = math.log(tau / (1.0 - tau)) / self.scale  # p_t >= tau ⟺ ±S >= logit(tau)/scale
        return [(np.ones(1) if t == 1 else -np.ones(1), ell * divisor)]

    def slack(self, tau):
        # expit and the logit round by a few ulps: in score units ~ ulps / (p (1 − p))
        return 16.0 * _U * (1.0 + abs(math.log(tau / (1.0 - tau)))) / (tau * (1.0 - tau))

    def cut(self, t, tau, Z):
        return None


class Softmax:
    """Multiclass: ``p = softmax(S)`` (gradient boosting with the multinomial loss).

    ``p_t >= τ`` ⟺ ``g(d) = log(1 + Σ_{j≠t} exp(d_j)) <= log(1/τ)`` with ``d_j = S_j − S_t``:
    a convex constraint, so the program starts from the necessary ``d_j <= −logit(τ)`` and adds
    the tangent ``g(d*) + ∇g(d*)·(d − d*) <= log(1/τ)`` at a candidate that misses τ (valid
    for every d by convexity; it cuts the candidate off).
    """

    def proba(self, S):
        from scipy.special import softmax

        return softmax(S, axis=1)

    def forms(self, t, tau, divisor, n_scores):
        ell = math.log(tau / (1.0 - tau))
        out = []
        for j in range(n_scores):
            if j != t:
                a = np.zeros(n_scores)
                a[t], a[j] = 1.0, -1.0
                out.append((a, ell))
        return out

    def slack(self, tau):
        return 16.0 * _U * (1.0 + abs(math.log(tau))) / (tau * (1.0 - tau))

    def cut(self, t, tau, Z):
        """Return the tangent cut ``(a, r)``, ``a·Z >= r``, at the scores ``Z`` (K,)."""
        d = Z - Z[t]
        d[t] = -np.inf
        top = max(0.0, float(np.max(d)))
        e = np.exp(d - top)
        s = math.exp(-top) + float(e.sum())
        g = top + math.log(s)
        p = e / s  # ∂g/∂d_j (0 at t)
        # g(d*) + Σ p_j (Z_j − Z_t − d*_j) <= log(1/τ)
        #   ⟺  Σ_j p_j (Z_t − Z_j) >= g − p·d* − log(1/τ)
        a = -p.copy()
        a[t] = float(p.sum())
        dd = np.where(np.isfinite(d), d, 0.0)
        return a, g - float(p @ dd) + math.log(tau)


# ---------------------------------------------------------------------------------- the forest
class Forest:
    """A tree model as flat arrays over all its nodes (trees concatenated in the library's order).

    Parameters
    ----------
    trees : list of Tree
    base : ndarray of shape (n_scores,)
        The constant the sums start from (gradient boosting's initial raw prediction).
    divisor : float
        The sums are divided by it (a forest's mean); 1 for none.
    decision : Argmax or Sign
    link : Identity, Logistic or Softmax
    n_features : int
    domain : (float, float)
        The inputs the library accepts (scikit-learn: the float32 range).
    rule : str
        The library's split rule, for messages (the parsed rule is always ``x <= boundary``).
    dtype : numpy dtype, default=float64
        The precision the library adds its terms in (float32 for XGBoost); ``base`` and the
        leaf terms must then be representable in it.
    """

    def __init__(
        self, trees, base, divisor, decision, link, n_features, domain, rule, dtype=np.float64
    ):
        sizes = np.array([t.feature.shape[0] for t in trees], dtype=np.int64)
        self.offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.root = self.offset.copy()  # (T,) global id of each tree's root
        self.n_trees = len(trees)
        self.n_features = int(n_features)
        self.feature = np.concatenate([t.feature for t in trees]).astype(np.int64)
        self.threshold = np.concatenate([t.threshold for t in trees]).astype(np.float64)
        self.boundary = np.concatenate([t.boundary for t in trees]).astype(np.float64)
        shift = np.repeat(self.offset, sizes)
        left = np.concatenate([t.left for t in trees]).astype(np.int64)
        right = np.concatenate([t.right for t in trees]).astype(np.int64)
        self.left = np.where(left >= 0, left + shift, -1)
        self.right = np.where(right >= 0, right + shift, -1)
        self.value = np.ascontiguousarray(np.concatenate([t.value for t in trees]), np.float64)
        # where a NaN goes at each node (1 left, 0 right, -1 not routed); None: NaN refused
        self.missing = (
            None
            if any(t.missing is None for t in trees)
            else np.concatenate([t.missing for t in trees]).astype(np.int8)
        )
        self.tree_of = np.repeat(np.arange(self.n_trees), sizes)  # (n_nodes,) tree of each node
        self.base = np.asarray(base, dtype=np.float64).reshape(-1)
        self.divisor = float(divisor)
        self.decision = decision
        self.link = link
        self.domain = (float(domain[0]), float(domain[1]))
        self.rule = rule
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):  # (leaf_sums adds in one or the other)
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        self.is_leaf = self.left < 0
        self.leaf_ids = np.flatnonzero(self.is_leaf)
        #: categorical splits (:class:`~fastcf._trees.categorical.Categories`), set by a parser
        self.categories = None
        self.unit, self.delta = self._rounding()

    # ------------------------------------------------------------------ arithmetic
    def _rounding(self):
        """Return (unit, delta): the exact-arithmetic grid unit (0 if none) and the rounding bound.

        ``delta`` bounds |library's Z_a − Z_b − exact (Z_a − Z_b)| for two scores (sequential
        sums of T terms after ``base``: γ_{T+1} times the sum of magnitudes, for each of the two,
        doubled again for the final division and a possible fused multiply-add), in the unit
        roundoff of the library's precision, plus the decision's ``band`` (then no exact grid).
        """
        u = float(np.finfo(self.dtype).eps) / 2.0
        bits = int(np.finfo(self.dtype).nmant) + 1
        band = float(getattr(self.decision, "band", 0.0))
        vals = self.value[self.leaf_ids]
        per_tree = np.zeros(self.n_trees)
        np.maximum.at(per_tree, self.tree_of[self.leaf_ids], np.abs(vals).max(axis=1))
        total = float(np.abs(self.base).max(initial=0.0) + per_tree.sum())
        allv = np.concatenate([self.base, vals.ravel()])
        unit = 0.0
        for e in range(41 if band == 0.0 else 0):
            scaled = np.ldexp(allv, e)
            if np.all(scaled == np.round(scaled)):
                if math.ldexp(total, e) < 2.0 ** (bits - 13):
                    unit = math.ldexp(1.0, -e)
                break
        n = self.n_trees + 2
        delta = 0.0 if unit > 0 else 4.0 * n * u / (1.0 - n * u) * total + band
        return unit, delta

    def leaves(self, X):
        """Return the global leaf id of every row of X in every tree, shape (N, T).

        A NaN goes where the library routes a missing value (:attr:`missing`).
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        nan = self.missing is not None and bool(np.isnan(X).any())
        if self.categories is None:  # (a kernel; the walk below for categorical splits)
            missing = self.missing if nan else np.zeros(0, dtype=np.int8)
            return walk(
                X, self.root, self.is_leaf, self.feature, self.boundary, self.left, self.right,
                missing, nan,
            )  # fmt: skip
        return self.walk_levels(X)

    def walk_levels(self, X):
        """:meth:`leaves` in NumPy, one level of every tree at a time (any split kind)."""
        X = np.asarray(X, dtype=np.float64)
        rows = np.arange(X.shape[0])[:, None]
        node = np.broadcast_to(self.root, (X.shape[0], self.n_trees)).copy()
        nan = self.missing is not None and bool(np.isnan(X).any())
        while True:
            inner = ~self.is_leaf[node]
            if not inner.any():
                return node
            v = X[rows, self.feature[node]]
            go = v <= self.boundary[node]
            if nan:  # a NaN takes the side the library routes missing values to
                go = np.where(np.isnan(v), self.missing[node] == 1, go)
            if self.categories is not None:  # a set of categories goes left
                f = self.feature[node]
                go = self.categories.route(node, f, v, self.missing[node], go)
            node = np.where(inner, np.where(go, self.left[node], self.right[node]), node)

    def sums(self, leaves):
        """Return Z = base + Σ_t terms, added in tree order as the library does, shape (N, S).

        In float32 where the library adds in float32 (each partial sum rounded to it), as
        :func:`~fastcf._kernels.tree_walk.leaf_sums` does.
        """
        leaves = np.ascontiguousarray(leaves, dtype=np.int64)
        return leaf_sums(self.value, leaves, self.base, self.dtype == np.float32)

    def scores(self, leaves):
        """Return the library's scores: the sums divided by ``divisor`` (shape (N, S))."""
        Z = self.sums(leaves)
        return Z / self.divisor if self.divisor != 1.0 else Z

    def evaluate(self, X, chunk=2_000_000):
        """Return the library's scores at the rows of X, shape (N, S).

        In chunks of rows that keep the (rows, trees, scores) terms under ``chunk`` values.
        """
        X = np.asarray(X, dtype=np.float64)
        step = max(1, chunk // max(1, self.n_trees * self.base.size))
        if X.shape[0] <= step:
            return self.scores(self.leaves(X))
        return np.concatenate(
            [self.scores(self.leaves(X[i : i + step])) for i in range(0, X.shape[0], step)]
        )

    def predict_index(self, X):
        """Return the class index the library gives each row of X."""
        return self.decision.predict(self.evaluate(X))

    def predict_proba(self, X):
        """Return the class probabilities the library gives each row of X."""
        return self.link.proba(self.evaluate(X))

    # ------------------------------------------------------------------ checks
    def probe(self, rng, n):
        """Return n rows built from the split values.

        Each coordinate is one of its feature's split boundaries, the next float64 above one,
        a library threshold or one of its neighbours: the values where a wrong rule shows.
        """
        lo, hi = self.domain
        X = np.zeros((n, self.n_features))
        inner = ~self.is_leaf
        for f in range(self.n_features):
            on = inner & (self.feature == f)
            if not on.any():
                continue
            b = self.boundary[on]
            t = self.threshold[on]
            with np.errstate(over="ignore"):
                t32 = t.astype(np.float32)
            cand = np.concatenate(
                [
                    b,
                    np.nextafter(b, np.inf),
                    t,
                    np.nextafter(t, np.inf),
                    np.nextafter(t, -np.inf),
                    t32.astype(np.float64),
                    np.nextafter(t32, np.float32(np.inf)).astype(np.float64),
                    np.nextafter(t32, np.float32(-np.inf)).astype(np.float64),
                ]
            )
            cand = cand[np.isfinite(cand) & (cand >= lo) & (cand <= hi)]
            if self.categories is not None and self.categories.is_cat[f]:
                cand = self.categories.probe_values(f)
            if cand.size:
                X[:, f] = rng.choice(cand, size=n)
        return X
