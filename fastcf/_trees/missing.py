"""Missing values (NaN) in a query: the forest conditioned on the features the query leaves out.

Every library that takes NaN routes it at each split to one child, fixed when the model was
fitted (:attr:`fastcf._trees.forest.Tree.missing`, read by each parser):

* scikit-learn's ``HistGradientBoostingClassifier`` — ``missing_go_to_left`` of the node;
* scikit-learn's trees and forests (≥ 1.3; a fitted tree routes NaN even where it saw none in
  training: to the child with more samples) — ``missing_go_to_left`` of the node; a model whose
  own ``predict`` refuses NaN (``GradientBoostingClassifier``, trees with ``monotonic_cst``)
  routes none;
* XGBoost — ``default_left`` of the node (for the default ``missing=np.nan``);
* LightGBM — ``default_left`` where the node's ``missing_type`` is ``"NaN"`` or ``"Zero"`` (a
  NaN is read as 0 there first), else a NaN is read as 0.0 and compared with the threshold.

Semantics. A counterfactual does not impute: a feature the query leaves missing stays missing in
the answer (it cannot be changed, as a frozen feature), and the other features move. Since the
routing of a NaN does not depend on the other features, the model restricted to such queries is
the forest *conditioned* on the missing features (:func:`condition`): every split on one of
them collapses to the child a NaN takes, which leaves a smaller forest over the other features
with the same leaves, terms and arithmetic for every input of the pattern. The exact machinery
(one tree's leaf enumeration, the ensemble program) answers on it unchanged, with the missing
features held at a placeholder (:data:`FILL`) no split of the conditioned forest reads; the
answer gets its NaN back before the model's own ``predict`` confirms it. The distance ignores
the missing features and ``changed`` excludes them. The conditioned forests are kept per NaN
pattern (:class:`Patterns`), since a batch repeats its patterns.

(Conditioning on a frozen feature's value is the same operation with ``x <= boundary`` as the
routing; the program's bounds already fix those features, so it is not done.)
"""

from __future__ import annotations

import math

import numpy as np

from .._threads import Shared
from .forest import Forest, Tree
from .staged import Builds

__all__ = [
    "FILL",
    "routed",
    "check_query",
    "condition",
    "groups",
    "Patterns",
    "Constant",
    "program",
    "probe_rows",
]

#: the value a missing feature is held at inside the solvers (no conditioned split reads it)
FILL = 0.0
#: conditioned forests kept per explainer (the patterns seen most recently)
MAX_PATTERNS = 64


def routed(forest: Forest) -> np.ndarray:
    """Return (D,) bool: the features whose NaN the model routes at every split on them."""
    D = forest.n_features
    if forest.missing is None:
        return np.zeros(D, dtype=bool)
    inner = ~forest.is_leaf
    bad = inner & (forest.missing < 0)
    out = np.ones(D, dtype=bool)
    out[np.unique(forest.feature[bad])] = False
    return out


def _label(names, c):
    return repr(str(names[c])) if names is not None else str(c)


def check_query(forest: Forest, X, names, model_name, lo=None, hi=None):
    """Return the (N, D) mask of the features each row conditions the forest on.

    Those are the NaN of X (a ValueError where the model cannot route one) and, in a model with
    categorical splits (:mod:`fastcf._trees.categorical`), its categorical features, which the
    query's box ``[lo, hi]`` must pin to x (``frozen``): a ValueError names a categorical
    feature left free. The messages name the feature and the row.
    """
    M = np.isnan(X)
    cats = forest.categories
    if cats is not None:
        pinned = M | ((lo == X) & (hi == X)) if lo is not None else M
        free = cats.is_cat[None, :] & ~pinned
        if free.any():
            r, c = (int(v) for v in np.argwhere(free)[0])
            raise ValueError(
                f"x may change the categorical feature {_label(names, c)} (row {r}) of this "
                f"{model_name}: answers that change a category are not supported yet; freeze "
                f"it (frozen=[{_label(names, c)}], or every categorical feature) to answer with "
                "its category kept"
            )
    C = M | cats.is_cat[None, :] if cats is not None else M
    if not M.any():
        return C
    bad = M & ~routed(forest)[None, :]
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        label = _label(names, c)
        why = (
            "its own predict refuses NaN"
            if forest.missing is None
            else "it does not route a missing value at every split on that feature"
        )
        raise ValueError(
            f"x has a missing value (NaN) at feature {label} (row {r}): this {model_name} "
            f"cannot route missing values ({why}); impute the value first, or use a model that "
            "routes them (HistGradientBoostingClassifier, XGBoost, LightGBM, or scikit-learn "
            "trees and forests)"
        )
    return C


def _goes_left(fo: Forest, i: int, v: float) -> bool:
    """Where node i sends the value v (NaN: the missing side; a category: its set)."""
    if np.isnan(v):
        return bool(fo.missing[i] == 1)
    cats = fo.categories
    if cats is not None and cats.row[i] >= 0:
        k = cats.code(fo.feature[i], [v])
        return bool(cats.decide(cats.row[i : i + 1], k, np.array([v]), fo.missing[i : i + 1])[0])
    return bool(v <= fo.boundary[i])


def _collapse(forest: Forest, t: int, mask, x) -> Tree:
    """Return tree t with every split on a masked feature replaced by the child x[f] takes."""
    fo = forest
    start = int(fo.offset[t])
    stop = int(fo.offset[t + 1]) if t + 1 < fo.n_trees else fo.is_leaf.size

    def skip_masked(i):  # down the masked splits, to the node x reaches first
        while not fo.is_leaf[i] and mask[fo.feature[i]]:
            left = _goes_left(fo, i, x[fo.feature[i]])
            i = int(fo.left[i]) if left else int(fo.right[i])
        return i

    order, stack = [], [skip_masked(start)]
    while stack:  # depth first from the (resolved) root, left child first
        i = stack.pop()
        order.append(i)
        if not fo.is_leaf[i]:
            stack.append(skip_masked(int(fo.right[i])))
            stack.append(skip_masked(int(fo.left[i])))
    order = np.asarray(order, dtype=np.int64)
    pos = np.full(stop - start, -1, dtype=np.int64)
    pos[order - start] = np.arange(order.size)
    leaf = fo.is_leaf[order]
    kids_l = np.array([skip_masked(int(fo.left[i])) if not fo.is_leaf[i] else -1 for i in order])
    kids_r = np.array([skip_masked(int(fo.right[i])) if not fo.is_leaf[i] else -1 for i in order])
    return Tree(
        feature=fo.feature[order],
        threshold=fo.threshold[order],
        boundary=fo.boundary[order],
        left=np.where(leaf, -1, pos[np.maximum(kids_l, start) - start]),
        right=np.where(leaf, -1, pos[np.maximum(kids_r, start) - start]),
        value=fo.value[order],
        missing=fo.missing[order],
    )


def condition(forest: Forest, mask, x=None) -> Forest:
    """Return the forest restricted to the inputs equal to ``x`` on ``mask`` (D,) bool.

    Every split on a masked feature collapses to the child the library sends ``x[f]`` to (a
    NaN: the missing side; ``x`` None: NaN everywhere); the result has the same trees (a tree
    may shrink to one leaf), terms, arithmetic, decision and link, and no split on a masked
    feature: for every input equal to x on ``mask``, its leaves are those of the model. The
    caller checks that the model routes these NaN (:func:`check_query`); every categorical
    feature must be masked.
    """
    mask = np.asarray(mask, dtype=bool)
    x = np.full(mask.shape, np.nan) if x is None else np.asarray(x, dtype=np.float64)
    if forest.categories is not None and not mask[forest.categories.is_cat].all():
        raise ValueError("condition: every categorical feature must be conditioned on")
    trees = [_collapse(forest, t, mask, x) for t in range(forest.n_trees)]
    fo = forest
    return Forest(
        trees, fo.base, fo.divisor, fo.decision, fo.link, fo.n_features, fo.domain, fo.rule,
        dtype=fo.dtype,
    )  # fmt: skip


def _key(mask, x):
    """Return the pattern of a row: its mask, where its NaN are, and its values on the mask."""
    nan = np.isnan(x) & mask
    return np.concatenate([mask, nan, np.where(mask & ~nan, x, 0.0)])


def groups(C, X):
    """Yield ``(mask, x, rows)`` for each distinct pattern (:func:`_key`).

    Over the rows with a conditioned feature (``C``: the (N, D) mask of :func:`check_query`).
    """
    has = np.flatnonzero(C.any(axis=1))
    if has.size == 0:
        return
    keys = np.array([_key(C[i], X[i]) for i in has])
    _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    for k in range(first.size):
        i = has[first[k]]
        yield C[i], X[i], has[inv == k]


class Patterns(Shared):
    """The solvers of each NaN pattern, built on first use from the conditioned forest.

    ``makers`` maps a kind (``"leaves"``, ``"milp"``) to the function building its solver (a
    leaf table, a program) from a forest; :meth:`get` keeps the most recent
    :data:`MAX_PATTERNS` of them.
    """

    def __init__(self, forest: Forest, makers):
        self.forest = forest
        self.makers = makers
        self._builds = Builds(MAX_PATTERNS)
        self._init_shared()  # (a lock: the batch threads ask at once)

    def get(self, kind, mask, x, deadline=None):
        """Return the solver of ``kind`` for the inputs equal to x on ``mask``.

        ``deadline`` (``time.perf_counter()``; a query's ``time_limit``; ``"milp"`` only): the
        construction of a program stops at the first of its stages past it
        (:meth:`~fastcf._trees.structure.Structure.advance`) and None is returned; the stages
        done are kept apart (:meth:`building`) for the next query of the pattern, and only
        finished solvers are cached (:class:`~fastcf._trees.staged.Builds`).
        """
        key = self._key(kind, mask, x)

        def make(dl):
            fo = condition(self.forest, mask, x) if np.any(mask) else self.forest
            return self.makers[kind](fo) if deadline is None else self.makers[kind](fo, dl)

        with self._lock:
            return self._builds.get(key, make, math.inf if deadline is None else deadline)

    def building(self, kind, mask, x):
        """Return the construction a time limit stopped for this pattern (None: none)."""
        with self._lock:
            return self._builds.part(self._key(kind, mask, x))

    @staticmethod
    def _key(kind, mask, x):
        return (kind, _key(np.asarray(mask, dtype=bool), np.asarray(x, np.float64)).tobytes())


class Constant:
    """The answer of a forest without splits (every split read a missing feature): one class.

    Every input of the pattern gets the same class and probabilities, so the query itself is
    the answer (distance 0) when they meet the target, and nothing is otherwise. The
    :class:`~fastcf._trees.milp.Program` interface (``solve``, ``quick``).
    """

    def __init__(self, forest: Forest):
        S = forest.scores(forest.root[None, :])
        self.cls = int(forest.decision.predict(S)[0])
        self.proba = forest.link.proba(S)[0]

    def solve(self, x0, t, lo, hi, q, confirm, plain=False, start=None):
        from .._status import Status
        from .milp import Answer

        ok = self.cls == t and (q.proba is None or self.proba[t] >= q.proba)
        if ok and confirm(x0):
            return Answer(x0.copy(), 0.0, True, int(Status.OK), "milp: converged", 0, 0.0, 0.0, 0)
        return Answer(
            x0.copy(), np.inf, False, int(Status.INFEASIBLE), "infeasible: the model gives every "
            "input with these features missing the same class, not the target", 0, np.inf,
            np.inf, 0,
        )  # fmt: skip

    def quick(self, x0, t, lo, hi, q, confirm, start=None):
        return self.solve(x0, t, lo, hi, q, confirm)


def program(forest: Forest, deadline=math.inf):
    """Return the ensemble solver of a conditioned forest (:class:`Constant` if it has no split).

    ``deadline``: as :class:`~fastcf._trees.structure.Structure`'s (a program's construction
    stops past it; its ``built`` is then False).
    """
    if forest.is_leaf.all():
        return Constant(forest)
    from .milp import Program

    return Program(forest, deadline)


def probe_rows(forest: Forest, P, seed: int = 0):
    """Return the probe rows P with, where the model routes NaN, a copy with NaN cells added.

    The parsers' checks compare the parsed routing of missing values with the library's own on
    these rows (about a third of the cells of a quarter of the rows made NaN).
    """
    ok = routed(forest)
    if not ok.any():
        return P
    rng = np.random.default_rng(seed + 7919)
    Q = P[: max(1, P.shape[0] // 4)].copy()
    Q[(rng.random(Q.shape) < 0.35) & ok[None, :]] = np.nan
    return np.vstack([P, Q])
