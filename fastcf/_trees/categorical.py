"""Native categorical splits (HistGradientBoosting, LightGBM, XGBoost): sets, not ``x <= b``.

A ``HistGradientBoostingClassifier`` fitted with ``categorical_features`` encodes each
categorical column with its own ``OrdinalEncoder`` (``categories_``: the sorted raw values seen
in training; a value it has not seen, or NaN, becomes NaN) and routes a row at a categorical node
by bitsets (``_predictor.pyx``, ``_predict_one_from_raw_data``): a NaN goes to the side
``missing_go_to_left`` names, a code in the node's ``raw_left_cat_bitsets`` row goes left, any
other known code right (an unknown one is treated as missing). So on the raw input value v of
feature f::

    v is category k of f (exactly)  →  left iff k is in the node's left set
    v is NaN or no category of f     →  the missing side

LightGBM (``categorical_feature=``) reads a category as an integer: ``CategoricalDecision`` of
``include/LightGBM/tree.h`` sends a NaN right, casts v to ``int`` (truncation toward zero, so
2.7 is category 2 and −0.5 category 0), sends a negative one right, and a cast in the node's
bitset left, any other right. So with ``reader="lightgbm"``::

    trunc(v) is category k of f (0 <= trunc(v) < 2³¹)  →  left iff k is in the node's left set
    v is NaN, trunc(v) < 0 or no category of f         →  right (the node's missing side)

(a value of 2³¹ or more overflows the cast; x86's result, −2³¹, goes right too). The categories
of a LightGBM feature are those its model file lists (``feature_infos``), those of the splits'
bitsets among them.

XGBoost (``enable_categorical=True`` with ``feature_types``, on numeric codes) reads the float32
of a value, and its ``Decision`` (``src/common/categorical.h``) sends a node's listed categories
*right*: a NaN takes the node's default child, a value with float32(v) < 0 or >= 2²⁴ (invalid)
goes left, and otherwise the category trunc(float32(v)) goes right iff the node lists it::

    trunc(float32(v)) is category k of f (0 <= float32(v) < 2²⁴)  →  left iff k is not listed
    v is NaN                                                   →  the default child
    anything else                                              →  left

XGBoost's categories are the integers 0, 1, …: those of a feature are 0 up to one past the
largest one a split lists. That last one stands for every category no split lists, which goes
left at every node: when each smaller category is listed by some split, no other category
routes that way (a model's file does not record which categories its training data held, so
the smallest such code is offered; ``bounds`` keep an answer within the codes a user allows, and
``TreeExplainer.fit_mad``/``fit_data`` offer the codes of the training rows only:
:meth:`Categories.offer_seen`).

:class:`Categories` holds the category values of each categorical feature and the left set of
each categorical node, and routes rows (:meth:`Categories.route`, used by
:meth:`fastcf._trees.forest.Forest.leaves`). With its categories fixed, the forest conditioned
on them (:func:`fastcf._trees.missing.condition`) is a threshold forest over the other
features, which the exact machinery answers. A query whose categorical features may change is
answered by :func:`explain_free`: over every combination of the free categories (each the
query's own value or a category the model knows, within ``bounds``; a change of feature f costs
``w_f``, an L0-style cost, ``w_f²`` under the Euclidean root), cheapest first, the exact answer
with those categories, the cheapest total kept; a combination whose categories alone cost at
least the best total so far is not tried. Exact, and exponential in the number of free
categorical features (at most :data:`MAX_COMBINATIONS` combinations per query); a program over
one interval per category (bitset rows against interval binaries) would scale, and is not
there yet.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Categories"]


class Categories:
    """The categorical features of a forest and the left set of each categorical node.

    Parameters
    ----------
    values : dict of int to ndarray
        The sorted raw category values of each categorical feature (its encoder's
        ``categories_``).
    nodes : ndarray of int
        The global ids of the categorical nodes.
    left : list of ndarray of bool
        For each of ``nodes``, which categories of its feature go left (by code).
    n_nodes, n_features : int
    reader : {"exact", "lightgbm", "xgboost"}, default="exact"
        How the library reads a value (the module docstring): the category equal to v and an
        unseen value as missing (HistGradientBoosting); ``trunc(v)`` and anything else right
        (LightGBM); ``trunc(float32(v))`` and anything else but NaN left (XGBoost).
    """

    #: the side of a value that is no category (not NaN): None for the node's missing side
    _OTHER = {"exact": None, "lightgbm": False, "xgboost": True}

    def __init__(self, values, nodes, left, n_nodes, n_features, reader="exact"):
        if reader not in self._OTHER:  # pragma: no cover - the parsers' own argument
            raise ValueError(f"reader must be one of {sorted(self._OTHER)}; got {reader!r}")
        self.reader = reader
        self.values = {int(f): np.asarray(v, dtype=np.float64) for f, v in values.items()}
        self.is_cat = np.zeros(n_features, dtype=bool)
        self.is_cat[list(self.values)] = True
        self.row = np.full(n_nodes, -1, dtype=np.int64)
        self.row[np.asarray(nodes, dtype=np.int64)] = np.arange(len(nodes))
        #: the categories an answer may take per feature (:meth:`offer_seen`): all by default
        self.offered = dict(self.values)
        width = max([1] + [v.size for v in self.values.values()])
        self.left = np.zeros((len(nodes), width), dtype=bool)
        for i, m in enumerate(left):
            self.left[i, : len(m)] = m

    def offer_seen(self, X):
        """Offer the categories of the training rows ``X`` only (XGBoost's reading).

        An XGBoost model does not record which category codes its training data held, so
        :attr:`values` ends one past the largest code a split lists: the stand-in for every
        category no split lists, which may be one the data never held. Given the data, each
        XGBoost feature offers the codes its rows hold (a code past the last value routes as
        that stand-in does: :meth:`code`). The other readers' categories are the training
        data's already (an encoder's ``categories_``, LightGBM's model file).
        """
        if self.reader != "xgboost":
            return
        for f in self.values:
            col = np.asarray(X[:, f], dtype=np.float64)
            v32 = col.astype(np.float32).astype(np.float64)
            ok = np.isfinite(v32) & (v32 >= 0.0) & (v32 < 2.0**24)
            seen = np.unique(np.trunc(v32[ok]))
            self.offered[f] = seen if seen.size else self.values[f]

    @classmethod
    def of_trees(cls, forest, values, per_tree, left_of, reader="exact"):
        """Return the categories of a parsed forest from its trees' categorical nodes.

        ``per_tree[t]``: ``(position in tree t, feature, codes)`` of each categorical node;
        ``left_of(values[f], codes)``: which categories of the feature go left there.
        """
        nodes, left = [], []
        for t, cats in enumerate(per_tree):
            for p, f, codes in cats:
                nodes.append(int(forest.offset[t]) + p)
                left.append(left_of(values[f], codes))
        return cls(values, nodes, left, forest.is_leaf.size, forest.n_features, reader)

    def code(self, f, v):
        """Return the category code of each value v of feature f (−1: NaN or no category)."""
        cats = self.values[int(f)]
        v = np.asarray(v, dtype=np.float64)
        ok = True
        with np.errstate(invalid="ignore", over="ignore"):
            if self.reader == "lightgbm":  # static_cast<int>(v); a negative cast is none
                v = np.trunc(v)
                ok = (v >= 0.0) & (v < 2.0**31)
            elif self.reader == "xgboost":  # float32(v) in [0, 2²⁴), then its int cast
                v32 = v.astype(np.float32).astype(np.float64)
                ok = (v32 >= 0.0) & (v32 < 2.0**24)
                v = np.trunc(v32)
        k = np.clip(np.searchsorted(cats, v), 0, cats.size - 1)
        return np.where(ok & (cats[k] == v), k, -1)

    def decide(self, rows, k, v, missing):
        """Return the decisions (True: left) at categorical nodes (rows of :attr:`left`).

        ``k``: the codes of the values ``v`` (:meth:`code`); ``missing``: the nodes' missing
        sides (1: left). A category goes by the node's set, a NaN to the missing side, any
        other value to the reader's side for it (HistGradientBoosting: the missing side).
        """
        inset = self.left[rows, np.maximum(k, 0)]
        other = self._OTHER[self.reader]
        nan_side = missing == 1
        side = nan_side if other is None else np.where(np.isnan(v), nan_side, other)
        return np.where(k >= 0, inset, side)

    def route(self, node, feature, v, missing, go):
        """Return ``go`` with the categorical nodes' decisions (:meth:`decide`)."""
        cat = self.row[node] >= 0
        if not cat.any():
            return go
        go = go.copy()
        for f in np.unique(feature[cat]):
            sel = cat & (feature == f)
            vs = v[sel]
            go[sel] = self.decide(self.row[node[sel]], self.code(f, vs), vs, missing[sel])
        return go

    def probe_values(self, f):
        """Return values to probe feature f with: its categories, an unseen one, a negative."""
        cats = self.values[int(f)]
        out = [cats, [cats.max() + 1.0, -1.0, cats.min() + 0.5]]
        if self.reader != "exact":  # the casts' edges: fractions, −0.5, 2²⁴, 2³¹ and beyond
            edges = [cats.max() + 0.75, -0.5, -0.0, 2.0**24 - 1.0, 2.0**24, 2.0**24 - 0.25]
            out.append(edges + [2.0**31 - 1.0, 2.0**31, 3e38])
        return np.concatenate(out)

    def known(self, f, v):
        """Tell whether the value v is a category of feature f."""
        return bool(self.code(f, v) >= 0)


#: combinations of categories tried for one query before it is refused
MAX_COMBINATIONS = 4096


def free_categories(forest, X, fmask):
    """Return the (N, D) mask of the categorical features a query may change.

    Those not frozen and not NaN (a missing category stays missing).
    """
    cats = forest.categories
    if cats is None:
        return np.zeros(X.shape, dtype=bool)
    return cats.is_cat[None, :] & ~fmask[None, :] & ~np.isnan(X)


def _combinations(cats, x0, free, lo, hi, w, metric, names):
    """Return ``[(cost, n_changed, values)]`` of the free features' categories, cheapest first.

    Each feature takes its own value (no cost) or one of its categories within the box.
    """
    from itertools import product

    choices = []
    for f in free:
        vals = cats.offered[int(f)]
        vals = vals[(vals >= lo[f]) & (vals <= hi[f]) & (vals != x0[f])]
        choices.append([x0[f], *vals.tolist()])
    n = int(np.prod([len(c) for c in choices], dtype=np.float64))
    if n > MAX_COMBINATIONS:
        which = ", ".join(repr(str(names[f])) if names is not None else str(f) for f in free)
        raise ValueError(
            f"the categorical features {which} of this query have {n} combinations of "
            f"categories (more than {MAX_COMBINATIONS}); freeze some of them (frozen=[...])"
        )
    out = []
    for combo in product(*choices):
        moved = np.array([c != x0[f] for c, f in zip(combo, free, strict=True)], dtype=bool)
        wf = w[free][moved]
        cost = float(np.sum(wf**2) if metric == "euclidean" else np.sum(wf))
        out.append((cost, int(moved.sum()), np.array(combo, dtype=np.float64)))
    out.sort(key=lambda c: c[0])
    return out


def explain_free(ex, X, tidx, names, fmask, options):
    """Return the :class:`~fastcf.results.Solution` of queries that may change categories.

    The exact answer over the categorical features a query leaves free: for each combination
    of their categories (cheapest first; a changed category of feature f costs ``w_f``, and
    ``w_f²`` under the Euclidean root), the exact answer over the other features with those
    categories frozen (:meth:`fastcf.TreeExplainer.explain`), the cheapest total kept; a
    combination whose categories alone cost at least the best total is not tried (it cannot
    win). ``max_changes`` counts the changed categories.
    """
    from .._status import Status
    from .._validation import resolve_bounds, resolve_weights
    from ..results import Solution
    from .query import finish

    cats = ex._forest.categories
    D = X.shape[1]
    metric = options.get("metric", "manhattan")
    w = resolve_weights(options.get("weights"), D, ex.mad_)
    w = np.ones(D) if w is None else w
    bnd = resolve_bounds(options.get("bounds"), D, X, per_row=True)
    m = options.get("max_changes")
    free_all = free_categories(ex._forest, X, fmask)
    pin = np.flatnonzero(fmask | cats.is_cat)  # every category frozen in the sub-queries
    rows = []
    for i in range(X.shape[0]):
        free = np.flatnonzero(free_all[i])
        lo, hi = np.full(D, -np.inf), np.full(D, np.inf)
        if bnd is not None:  # (a shared box is (D,), one per row (N, D))
            lo = np.broadcast_to(bnd[0], X.shape)[i]
            hi = np.broadcast_to(bnd[1], X.shape)[i]
        # proven: every combination tried was answered exactly (optimal, or none exists);
        # lower: a lower bound on the total over the combinations tried (the rest cost more)
        best, best_total, runs, nodes, proven, lower = None, np.inf, 0, 0, True, np.inf
        exact_codes = (int(Status.OK), int(Status.INFEASIBLE), int(Status.UNREACHABLE))
        for cost, k, combo in _combinations(cats, X[i], free, lo, hi, w, metric, names):
            if cost >= best_total:
                break  # every later combination costs at least as much
            if m is not None and k > m:
                continue
            xc = X[i].copy()
            xc[free] = combo
            sub = dict(options, bounds=None if bnd is None else (lo, hi))
            sub["frozen"] = pin.tolist() if m is None or m > k else list(range(D))
            sub["max_changes"] = None if m is None or m == k else m - k
            res = ex.explain(xc, ex.classes_[tidx[i]], **sub)
            runs += int(res.nit)
            nodes += int(res.info.get("nodes", 0))
            proven &= int(res.status) in exact_codes
            b = float(res.info.get("bound", 0.0))
            lower = min(lower, cost + (b * b if metric == "euclidean" else b))
            if not res.success:
                continue
            d = res.distance**2 if metric == "euclidean" else res.distance
            if cost + d < best_total:
                best, best_total = res, cost + d
        rows.append((best, best_total, runs, nodes, proven, min(lower, best_total)))
    found = np.array([b is not None for b, *_ in rows])
    x = np.array([b.x if b is not None else X[i] for i, (b, *_) in enumerate(rows)])
    dist = np.array([finish(t, metric) if b is not None else np.inf for b, t, *_ in rows])
    bound = np.array([finish(max(lo, 0.0), metric) for *_, lo in rows])
    proven = np.array([p for *_, p, _ in rows], dtype=bool)
    ok = found & proven
    status = np.where(
        ok | (~found & proven),
        np.where(found, int(Status.OK), int(Status.INFEASIBLE)),
        int(Status.MAXITER),
    ).astype(np.int64)
    message = [
        "milp: converged over the combinations of categories" if s == 0
        else (
            "stopped before every combination of categories was proven (time limit or "
            "exact=False): the answer is classified as the target but may not be the closest"
            if b is not None
            else "infeasible: no combination of the free categories and of the other "
            "features within the options is classified as the target"
            if s == int(Status.INFEASIBLE)
            else "stopped (time limit) before any combination of categories gave an answer"
        )
        for s, (b, *_) in zip(status, rows, strict=True)
    ]  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(ok, 0.0, np.where(found & (dist > 0), (dist - bound) / dist, np.inf))
    return Solution(
        x=x, proba=None, distance=dist, success=found, status=status,
        nit=np.array([r for _, _, r, *_ in rows], dtype=np.int64), method="milp",
        message=message, certified=found.copy(),  # each success confirmed by explain
        info={"gap": np.where(found, gap, np.inf), "bound": np.where(ok, dist, bound),
              "nodes": np.array([n for _, _, _, n, *_ in rows], dtype=np.int64)},
    )  # fmt: skip
