"""The exact program of a tabular query on a ReLU network: big-M neurons over the raw columns.

A pipeline ending in an ``MLPClassifier`` (ReLU or identity hidden layers) is folded like a
linear one (:mod:`fastcf._tabular.fold`), but only up to the network's first layer: the
pre-activations of its first hidden layer are affine scores ``G v + g`` of the program's
variables v (numeric values, category indicators). The program of one row is the tabular
program of :mod:`fastcf._tabular.milp` — the moves ``p_j, n_j`` of the numeric columns in
steps of their grids (integer variables for integer and decimal columns), one 0/1 indicator
``δ_{c,k}`` per category, ``Σ_k δ_{c,k} = 1``, the box, frozen, monotone and allowed
categories, ``max_changes`` — with the network's rows after it, those of the network's own
program (:func:`fastcf._net.rows.network_rows`):

* the network reads ``u = (Δ, δ)``, the moves in steps and the indicators: its first layer is
  ``[G_num · unit, G_ind] u + (g + G_num x̄)``, its other layers the classifier's own (identity
  hidden layers multiplied into one affine map of u: :meth:`NetProgram.row_net`);
* each hidden ReLU neuron with pre-activation bounds ``l ≤ z ≤ u`` over the row's box is stable
  off (``y = 0``), stable on (``y = z``), or unstable (big-M rows with a binary a, exact at
  a ∈ {0, 1}: :mod:`fastcf._net.rows`);
* the target's rows ``G_out h_L ≥ g_out`` on the last hidden layer
  (:func:`fastcf._net.program.output_rows`; binary: the one logit past ``±θ``, θ the margin, or
  ``max(logit τ, 0) + margin`` for ``proba=τ``; K classes: ``z_t − z_j ≥ margin``, or
  ``≥ max(logit τ, 0) + margin`` for ``proba=τ``, with the tangent cuts of log-sum-exp below).

``proba=τ`` on K classes (``p_t ≥ τ`` is convex in the logits, not linear) is the network
family's cutting-plane loop (:func:`fastcf._net.proba.kelley`, one copy): each time an answer
misses τ in fastcf's float64 softmax, the tangent of log-sum-exp at its logits joins the target's
rows (a row on h_L, taken the margin inside the set), and the program is solved again, until an
answer meets τ — the optimum, the rows holding every point that meets τ at that margin — or
:data:`fastcf._net.proba.ROUNDS` answers missed it (status NUMERIC, which says so).

The neurons' bounds come from the row's box: a numeric column's room in steps (the box must be
finite: the default one, the training range, is), a block of indicators its allowed categories.
The first layer's are exact over the box (a block contributes the least and the largest of its
allowed categories' columns: one indicator is 1), the later ones interval arithmetic
(:func:`fastcf._net.bounds.interval`) intersected, for ReLU layers, with the linear bounds of
:func:`fastcf._net.bounds.linear_bounds`.

HiGHS solves it to a zero gap. Its answer meets the ReLUs' constraints within HiGHS's
tolerances only (an a of 1e-7 lets a little of z through an "off" neuron), so the moves of the
continuous columns are solved again as the linear program inside the answer's activation
pattern, where the network is affine (:func:`fastcf._net.program.solve_pattern`), with the grid
columns and categories held at the program's values (integral there, and read exactly): the
answer is a point of the network, at the optimum's cost. The pipeline's own ``predict`` (and
``predict_proba`` for ``proba=``) then judges it (:mod:`fastcf._tabular.solve`), and a refused
row is solved again at a larger margin.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._highs import highs, run_mip
from .._net import proba as _proba
from .._net.bounds import box_bounds, interval, linear_bounds, widen
from .._net.model import Net
from .._net.program import output_rows, solve_pattern, ties_differ
from .._net.rows import network_rows, unstable
from .._status import Status
from .milp import Program, RowAnswer, choice_rows
from .netrepair import meets, repair, tie

__all__ = ["NetProgram", "is_net_fold"]

#: HiGHS's options of this program (:func:`fastcf._highs.highs`): no presolve. On a program
#: of big-M rows that mix coefficients of 10⁶ and 10⁻³ (weights of 10³ layer after layer),
#: HiGHS 1.16's presolve removed the optimum and the dearer answer it kept was called optimal
#: at the root (``soak_tabular_net.py --wild``, seed 9044: 2.4 against 0.9; turning off any
#: one of several of its rules alone also found 0.9). Without it: 0 mismatches on that soak's
#: 594 queries (1 with it); on 108 queries of fitted networks ((4,) to (32, 32), with and
#: without ``max_changes=2``) the same answers at 0.94× the time per query (median, load ~10:
#: the programs are small, and presolve did not pay for itself). The second look of
#: :func:`fastcf._highs.run_mip` at a claim of "infeasible" keeps its own instance (presolve
#: on: another path to the same answer)
_OPTIONS = (("presolve", "off"),)


def is_net_fold(fold):
    """Tell whether ``fold`` is that of a pipeline ending in a network."""
    return getattr(fold, "net", None) is not None


class NetProgram(Program):
    """The tabular program of a pipeline ending in a ReLU network (see the module docstring).

    Parameters
    ----------
    schema : Schema
        Its fold's ``G``, ``g`` are the first hidden layer's pre-activations, ``fold.net`` the
        network.
    model : estimator
        The user's pipeline (checked against the fold on training rows).
    X : pandas.DataFrame
        The training data (model columns).
    """

    folded = False  # no affine class scores: the pipeline's own predict_proba gives proba
    network = True  # no plausible=

    def __init__(self, schema, model, X):
        super().__init__(schema)
        net = schema.fold.net
        self.net = net
        self.K = int(net.W[-1].shape[0])  # the logits (1: binary)
        self.model = model
        self.check(X)

    # ------------------------------------------------------------------ the row's network
    def row_net(self, x0):
        """Return the :class:`Net` of the row x̄ over ``u = (Δ in steps, δ)``.

        Identity hidden layers are multiplied into one affine map (the logits' rows on u
        itself): the chain of their ``y = z`` rows multiplies weights of 10³ layer after layer
        in HiGHS's matrix, which HiGHS failed on ("Solve error", with presolve) or answered
        wrongly (1.5 called optimal where 0.9 exists, without it): ``soak_tabular_net.py
        --wild``, seed 7008.
        """
        net = self.net
        W0 = np.hstack([self.G_step, self.G_ind])
        b0 = self.g + self.G_num @ x0
        if not net.relu:
            for W, b in zip(net.W[1:], net.b[1:], strict=True):
                W0, b0 = W @ W0, W @ b0 + b
            return Net((W0,), (b0,), net.relu, net.binary)
        return Net((W0, *net.W[1:]), (b0, *net.b[1:]), net.relu, net.binary)

    def _bounds(self, rnet, lo, hi, d_hi):
        """Return each hidden layer's pre-activation bounds over the box ``lo ≤ u ≤ hi``."""
        n_num, s = self.n_num, self.schema
        if len(rnet.W) == 1:
            return [], []
        W0, b0 = rnet.W[0], rnet.b[0]
        fl, fu = box_bounds(W0[:, :n_num], b0, lo[:n_num], hi[:n_num])  # the numeric columns
        for j in range(self.n_cat):  # one indicator of each block is 1: its allowed columns
            cols = s.cat_start[j] + np.flatnonzero(d_hi[s.cat_start[j] : s.cat_start[j + 1]] > 0)
            block = W0[:, n_num + cols]
            fl = fl + block.min(axis=1)
            fu = fu + block.max(axis=1)
        ls, us = interval(rnet.W, rnet.b, lo, hi, rnet.relu, first=widen(fl, fu))
        if rnet.relu and len(rnet.W) > 2:
            D = lo.shape[0]
            cl, cu = linear_bounds(rnet.W, rnet.b, np.zeros(D), np.ones(D), lo, hi)
            ls = [np.maximum(a, b) for a, b in zip(ls, cl, strict=True)]
            us = [np.minimum(a, b) for a, b in zip(us, cu, strict=True)]
        return ls, us

    # ------------------------------------------------------------------ one query
    def solve(self, x0, k0, q):
        """Return the :class:`~fastcf._tabular.milp.RowAnswer` of one row.

        ``q.threshold``: the margin on the logits (``max(logit τ, 0) + margin`` for
        ``proba=τ``); ``q.proba``: τ (K classes: the tangent cuts of the module docstring,
        ``info["cuts"]`` how many); ``q.time_limit``: seconds for HiGHS, all the row's solves
        together (an answer it stops with has status MAXITER and ``info["stopped"]``).
        """
        if q.plausible:  # (refused by the request already; a guard for direct callers)
            raise ValueError("plausible=True is answered for pipelines ending in a tree model")
        prep = self._prepare(x0, k0, q)
        if isinstance(prep, RowAnswer):
            return prep
        p_lo, p_hi, n_lo, n_hi, d_hi = prep
        dlo, dhi = p_lo - n_hi, p_hi - n_lo  # the moves' box, in steps
        open_ = ~(np.isfinite(dlo) & np.isfinite(dhi))
        if open_.any():
            j = int(np.flatnonzero(open_)[0])
            raise ValueError(
                f"a pipeline ending in a network is answered over a finite box, and column "
                f"{self.schema.columns[self.num_cols[j]]!r} has an infinite bound (the default "
                "bounds, the training range, are finite)"
            )
        lo = np.concatenate([dlo, np.zeros(self.n_ind)])
        hi = np.concatenate([dhi, d_hi])
        return self._solve(x0, k0, q, prep, self.row_net(x0), lo, hi)

    def _solve(self, x0, k0, q, prep, rnet, lo, hi):
        """Return :meth:`solve`'s answer over the row's network ``rnet`` and its box."""
        d_hi = prep[4]
        bounds = self._bounds(rnet, lo, hi, d_hi)
        t = int(q.target)
        G, g = output_rows(rnet, t, float(q.threshold))
        if q.proba is None or self.K == 1:
            # the rows the model's rule takes as the target (a tie given to it, where it is):
            # a program's point on such a tie is the pipeline's answer, not a false one
            # (:func:`fastcf._net.program.network_point`'s ``accept``)
            accept = None
            if q.proba is None and ties_differ(rnet, t):
                accept = output_rows(rnet, t, float(q.threshold), ties=True)
            ans = self._attempt(x0, k0, q, prep, rnet, lo, hi, bounds, G, g, accept)[0]
            # the tie's program below the margin's answer, or where the margin has none (a
            # target reached only on a tie: soak_tabular_net.py --wild, seed 9076)
            ok = ans.status == int(Status.OK) and ans.cost > 0.0
            if accept is not None and (ok or ans.status == int(Status.INFEASIBLE)):
                on = tie(self, x0, k0, q, prep, rnet, lo, hi, bounds, G, g, accept, ans)
                ans = ans if on is None else on
            return ans
        # K classes, proba=τ: the tangent cuts of log-sum-exp (one copy of the loop), taken
        # the row's margin beyond max(logit τ, 0) inside the set; the time limit is the row's
        tau = float(q.proba)
        slack = max(float(q.threshold) - max(math.log(tau / (1.0 - tau)), 0.0), 1e-9)
        t0, calls = time.perf_counter(), [0]

        def attempt(Gc, gc):
            left = q.time_limit
            if left is not None:
                left = max(float(left) - (time.perf_counter() - t0), 1e-3)
            calls[0] += 1
            Gs, gs = np.vstack([G, Gc]), np.concatenate([g, gc])
            return self._attempt(x0, k0, q._replace(time_limit=left), prep, rnet, lo, hi,
                                 bounds, Gs, gs)  # fmt: skip

        ans, met = _proba.kelley(attempt, rnet, t, tau, slack)
        info = {**ans.info, "cuts": calls[0] - 1}
        if met:
            return ans._replace(info=info)
        return RowAnswer(x0.copy(), k0.copy(), math.inf, int(Status.NUMERIC),
                         _proba.gave_up(tau), info)  # fmt: skip

    def _attempt(self, x0, k0, q, prep, rnet, lo, hi, bounds, G, g, accept=None):
        """Return ``(answer, u)``: the row's :class:`RowAnswer` with the target ``G h ≥ g``.

        ``u``: the answer's input of the row's network (moves in steps, indicators), None
        where the program has no answer. ``accept``: rows ``(G, g)`` that the model's rule
        also takes as the target (ties), or None.
        """
        t0 = time.perf_counter()
        r = self._milp_net(x0, k0, q, prep, rnet, bounds, G, g)
        if isinstance(r, RowAnswer):
            return r, None
        v, st, info, a = r
        u = self._pattern(rnet, v, lo, hi, G, g)
        if a.size and not meets(rnet, u, G, g, accept):
            # no point of the network: repaired (:func:`~fastcf._tabular.netrepair.repair`)
            r = repair(self, x0, k0, q, prep, rnet, lo, hi, bounds, G, g, a, info, t0, accept)
            if isinstance(r, RowAnswer):
                return r, None
            u, st, info = r
        x, k, cost = self._point(x0, k0, u)
        if st == "optimal":
            msg = "exact (MILP over the network's neurons, then its activation pattern; HiGHS)"
            return RowAnswer(x, k, cost, int(Status.OK), msg, info), u
        bound = min(info["bound"], cost)
        gap = (cost - bound) / cost if cost > 0 else 0.0
        info.update(gap=gap, bound=bound, stopped=True)
        msg = (
            "time limit reached: the answer is classified as the target but may not be the "
            f"closest (relative gap {gap:.3g})"
        )
        return RowAnswer(x, k, cost, int(Status.MAXITER), msg, info), u

    def _point(self, x0, k0, u):
        """Return ``(x, k, cost)`` of the network's input ``u`` (its moves' rounding cleared)."""
        delta = u[: self.n_num]  # (a view: u is the answer's point)
        delta[np.abs(delta) * self.w_step <= 1e-13] = 0.0
        x = self.move(x0, delta)
        k = self._categories(u[self.n_num :])
        cn, cc = self.distance(x0, k0, x, k)
        return x, k, float(cn.sum() + cc.sum())

    def _categories(self, d):
        """Return the category index of each block of the indicators ``d``."""
        s = self.schema
        return np.array(
            [int(np.argmax(d[s.cat_start[j] : s.cat_start[j + 1]])) for j in range(self.n_cat)],
            dtype=np.int64,
        )

    def _pattern(self, rnet, v, lo, hi, G, g):
        """Return ``u`` of the program's answer, its continuous moves re-solved in its pattern.

        The grid columns' moves (rounded) and the categories (one-hot) are held; the continuous
        columns move within their box, as the linear program of the activation pattern of the
        program's point (:func:`~fastcf._net.program.solve_pattern`). Where that program finds
        nothing (the pattern's polytope missed by rounding), the program's own point.
        """
        n_num = self.n_num
        delta = np.where(self.grid, np.round(v[:n_num]), v[:n_num])
        d = np.zeros(self.n_ind)
        d[self.schema.cat_start[:-1] + self._categories(v[n_num:])] = 1.0
        u = np.concatenate([delta, d])
        free = np.zeros(u.shape[0], dtype=bool)
        free[:n_num] = ~self.grid & (lo[:n_num] < hi[:n_num])
        if not free.any():
            return u
        plo, phi = np.where(free, lo, u), np.where(free, hi, u)
        u0 = np.where(free, 0.0, u)  # (the row itself: no move)
        w = np.concatenate([self.w_step, np.zeros(self.n_ind)])
        y = solve_pattern(rnet, rnet.pattern(u), u0, plo, phi, w, G, g, "manhattan")
        return u if y is None else np.where(free, y, u)

    def _milp_net(self, x0, k0, q, prep, rnet, bounds, G, g, fix=None, nogoods=(),
                  cutoff=math.inf):  # fmt: skip
        """Return ``(v, status, info, a)`` of the row's MILP (v: the moves, then the indicators).

        ``status``: "optimal", or "stopped" (HiGHS's time limit, with an answer); ``a``: the
        unstable neurons' binaries, rounded to 0/1. A row without an answer: its
        :class:`RowAnswer` (infeasible, time limit, failure). ``fix``: the binaries a held at
        these values (an activation pattern); ``nogoods``: assignments of the a excluded
        (each ``Σ_{p=0} a − Σ_{p=1} a ≥ 1 − |{p = 1}|``); ``cutoff``: only answers costing
        less (HiGHS's ``objective_bound``; "infeasible" where there is none).
        """
        import highspy
        from scipy import sparse

        s = self.schema
        n_num, n_ind = self.n_num, self.n_ind
        p_lo, p_hi, n_lo, n_hi, d_hi = prep
        ls, us = bounds
        m = q.max_changes
        zcols = np.flatnonzero((p_hi > 0) | (n_hi > 0)) if m is not None else np.zeros(0, int)
        n_z = zcols.size
        H = int(sum(W.shape[0] for W in rnet.W[:-1]))
        n_a = int(sum(int(a.sum()) for a in unstable(rnet, ls, us)))
        iz = 2 * n_num + n_ind
        iy = iz + n_z
        ia = iy + H
        nv = ia + n_a
        cost = np.zeros(nv)
        cost[:n_num] = cost[n_num : 2 * n_num] = self.w_step
        cost[2 * n_num : iz] = self.costs(x0, k0)
        lb, ub = np.zeros(nv), np.zeros(nv)
        lb[:iz] = np.concatenate([p_lo, n_lo, np.zeros(n_ind)])
        ub[:iz] = np.concatenate([p_hi, n_hi, d_hi])
        ub[iz:iy] = 1.0
        ub[ia:] = 1.0
        integ = np.zeros(nv, dtype=bool)
        integ[:n_num] = integ[n_num : 2 * n_num] = self.grid
        integ[2 * n_num : iy] = True
        integ[ia:] = True
        # the categories and max_changes (the big-Ms p_hi, n_hi: the box is finite): the rows
        # of the tabular program's own (one copy)
        rows, cols, vals, rlo, rhi = choice_rows(s, n_num, k0, zcols, p_hi, n_hi, m)

        # the network reads u = (p − n, δ), then its target G h ≥ g (one copy of its rows)
        jn = np.arange(n_num)
        P = (
            np.concatenate([jn, jn, n_num + np.arange(n_ind)]),  # u's entry
            np.arange(iz),  # the column: p, n, δ
            np.concatenate([np.ones(n_num), -np.ones(n_num), np.ones(n_ind)]),
        )
        nr = network_rows(rnet, ls, us, P, iy, ia, G, g)
        lb[iy:ia], ub[iy:ia] = nr.y_lb, nr.y_ub
        if fix is not None:
            lb[ia:] = ub[ia:] = fix
        k = len(rlo)
        n_net = nr.low.shape[0]
        # the no-good rows, after the network's
        ng = len(nogoods)
        ng_r = np.repeat(np.arange(ng), n_a)
        ng_c = np.tile(ia + np.arange(n_a), ng)
        ng_v = np.concatenate([np.where(p > 0.5, -1.0, 1.0) for p in nogoods]) if ng else []
        ng_lo = np.array([1.0 - float(np.count_nonzero(p > 0.5)) for p in nogoods])
        A = sparse.csr_array(
            (
                np.concatenate([vals, nr.vals, ng_v]),
                (np.concatenate([rows, k + nr.rows, k + n_net + ng_r]),
                 np.concatenate([cols, nr.cols, ng_c])),
            ),
            shape=(k + n_net + ng, nv),
        )  # fmt: skip
        A.sum_duplicates()
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = nv, A.shape[0]
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lb, ub
        lp.row_lower_ = np.concatenate([rlo, nr.low, ng_lo])
        lp.row_upper_ = np.concatenate([rhi, nr.high, np.full(ng, np.inf)])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(np.float64)
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if t else highspy.HighsVarType.kContinuous for t in integ
        ]
        h = highs("tabular-net", _OPTIONS)
        h.clearSolver()
        h.passModel(lp)
        limit = math.inf if q.time_limit is None else float(q.time_limit)
        h.setOptionValue("time_limit", limit)
        h.setOptionValue("objective_bound", float(cutoff))
        h = run_mip(h, limit)  # ("infeasible" looked at twice)
        S = highspy.HighsModelStatus
        st = h.getModelStatus()
        text = h.modelStatusToString(st)
        hinfo = h.getInfo()
        bound = float(hinfo.mip_dual_bound)
        info = {
            "solver": "HiGHS",
            "highs_status": text,
            "nodes": int(hinfo.mip_node_count),
            "unstable": n_a,
            "bound": bound if math.isfinite(bound) else 0.0,
        }
        have = int(hinfo.primal_solution_status) == 2
        if have and st in (S.kOptimal, S.kTimeLimit, S.kInterrupt, S.kIterationLimit):
            v = np.asarray(h.getSolution().col_value)
            u = np.concatenate([v[:n_num] - v[n_num : 2 * n_num], v[2 * n_num : iz]])
            a = (v[ia:] > 0.5).astype(np.float64)
            return u, "optimal" if st == S.kOptimal else "stopped", info, a
        if st in (S.kInfeasible, S.kUnboundedOrInfeasible, S.kObjectiveBound):
            ans = self._infeasible(x0, k0, None)
            return ans._replace(message=ans.message + f" (HiGHS: {text})", info=info)
        if st in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit):
            return RowAnswer(
                x0.copy(), k0.copy(), math.inf, int(Status.MAXITER),
                "time limit reached before any answer was found", info,
            )  # fmt: skip
        return RowAnswer(
            x0.copy(), k0.copy(), math.inf, int(Status.SOLVER_FAILED),
            f"the MILP solver failed (HiGHS: {text})", info,
        )  # fmt: skip

    # ------------------------------------------------------------------ the check
    def check(self, X, n=200):
        """Check the fold against the pipeline's own steps and probabilities on training rows.

        The first hidden layer's pre-activations from the fold (``G v + g``) against the
        classifier's first layer on the steps' own ``transform``, within a relative 1e-9 of the
        size of their terms; and the network's probabilities (fastcf's copy) against the
        pipeline's ``predict_proba`` within 1e-6.

        Raises
        ------
        TypeError
            Naming the pipeline's steps, where they disagree.
        """
        from .._fold import pipeline_parts

        s = self.schema
        fold = s.fold
        sample = X.iloc[:: max(1, X.shape[0] // n)]
        V, keep = [], []
        for i in range(sample.shape[0]):
            try:
                x0, k0 = s.read(sample.iloc[i].to_numpy(dtype=object), i)
            except ValueError:
                continue
            ind = np.zeros(self.n_ind)
            ind[s.cat_start[:-1] + k0] = 1.0
            V.append(np.concatenate([x0, ind]))
            keep.append(i)
        if not keep:
            return
        V = np.asarray(V)
        rows = sample.iloc[keep]
        steps, clf = pipeline_parts(self.model)
        inp = (
            rows if getattr(self.model, "feature_names_in_", None) is not None else rows.to_numpy()
        )
        T = inp
        for _, step in steps:
            if step is not None and not (isinstance(step, str) and step == "passthrough"):
                T = step.transform(T)
        T = np.asarray(T.toarray() if hasattr(T, "toarray") else T, dtype=np.float64)
        want = T @ self.net.W[0].T + self.net.b[0]
        got = V @ fold.G.T + fold.g
        scale = fold.terms.scale(fold, V)
        bad = ~(np.abs(got - want) <= 1e-9 * scale + 1e-300)
        err = None
        if bad.any():
            r, j = np.argwhere(bad)[0]
            err = f"first-layer neuron {j}: {got[r, j]!r} where the pipeline has {want[r, j]!r}"
        else:
            z = Net((fold.G, *self.net.W[1:]), (fold.g, *self.net.b[1:]), self.net.relu,
                    self.net.binary).logits(V)  # fmt: skip
            if self.net.binary:
                P = 1.0 / (1.0 + np.exp(-np.clip(z[:, 0], -700, 700)))
                P = np.column_stack([1.0 - P, P])
            else:
                e = np.exp(z - z.max(axis=1, keepdims=True))
                P = e / e.sum(axis=1, keepdims=True)
            diff = float(np.abs(P - self.model.predict_proba(inp)).max(initial=0.0))
            if not diff <= 1e-6:
                err = f"its probabilities differ by {diff:.3g}"
        if err is not None:
            raise TypeError(
                "the pipeline folded into its network's first layer does not reproduce the "
                f"pipeline ({err}); one of its steps ({', '.join(fold.steps) or 'none'}) does "
                "something this fold does not model"
            )
