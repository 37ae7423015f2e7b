"""The per-model structure of a tree program: threshold intervals and leaf boxes.

Built once per explainer from a parsed :class:`~fastcf._trees.forest.Forest` and read by every
query's program (:class:`fastcf._trees.milp.Program`): per feature the sorted distinct split
boundaries ``B[f]`` (its intervals, ``R``/``U`` their ends), the y column of every split node,
each leaf's box along its path and the (tree, feature) groups of its entries
(:meth:`Structure._walk` ... :meth:`Structure._groups`). Each query's program writes its own
linking rows over what its reductions left (:mod:`fastcf._trees.build`).

The construction runs in :data:`STAGES` (vectorised NumPy; on 300 trees of depth 10, 174 000
leaves, each stage a fraction of a second): :meth:`Structure.advance` runs them until a
deadline, so a query with a ``time_limit`` builds what its time allows and a later one goes on
from there (:func:`fastcf._trees.answer.ensemble`).
"""

from __future__ import annotations

import math
import time
from functools import cached_property

import numpy as np

__all__ = ["Structure", "STAGES", "group"]

#: the construction's stages, in order (each a method of :class:`Structure`)
STAGES = ("_intervals", "_walk", "_boxes", "_indices", "_groups")
#: :func:`group` marks keys in a dense table up to this many times the number of keys
_DENSE = 16


def group(key, size):
    """Return ``np.unique(key, return_inverse=True)`` of non-negative ints below ``size``.

    The same arrays, found with a table of ``size`` flags where that is small enough (no sort:
    on the 1.7 million (leaf, feature) keys of 300 trees of depth 10, 0.07 s against
    ``np.unique``'s 0.20 s), else with ``np.unique``.

    Examples
    --------
    >>> uk, inv = group([5, 1, 5, 3], 8)
    >>> uk.tolist(), inv.tolist()
    ([1, 3, 5], [2, 0, 2, 1])
    """
    key = np.asarray(key, dtype=np.int64)
    if size > _DENSE * max(key.size, 1024):
        uk, inv = np.unique(key, return_inverse=True)
        return uk, inv.ravel()
    seen = np.zeros(size, dtype=bool)
    seen[key] = True
    uk = np.flatnonzero(seen)
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return uk, rank[key]


class Structure:
    """The program template of one forest: intervals, leaves and their ancestry, built once.

    y columns are numbered per feature (``yoff[f] .. yoff[f] + m_f``); a split no input of the
    domain takes left (right) has ``node_y = -2`` (``-1``).

    Parameters
    ----------
    forest : Forest
        The parsed model.
    deadline : float, optional
        A ``time.perf_counter()`` time: the construction stops at the first stage boundary
        past it (:meth:`advance`; :attr:`built` then False). Default: none (built at once).
    """

    def __init__(self, forest, deadline=math.inf):
        self.forest = forest
        self._stage = 0  # the stages of STAGES done
        self.advance(deadline)

    @property
    def built(self):
        """True once every stage of the construction has run."""
        return self._stage == len(STAGES)

    def advance(self, deadline=math.inf):
        """Run the construction's next stages until it is built or ``deadline`` has passed.

        The clock is read between stages, and one stage always runs (a call makes progress):
        a stage started before the deadline runs to its end. Returns :attr:`built`. A
        structure not built must not answer queries; it keeps what its stages made, so a
        later call goes on from there.
        """
        first = True
        while self._stage < len(STAGES):
            if not first and time.perf_counter() >= deadline:
                return False
            first = False
            getattr(self, STAGES[self._stage])(self.forest)
            self._stage += 1
        return True

    @property
    def progress(self):
        """Return ``(done, total)``: the construction's stages run, of :data:`STAGES`."""
        return self._stage, len(STAGES)

    def _intervals(self, forest):
        """Build the boundaries ``B``, the intervals (``R``, ``U``) and each split's y column."""
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

    def _walk(self, forest):
        """Walk every leaf up to its root: one (leaf, node, side) per split on its path."""
        inner_ids = np.flatnonzero(~forest.is_leaf)
        parent = np.full(forest.is_leaf.size, -1, dtype=np.int64)
        side = np.zeros(forest.is_leaf.size, dtype=bool)  # (a right child)
        parent[forest.left[inner_ids]] = inner_ids
        parent[forest.right[inner_ids]] = inner_ids
        side[forest.right[inner_ids]] = True
        el, en, es = [], [], []
        cur = self.leaf_ids.copy()
        # (positions in 32 bits where they fit: less memory to touch on a large forest)
        pos = np.arange(cur.size, dtype=np.int32 if cur.size < 2**31 else np.int64)
        while cur.size:
            p = parent[cur]
            have = p >= 0
            cur, pos, p = cur[have], pos[have], p[have]
            el.append(pos)
            en.append(p)
            es.append(side[cur])
            cur = p
        self._path = tuple(
            np.concatenate(a) if a else np.zeros(0, t)
            for a, t in ((el, np.int64), (en, np.int64), (es, bool))
        )  # (the construction's own: dropped by _boxes)

    def _boxes(self, forest):
        """Build each leaf's box: one entry (leaf, feature, lo, hi) per feature on its path."""
        e_leaf, e_node, e_side = self._path
        del self._path
        D = forest.n_features
        f = forest.feature[e_node]
        b = forest.boundary[e_node]
        uk, inv = group(e_leaf.astype(np.int64) * D + f, self.leaf_ids.size * D)
        blo = np.full(uk.size, -np.inf)
        bhi = np.full(uk.size, np.inf)
        right = e_side
        np.maximum.at(blo, inv[right], np.nextafter(b[right], np.inf))
        np.minimum.at(bhi, inv[~right], b[~right])
        self.b_leaf, self.b_feat, self.b_lo, self.b_hi = uk // D, uk % D, blo, bhi

    def _indices(self, forest):
        """Build the boxes as ranges of interval indices, and the leaves' per-entry indexes."""
        D = forest.n_features
        lo, hi = forest.domain
        blo, bhi = self.b_lo, self.b_hi
        # entry e holds intervals e_ka .. e_kb: the entries sorted by feature (a radix sort of
        # small ints), each feature's a contiguous slice searched in its boundaries
        small = np.int16 if D < 2**15 else np.int64
        order = np.argsort(self.b_feat.astype(small), kind="stable")
        cut = np.searchsorted(self.b_feat[order], np.arange(D + 1))
        slo, shi = blo[order], bhi[order]
        ka = np.zeros(blo.size, dtype=np.int64)
        kb = np.zeros(blo.size, dtype=np.int64)
        for g in np.flatnonzero(np.diff(cut)):
            a, b = cut[g], cut[g + 1]
            ka[a:b] = np.searchsorted(self.B[g], slo[a:b], side="left")
            kb[a:b] = np.searchsorted(self.B[g], shi[a:b], side="left")
        self.e_ka = np.empty_like(ka)
        self.e_kb = np.empty_like(kb)
        self.e_ka[order] = ka
        self.e_kb[order] = kb
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
        # with a set of features means none of them); a leaf's entries are consecutive
        self.leaf_fmask = np.zeros(n, dtype=np.int64)
        bits = np.left_shift(np.int64(1), (self.b_feat % 64).astype(np.int64))
        has = np.flatnonzero(np.diff(self.leaf_estart) > 0)
        if has.size:
            self.leaf_fmask[has] = np.bitwise_or.reduceat(bits, self.leaf_estart[has])

    def _groups(self, forest):
        """Build the (tree, feature) groups of the entries (the hulls of the reductions)."""
        D = forest.n_features
        # group g is tree hull_tree[g], feature hull_feat[g]; entry_group[e] is entry e's
        tf = self.leaf_tree[self.b_leaf] * D + self.b_feat
        key, group_ = group(tf, forest.n_trees * D)
        self.entry_group = group_.astype(np.int64).ravel()
        self.hull_tree = key // D
        self.hull_feat = key % D
        # tree t's groups are hull_start[t] .. hull_start[t + 1] - 1 (sorted by tree)
        self.hull_start = np.searchsorted(self.hull_tree, np.arange(forest.n_trees + 1))
        self.hull_start = self.hull_start.astype(np.int64)

    @cached_property
    def leaf_tables(self):
        """The leaf boxes and indexes as the tree kernels take them, made once per program.

        A :class:`~fastcf._kernels.tree_reduce.LeafTables` of this structure's arrays (no
        copies but ``V``'s, where it is not C-contiguous float64), read once built.
        """
        from .._kernels.tree_reduce import LeafTables

        return LeafTables(
            self.b_feat, self.e_ka, self.e_kb, self.leaf_estart, self.b_leaf, self.leaf_ok,
            self.leaf_tree, self.tree_start, self.leaf_fmask, self.entry_group, self.hull_tree,
            self.hull_feat, self.hull_start, self.ioff, np.ascontiguousarray(self.V, np.float64),
            self.leafpos, self.n_y + 1,
        )  # fmt: skip

    @cached_property
    def forest_nodes(self):
        """The forest's nodes as the branch and bound's walk takes them, made once per program.

        A :class:`~fastcf._kernels.tree_search.ForestNodes` of the forest's arrays (``missing``
        empty where the model routes no missing value).
        """
        from .._kernels.tree_search import ForestNodes

        fo = self.forest
        missing = np.zeros(0, np.int8) if fo.missing is None else fo.missing
        return ForestNodes(
            fo.root, fo.is_leaf, fo.feature, fo.boundary, fo.left, fo.right, missing
        )  # fmt: skip

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
