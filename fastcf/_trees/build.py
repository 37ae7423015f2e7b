"""The mixed-integer program of one tree query, over what the reductions left (HiGHS model).

Columns (the formulation of :mod:`fastcf._trees.milp`):

* one binary ``y_j`` (*x_f <= b_j*) per boundary that separates two leaves still in the
  program: an edge of an alive leaf's box strictly inside its feature's range. Between two such
  boundaries the intervals are *merged*: no alive leaf tells them apart, so the merged interval
  costs what its interval nearest x̄ costs and decodes to that interval's point;
* one continuous ``λ_l ∈ [0, 1]`` per alive leaf of every tree kept. A tree whose alive leaves
  all carry the same terms adds a constant and is left out (unless a leaf of it died by a
  margin, which a cell might still reach).

Rows: ``y`` monotone within a feature; one leaf per tree; the linking rows, per tree t, feature
f and boundary j at an edge of one of t's alive leaves: ``Σ_{l ∈ t, box_l(f) <= b_j} λ_l <= y_j``
and ``Σ_{l ∈ t, box_l(f) > b_j} λ_l <= 1 − y_j``; the target's forms; ``max_changes``. With
every boundary and leaf kept (``plain``) this is the full interval program.

Why merging and leaving trees out keep the optimum: an answer x* of cost <= ρ reaches an alive
leaf in every tree (:mod:`fastcf._trees.reduce`); each alive leaf's box is a union of merged
intervals, so x*'s merged cell is in the program with the same leaves, and its cheapest point
costs no more than x* and reaches the same leaves of the kept trees; in a tree left out it
reaches an alive leaf (its cost is <= ρ), whose terms are the constant.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._highs import highs

__all__ = ["Built", "build", "decode"]

_HIGHS_OPTIONS = (
    ("mip_feasibility_tolerance", 1e-9),
    ("primal_feasibility_tolerance", 1e-9),
    ("presolve", "off"),
)
#: set for each pruned program (a cutoff just below a known answer): HiGHS's sub-MIP and
#: jump heuristics look for answers the incumbent search already found (measured: 20-60% of
#: the time of the mid-sized programs)
TUNED = (
    ("mip_heuristic_run_rins", False),
    ("mip_heuristic_run_rens", False),
    ("mip_heuristic_run_root_reduced_cost", False),
    ("mip_heuristic_run_feasibility_jump", False),
    ("mip_detect_symmetry", False),
)
#: the same options at HiGHS's defaults, for the full program (``plain``)
DEFAULTS = (
    ("mip_heuristic_run_rins", True),
    ("mip_heuristic_run_rens", True),
    ("mip_heuristic_run_root_reduced_cost", True),
    ("mip_heuristic_run_feasibility_jump", True),
    ("mip_detect_symmetry", True),
)


def _highs():
    """Return this thread's HiGHS instance for tree programs (:func:`fastcf._highs.highs`)."""
    return highs("trees", _HIGHS_OPTIONS)


class Built(NamedTuple):
    """A program passed to HiGHS, and what its columns mean."""

    h: object  # this thread's highspy.Highs, holding the model
    col_g: np.ndarray  # (n_y,) the global boundary id (yoff[f] + j) of each y column
    lcol: np.ndarray  # (n_leaves,) the column of each leaf's λ, -1 if not in the program
    kept: np.ndarray  # (n_trees,) bool: the trees in the program
    const: np.ndarray  # (S,) the terms of the trees left out, summed
    ka: np.ndarray  # (D,) the ranges the program decodes within
    kb: np.ndarray
    n_rows: int
    n_cols: int


def _ranges(start, stop):
    """Concatenate ``arange(start[i], stop[i])`` over i."""
    n = stop - start
    if n.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    off = np.repeat(start - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    return off + np.arange(int(n.sum()))


class _Rows:
    """Row entries gathered before one sparse matrix is made."""

    def __init__(self):
        self.r, self.c, self.v, self.lo, self.hi = [], [], [], [], []
        self.n = 0

    def add(self, rows, cols, vals, lo, hi, count):
        self.r.append(np.asarray(rows, dtype=np.int64) + self.n)
        self.c.append(np.asarray(cols, dtype=np.int64))
        self.v.append(np.asarray(vals, dtype=np.float64))
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (count,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (count,)))
        self.n += count


def _kept_trees(st, red, plain):
    """Return (kept, const): trees with distinct alive terms, and the others' summed terms."""
    T = st.forest.n_trees
    if plain:
        return np.ones(T, dtype=bool), np.zeros(st.V.shape[1])
    on = red.alive[:, None]
    vmax = np.maximum.reduceat(np.where(on, st.V, -np.inf), st.tree_start)
    vmin = np.minimum.reduceat(np.where(on, st.V, np.inf), st.tree_start)
    kept = (vmax != vmin).any(axis=1) | red.pruned
    return kept, vmax[~kept].sum(axis=0)


def build(st, q, c, red, forms, cutoff, plain=False, relax=False):
    """Pass the program of one query to this thread's HiGHS and return the :class:`Built`.

    ``c``: the query's :class:`~fastcf._trees.reduce.Costs`; ``red``: the reductions at
    ``cutoff`` (a :class:`~fastcf._trees.reduce.Reduced`); ``forms``: the target's forms as
    ``(a, r)`` on the sums, ``a·(base + Σ V λ) >= r``. ``cutoff`` (inf for none) bounds the
    objective. ``plain``: every boundary and tree kept (the full program, for comparison).
    ``relax``: every column continuous (the program's linear relaxation).
    """
    import highspy
    from scipy import sparse

    fo = st.forest
    ioff = st.ioff[:-1]
    ka, kb = red.ka, red.kb
    kept, const = _kept_trees(st, red, plain)
    leaf_in = red.alive & kept[st.leaf_tree]
    kl = np.flatnonzero(leaf_in)
    # the boxes of the program's leaves, as interval ranges within the feature ranges
    e = np.flatnonzero(leaf_in[st.b_leaf])
    ef, el = st.b_feat[e], st.b_leaf[e]
    a = np.maximum(st.e_ka[e], ka[ef])
    b = np.minimum(st.e_kb[e], kb[ef])
    hi_edge = b < kb[ef]  # the box ends at boundary b (x <= B[b]) inside the range
    lo_edge = a > ka[ef]  # the box starts past boundary a − 1
    g_hi = st.yoff[ef] + b
    g_lo = st.yoff[ef] + a - 1
    if plain:
        inner = _ranges(st.yoff[:-1] + ka, st.yoff[:-1] + kb)  # every boundary in the range
        col_g = np.unique(inner)
    else:
        col_g = np.unique(np.concatenate([g_hi[hi_edge], g_lo[lo_edge]]))
    ny, nl = col_g.size, kl.size
    n_y1 = st.n_y + 1
    ycol = np.full(n_y1, -1, dtype=np.int64)
    ycol[col_g] = np.arange(ny)
    lcol = np.full(st.leaf_ids.size, -1, dtype=np.int64)
    lcol[kl] = ny + np.arange(nl)
    # objective: merged intervals between consecutive columns of a feature
    cf = np.searchsorted(st.yoff, col_g, side="right") - 1  # feature of each column
    cj = col_g - st.yoff[cf]
    first = np.r_[True, cf[1:] != cf[:-1]] if ny else np.zeros(0, bool)
    last = np.r_[cf[1:] != cf[:-1], True] if ny else np.zeros(0, bool)
    glo = np.where(first, ka[cf], np.r_[0, cj[:-1]] + 1)  # the group left of each column
    ghi = np.where(last, kb[cf], np.r_[cj[1:], 0])  # the group right of it ends here
    left_cost = c.flat[ioff[cf] + np.clip(c.kbar[cf], glo, cj)]
    right_cost = c.flat[ioff[cf] + np.clip(c.kbar[cf], cj + 1, ghi)]
    ycost = left_cost - right_cost
    lastlo = ka.copy()  # the last group of each feature: past its last column
    lastlo[cf[last]] = cj[last] + 1
    offset = float(c.flat[ioff + np.clip(c.kbar, lastlo, kb)].sum())
    rows = _Rows()
    # monotone y within a feature
    pair = np.flatnonzero(~last)
    k = pair.size
    rows.add(np.repeat(np.arange(k), 2), np.column_stack([pair, pair + 1]).ravel(),
             np.tile([1.0, -1.0], k), -np.inf, 0.0, k)  # fmt: skip
    # one leaf per kept tree
    trees = np.flatnonzero(kept)
    tpos = np.full(fo.n_trees, -1, dtype=np.int64)
    tpos[trees] = np.arange(trees.size)
    rows.add(tpos[st.leaf_tree[kl]], lcol[kl], np.ones(nl), 1.0, 1.0, trees.size)
    # links, keyed (tree, boundary); L rows take the boxes ending at or before the boundary,
    # R rows those starting after it
    et = st.leaf_tree[el]
    keys = np.unique(np.concatenate([et[hi_edge] * n_y1 + g_hi[hi_edge],
                                     et[lo_edge] * n_y1 + g_lo[lo_edge]]))  # fmt: skip
    if plain:  # every boundary of the tree's own splits (the full program's rows)
        keys = np.unique(np.concatenate([keys, _split_keys(st, ka, kb)]))
    fend = st.yoff[ef + 1] - 1  # the last boundary of the entry's feature
    start = np.searchsorted(keys, et[hi_edge] * n_y1 + g_hi[hi_edge])
    stop = np.searchsorted(keys, et[hi_edge] * n_y1 + fend[hi_edge], side="right")
    lrow = 2 * _ranges(start, stop)
    lleaf = np.repeat(el[hi_edge], stop - start)
    start = np.searchsorted(keys, et[lo_edge] * n_y1 + st.yoff[ef[lo_edge]])
    stop = np.searchsorted(keys, et[lo_edge] * n_y1 + g_lo[lo_edge], side="right")
    rrow = 2 * _ranges(start, stop) + 1
    rleaf = np.repeat(el[lo_edge], stop - start)
    rid = np.concatenate([lrow, rrow])
    used, inv = np.unique(rid, return_inverse=True)
    g = keys[used // 2] % n_y1
    side = used % 2
    nr = used.size
    rows.add(np.concatenate([inv, np.arange(nr)]),
             np.concatenate([lcol[np.concatenate([lleaf, rleaf])], ycol[g]]),
             np.concatenate([np.ones(rid.size), np.where(side == 0, -1.0, 1.0)]),
             -np.inf, np.where(side == 0, 0.0, 1.0), nr)  # fmt: skip
    # the target: a·(base + const + Σ V λ) >= r
    Vk = st.V[kl]
    for av, r in forms:
        coef = Vk @ av
        nz = np.flatnonzero(coef)
        rhs = r - float(av @ fo.base) - float(av @ const)
        rows.add(np.zeros(nz.size), ny + nz, coef[nz], rhs, np.inf, 1)
    if q.max_changes is not None:
        _max_changes(rows, st, q, c, ka, kb, ycol)
    ncol = ny + nl
    A = sparse.csr_array(
        (np.concatenate(rows.v), (np.concatenate(rows.r), np.concatenate(rows.c))),
        shape=(rows.n, ncol),
    )
    A.sum_duplicates()
    lp = highspy.HighsLp()
    lp.num_col_ = ncol
    lp.num_row_ = rows.n
    lp.col_cost_ = np.concatenate([ycost, np.zeros(nl)])
    lp.col_lower_ = np.zeros(ncol)
    lp.col_upper_ = np.ones(ncol)
    lp.offset_ = offset
    lp.row_lower_ = np.concatenate(rows.lo)
    lp.row_upper_ = np.concatenate(rows.hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * ny + [
            highspy.HighsVarType.kContinuous
        ] * nl
    h = _highs()
    h.clearSolver()
    h.passModel(lp)
    h.setOptionValue("objective_bound", float(cutoff) if np.isfinite(cutoff) else np.inf)
    for name, value in DEFAULTS if plain else TUNED:
        h.setOptionValue(name, value)
    return Built(h, col_g, lcol, kept, const, ka, kb, rows.n, ncol)


def _split_keys(st, ka, kb):
    """Return the (tree, boundary) keys of every split inside the ranges (the full program)."""
    fo = st.forest
    nodes = np.flatnonzero(~fo.is_leaf & (st.node_y >= 0))
    g = st.node_y[nodes]
    f = fo.feature[nodes]
    j = g - st.yoff[f]
    on = (j >= ka[f]) & (j < kb[f])
    return fo.tree_of[nodes[on]] * (st.n_y + 1) + g[on]


def _max_changes(rows, st, q, c, ka, kb, ycol):
    """Add ``Σ_f changed_f <= m``: changed_f = 1 − z_f, z_f the merged interval holding x̄_f."""
    cols, vals, const = [], [], 0.0
    for f in range(st.forest.n_features):
        k0 = int(c.kbar[f])
        if not (ka[f] <= k0 <= kb[f]) or c.flat[st.ioff[f] + k0] > 0.0:
            const += 1.0  # x̄_f is not allowed: the feature changes
            continue
        if ka[f] == kb[f]:
            continue  # one interval: x̄_f's own, unchanged
        s = int(st.yoff[f])
        # the merged interval holding k0 lies between the nearest columns left and right of it
        left = ycol[s + ka[f] : s + k0][::-1]
        right = ycol[s + k0 : s + kb[f]]
        jl = left[left >= 0]
        jr = right[right >= 0]
        const += 1.0  # changed = 1 − (y_right − y_left), y_right = 1 past the last column
        if jr.size:
            cols.append(int(jr[0]))
            vals.append(-1.0)
        else:
            const -= 1.0
        if jl.size:
            cols.append(int(jl[0]))
            vals.append(1.0)
    rows.add(np.zeros(len(cols)), cols, vals, -np.inf, q.max_changes - const, 1)


def decode(st, y, built, c, points):
    """Return the point of the program's merged cell closest to x̄ (``y``: the y columns)."""
    cf = np.searchsorted(st.yoff, built.col_g, side="right") - 1
    cj = built.col_g - st.yoff[cf]
    ones = y > 0.5
    # the merged interval: after the last column at 0 (x > b), up to the first column at 1
    glo = built.ka.copy()
    ghi = built.kb.copy()
    zero = ~ones
    np.maximum.at(glo, cf[zero], cj[zero] + 1)
    np.minimum.at(ghi, cf[ones], cj[ones])
    k = np.clip(c.kbar, glo, ghi)
    return points[st.ioff[:-1] + k]
