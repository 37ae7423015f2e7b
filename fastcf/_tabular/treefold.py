"""A tabular pipeline ending in a tree model: its splits pushed back onto the raw columns.

A tree splits a transformed feature ``f_j``: *left iff f_j <= b* (the library's own rule and
arithmetic, parsed by :mod:`fastcf._trees`: scikit-learn's float32 cast, XGBoost's ``<``, ...).
When every transformed feature is a function of one raw column, each split is a split of that
column, and the tree model is a tree model of the raw DataFrame:

* a **numeric** column through monotone steps (the scalers, ``SimpleImputer`` on present values,
  ``FunctionTransformer()``, ``"passthrough"``: the affine steps of :mod:`fastcf._fold`; the walk
  of :mod:`fastcf._tabular.fold` reads which column each feature comes from and the sign of its
  slope). ``f_j = T(x)`` is non-decreasing in x (or non-increasing) *as scikit-learn computes
  it*, since rounding is monotone; so ``T(x) <= b`` is ``x <= β`` for one double β (or
  ``x >= γ``: the sides swap). β is found by bisection over the ordered float64 bit patterns,
  evaluating T with the pipeline's own ``transform`` — all splits at once, one ``transform`` of a
  probe frame per bisection step (:func:`raw_boundaries`), never a formula of its arithmetic;
* an **encoded** column (``OneHotEncoder``, ``OrdinalEncoder``): each category k gives
  ``f_j`` one value ``e_j(k)``, read by transforming one probe row per category (so ``drop=``,
  infrequent groups and any step after the encoder are the pipeline's own); the split is the
  set of categories ``{k : e_j(k) <= b}`` — an order's prefix for an ordinal code, ``category
  != k`` for a one-hot indicator;
* a feature of no column (a constant) always goes one way.

A feature mixing several columns (``PCA`` after the encoders) is refused with a ``TypeError``
naming it, as are the steps the fold does not model (``PolynomialFeatures``, a
``FunctionTransformer`` with a function, ...). :class:`TreeFold` holds the parsed model and, per
split node, its raw form; :mod:`fastcf._tabular.treeprog` builds the program of a query from it
and checks the rewritten model against the pipeline's own ``predict``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._catalog import TREE_MODELS, final_step

__all__ = ["is_tree_pipeline", "TreeFold", "fold_trees"]

_BIG = float(np.finfo(np.float64).max)


def is_tree_pipeline(model):
    """Tell whether ``model`` is a Pipeline (or a model) ending in a tree classifier."""
    return type(final_step(model)).__name__ in TREE_MODELS


@dataclass
class TreeFold:
    """The parsed tree model and the raw form of each of its split nodes.

    Attributes
    ----------
    forest : Forest
        The model after the preprocessing, parsed (:mod:`fastcf._trees`): *left iff f <= b*.
    node_col : ndarray of int
        Per node of ``forest``: the raw column (position in the DataFrame) its split reads;
        -1 for a leaf or a split of a constant feature.
    node_beta : ndarray of float
        Per numeric split: go to ``node_first`` iff the raw value ``x <= node_beta``.
    node_swap : ndarray of bool
        Per numeric split: ``node_first`` is the right child (a decreasing map), else the left.
    node_side : ndarray of int
        Per split of a constant feature: 0 always left, 1 always right; -1 otherwise.
    node_set : dict
        Per split of an encoded column: node -> bool mask over the column's labels, the
        categories that go left.
    """

    forest: object
    node_col: np.ndarray
    node_beta: np.ndarray
    node_swap: np.ndarray
    node_side: np.ndarray
    node_set: dict


def _key(x):
    """Return the float64s as int64s in the same order (−0.0 just below 0.0); its own inverse."""
    i = np.asarray(x, dtype=np.float64).view(np.int64)
    return i ^ ((i >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _unkey(k):
    k = np.asarray(k, dtype=np.int64)
    return (k ^ ((k >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))).view(np.float64)


class _Probe:
    """Evaluates the pipeline's preprocessing on probe frames built from one template row."""

    def __init__(self, pre, X, fill):
        import pandas as pd

        self.pre, self.X = pre, X
        ok = ~X.isna().any(axis=1).to_numpy()
        row = X.iloc[[int(np.flatnonzero(ok)[0])]] if ok.any() else X.iloc[[0]].copy()
        if not ok.any():  # every row misses a cell: fill it with the imputers' values
            for c, v in fill.items():
                row.iloc[0, c] = v
        self.row = row.reset_index(drop=True)
        self._pd = pd

    def transform(self, cols):
        """Return the preprocessing of a frame whose columns ``cols`` {c: values} vary."""
        n = max(len(v) for v in cols.values())
        frame = self._pd.concat([self.row] * n, ignore_index=True)
        for c, v in cols.items():
            v = list(v) + [v[0]] * (n - len(v))
            dt = self.X.dtypes.iloc[c]
            if getattr(dt, "kind", "O") == "f":
                s = self._pd.Series(np.asarray(v, dtype=np.float64)).astype(dt)
            elif getattr(dt, "kind", "O") in "iub":
                s = self._pd.Series(np.asarray(v, dtype=np.float64))
            else:
                s = self._pd.Series(v, dtype=object)
                try:
                    s = s.astype(dt)
                except (TypeError, ValueError):
                    pass
            frame.isetitem(c, s)
        with np.errstate(all="ignore"):  # (a scaler overflows to ±inf at ±1.8e308: monotone)
            named = getattr(self.pre, "feature_names_in_", None) is not None
            out = self.pre.transform(frame if named else frame.to_numpy())
        out = out.toarray() if hasattr(out, "toarray") else out
        return np.asarray(out, dtype=np.float64)


def raw_boundaries(probe, col, feat, b, up, guess=None):
    """Return the raw boundaries of numeric splits, by bisection with the pipeline's transform.

    Split i reads transformed feature ``feat[i]`` of raw column ``col[i]``, non-decreasing in
    the column when ``up[i]`` (else non-increasing), and goes left iff ``f <= b[i]``. Returns
    ``(beta, side)``: the largest double x with ``f(x) <= b`` (non-decreasing), or with
    ``f(x) > b`` (non-increasing: then x <= beta goes *right*); ``side`` 0 where every finite x
    satisfies it, 1 where none does, -1 otherwise.

    ``guess``: ``(x, width)``, where the boundaries should be (from the affine map the fold
    reads): the bisection starts from ``[x − width, x + width]`` where the pipeline's transform
    confirms that the boundary lies inside, from the whole float64 range elsewhere (the
    answer is the pipeline's either way; the guess only saves ~40 transforms).
    """
    n = b.size
    top = np.full(n, _BIG)
    for i in range(n):  # a float32 column holds no more than float32's range
        dt = probe.X.dtypes.iloc[col[i]]
        if getattr(dt, "kind", "O") == "f" and dt.itemsize < 8:
            top[i] = float(np.finfo(dt).max)
    for c in np.unique(col):  # and no more than the pipeline's steps take
        on = col == c
        top[on] = _finite_top(probe, int(c), float(top[on].min()))

    def q(x):  # the predicate, true then false as x grows
        cols = {}
        rows = np.zeros(n, dtype=np.int64)
        for i in range(n):
            lst = cols.setdefault(int(col[i]), [])
            rows[i] = len(lst)
            lst.append(float(x[i]))
        T = probe.transform(cols)
        f = T[rows, feat]
        return np.where(up, f <= b, ~(f <= b))

    lo = _key(-top)
    hi = _key(top)
    q_lo, q_hi = q(_unkey(lo)), q(_unkey(hi))
    side = np.where(q_hi, 0, np.where(~q_lo, 1, -1))
    run = side == -1  # invariant: q(lo) true, q(hi) false
    if guess is not None and run.any():
        x, width = guess
        with np.errstate(all="ignore"):
            a, z = np.clip(x - width, -top, top), np.clip(x + width, -top, top)
        fine = run & np.isfinite(a) & np.isfinite(z) & (a < z)
        a, z = np.where(fine, a, 0.0), np.where(fine, z, 0.0)
        inside = fine & q(a) & ~q(z)
        lo = np.where(inside, _key(a), lo)
        hi = np.where(inside, _key(z), hi)
    while True:
        gap = hi.astype(np.uint64) - lo.astype(np.uint64)
        act = run & (gap > 1)
        if not act.any():
            break
        mid = lo + (gap // np.uint64(2)).astype(np.int64)
        mid = np.where(act, mid, lo)
        t = q(_unkey(mid))
        lo = np.where(act & t, mid, lo)
        hi = np.where(act & ~t, mid, hi)
    return _unkey(lo), side


def _finite_top(probe, c, top):
    """Return the largest ``t ≤ top`` (in steps of 2⁻³²) that column ``c``'s transform takes at ±t.

    A step's output can overflow to ±inf at ±1.8e308 (a scaler of a column of spread below 1),
    and a later step refuses infinite input (two scalers in a row raised "Input X contains
    infinity"): the model itself cannot predict there, and the bisection stays inside.
    """
    while top > 1.0:
        try:
            probe.transform({c: [-top, top]})
            return top
        except ValueError:
            top *= 2.0**-32
    return top


def fold_trees(model, X):
    """Return ``(fold, tree_fold)`` of a fitted pipeline ending in a tree classifier.

    ``fold``: a :class:`~fastcf._tabular.fold.Fold` of the columns (kinds, labels, ranks,
    imputer fills) with no scores (``G`` zero: the program is the tree program); ``tree_fold``:
    the :class:`TreeFold`.

    Raises
    ------
    TypeError
        A step the fold does not model, or a transformed feature that depends on several raw
        columns (the message names the step), or a tree model TreeExplainer does not take.
    """
    import pandas as pd

    from .._fold import step_name
    from .._trees.parse import parse_model
    from .fold import Fold, Raw, Walk, apply_step

    if type(model).__name__ == "Pipeline":
        pre_steps, (clf_name, clf) = model.steps[:-1], model.steps[-1]
    else:
        pre_steps, clf_name, clf = [], "classifier", model
    try:
        forest = parse_model(clf)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"the classifier {clf_name!r} ({step_name(clf)}) is not supported: {exc}"
        ) from exc
    if forest.categories is not None:  # set splits: TreeExplainer answers them, not this fold
        raise TypeError(
            f"the classifier {clf_name!r} ({step_name(clf)}) is not supported: its native "
            "categorical features (categorical_features=, categorical_feature=, "
            "enable_categorical=) split by sets of categories; encode "
            "the columns in the pipeline (OneHotEncoder, OrdinalEncoder) instead, or explain "
            "the model alone with fastcf.TreeExplainer"
        )
    ordered = {
        i: list(dt.categories)
        for i, dt in enumerate(X.dtypes)
        if isinstance(dt, pd.CategoricalDtype) and dt.ordered
    }
    walk = Walk(X, ordered)
    feats = [Raw(i) for i in range(X.shape[1])]
    for name, step in pre_steps:
        feats = apply_step(step, feats, walk, f"pipeline step {name!r} ({step_name(step)})")
    if len(feats) != forest.n_features:
        raise TypeError(
            f"the classifier {clf_name!r} reads {forest.n_features} features; the steps before "
            f"it make {len(feats)}"
        )
    where = f"the classifier {clf_name!r}"
    fcol = np.full(len(feats), -1, dtype=np.int64)
    fnum = np.zeros(len(feats), dtype=bool)
    fup = np.ones(len(feats), dtype=bool)
    affine = {}  # numeric feature -> (slope, intercept) of its map, in exact arithmetic
    for j, f in enumerate(feats):
        if isinstance(f, Raw):
            f = walk.numeric(f, where)
        cols = {key[1] for key in f.coef}
        if len(cols) > 1:
            names = [str(X.columns[c]) for c in sorted(cols)]
            raise TypeError(
                f"feature {j} that {where} reads mixes the columns {names} (steps: "
                f"{', '.join(walk.steps) or 'none'}); a tree's split on it is not a split of one "
                "column: TabularExplainer takes tree models whose features each come from one "
                "column (scalers, encoders, imputers, passthrough)"
            )
        if cols:
            c = cols.pop()
            fcol[j] = c
            key = ("num", c)
            if key in f.coef:
                fnum[j] = True
                fup[j] = f.coef[key] >= 0.0
                affine[j] = (f.coef[key], f.const)
    kinds = walk.kinds
    numeric = np.array(sorted(c for c, k in kinds.items() if k == "numeric"), dtype=np.int64)
    cat_cols = np.array(sorted(c for c, k in kinds.items() if k != "numeric"), dtype=np.int64)
    sizes = [len(walk.labels[c]) for c in cat_cols]
    cat_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    fill = walk.fill()
    fold = Fold(
        kinds=kinds, labels=walk.labels, ranks=walk.ranks, numeric=numeric, cat_cols=cat_cols,
        cat_start=cat_start, G=np.zeros((1, numeric.size + int(cat_start[-1]))),
        g=np.zeros(1), classes=np.asarray(clf.classes_), probabilistic=True,
        steps=walk.steps, fill=fill,
    )  # fmt: skip
    pre = model[:-1] if type(model).__name__ == "Pipeline" else None
    return fold, _raw_splits(forest, pre, X, fill, (fcol, fnum, fup, affine), walk.labels)


def _raw_splits(forest, pre, X, fill, feats, labels):
    """Return the :class:`TreeFold`: every split node of ``forest`` on the raw columns.

    ``feats``: per transformed feature its raw column (-1: none), whether it is numeric,
    whether its map is non-decreasing, and {feature: (slope, intercept)} of the numeric ones.
    """
    fcol, fnum, fup, affine = feats
    n = forest.is_leaf.size
    inner = np.flatnonzero(~forest.is_leaf)
    node_col = np.full(n, -1, dtype=np.int64)
    node_beta = np.full(n, np.nan)
    node_swap = np.zeros(n, dtype=bool)
    node_side = np.full(n, -1, dtype=np.int64)
    node_set = {}
    if pre is None:  # a bare tree model: its features are the columns
        node_col[inner] = forest.feature[inner]
        node_beta[inner] = forest.boundary[inner]
        return TreeFold(forest, node_col, node_beta, node_swap, node_side, node_set)
    probe = _Probe(pre, X, fill)
    feat = forest.feature[inner]
    b = forest.boundary[inner]
    # encoded columns and constants: one probe row per category
    cats = {int(c): list(labels[c]) for c in np.unique(fcol[fcol >= 0][~fnum[fcol >= 0]])}
    E = probe.transform(cats) if cats else probe.transform({0: [probe.row.iloc[0, 0]]})
    for i, node in enumerate(inner):
        j = feat[i]
        c = fcol[j]
        if c < 0:  # a constant feature
            node_side[node] = 0 if E[0, j] <= b[i] else 1
        elif not fnum[j]:
            node_col[node] = c
            node_set[int(node)] = E[: len(cats[int(c)]), j] <= b[i]
    # numeric columns: bisection, one problem per distinct (feature, boundary)
    num = np.flatnonzero((fcol[feat] >= 0) & fnum[feat])
    if num.size:
        pairs, inv = np.unique(np.column_stack([feat[num], b[num]]), axis=0, return_inverse=True)
        pf = pairs[:, 0].astype(np.int64)
        slope = np.array([affine[int(j)][0] for j in pf])
        const = np.array([affine[int(j)][1] for j in pf])
        with np.errstate(all="ignore"):
            x = (pairs[:, 1] - const) / slope
            width = 1e-9 * (np.abs(x) + np.abs(const / slope)) + 1e-300
        beta, side = raw_boundaries(probe, fcol[pf], pf, pairs[:, 1], fup[pf], (x, width))
        nodes = inner[num]
        inv = inv.ravel()
        node_col[nodes] = fcol[feat[num]]
        node_beta[nodes] = beta[inv]
        node_swap[nodes] = ~fup[feat[num]]
        s = side[inv]
        # a side every finite value takes: 0 -> the first child (left, or right if swapped)
        node_side[nodes] = np.where(s < 0, -1, np.where(s == 0, 0, 1) ^ node_swap[nodes])
        node_col[nodes[s >= 0]] = -1
    return TreeFold(forest, node_col, node_beta, node_swap, node_side, node_set)
