"""The per-model structure of a tree program: threshold intervals, leaf boxes and linking rows.

Built once per explainer from a parsed :class:`~fastcf._trees.forest.Forest` and read by every
query's program (:class:`fastcf._trees.milp.Program`): per feature the sorted distinct split
boundaries ``B[f]`` (its intervals, ``R``/``U`` their ends), the y column of every split node,
each leaf's box along its path (:meth:`Structure._ancestry`), and the rows that link the leaf
indicators of each tree to the interval binaries (:meth:`Structure._links`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Structure"]


def _ranges(start, stop):
    """Concatenate ``arange(start[i], stop[i])`` over i."""
    n = stop - start
    if n.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    off = np.repeat(start - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    return off + np.arange(int(n.sum()))


class Structure:
    """The program template of one forest: intervals, leaves and their ancestry, built once.

    y columns are numbered per feature (``yoff[f] .. yoff[f] + m_f``); a split no input of the
    domain takes left (right) has ``node_y = -2`` (``-1``).
    """

    def __init__(self, forest):
        self.forest = forest
        D = forest.n_features
        lo, hi = forest.domain
        inner = ~forest.is_leaf
        self.B = []
        for f in range(D):
            b = forest.boundary[inner & (forest.feature == f)]
            self.B.append(np.unique(b[(b >= lo) & (b < hi)]))
        self.m = np.array([B.size for B in self.B], dtype=np.int64)
        self.yoff = np.concatenate([[0], np.cumsum(self.m)]).astype(np.int64)
        self.n_y = int(self.yoff[-1])
        # all boundaries in one array (the kernels'); B[f] is a view of feature f's part
        self.B_flat = np.concatenate([np.zeros(0), *self.B])
        self.B = [self.B_flat[a:b] for a, b in zip(self.yoff[:-1], self.yoff[1:], strict=True)]
        self.R = [np.concatenate([[lo], np.nextafter(B, np.inf)]) for B in self.B]
        self.U = [np.concatenate([B, [hi]]) for B in self.B]
        self.node_y = np.full(forest.is_leaf.size, -1, dtype=np.int64)
        for f in range(D):
            on = np.flatnonzero(inner & (forest.feature == f))
            b = forest.boundary[on]
            j = np.searchsorted(self.B[f], b)
            self.node_y[on] = np.where(
                (b >= lo) & (b < hi), self.yoff[f] + j, np.where(b < lo, -2, -1)
            )
        self.leaf_ids = forest.leaf_ids
        self.leaf_tree = forest.tree_of[self.leaf_ids]
        self.leafpos = np.full(forest.is_leaf.size, -1, dtype=np.int64)
        self.leafpos[self.leaf_ids] = np.arange(self.leaf_ids.size)
        self.V = forest.value[self.leaf_ids]  # (n_leaves, S)
        self._ancestry(forest)
        self._links(forest)

    def _ancestry(self, forest):
        """Build each leaf's box: one entry (leaf, feature, lo, hi) per feature on its path."""
        inner_ids = np.flatnonzero(~forest.is_leaf)
        parent = np.full(forest.is_leaf.size, -1, dtype=np.int64)
        side = np.zeros(forest.is_leaf.size, dtype=np.int64)
        parent[forest.left[inner_ids]] = inner_ids
        parent[forest.right[inner_ids]] = inner_ids
        side[forest.right[inner_ids]] = 1
        el, en, es = [], [], []
        cur = self.leaf_ids.copy()
        pos = np.arange(cur.size)
        while cur.size:  # walk every leaf up to the root
            p = parent[cur]
            have = p >= 0
            cur, pos, p = cur[have], pos[have], p[have]
            el.append(pos)
            en.append(p)
            es.append(side[cur])
            cur = p
        e_leaf = np.concatenate(el) if el else np.zeros(0, np.int64)
        e_node = np.concatenate(en) if en else np.zeros(0, np.int64)
        e_side = np.concatenate(es) if es else np.zeros(0, np.int64)
        # the leaf boxes, one entry per (leaf, feature on its path)
        D = forest.n_features
        f = forest.feature[e_node]
        b = forest.boundary[e_node]
        key = e_leaf * D + f
        uk, inv = np.unique(key, return_inverse=True)
        blo = np.full(uk.size, -np.inf)
        bhi = np.full(uk.size, np.inf)
        right = e_side == 1
        np.maximum.at(blo, inv[right], np.nextafter(b[right], np.inf))
        np.minimum.at(bhi, inv[~right], b[~right])
        self.b_leaf, self.b_feat, self.b_lo, self.b_hi = uk // D, uk % D, blo, bhi
        # the same boxes as ranges of interval indices: entry e holds intervals e_ka .. e_kb
        lo, hi = forest.domain
        self.e_ka = np.zeros(uk.size, dtype=np.int64)
        self.e_kb = np.zeros(uk.size, dtype=np.int64)
        for g in np.unique(self.b_feat):
            on = self.b_feat == g
            self.e_ka[on] = np.searchsorted(self.B[g], blo[on], side="left")
            self.e_kb[on] = np.searchsorted(self.B[g], bhi[on], side="left")
        empty = (blo > hi) | (bhi < lo) | (self.e_ka > self.e_kb)
        n = self.leaf_ids.size
        # the leaves some input reaches (an empty box: none does)
        self.leaf_ok = np.bincount(self.b_leaf[empty], minlength=n) == 0
        self.ioff = self.yoff + np.arange(D + 1)  # interval k of f is ioff[f] + k, all features
        # the leaves of each tree are consecutive (trees are concatenated): tree t's start
        self.tree_start = np.searchsorted(self.leaf_tree, np.arange(forest.n_trees))
        # leaf i's entries are leaf_estart[i] .. leaf_estart[i + 1] - 1 (sorted by leaf)
        self.leaf_estart = np.searchsorted(self.b_leaf, np.arange(n + 1)).astype(np.int64)
        # the features on leaf i's path as bits f mod 64 (a superset test: no bit in common
        # with a set of features means none of them)
        self.leaf_fmask = np.zeros(n, dtype=np.int64)
        np.bitwise_or.at(self.leaf_fmask, self.b_leaf, np.left_shift(1, self.b_feat % 64))
        # the (tree, feature) groups of entries: group g is tree hull_tree[g], feature
        # hull_feat[g]; entry_group[e] is the group of entry e
        tf = self.leaf_tree[self.b_leaf] * D + self.b_feat
        key, group = np.unique(tf, return_inverse=True)
        self.entry_group = group.astype(np.int64).ravel()
        self.hull_tree = key // D
        self.hull_feat = key % D
        # tree t's groups are hull_start[t] .. hull_start[t + 1] - 1 (sorted by tree)
        self.hull_start = np.searchsorted(self.hull_tree, np.arange(forest.n_trees + 1))
        self.hull_start = self.hull_start.astype(np.int64)

    def _links(self, forest):
        """Build the linking rows, per tree t, feature f and boundary b_j of a split of t on f.

        ``L``: ``Σ_{l ∈ t: hi_l(f) <= b_j} λ_l <= y_j`` and ``R``: ``Σ_{l ∈ t: lo_l(f) > b_j}
        λ_l <= 1 − y_j`` (hi_l, lo_l: the leaf's box). They hold the per-node rows of the module
        docstring (the leaves left of a node on (f, b_j) are among those of L) and are stronger
        where a tree splits on f more than once (L and R gather the subtrees of all its splits
        on the same side of b_j). Stored as entries (row, leaf); row 2r is L, 2r + 1 is R of the
        r-th (tree, feature, boundary).
        """
        D = forest.n_features
        lo, hi = forest.domain
        n_y1 = self.n_y + 1
        nodes = np.flatnonzero(~forest.is_leaf & (self.node_y >= 0))
        tf = forest.tree_of[nodes] * D + forest.feature[nodes]
        key = np.unique(tf * n_y1 + self.node_y[nodes])
        self.row_y = np.repeat(key % n_y1, 2)  # the y of each linking row
        self.row_side = np.tile([0, 1], key.size)
        tf_e = self.leaf_tree[self.b_leaf] * D + self.b_feat
        rows, leaves = [], []
        # L: every boundary b_j >= hi_l(f) of the leaf's tree on f
        m = (self.b_hi >= lo) & (self.b_hi < hi)
        yh = self._ycol(self.b_feat[m], self.b_hi[m])
        start = np.searchsorted(key, tf_e[m] * n_y1 + yh)
        stop = np.searchsorted(key, (tf_e[m] + 1) * n_y1)
        rows.append(2 * _ranges(start, stop))
        leaves.append(np.repeat(self.b_leaf[m], stop - start))
        # R: every boundary b_j < lo_l(f), i.e. b_j <= the boundary the leaf turned right at
        under = np.nextafter(self.b_lo, -np.inf)
        m = np.isfinite(self.b_lo) & (under >= lo) & (under < hi)
        yl = self._ycol(self.b_feat[m], under[m])
        start = np.searchsorted(key, tf_e[m] * n_y1)
        stop = np.searchsorted(key, tf_e[m] * n_y1 + yl, side="right")
        rows.append(2 * _ranges(start, stop) + 1)
        leaves.append(np.repeat(self.b_leaf[m], stop - start))
        self.lk_row = np.concatenate(rows)
        self.lk_leaf = np.concatenate(leaves)

    def intervals(self, x):
        """Return the interval of each feature that holds the value ``x[f]`` (D,)."""
        from .._kernels.tree_walk import intervals

        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (len(self.B),):  # (the kernel reads yoff[f + 1] unchecked)
            raise ValueError(f"x must have shape ({len(self.B)},); got {x.shape}")
        return intervals(x, self.B_flat, self.yoff)

    def _ycol(self, f, b):
        """Return the y column of boundary values b of features f (each b one of B[f])."""
        out = np.empty(f.size, dtype=np.int64)
        for g in np.unique(f):
            on = f == g
            out[on] = self.yoff[g] + np.searchsorted(self.B[g], b[on])
        return out
