"""A tabular tree program's forest over one order of each block's categories.

:class:`~fastcf._tabular.treeprog.TreeProgram` solves a query whose allowed categories the
default order cannot keep together in a program of its own order (see that module's
docstring, "Allowed categories"): :func:`start` rewrites the pipeline's tree model over the
program's variables in those orders (:func:`order_forest`) and begins the construction of its
program (:class:`GridProgram`, whose intervals start at grid points), which the tree
program keeps in a :class:`~fastcf._trees.staged.Builds`.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from .._trees.forest import Forest, Tree
from .._trees.milp import Program as ForestProgram
from .grid import value

__all__ = ["CACHE", "GridProgram", "coords_of", "n_first", "snap", "order_forest", "start"]

#: programs of custom category orders kept per explainer
CACHE = 16


class GridProgram(ForestProgram):
    """The tree program of a raw forest whose intervals start at grid points, not nextafter.

    ``above[f]``: None (a continuous feature) or {boundary: the next value the feature may
    take}; the interval after each boundary, and every leaf box that turned right at one,
    starts there. ``coords``: as :func:`order_forest`'s. ``deadline``: as
    :class:`~fastcf._trees.structure.Structure`'s (the construction in stages; the grid set
    when the last one ends).
    """

    def __init__(self, forest, above, coords, deadline=math.inf):
        self.above = above
        self.coords = coords
        super().__init__(forest, deadline)

    def advance(self, deadline=math.inf):
        """Run the construction's next stages (:meth:`Structure.advance`), then the grid."""
        if self.built:
            return True
        if super().advance(deadline):
            self._regrid(self.above)
        return self.built

    def _regrid(self, above):
        """Start the intervals and the leaf boxes after a grid boundary at its next point."""
        for f, up in enumerate(above):
            if up is not None and self.B[f].size:
                self.R[f] = np.concatenate([self.R[f][:1], [up[float(b)] for b in self.B[f]]])
        for e in np.flatnonzero(np.isfinite(self.b_lo)):
            up = above[self.b_feat[e]]
            if up is not None:
                self.b_lo[e] = up[float(np.nextafter(self.b_lo[e], -np.inf))]


def coords_of(rank, order, head):
    """Return the coordinate of each position of a block's order (``rank``: None if nominal).

    ``head``: the number of leading positions whose coordinates are ranks (:func:`n_first`).
    """
    if rank is None:
        return np.arange(len(order), dtype=np.float64)
    r = rank[list(order)].astype(np.float64)
    top = r[:head].max() if head else 0.0
    r[head:] = top + 1.0 + np.arange(len(order) - head)
    return r


def n_first(rank, order):
    """Return the number of leading positions whose coordinates are ranks (ordinal blocks)."""
    if rank is None:
        return len(order)
    r = rank[list(order)]
    n = 1
    while n < len(order) and r[n] > r[n - 1]:
        n += 1
    return n


def snap(beta, r):
    """Return (g, next): the largest point of the grid of r at or below β, and the next one."""
    R = Decimal(repr(float(r)))
    n = math.floor(Decimal(repr(float(beta))) / R)
    while value(n, r) > beta:
        n -= 1
    while value(n + 1, r) <= beta:
        n += 1
    return value(n, r), value(n + 1, r)


def start(prog, orders, deadline=math.inf):
    """Start the construction of the :class:`GridProgram` of ``prog`` in ``orders``.

    Its stages run until ``deadline`` (``time.perf_counter()``; :meth:`GridProgram.advance`
    goes on from there): a construction for :class:`~fastcf._trees.staged.Builds`.
    """
    firsts = [n_first(prog.rank[j], o) for j, o in enumerate(orders)]
    coords = [
        coords_of(prog.rank[j], o, n) for j, (o, n) in enumerate(zip(orders, firsts, strict=True))
    ]
    forest, above = order_forest(prog, orders, coords)
    return GridProgram(forest, above, coords, deadline)


def order_forest(prog, orders, coords):
    """Return (Forest, above): the tree model over the variables of ``prog`` in ``orders``.

    ``prog``: the :class:`~fastcf._tabular.treeprog.TreeProgram`; ``orders``: one order of
    categories per block; ``coords``: each block's coordinates of its order's positions
    (:func:`coords_of`). ``above``: as :class:`GridProgram`'s.
    """
    s = prog.schema
    tf = prog.tf
    fo = tf.forest
    D = prog.n_num + prog.n_cat
    above = [None] * D
    for j in range(prog.n_num):
        if prog.grid[j]:
            above[j] = {}
    for j in range(prog.n_cat):
        c = coords[j]
        above[prog.n_num + j] = {float(c[p]): float(c[p + 1]) for p in range(len(c) - 1)}
    levels = {int(c): np.asarray(s.fold.labels[c], dtype=np.float64)
              for c in prog.cat_cols if c in s.levels}  # fmt: skip
    trees = []
    for t in range(fo.n_trees):
        out = {"f": [], "b": [], "l": [], "r": [], "v": []}

        def new(f, b, v=None, out=out):
            out["f"].append(f)
            out["b"].append(b)
            out["l"].append(-1)
            out["r"].append(-1)
            out["v"].append(v)
            return len(out["f"]) - 1

        def emit(node, out=out, new=new):
            if fo.is_leaf[node]:
                return new(-1, np.nan, fo.value[node])
            side = tf.node_side[node]
            if side >= 0:
                return emit(fo.left[node] if side == 0 else fo.right[node])
            c = int(tf.node_col[node])
            first, other = fo.left[node], fo.right[node]
            if tf.node_swap[node]:
                first, other = other, first
            v = prog.var[c]
            if v < prog.n_num:  # a numeric column: one threshold (on its grid)
                beta = float(tf.node_beta[node])
                if prog.grid[v]:
                    g, nxt = snap(beta, s.num_res[v])
                    above[v][g] = nxt
                    beta = g
                i = new(v, beta)
                out["l"][i] = emit(first)
                out["r"][i] = emit(other)
                return i
            j = v - prog.n_num
            if c in levels:  # a numeric split of a column kept at its levels
                mask = levels[c] <= tf.node_beta[node]
                left = ~mask if tf.node_swap[node] else mask
            else:
                left = tf.node_set[int(node)]
            flag = left[np.asarray(orders[j])]
            cuts = np.flatnonzero(flag[1:] != flag[:-1])  # a run ends at each cut
            starts = np.concatenate([[0], cuts + 1])
            return chain(v, coords[j], flag, starts, cuts, node)

        def chain(v, cj, flag, starts, cuts, node, new=new, out=out):
            # the runs of the set in the order, split in halves: one threshold per cut
            if cuts.size == 0:
                return emit(fo.left[node] if flag[starts[0]] else fo.right[node])
            mid = cuts.size // 2
            i = new(v, float(cj[cuts[mid]]))
            out["l"][i] = chain(v, cj, flag, starts[: mid + 1], cuts[:mid], node)
            out["r"][i] = chain(v, cj, flag, starts[mid + 1 :], cuts[mid + 1 :], node)
            return i

        emit(int(fo.root[t]))
        S = fo.value.shape[1]
        val = np.array([np.zeros(S) if x is None else x for x in out["v"]])
        f = np.array(out["f"], dtype=np.int64)
        b = np.array(out["b"], dtype=np.float64)
        trees.append(Tree(f, b, b, np.array(out["l"]), np.array(out["r"]), val))
    forest = Forest(
        trees, fo.base, fo.divisor, fo.decision, fo.link, D, (-math.inf, math.inf),
        fo.rule, fo.dtype,
    )  # fmt: skip
    return forest, above
