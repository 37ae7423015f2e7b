"""Certifying LVQ answers: the rounding of squared distances, and the repairs of refused answers.

An answer is judged by the model's own arithmetic (:meth:`fastcf.LVQExplainer.predict`); the
family's re-aim policies, run by the stage's one loop (:func:`fastcf._stage.settle`), make that
judgement pass where the problem has an answer: :class:`MarginRaise` re-solves answers within
rounding of a boundary with a margin above the rounding need (:func:`rounding_need`),
:class:`PrototypeFallback` answers with a target prototype where the penalty CCP's iterate is
refused, and :func:`margin_scale_message` says so where the margin is out of scale with the
data.
"""

from __future__ import annotations

import numpy as np

from .. import _resolve, _stage
from .._kernels.lvq_cost import lvq_distances
from .._status import BOUNDARY_MESSAGE
from . import ccp, programs
from .options import row_options

__all__ = ["margin_scale_message", "rounding_need", "MarginRaise", "PrototypeFallback", "MODE"]

#: the kernel's metric mode of each kind of model
MODE = {"euclidean": 0, "global": 1, "local": 2}


def margin_scale_message(ex, sol, X, margin):
    """Say so where a refused answer's margin is out of scale with the query's distances.

    The margin is absolute, in squared distance. Where it exceeds every squared distance
    from x̄ to a prototype (data of scale 10⁻²⁰ and the default 1e-6), reaching it moves x
    so far that the rounding of the distances there exceeds it, and the verification's
    usual advice, a larger margin, is the wrong way: the message says to use one at the
    data's scale instead.
    """
    rows = [i for i, m in enumerate(sol.message) if m == BOUNDARY_MESSAGE]
    if not rows or margin == 0.0:
        return sol
    with np.errstate(over="ignore", invalid="ignore"):
        dmax = ex.distances(X[rows]).max(axis=1)
    msgs = list(sol.message)
    for i, d in zip(rows, dmax, strict=True):
        if margin > d:
            msgs[i] = (
                "numerical failure: the answer lies within rounding of the decision "
                f"boundary; margin={margin:.3g} is in squared distance, and larger than "
                f"every squared distance from the query to a prototype (at most {d:.3g}): "
                "reaching it moves x so far that rounding exceeds it (use a margin= at the "
                "data's scale)"
            )
    return sol._replace(message=msgs)


def rounding_need(ex, X, tidx, X0=None, proto=None):
    """Return per row (a bound of how far rounding can move d_other − d_target, that margin).

    The squared distance d_j = ‖y‖², y = Ω_j (x − p_j), is evaluated to within
    e_j = γ (2 ‖y‖ ‖t‖ + d_j), t = |Ω_j| |x − p_j| and γ = (D + 2) ε: each y_r is within
    γ t_r (the subtraction, the product with Ω), which moves y_r² by 2|y_r| γ t_r (Cauchy–
    Schwarz over r), and the sum of squares adds γ d_j. (Squaring t instead, γ ‖t‖², was
    10⁷ times too large where x̄ ~ 10⁹ cancels to y ~ 500, and the raised margin exceeded
    the target cell's room: soak round T.) The margin between the answer's target
    prototype and the nearest other is within e_i + e_j; twice that again, as the answer is
    formed in another arithmetic (the QP's) than the one that judges it. With the queries
    ``X0`` (x̄): and the rounding of forming x = x̄ + δ, ε max(|x̄|, |x|) per coordinate,
    times the gradient of d_target − d_other (x̄ = −1 and a step of 1 + 5e-148 rounded to
    x = 0 exactly, on the wrong side of a boundary 5e-148 away; soak round T).
    """
    geo = ex._geo
    D = X.shape[1]
    diff = np.abs(X[:, None, :] - geo.prototypes[None, :, :])  # (N, M, D)
    om = np.abs(geo.omegas)  # (1 or M, d, D)
    with np.errstate(over="ignore", invalid="ignore"):
        dt = np.einsum("nmd,mrd->nmr", diff, np.broadcast_to(om, (diff.shape[1],) + om.shape[1:]))
        tnorm = np.sqrt(np.einsum("nmr,nmr->nm", dt, dt))
        d = lvq_distances(X, ex.prototypes_, geo.omegas, MODE[ex.kind])
        gamma = (D + 2) * np.finfo(float).eps
        err = gamma * (2.0 * np.sqrt(np.maximum(d, 0.0)) * tnorm + d)
    mine = geo.cls[None, :] == tidx[:, None]
    i = np.argmin(np.where(mine, d, np.inf), axis=1)
    if proto is not None:
        # the target prototype the answer was solved for (not a copy of another class's
        # prototype that ties with it everywhere and never wins: soak round T)
        i = np.where(proto >= 0, proto, i)
    j = np.argmin(np.where(mine, np.inf, d), axis=1)
    rows = np.arange(X.shape[0])
    need = 2.0 * (err[rows, i] + err[rows, j])
    if X0 is not None:
        lam = geo.lams  # (1, D, D) shared, or (M, D, D)
        li = lam[i] if lam.shape[0] > 1 else np.broadcast_to(lam[0], (i.size, D, D))
        lj = lam[j] if lam.shape[0] > 1 else np.broadcast_to(lam[0], (j.size, D, D))
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.einsum("nab,nb->na", li, X - geo.prototypes[i]) - np.einsum(
                "nab,nb->na", lj, X - geo.prototypes[j]
            )
            scale = np.maximum(np.abs(X), np.abs(X0))
            need = need + 8.0 * np.finfo(float).eps * np.einsum("na,na->n", np.abs(g), scale)
    return need, d[rows, j] - d[rows, i]


class _Policy:
    """A re-aim policy's judge: the model's own arithmetic (``LVQExplainer._in_target``)."""

    ex: object
    tidx: np.ndarray

    def judge(self, sol, rows):
        """Return which of ``rows`` hold a success the model confirms."""
        return _stage.judged(self.ex._in_target, sol, self.tidx, None, rows)


class MarginRaise(_Policy):
    """The re-aim policy of the exact methods: refused rows solved again with a larger margin.

    The margin ε of eq. 9b is in units of squared distance, and at data of scale 10⁵ and
    beyond the default 1e-6 is below the rounding of the distances: the QP's answer sits on
    the boundary and the model's own arithmetic can put it in another class (10 of 20
    queries at 10⁵; Manhattan answers, at a vertex on the boundary, more). Those rows are
    solved again by ``run(X, tidx, opts)`` (the method's solver) with ε raised to twice the
    rounding need at the answer (:func:`rounding_need`), doubled on each further round
    (at most :data:`~fastcf._resolve.ROUNDS`, the stage's budget), and past the solver's own
    shortfall (:func:`fastcf._resolve.raise_margin`). A row keeps its first answer where the
    re-solve fails (:func:`fastcf._stage.settle`). (At data of scale 10⁻²⁰ the default ε is
    the problem: reaching it takes a move of ~10¹⁴, where rounding grows faster than any
    raise; those rows stay refused, said so by :func:`margin_scale_message`.)
    """

    def __init__(self, ex, X, tidx, opts, run):
        self.ex, self.X, self.tidx, self.opts, self.run = ex, X, tidx, opts, run
        self.margins = None  # each row's margin, once a row is re-aimed

    def aim(self, sol, rows, _r):
        """Raise the margins of ``rows``; return those with a finite raise."""
        X, tidx = self.X, self.tidx
        if self.margins is None:
            self.margins = np.full(X.shape[0], float(self.opts.margin))
        margins = self.margins
        with np.errstate(over="ignore", invalid="ignore"):
            proto = sol.info["prototype"][rows] if sol.info else None
            need, got = rounding_need(self.ex, sol.x[rows], tidx[rows], X[rows], proto)
        # (a floor: at a prototype of the target class equal to one of another class that
        # wins their ties, margin 0 and a need of 0 at x̄ on them); and past the solver's own
        # shortfall: Clarabel meets the constraints to ~1e-10 of the scaled program, which at
        # data of scale 10⁵ is ~1 in squared distance
        eps = _resolve.raise_margin(
            margins[rows], need, 4.0 * np.finfo(float).tiny, doubled=True,
            short=margins[rows] - got,
        )  # fmt: skip
        finite = np.isfinite(eps)
        margins[rows[finite]] = eps[finite]
        return rows[finite]

    def solve(self, rows):
        """Solve ``rows`` again, one at a time, each at its raised margin."""
        X, tidx = self.X, self.tidx
        return _stage.stack([self.run(X[r : r + 1], tidx[r : r + 1], row_options(
            self.opts, r)._replace(margin=float(self.margins[r]))) for r in rows])  # fmt: skip


class PrototypeFallback(_Policy):
    """The penalty CCP's re-aim policy: a refused row answered by a target prototype.

    The penalty CCP checks its iterate with the true distances, strictly; the judge with the
    model's own arithmetic (``predict``, ties to the first prototype). Where the two disagree
    (an iterate within rounding of a boundary: soak round T, local metrics at x̄ ~ 6·10⁵),
    the row takes the nearest target prototype, its frozen features kept, that meets the box
    and the user rows and that the model puts in the target class: status 1, as for the CCP's
    own fallback to its start point. Otherwise it stays refused. One round.
    """

    def __init__(self, ex, X, tidx, opts, metric):
        self.ex, self.X, self.tidx, self.opts, self.metric = ex, X, tidx, opts, metric
        self.sol = None

    def aim(self, sol, rows, r):
        """Aim ``rows`` at the target prototypes (the first round only)."""
        self.sol = sol
        return rows if r == 0 else None

    def solve(self, rows):
        """Return the rows answered by their nearest admissible target prototype."""
        ex, X, tidx, geo = self.ex, self.X, self.tidx, self.ex._geo
        sub = _stage.take_rows(self.sol, rows)
        x_new, dist = sub.x.copy(), sub.distance.copy()
        status, msgs = sub.status.copy(), list(sub.message)
        found = np.zeros(rows.size, dtype=bool)
        proto = np.full(rows.size, -1, dtype=np.int64)
        for j, r in enumerate(rows):
            ro = row_options(self.opts, r)
            best, bd = None, np.inf
            for i in np.flatnonzero(geo.cls == tidx[r]):
                x = np.where(ro.free, geo.prototypes[i], X[r])
                if not ccp._meets_hard_constraints(x, ro.lo, ro.hi, ro.C, ro.c):
                    continue
                if not ex._in_target(x[None], tidx[r : r + 1])[0]:
                    continue
                d = programs.theta(x - X[r], self.metric, ro.w)
                if d < bd:
                    best, bd = (i, x), d
            if best is not None:
                found[j], proto[j] = True, best[0]
                x_new[j], dist[j], status[j] = best[1], bd, 1
                msgs[j] = (
                    "the penalty CCP's answer lies within rounding of the decision boundary; "
                    f"the answer is the target prototype p_{best[0]} (frozen features kept)"
                )
        info = dict(sub.info or {})
        if "prototype" in info:
            info["prototype"] = np.where(found, proto, info["prototype"])
        return sub._replace(
            x=x_new, distance=dist, status=status, message=msgs, success=found,
            nit=np.zeros_like(sub.nit), certified=None, info=info or None,
        )  # fmt: skip
