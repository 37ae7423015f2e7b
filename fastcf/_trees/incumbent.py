"""A quick valid answer of an ensemble query (an incumbent), to prune the exact program.

No optimality claim: the answer bounds the optimum from above, which lets the program drop every
leaf and interval that costs more on its own (:mod:`fastcf._trees.reduce`); the closer it is to
the optimum, the smaller the program.

**Single-feature moves, all at once.** From a point x (its interval ``k_f`` on every feature and
its leaf in every tree), moving feature f to interval k changes tree t's leaf only to a leaf whose
box holds x on every other feature: a leaf whose box misses x on exactly one feature, f. So one
pass over the leaf boxes counts each leaf's misses; every leaf with one miss, on f over the
intervals ``a..b``, adds ``V_leaf − V_current`` to the sums of the moves of f into ``a..b`` (a
difference array per feature, summed cumulatively): the sums after *every* single-feature move
in O(leaf boxes), without walking a tree (:meth:`Search.table`).

* Greedy: from a start, if some move reaches the target, the cheapest is taken; otherwise the
  move of best gain in the target's margin per unit of cost, and the search goes on. Started
  from x̄ and from the projections of x̄ onto the leaf boxes (the "feature tweaking" of Tolomei
  et al., 2017) of best margin; the cheapest valid projection is a candidate too.
* Polish: moves of one feature back towards x̄ that keep the answer valid, the largest saving
  first; then each changed feature is put back to x̄ and the answer repaired greedily, kept if
  cheaper.

The sums of a table are added in another order than the library adds them, so every candidate
is checked with the library's arithmetic (:meth:`~fastcf._trees.forest.Forest.evaluate`) before
it is returned.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .query import coord_cost

__all__ = ["Search", "cost_of", "miss_bits"]

_STARTS = 3  # leaf projections the greedy search also starts from
#: the largest bit sets of a forest's misses (bytes) the tables are read from
#: (:func:`~fastcf._kernels.tree_moves.single_moves_bits`, 1.5–2× faster a point on the forests
#: of the benchmark); a forest past it counts each leaf's misses (the same sums)
MISS_BITS_BYTES = 64 * 2**20


def miss_bits(st):
    """Return the bit sets of the forest's misses (made once per forest), or None if too large."""
    bits = getattr(st, "_miss_bits", None)
    if bits is None:
        n = st.leaf_ids.size
        size = int(st.ioff[-1]) * ((n + 63) // 64) * 8
        if size > MISS_BITS_BYTES:
            bits = False
        else:
            from .._kernels.tree_moves import miss_bits as make

            bits = make(st.b_leaf, st.b_feat, st.e_ka, st.e_kb, st.ioff, n)
        st._miss_bits = bits
    return None if bits is False else bits


def cost_of(x, x0, q):
    """Return the objective value of x (the square of the Euclidean distance)."""
    return float(coord_cost(x - x0, q.w, q.metric).sum())


class Search:
    """The incumbent search of one query (see the module docstring).

    Parameters
    ----------
    st : Structure
        The forest's program template.
    x0 : ndarray of shape (D,)
    t : int
        The target class index.
    q : TreeQuery
    c : Costs
        The query's interval costs and box (:class:`~fastcf._trees.reduce.Costs`).
    points : ndarray
        Every interval's point closest to x̄ (flat, as ``c.flat``).
    """

    width = 4  # the beam's width (0: no beam search)
    both = True  # also a beam ranked by gain per unit of cost
    depth = 6  # its rounds at least (2 more than the first answer's changed features)

    def __init__(self, st, x0, t, q, c, points):
        self.st, self.fo, self.x0, self.t, self.q, self.c = st, st.forest, x0, t, q, c
        self.points = points
        fo = self.fo
        # the margin's forms (a, r), a·Z − r: the decision's (r = 0), then τ's
        self.mforms = [(a, 0.0) for a, _ in fo.decision.forms(t)]
        if q.proba is not None:
            self.mforms += list(fo.link.forms(t, q.proba, fo.divisor, st.V.shape[1]))
        # the cheapest point of the query's box: x̄ where the box holds it (every search starts
        # there and puts features back to it, so that no answer leaves the box)
        self.base = points[st.ioff[:-1] + np.clip(c.kbar, c.ka, c.kb)]
        # a move whose margin is below −(gap + rel · max|sums|) is outside the target in the
        # library's decision too (see _judge): its band and τ's slack (score units, times the
        # divisor: the margins are in sums), and the rounding of the scores it reads (the
        # division by the divisor; XGBoost's float32), each with room
        band = float(getattr(fo.decision, "band", 0.0))
        slack = fo.link.slack(q.proba) if q.proba is not None else 0.0
        self.gap = 4.0 * fo.divisor * (band + slack)
        self.rel = 16.0 * float(np.finfo(fo.dtype).eps)
        D = self.fo.n_features
        self.ext = st.ioff[:-1] + np.arange(D)  # feature f's difference array starts here
        self.n_ext = int(st.ioff[-1]) + D
        self.restrict(None)

    def restrict(self, red):
        """Keep only the leaves and intervals a point cheaper than the reduction's cutoff uses.

        ``red``: a :class:`~fastcf._trees.reduce.Reduced` (None: every leaf, the query's box).
        Every point the searches visit afterwards must cost less than that cutoff: its leaves
        are then alive, and so is the leaf every single move reaches.
        """
        st, c = self.st, self.c
        on = st.leaf_ok if red is None else red.alive
        ka, kb = (c.ka, c.kb) if red is None else (red.ka, red.kb)
        e = np.flatnonzero(on[st.b_leaf])
        self.leaf_on = on
        i = np.flatnonzero(on)  # (the alive leaves as bits, for the bit sets' tables)
        self.on_bits = np.zeros((on.size + 63) // 64, dtype=np.uint64)
        np.bitwise_or.at(
            self.on_bits, i >> 6, np.left_shift(np.uint64(1), (i & 63).astype(np.uint64))
        )
        self.ef = st.b_feat[e]
        # leaf i's entries among these (they stay grouped by leaf, in order)
        self.lstart = np.searchsorted(st.b_leaf[e], np.arange(on.size + 1)).astype(np.int64)
        self.ea = st.e_ka[e]
        self.eb = np.minimum(st.e_kb[e], st.m[self.ef])
        D = self.fo.n_features
        feat = np.repeat(np.arange(D), st.m + 1)
        k = np.arange(feat.size) - st.ioff[feat]
        ok = (k >= ka[feat]) & (k <= kb[feat])
        self.mv = np.flatnonzero(ok)  # every allowed (feature, interval): flat interval ids
        self.mf, self.mk = feat[ok], k[ok]
        self.mp, self.mc = self.points[ok], c.flat[ok]

    # ------------------------------------------------------------------ evaluation
    def _kx(self, x):
        return self.st.intervals(x)

    def _valid(self, S):
        """Which rows of scores S the library's decision puts in the target (and τ)."""
        fo = self.fo
        ok = fo.decision.predict(S) == self.t
        if self.q.proba is not None:
            ok &= fo.link.proba(S)[:, self.t] >= self.q.proba
        return ok

    def _judge(self, Z):
        """Return (ok, m): :meth:`_valid` of the scores of sums Z (N, S), and :meth:`_margin`.

        The library's verdict (its own arithmetic, e.g. XGBoost's float32 ``expf``) is only
        computed for the rows whose margin is not far below 0: each margin form is a necessary
        condition of the class (and of τ) in exact arithmetic, met by any row the library puts
        in the target to within its decision's band, τ's slack and the rounding of the scores
        (``gap`` and ``rel``, with room); the other rows are not in the target.
        """
        m = self._margin(Z)
        tol = self.gap + self.rel * (1.0 + float(np.abs(Z).max(initial=0.0)))
        near = ~(m < -tol)  # (a NaN margin is judged by the library)
        if near.all():
            return self._valid(self._scores(Z)), m
        ok = np.zeros(m.shape[0], dtype=bool)
        if near.any():
            ok[near] = self._valid(self._scores(Z[near]))
        return ok, m

    def _margin(self, Z):
        """Return the target's margin at sums Z (N, S): >= 0 about where the class is reached."""
        out = np.full(Z.shape[0], np.inf)
        for a, r in self.mforms:  # (v − 0.0 is v, bit for bit; min(inf, v) is v)
            out = np.minimum(out, Z @ a - r)
        return out

    def exact(self, x):
        """Tell whether x is an answer (the target, τ and ``max_changes``).

        The library's own arithmetic puts x in the target (and meets τ), and x changes at most
        ``max_changes`` features of x̄. (Every candidate is checked here: a box that leaves
        x̄_f out, as a tabular query's bounds may, makes f change at every point, x̄'s own
        cell included.)
        """
        q = self.q
        if q.max_changes is not None and np.count_nonzero(x != self.x0) > q.max_changes:
            return False
        return bool(self._valid(self.fo.evaluate(x[None]))[0])

    def table(self, kx):
        """Return (Z, Znew): the sums at intervals kx and after every single-feature move."""
        Z, Zn = self.tables(np.asarray(kx, dtype=np.int64)[None])
        return Z[0], Zn[0]

    def tables(self, KX):
        """Return the :meth:`table` of each row of ``KX`` (W, D): (W, S) and (W, M, S)."""
        from .._kernels.tree_moves import single_moves, single_moves_bits

        st = self.st
        KX = np.ascontiguousarray(KX, dtype=np.int64)
        bits = miss_bits(st)
        if bits is not None:
            return single_moves_bits(
                KX, bits, self.on_bits, st.ioff, self.ef, self.lstart, self.ea, self.eb,
                st.leaf_tree, st.V, self.fo.base, self.fo.n_trees, self.ext, self.n_ext,
                self.mf, self.mk,
            )  # fmt: skip
        return single_moves(
            KX, self.ef, self.lstart, self.ea, self.eb, self.leaf_on, st.leaf_tree, st.V,
            self.fo.base, self.fo.n_trees, self.ext, self.n_ext, self.mf, self.mk,
        )  # fmt: skip

    # ------------------------------------------------------------------ the searches
    def _scores(self, Z):
        return Z / self.fo.divisor if self.fo.divisor != 1.0 else Z

    def greedy(self, x):
        """Greedy single-feature moves from x; a valid point (by the tables) or None."""
        x0, q = self.x0, self.q
        kx = self._kx(x)
        now = coord_cost(x - x0, q.w, q.metric)
        Z, Zn = self.table(kx)
        margin = float(self._margin(Z[None])[0])
        for step in range(2 * x0.shape[0] + 2):
            if step:
                Z, Zn = self.table(kx)
            allowed = self.mk != kx[self.mf]
            if q.max_changes is not None and np.count_nonzero(x != x0) >= q.max_changes:
                allowed &= x[self.mf] != x0[self.mf]
            idx = np.flatnonzero(allowed)
            if idx.size == 0:
                return None
            Zi = Zn[idx]
            ok, m = self._judge(Zi)
            total = now.sum() - now[self.mf[idx]] + self.mc[idx]
            if ok.any():
                best = idx[np.flatnonzero(ok)[np.argmin(total[ok])]]
                x = x.copy()
                x[self.mf[best]] = self.mp[best]
                return x
            gain = m - margin
            score = np.where(gain > 0, gain / np.maximum(total - now.sum(), 1e-300), -np.inf)
            b = int(np.argmax(score))
            if not math.isfinite(score[b]):
                return None
            j = idx[b]
            x = x.copy()
            x[self.mf[j]] = self.mp[j]
            kx[self.mf[j]] = self.mk[j]
            now[self.mf[j]] = self.mc[j]
            margin = m[b]
        return None

    def polish(self, x):
        """Improve a valid x by single-feature moves back towards x̄ that keep it valid."""
        x0, q = self.x0, self.q
        kx = self._kx(x)
        now = coord_cost(x - x0, q.w, q.metric)
        for _ in range(4 * x0.shape[0] + 4):
            _, Zn = self.table(kx)
            idx = np.flatnonzero(self.mc < now[self.mf])  # moves of one feature towards x̄
            if idx.size == 0:
                return x
            ok = self._judge(Zn[idx])[0]  # (never a new changed feature)
            if not ok.any():
                return x
            saving = now[self.mf[idx]] - self.mc[idx]
            best = idx[np.flatnonzero(ok)[np.argmax(saving[ok])]]
            x = x.copy()
            x[self.mf[best]] = self.mp[best]
            kx[self.mf[best]] = self.mk[best]
            now[self.mf[best]] = self.mc[best]
        return x

    def beam(self, width=8, depth=None, best=None, pace=True):
        """Beam search of single-feature moves from x̄: the cheapest valid point found, or None.

        Each round expands every point of the beam by every move; valid children are
        candidates, the others are ranked and the best ``width`` (distinct) form the next
        beam: by their margin gain beyond the pace of ``best`` (its gain per unit of cost times
        theirs) when it is given, else by their gain per unit of cost. Children that cost no
        less than the best candidate are dropped.
        """
        from .._kernels.tree_beam import beam_moves, beam_next

        x0, q = self.x0, self.q
        depth = self.depth if depth is None else depth
        kx0 = self._kx(self.base)
        Z0, _ = self.table(kx0)
        m0 = float(self._margin(Z0[None])[0])
        # the beam's points, their intervals and their per-coordinate costs (W, D)
        BX, BK = self.base[None].copy(), kx0[None].astype(np.int64)
        BC = coord_cost(self.base - x0, q.w, q.metric)[None]
        best_cost = math.inf if best is None else cost_of(best, x0, q)
        # the best answer's pace: the margin it gained per unit of cost
        rate = max(-m0, 0.0) / best_cost if pace and 0.0 < best_cost < math.inf else 0.0
        limit = -1 if q.max_changes is None else q.max_changes
        mf, mk, mp, mc = self.mf, self.mk, self.mp, self.mc
        for _ in range(depth):
            # every point's moves at once (the kernels of fastcf._kernels.tree_beam), with
            # the library's verdict and the margin of each move cheaper than the best answer
            _, ZN = self.tables(BK)
            pt, mv, tot, Zi = beam_moves(ZN, BX, BK, BC, x0, mf, mk, mc, best_cost, limit)
            if pt.size == 0:
                break
            ok, m = self._judge(Zi)
            BX2, BK, BC, w, i, best_cost = beam_next(
                pt, mv, tot, ok, m, BX, BK, BC, mf, mk, mp, mc, m0, rate, width, best_cost
            )
            if w >= 0:
                best = BX[w].copy()
                best[mf[i]] = mp[i]
            BX = BX2
            if BX.shape[0] == 0:
                break
        return best

    def _repair(self, x):
        """Put each changed feature of a valid x back to x̄ and repair greedily; the cheapest."""
        best, best_cost = x, cost_of(x, self.x0, self.q)
        for f in np.flatnonzero(x != self.base):
            y = x.copy()
            y[f] = self.base[f]
            g = self.greedy(y)
            if g is None:
                continue
            g = self.polish(g)
            cg = cost_of(g, self.x0, self.q)
            if cg < best_cost and self.exact(g):
                best, best_cost = g, cg
        return best

    def run(self, P, reduce_at=None, deadline=math.inf):
        """Return a point the library's arithmetic puts in the target (and τ), or None.

        ``P``: projections of x̄ onto leaf boxes (n, D), cheapest first. ``reduce_at(C)``: the
        reductions at cutoff C (:func:`~fastcf._trees.reduce.reduce`), which narrow the beam
        search once a first answer of cost C is known (None: no beam search). ``deadline``
        (``time.perf_counter()``): past it, the beam search is skipped (the query's
        ``time_limit``).
        """
        x0, q = self.x0, self.q
        if self.exact(self.base):
            return self.base.copy()
        found = []
        if P.shape[0]:
            S = self.fo.evaluate(P)
            ok = self._valid(S)
            if q.max_changes is not None:
                ok &= np.count_nonzero(P != x0, axis=1) <= q.max_changes
            m = self._margin(S * self.fo.divisor if self.fo.divisor != 1.0 else S)
            if ok.any():
                c = coord_cost(P[ok] - x0, q.w, q.metric).sum(axis=1)
                found.append(P[ok][np.argmin(c)])
            starts = [self.base]
            if not ok.any():
                fine = np.ones(P.shape[0], bool)
                if q.max_changes is not None:
                    fine = np.count_nonzero(P != x0, axis=1) <= q.max_changes
                order = np.argsort(-np.where(fine, m, -np.inf))[:_STARTS]
                starts += [P[i] for i in order if fine[i]]
        else:
            starts = [self.base]
        if self.mv.size:
            for s in starts:
                g = self.greedy(s)
                if g is not None:
                    found.append(g)
        found = [self.polish(x) for x in found]
        found = [x for x in found if self.exact(x)]
        if not found:
            return None
        best = min(found, key=lambda x: cost_of(x, x0, q))
        best = self._repair(best)
        if self.width and reduce_at is not None and time.perf_counter() < deadline:
            red = reduce_at(cost_of(best, x0, q))
            if red.empty:  # pragma: no cover - best itself costs no more
                return best
            self.restrict(red)
            depth = max(self.depth, int(np.count_nonzero(best != x0)) + 2)
            for pace in (True, False) if self.both else (True,):
                g = self.beam(self.width, depth, best=best, pace=pace)
                if g is not None:
                    g = self.polish(g)
                    if cost_of(g, x0, q) < cost_of(best, x0, q) and self.exact(g):
                        best = g
        return best
