"""The exact program of a tabular query on a tree model: the tree program over raw columns.

:mod:`fastcf._tabular.treefold` turns every split of the pipeline's tree model into a split of
one raw column. This module writes the model as a :class:`~fastcf._trees.forest.Forest` over
the program's variables — one per numeric column, one per encoded column — and answers each
query with the ensemble program of :mod:`fastcf._trees.milp` (incumbent, exact reductions,
HiGHS to a zero gap; one tree included), with three changes of coordinates that keep it exact:

* **numeric columns on a grid** (integers, a resolution ``r``): a split *x <= β* is, on the grid,
  *x <= g* with g the largest grid point <= β, and the interval after g starts at the next grid
  point (not at ``nextafter(g)``). Every end of every interval, and of every leaf box, is then a
  grid point, so the point of an interval closest to x̄ (a clip) is a grid point and its cost
  ``w |x − x̄|`` is the cost of the cheapest allowed grid point in it. The box (bounds, dtype
  range, immutable, increase/decrease-only) is the grid box of :meth:`Program._prepare`.
  Continuous columns keep the float64 line.
* **ordinal columns** (``OrdinalEncoder``, a one-hot ordered pandas ``Categorical``, ``levels``)
  are one coordinate whose values are the categories' ranks (the levels themselves), in rank
  order: a move costs ``w |rank − rank̄|`` (Manhattan in that coordinate). A split is a set of
  categories, written as a chain of threshold splits over the runs of the set in that order.
* **nominal columns** (``OneHotEncoder``) are one coordinate whose values are positions
  0, 1, …; a move to any other category costs w (the L0 cost of the coordinate, the ``"mixed"``
  metric of :mod:`fastcf._trees.query`). ``ind_k <= 0.5`` becomes *position != k*: two
  threshold splits.

Allowed categories. A cost of the tree program must grow with the distance of an interval from
x̄'s (:mod:`fastcf._trees.reduce`), so forbidden categories (unseen in training, ``allowed=``,
``transitions=``, bounds, monotone ordinals) must lie outside the box: where the default order
does not put them there, the query gets its own order (the allowed categories first, then the
others) and its own program, cached by order. An ordinal column whose own category is
forbidden but lies between allowed ones is solved twice, below and above it, and the cheaper
answer kept.

Every answer is decoded into a DataFrame row and confirmed by the pipeline's own ``predict``
(and ``predict_proba`` for ``proba=``); the rewritten model is checked against the pipeline on
probe rows at every boundary when the explainer is built (:meth:`TreeProgram.check`).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from .._status import Status
from .._threads import Shared
from .._trees.answer import unbuilt
from .._trees.query import TreeQuery
from .._trees.staged import Builds
from .._validation import deadline as time_deadline
from .milp import Program, RowAnswer
from .treeorders import CACHE, n_first, start
from .verdicts import Verdicts

__all__ = ["TreeProgram"]


class TreeProgram(Shared, Program):
    """The tabular program of a pipeline ending in a tree model (see the module docstring).

    Parameters
    ----------
    schema : Schema
    tree_fold : TreeFold
    model : estimator
        The user's pipeline (its ``predict`` confirms every answer).
    X : pandas.DataFrame
        The training data (model columns): a template row for answers, and probe rows.
    """

    folded = False  # no affine scores: proba= for any number of classes, checked by the model

    def __init__(self, schema, tree_fold, model, X):
        super().__init__(schema)
        self.tf = tree_fold
        self.model = model
        self.frame_input = getattr(model, "feature_names_in_", None) is not None
        ok = ~X.isna().any(axis=1).to_numpy()
        self.template = X.iloc[[int(np.flatnonzero(ok)[0]) if ok.any() else 0]]
        s = schema
        self.var = {int(c): j for j, c in enumerate(self.num_cols)}
        self.var.update({int(c): self.n_num + j for j, c in enumerate(self.cat_cols)})
        self.rank = []  # per block: the ranks (ordinal) or None (nominal)
        self.default = []  # per block: the default order (seen categories first)
        for j in range(self.n_cat):
            sl = slice(s.cat_start[j], s.cat_start[j + 1])
            seen = s.cat_seen[sl]
            r = s.cat_rank[sl] if self.ordinal[j] else None
            if r is not None and np.unique(r[seen]).size < int(seen.sum()):
                raise TypeError(
                    f"column {s.columns[self.cat_cols[j]]!r} has categories of equal rank; "
                    "a tree model's program needs distinct ranks"
                )
            key = np.arange(seen.size) if r is None else r
            allowed = np.flatnonzero(seen)
            self.default.append(self._order(allowed[np.argsort(key[allowed], kind="stable")], j))
            self.rank.append(r)
        self._programs = Builds(CACHE)  # the programs of custom category orders
        self._init_shared()  # (a lock; each thread's verdicts on the row it solves)
        # for plausible=True: its regions, found on the first such query (a copy: the user's
        # frame may change after the explainer is built)
        self._train = X.copy()
        self._regions = None
        self.check(X)

    @property
    def verdicts(self):
        """The model's verdicts on the row this thread is solving (:class:`Verdicts`)."""
        v = getattr(self._local, "verdicts", None)
        if v is None:
            v = self._local.verdicts = Verdicts()
        return v

    # ------------------------------------------------------------------ orders and forests
    def _order(self, first, j):
        """Return the order of block j: the categories ``first``, then the others."""
        n = int(self.schema.cat_start[j + 1] - self.schema.cat_start[j])
        rest = np.setdiff1d(np.arange(n), first)
        return tuple(int(k) for k in np.concatenate([first, rest]).astype(np.int64))

    def program(self, orders, deadline=math.inf):
        """Return the :class:`~fastcf._tabular.treeorders.GridProgram` of a tuple of orders.

        Built once, then cached (:class:`~fastcf._trees.staged.Builds`). ``deadline``
        (``time.perf_counter()``: a row's ``time_limit``): the construction stops at the first
        of its stages past it and None is returned; the stages done are kept apart for the
        next row of that order, and only finished programs are cached.
        """
        with self._lock:
            return self._programs.get(orders, lambda dl: start(self, orders, dl), deadline)

    # ------------------------------------------------------------------ one query
    def _plans(self, k0, d_hi):
        """Return the (orders, boxes) to solve: one per side of a forbidden own category.

        ``boxes[j]``: the first and last position block j's answer may take in its order.
        """
        s = self.schema
        per = []
        for j in range(self.n_cat):
            sl = slice(s.cat_start[j], s.cat_start[j + 1])
            A = np.flatnonzero(d_hi[sl] > 0)
            own = int(k0[j])
            order = self.default[j]
            where = {k: p for p, k in enumerate(order)}
            pa = np.sort([where[int(k)] for k in A])
            contiguous = pa[-1] - pa[0] + 1 == pa.size
            if self.rank[j] is None:
                if not (contiguous and (own in A or not pa[0] <= where[own] <= pa[-1])):
                    order = self._order(A, j)  # the allowed categories first
                    pa = np.arange(A.size)
                per.append([(order, (int(pa[0]), int(pa[-1])))])
                continue
            n_head = n_first(self.rank[j], order)
            if not (contiguous and pa[-1] < n_head and where[own] < n_head
                    and (own in A or not pa[0] <= where[own] <= pa[-1])):  # fmt: skip
                key = self.rank[j]
                first = np.union1d(A, [own])
                order = self._order(first[np.argsort(key[first], kind="stable")], j)
                where = {k: p for p, k in enumerate(order)}
                pa = np.sort([where[int(k)] for k in A])
                if n_first(self.rank[j], order) < first.size:
                    raise ValueError(
                        f"column {s.columns[self.cat_cols[j]]!r}: the allowed categories and the "
                        "row's own must have distinct ranks for a tree model's program"
                    )
            po = where[own]
            if own in A or not pa[0] < po < pa[-1]:
                per.append([(order, (int(pa[0]), int(pa[-1])))])
            else:  # below and above the row's own (forbidden) category
                per.append([(order, (int(pa[0]), po - 1)), (order, (po + 1, int(pa[-1])))])
        for combo in itertools.product(*per):
            yield tuple(o for o, _ in combo), [b for _, b in combo]

    def _box(self, x0, prep):
        """Return the numeric box (lo, hi) in values: grid points on a grid column."""
        p_lo, p_hi, n_lo, n_hi, _ = prep
        out = []
        for d in (np.where(p_lo > 0, p_lo, -n_hi), np.where(n_lo > 0, -n_lo, p_hi)):
            fin = np.isfinite(d)
            v = x0 + d * self.unit  # (±inf where the box is open)
            v[fin] = self.move(x0, np.where(fin, d, 0.0))[fin]
            out.append(v)
        return out

    def solve(self, x0, k0, q):
        """Return the :class:`~fastcf._tabular.milp.RowAnswer` of one row (the tree program).

        ``q.time_limit``: seconds for all the row's programs (one per plan); an answer found
        before it stops the search has status MAXITER and ``info["stopped"]`` (with
        ``info["gap"]``, ``info["bound"]``), no answer a failure with status MAXITER.
        """
        begin = time.perf_counter()
        self.verdicts.clear()
        prep = self._prepare(x0, k0, q)
        if isinstance(prep, RowAnswer):
            return prep
        if q.plausible:  # the training regions (fastcf._tabular.plausible)
            from . import plausible

            with self._lock:
                if self._regions is None:
                    self._regions = plausible.fit_regions(self, self._train)
            return plausible.solve(self, self._regions, x0, k0, q, prep)
        nlo, nhi = self._box(x0, prep)
        w = np.concatenate(
            [self.schema.w_num, np.where(self.ordinal, 1.0, -1.0) * self.schema.w_cat]
        )  # (a negative weight: the L0 cost of a nominal column, see fastcf._trees.query)
        best, failed, runs, nodes, stopped, bounds = None, None, 0, 0, None, []
        deadline = time_deadline(q.time_limit, begin)
        for orders, boxes in self._plans(k0, prep[4]):
            got = self.program(orders, deadline)
            if got is None:  # (the row's time limit stopped the construction of its program)
                failed = unbuilt(x0, self._programs.part(orders))
                bounds.append(0.0)  # (nothing known of this plan's optimum)
                continue
            prog, coords = got, got.coords
            where = [{k: p for p, k in enumerate(o)} for o in orders]
            xc = np.concatenate([x0, [coords[j][where[j][int(k0[j])]] for j in range(self.n_cat)]])
            lo = np.concatenate([nlo, [coords[j][b[0]] for j, b in enumerate(boxes)]])
            hi = np.concatenate([nhi, [coords[j][b[1]] for j, b in enumerate(boxes)]])
            left = None
            if q.time_limit is not None:  # what is left of the row's time for this plan
                left = max(q.time_limit - (time.perf_counter() - begin), 1e-3)
            tq = TreeQuery("mixed", w, lo[None], hi[None], q.max_changes, q.proba, left, True)

            def confirm(x, orders=orders, coords=coords):
                return self.confirm(*self.decode(x, orders, coords), q, (x0, k0))

            ans = prog.solve(xc, int(q.target), lo, hi, tq, confirm)
            if not ans.confirmed:  # the pipeline refused the trusted incumbent (rare): this
                # plan again, every candidate confirmed before it prunes
                ans = prog.solve(xc, int(q.target), lo, hi, tq._replace(trust=False), confirm)
            runs += ans.runs
            nodes += ans.nodes
            if ans.status not in (int(Status.INFEASIBLE), int(Status.UNREACHABLE)):
                bounds.append(ans.bound)  # (a lower bound on this plan's optimum)
            if ans.success:  # (status 1: an answer the time limit stopped, not certified)
                if ans.status != int(Status.OK):
                    stopped = ans
                if best is None or ans.distance < best[0].distance:
                    best = (ans, orders, coords)
            elif ans.status not in (int(Status.INFEASIBLE), int(Status.UNREACHABLE)):
                failed = ans  # (one side not solved: the minimum is not certified)
        info = {"solver": "trees", "nodes": nodes, "runs": runs}
        limited = failed is not None and failed.status == int(Status.MAXITER)
        if failed is not None and not (limited and q.time_limit is not None and best is not None):
            return RowAnswer(x0.copy(), k0.copy(), math.inf, failed.status, failed.message, info)
        if best is None:
            out = self._infeasible(x0, k0, None)
            return out._replace(info=info)
        ans, orders, coords = best
        x, k = self.decode(ans.x, orders, coords)
        cn, cc = self.distance(x0, k0, x, k)
        cost = float(cn.sum() + cc.sum())
        if stopped is None and failed is None:
            info.update(gap=ans.gap, bound=ans.bound)
            msg = "exact (tree program over the raw columns, HiGHS)"
            return RowAnswer(x, k, cost, int(Status.OK), msg, info)
        # stopped (the time limit; HiGHS stopping early without one): the least bound of the
        # plans bounds the row's optimum
        bound = min(min(bounds), cost)
        gap = (cost - bound) / cost if cost > 0 else 0.0
        info.update(gap=gap, bound=bound, stopped=True)
        why = "time limit reached" if q.time_limit is not None else "the MILP solver stopped"
        msg = (
            f"{why}: the answer is classified as the target but may not be the closest "
            f"(relative gap {gap:.3g})"
        )
        return RowAnswer(x, k, cost, int(Status.MAXITER), msg, info)

    def decode(self, x, orders, coords):
        """Return (numeric values, category indices) of a point of the program's variables."""
        k = np.array(
            [orders[j][int(np.searchsorted(coords[j], x[self.n_num + j]))]
             for j in range(self.n_cat)], dtype=np.int64,
        )  # fmt: skip
        return x[: self.n_num].copy(), k

    def frame(self, XN, K):
        """Return the rows of values ``XN`` and categories ``K`` as a DataFrame (template row)."""
        n = XN.shape[0]
        import pandas as pd

        base = pd.concat([self.template] * n, ignore_index=True)
        return self.schema.frame(
            base, XN, K, np.full(XN.shape, np.nan), np.full(K.shape, -1, dtype=np.int64)
        )

    def confirm(self, x, k, q, source=None):
        """Return the pipeline's verdict on one answer (``predict``, kept; ``predict_proba``).

        On the frame the result will hold (``q.row``, ``source``: the row's read values).
        """
        if q.row is None or source is None:
            X = self.frame(x[None], k[None])
        else:
            X = self.schema.frame(q.row, x[None], k[None], source[0][None], source[1][None])
        X = X if self.frame_input else X.to_numpy()
        label, P = self.verdicts.ask(self.model, X)
        if label != self.schema.fold.classes[q.target]:
            return False
        return q.proba is None or bool(P[q.target] >= q.proba)

    # ------------------------------------------------------------------ the check
    def check(self, X, n_probe=256, seed=0):
        """Check the rewritten forest against the pipeline's ``predict`` and ``predict_proba``.

        On training rows and on probe rows whose numeric values sit on the program's
        boundaries and on the grid point after them (the values where a misread split shows),
        categories drawn from those seen in training. Classes are compared where the scores
        are farther from a tie than the forest's rounding bound.

        Raises
        ------
        TypeError
            Naming the pipeline's steps, where the two disagree.
        """
        s = self.schema
        rng = np.random.default_rng(seed)
        orders = tuple(self.default)
        prog = self.program(orders)
        coords = prog.coords
        rows = []
        for i in range(0, X.shape[0], max(1, X.shape[0] // 200)):
            try:
                rows.append(s.read(X.iloc[i].to_numpy(dtype=object), i))
            except ValueError:
                continue
        XN = np.zeros((n_probe, self.n_num))
        K = np.zeros((n_probe, self.n_cat), dtype=np.int64)
        for j in range(self.n_num):
            cand = np.concatenate([prog.B[j], prog.R[j][1:]])
            lo = max(s.num_lo[j], s.num_dlo[j]) - 1.0
            hi = min(s.num_hi[j], s.num_dhi[j]) + 1.0
            cand = cand[(cand >= max(lo, s.num_dlo[j])) & (cand <= min(hi, s.num_dhi[j]))]
            if not cand.size:
                cand = np.array([s.num_lo[j]])
            XN[:, j] = rng.choice(cand, n_probe)
        for j in range(self.n_cat):
            seen = np.flatnonzero(s.cat_seen[s.cat_start[j] : s.cat_start[j + 1]])
            K[:, j] = rng.choice(seen, n_probe)
        if rows:
            XN = np.vstack([XN, [r[0] for r in rows]])
            K = np.vstack([K, [r[1] for r in rows]])
        where = [np.argsort(np.asarray(o)) for o in orders]
        V = np.column_stack([XN] + [coords[j][where[j][K[:, j]]] for j in range(self.n_cat)])
        fo = prog.forest
        S = fo.evaluate(V)
        frame = self.frame(XN, K)
        inp = frame if self.frame_input else frame.to_numpy()
        pred = np.asarray(self.model.predict(inp))
        mine = s.fold.classes[fo.decision.predict(S)]
        far = fo.decision.gap(S) > 2.0 * fo.delta
        bad = far & (pred != mine)
        P = np.asarray(self.model.predict_proba(inp), dtype=np.float64)
        err = float(np.abs(P - fo.link.proba(S)).max(initial=0.0))
        if bad.any() or not err <= 1e-6:
            i = int(np.flatnonzero(bad)[0]) if bad.any() else -1
            what = (
                f"it predicts {pred[i]!r} where the rewritten model predicts {mine[i]!r}"
                if i >= 0
                else f"its probabilities differ by {err:.3g}"
            )
            raise TypeError(
                "the pipeline's tree model, rewritten on the raw columns, does not reproduce the "
                f"pipeline ({what}); one of its steps ({', '.join(s.fold.steps) or 'none'}) does "
                "something this rewrite does not model"
            )
