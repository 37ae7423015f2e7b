"""The softmax family's fallback solvers: re-solves of the rows the K-space solvers fail.

K-space forms z̄ + G y, and where z̄ is large and the answer's logits are not, or G y cancels
between nearly equal rows, its rounding is real (soak rounds N, O, Q). These functions re-solve
such rows in the order :func:`retry` declares: on the model less the target's row
(:func:`shifted_retry`, which forms the rows' differences exactly), then in input space
(:func:`input_space_retry`, the solvers of ``bounds=`` with an unbounded box, on the model scaled
by a power of 2 where its coefficients are tiny: :func:`scaled`). For models with close rows,
:func:`lam_shifted`, :func:`closer_shifted` and :func:`path_shifted` compare each answer with the
shifted model's (and return their input unchanged for other models). The routes of
:mod:`fastcf._linear.solvers` try these entries in order; each judges its rows in the model's
own arithmetic. With ``bounds=``, the box's solvers answer (:func:`boxed`: each row's box, the
form's solver and one finish, on the scaled model) and :class:`InsideBox` is the box's re-aim
policy: its numerical failures solved without the box, kept where inside.
"""

from __future__ import annotations

import math

import numpy as np

from .._resolve import raise_at_least, raise_log_tau
from .._stage import replace_rows, take_rows
from .._status import Status
from . import boxed as _boxed
from . import boxed_region as _boxed_region
from . import softmax as _softmax
from .metric import distances, make_metric, row_box
from .verify import Raw, finish, path_result

# the codes as plain ints: NumPy compares an array with an int much faster than with an
# IntEnum member (as in fastcf._linear.verify)
_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)
_UNREACHABLE = int(Status.UNREACHABLE)
_BELOW_DECISION = int(Status.BELOW_DECISION)

__all__ = [
    "InsideBox",
    "retry",
    "shifted_retry",
    "input_space_retry",
    "lam_shifted",
    "closer_shifted",
    "path_shifted",
    "boxed",
    "scaled",
    "unsure",
]


def lam_residual(model, x, X, tidx, m, lams, P):
    """Return the stationarity residual of problem (2) in input space, relative, per row.

    ∇E = λ W (x − x̄) + Σ_j p_j (a_j − a_k) on the free features, with p the answer's own
    probabilities and the rows' differences formed exactly, relative to the larger of its
    two terms (0 where both are 0).
    """
    free = m.v > 0
    wt = np.where(free, m.wt if not m.unit_wt else 1.0, 0.0)
    with np.errstate(all="ignore"):
        pull = lams[:, None] * wt * (x - X)
        push = np.empty_like(pull)
        for t in np.unique(tidx):  # one product per target, with its exact differences
            r = np.flatnonzero(tidx == t)
            push[r] = P[r] @ (model.A - model.A[t])
        push[:, ~free] = 0.0
        scale = np.maximum(np.abs(pull).max(axis=1), np.abs(push).max(axis=1))
        res = np.abs(pull + push).max(axis=1)
        return np.where(scale > 0.0, res / scale, np.where(res == 0.0, 0.0, np.inf))


def lam_shifted(model, sol, X, tidx, m, lams, tol, max_iter):
    """Re-solve ``lam=`` rows whose answer is not stationary in input space, shifted.

    For models with nearly equal rows (``model.close_rows``) only: K-space's G = A V Aᵀ of
    the rows themselves rounds their differences away, and it can stop where its own
    gradient is 0 and the input space's is not (rows equal to 1e-9 at x̄ ~ 10⁷: x̄ itself
    reported as converged, where the optimum is 5·10² away; round Q's strict xfail). Those
    rows are solved again on the model less their target's row (as :func:`shifted_retry`),
    and the answer with the smaller input-space residual is kept. Taken uncertified: the
    explainer checks it in the model's own arithmetic.
    """
    if not model.close_rows:
        return sol
    if sol.proba is None:
        return sol
    lams = np.broadcast_to(np.asarray(lams, dtype=float), (X.shape[0],))
    res = lam_residual(model, sol.x, X, tidx, m, lams, sol.proba)
    rows = np.flatnonzero(~(res <= 1e-6))
    if rows.size == 0:
        return sol
    for t in np.unique(tidx[rows]):
        r = rows[tidx[rows] == t]
        pair = shift_model(model, t, m)
        if pair is None:
            continue
        shifted, ms = pair
        sub = _softmax.reduced_lam(shifted, X[r], tidx[r], lams[r], ms, tol, max_iter)
        sub = sub._replace(certified=None)
        if sub.proba is None:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            # the answer's probabilities in the model's own arithmetic
            P = model.proba_from_logits(model.check_logits(sub.x))
        new = lam_residual(model, sub.x, X[r], tidx[r], m, lams[r], P)
        won = np.flatnonzero((new < res[r]) & np.isfinite(sub.x).all(axis=1))
        if won.size:
            sol = replace_rows(sol, r[won], take_rows(sub, won))
    return sol


def closer_shifted(model, sol, X, tidx, m, proba, margins, tol, max_iter):
    """For models with close rows: each success against the shifted model's, the closer kept.

    K-space's G = A V Aᵀ holds the rows' differences only to ε·(‖a‖/‖a_i − a_j‖)², and
    its ``region=``/``proba=`` answers, feasible, can be that far from the optimum: 1.4e-4
    on wine with a common part 10⁶ times its rows (71 of 178 ``region=True`` rows). The
    model less the target's row (:func:`shift_model`) holds them exactly. A row takes its
    answer where it succeeds, is in the class (and meets τ) in this model's arithmetic
    (:func:`unsure`) and is closer; every distance is then taken from the answers
    themselves, as K-space's √(yᵀGy) rounds with G too.
    """
    if not model.close_rows:
        return sol
    wt = None if m.unit_wt else m.wt
    rows = np.flatnonzero(sol.success)
    for t in np.unique(tidx[rows]):
        r = rows[tidx[rows] == t]
        out = shifted_solve(model, t, m, X, tidx, r, proba, margins, tol, max_iter)
        if out is None:
            continue
        sub, good = out
        with np.errstate(over="ignore", invalid="ignore"):
            closer = distances(sub.x - X[r], wt) < distances(sol.x[r] - X[r], wt)
        won = np.flatnonzero(good & closer)
        if won.size:
            sol = replace_rows(sol, r[won], take_rows(sub, won))
    with np.errstate(over="ignore", invalid="ignore"):
        dist = distances(sol.x - X, wt)
    return sol._replace(distance=np.where(np.isfinite(dist), dist, sol.distance))


def retry(model, sol, X, tidx, m, proba, margins, tol, max_iter):
    """Re-solve the rows K-space failed: :func:`shifted_retry`, then :func:`input_space_retry`.

    Both judge the rows in the model's own arithmetic; a row keeps its K-space answer where
    neither succeeds.
    """
    rows = retry_rows(model, sol, tidx, proba)
    if rows.size == 0:
        return sol
    sol, rows = shifted_retry(model, sol, X, tidx, m, proba, margins, tol, max_iter, rows)
    return input_space_retry(model, sol, X, tidx, m, proba, margins, rows)


def retry_rows(model, sol, tidx, proba=None):
    """Return the rows K-space failed: numerical failure, iteration limit, unsure success."""
    st = sol.status
    if sol.certified is not None and np.count_nonzero(sol.certified) == st.shape[0]:
        return np.empty(0, dtype=np.intp)  # every row a certified success (a certificate
        # is given to converged successes only)
    redo = (st == _NUMERIC) | (st == _MAXITER)
    # and the successes the explainer's check would fail: within rounding of the class
    # boundary (a margin raised to its rounding need that the dual meets only to its
    # tolerance: a three-way tie with margin=0, soak round N)
    redo[unsure(model, sol, np.flatnonzero(st == _OK), tidx, proba)] = True
    return np.flatnonzero(redo)


def shift_model(model, t, m):
    """Return (the model less row ``t``, the metric ``m`` on it), or None where not finite.

    A − 1 a_tᵀ, b − b_t: every margin z_t − z_j, hence every probability, unchanged, and
    its Gram matrix holds the rows' differences exactly (:func:`shifted_retry`,
    :func:`lam_shifted`). Built per call, not kept: only failing rows need it, and at
    (131 072, 16) each would hold three (K, D) arrays of doubles, ~50 MB.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = type(model)(model.A - model.A[t], model.b - model.b[t])
    if not (np.isfinite(shifted.A).all() and np.isfinite(shifted.b).all()):
        return None
    frozen = m.v == 0.0
    weights = None if m.unit_wt else np.where(frozen, 1.0, m.wt)
    return shifted, make_metric(shifted, frozen, weights)


def shifted_retry(model, sol, X, tidx, m, proba, margins, tol, max_iter, rows):
    """Re-solve ``rows`` in K-space on the model less their target's row.

    Returns ``sol`` with the rows answered replaced, and the rows still failing.

    Subtracting the target's row and intercept from every row (A − 1 a_tᵀ, b − b_t) changes
    no margin z_t − z_j, hence no probability and no answer. But its Gram matrix holds the
    rows' differences, formed exactly where two rows are nearly equal, where G = A Aᵀ of the
    rows themselves had rounded them away: with rows −(1, 10⁻⁹) and −(1, 0) at x̄ ~ 10⁷
    K-space could not see the 10⁻⁹ (soak round Q, seed 311). One model per target among
    those rows. Its answers are certified for the shifted model's arithmetic only, so they
    are taken uncertified: the explainer checks them in the model's own.
    """
    left = np.ones(rows.size, dtype=bool)
    for t in np.unique(tidx[rows]):
        at = np.flatnonzero(tidx[rows] == t)
        r = rows[at]
        out = shifted_solve(model, t, m, X, tidx, r, proba, margins, tol, max_iter)
        if out is None:
            continue
        sub, good = out
        won = np.flatnonzero(good)
        if won.size:
            sol = replace_rows(sol, r[won], take_rows(sub, won))
            left[at[won]] = False
    return sol, rows[left]


def shifted_solve(model, t, m, X, tidx, r, proba, margins, tol, max_iter):
    """Solve rows ``r`` (target ``t``) on the shifted model; return (answers, good) or None.

    ``good``: the answers that succeed, are finite and that the verification would accept
    in this model's arithmetic (:func:`unsure`); ``proba=`` answers short of τ here are
    re-solved first (:func:`shifted_raise`). Taken uncertified. ``None`` where the shifted
    model is not finite.
    """
    pair = shift_model(model, t, m)
    if pair is None:
        return None
    shifted, ms = pair
    mg = None if margins is None else margins[r]
    sub = _softmax.constrained(shifted, X[r], tidx[r], ms, proba, mg, tol, max_iter)
    sub = sub._replace(certified=None)
    if proba is not None:
        sub = shifted_raise(model, shifted, ms, sub, X[r], tidx[r], proba, tol, max_iter)
    good = sub.success & np.isfinite(sub.x).all(axis=1)
    good[unsure(model, sub, np.flatnonzero(good), tidx[r], proba)] = False
    return sub, good


def shifted_raise(model, shifted, ms, sub, X, tidx, proba, tol, max_iter):
    """Re-solve ``proba=`` answers of the shifted model that are short of τ in this one's.

    The shifted model meets τ in its own arithmetic, and this model's logits round
    differently: by ε·|z| where a common part makes them large (a part 10⁶ times the rows of
    wine: logits ~10⁷, p_target short of τ by 1e-11 on 97 of 178 rows, each then refused
    by the verification as within rounding of the boundary). Those answers that are in the
    class but short are solved again for log τ raised by twice their shortfall and at least
    twice this model's rounding need (the bound of how far the two arithmetics differ).
    """
    ok = np.flatnonzero(sub.success & np.isfinite(sub.x).all(axis=1))
    if ok.size == 0:
        return sub
    with np.errstate(over="ignore", invalid="ignore"):
        sure, Z = model.surely_in(sub.x[ok], tidx[ok])
        p = model.proba_from_logits(Z)[np.arange(ok.size), tidx[ok]]
    short = sure & (p < proba)
    if not short.any():
        return sub
    rows = ok[short]
    need = model.finite_need(sub.x[rows], tidx[rows])
    up = raise_log_tau(proba, p[short])
    up = raise_at_least(proba, up, 2 * need + 8 * np.finfo(float).eps).max()
    tau = proba * math.exp(up)
    if not tau < 1.0:
        return sub
    again = _softmax.constrained(shifted, X[rows], tidx[rows], ms, tau, None, tol, max_iter)
    return replace_rows(sub, rows, again._replace(certified=None))


def input_space_retry(model, sol, X, tidx, m, proba, margins, rows=None):
    """Re-solve in input space the rows of ``sol`` that K-space failed (or ``rows``).

    Those it ended in a numerical failure or at the iteration limit, and its successes that
    the explainer's verification would refuse (within rounding of the class boundary), are
    solved again by the solvers of ``bounds=`` with an unbounded box
    (:func:`fastcf._linear.boxed_region.region_boxed`: the region QP by Clarabel, the
    λ-search over projected Newton), on the model scaled by :func:`scaled`. A row takes
    that answer where it succeeds and the verification would accept it, or the proof that
    no free feature moves any margin (UNREACHABLE), or, for a row K-space failed, an optimum
    that another class wins (BELOW_DECISION); otherwise it keeps its K-space answer.
    """
    st = sol.status
    rows = retry_rows(model, sol, tidx, proba) if rows is None else rows
    if rows.size == 0:
        return sol
    D = X.shape[1]
    box = (np.full(D, -np.inf), np.full(D, np.inf))
    mg = None if margins is None else margins[rows]
    sub = boxed(model, X[rows], tidx[rows], m, box, proba, mg)
    good = sub.success & np.isfinite(sub.x).all(axis=1)
    good[unsure(model, sub, np.flatnonzero(good), tidx[rows], proba)] = False
    # and a proof that no free feature moves any margin (rows equal on the free features,
    # compared exactly), which says more than K-space's numerical failure; and for rows
    # K-space failed (not its unsure successes), the documented outcome of ``proba=τ`` whose
    # optimum another class wins (soak round Q: τ = 1/K with two zero rows, where the
    # K-space λ-search cancels at logits ~1.6·10⁶)
    good |= sub.status == _UNREACHABLE
    good |= (sub.status == _BELOW_DECISION) & (st[rows] != _OK)
    won = np.flatnonzero(good)
    if won.size == 0:
        return sol
    out = replace_rows(sol, rows[won], take_rows(sub, won))
    if won.size == sol.status.shape[0]:  # every row answered in input space
        out = out._replace(method=sub.method)
    return out


def boxed(model, X, tidx, m, bnd, proba, margins):
    """Solve in the box (:func:`_solve_boxed`) on the model scaled by :func:`scaled`.

    The box scales with the queries, and the answers (x, distance, λ) back: exact, by the
    power of 2. Its λ-search brackets λ over e^±80 (λ in units of 1/distance²): with
    coefficients of 1.2e-19 and a box [0, ∞), the answer 5.6·10¹⁸ away needs λ ~ 1e-38, and
    the unscaled search called the query infeasible (soak round S, seed 393).
    """
    model, X, e = scaled(model, X, bnd)  # (e = 0: the model and X themselves)
    box = bnd if e == 0 else (np.ldexp(bnd[0], e), np.ldexp(bnd[1], e))
    sub = _solve_boxed(model, X, tidx, m, box, proba, margins)
    if e == 0:
        return sub
    with np.errstate(over="ignore", under="ignore"):
        lam = None if sub.lam is None else np.ldexp(sub.lam, 2 * e)
        return sub._replace(x=np.ldexp(sub.x, -e), distance=np.ldexp(sub.distance, -e), lam=lam)


def _solve_boxed(model, X, tidx, m, bnd, proba, margins):
    """Solve ``proba=τ`` or ``region=True`` in a box (the solver of each form), finished.

    :func:`fastcf._linear.boxed.proba_boxed`, :func:`fastcf._linear.boxed_region.region_boxed`:
    their raw answers, finished once here (:func:`~fastcf._linear.verify.finish`).
    """
    boxes = _boxed.row_boxes(bnd, X.shape[0])  # each row's own box
    if proba is not None:
        raw = _boxed.proba_boxed(model, X, tidx, m, boxes, proba)
    else:
        raw = _boxed_region.region_boxed(model, X, tidx, m, boxes, margins)
    return finish(model, X, tidx, m, bnd, raw, proba)


def scaled(model, X, bnd=None):
    """Return (model, X, e): the model with rows A / s and the queries s X, s = 2^e.

    Where the coefficients are tiny (max |a_ij| < 2⁻²⁰), the input-space solvers' gradient
    tolerances, absolute, are met at x̄ itself (coefficients of 2.2e-16: a soak found
    ``proba=`` stopping at its iteration limit), and their λ-search's bracket is too short
    (:func:`boxed`). Scaled so that max |s a_ij| lies in [1/2, 1), with s x (and the box
    ``bnd``, s lo and s hi): every product a_ij x_j, hence every logit, is the same double,
    and the answer scales back exactly. Unscaled (e = 0) where s x or the box would leave
    the doubles.
    """
    amax = float(np.abs(model.A).max())
    if not 0.0 < amax < 2.0**-20:
        return model, X, 0
    e = math.frexp(amax)[1]  # amax = f 2^e, f in [1/2, 1)
    with np.errstate(over="ignore", under="ignore"):
        Xs = np.ldexp(X, e)
        exact = np.array_equal(np.ldexp(Xs, -e), X) and np.isfinite(Xs).all()
        As = np.ldexp(model.A, -e)
        exact = exact and np.array_equal(np.ldexp(As, e), model.A)
        for v in () if bnd is None else bnd:
            vs = np.ldexp(v, e)
            exact = exact and np.array_equal(np.ldexp(vs, -e), v)
            exact = exact and np.array_equal(np.isfinite(vs), np.isfinite(v))
    if not exact:
        return model, X, 0
    return type(model)(As, model.b, model.columns), Xs, e


def unsure(model, sol, rows, tidx, proba=None):
    """Return the rows of ``rows`` that the explainer's verification would refuse.

    Those whose answer no certificate covers and that are not surely in their class
    (``model.surely_in``) or, with ``proba``, whose p_target is below τ in that arithmetic
    (``model.in_target``).
    """
    if sol.certified is not None:
        rows = rows[~sol.certified[rows]]
    if rows.size == 0:
        return rows
    with np.errstate(over="ignore", invalid="ignore"):
        good = model.in_target(sol.x[rows], tidx[rows], proba)
    return rows[~good]


def path_shifted(model, pth, x0, k, target, lams, m, warm, tol, max_iter, names):
    """Re-solve the λ of a path whose answer is not stationary in input space, shifted.

    :func:`lam_shifted` for a path (models with close rows only): the λ whose answer's
    relative input-space residual is above 1e-6 are solved again along the path of the
    model less the target's row, and each keeps the answer with the smaller residual. A
    replaced answer keeps its status only where the model's own arithmetic puts it surely in
    the target class (``model.surely_in``), as :func:`~fastcf._linear.softmax.reduced_path`
    judges its doubtful rows; otherwise it is a numerical failure. Every distance is taken
    from the answers themselves: K-space's √(yᵀGy) rounds with G too (1e-4 relative on a
    model with a common part 10⁶ times its rows).
    """
    if not model.close_rows:
        return pth
    X = pth.X.copy()
    L = lams.size
    with np.errstate(over="ignore", invalid="ignore"):
        P = model.proba_from_logits(model.check_logits(X))
    res = lam_residual(model, X, np.broadcast_to(x0, X.shape), np.full(L, k), m, lams, P)
    rows = np.flatnonzero(~(res <= 1e-6))
    proba, nit, status, gn = (a.copy() for a in (pth.proba, pth.nit, pth.status, pth.grad_norm))
    pair = None if rows.size == 0 else shift_model(model, k, m)
    if pair is not None:
        shifted, ms = pair
        sub = _softmax.reduced_path(
            shifted, x0, k, target, lams[rows], ms, warm, tol, max_iter, names
        )
        XS = sub.X
        with np.errstate(over="ignore", invalid="ignore"):
            PS = model.proba_from_logits(model.check_logits(XS))
        X0 = np.broadcast_to(x0, XS.shape)
        new = lam_residual(model, XS, X0, np.full(rows.size, k), m, lams[rows], PS)
        won = np.flatnonzero((new < res[rows]) & np.isfinite(XS).all(axis=1))
        r = rows[won]
        X[r], proba[r], nit[r] = XS[won], sub.proba[won], nit[r] + sub.nit[won]
        status[r], gn[r] = sub.status[won], sub.grad_norm[won]
        ok = r[status[r] == _OK]
        if ok.size:
            with np.errstate(over="ignore", invalid="ignore"):
                sure = model.surely_in(X[ok], np.full(ok.size, k))[0]
            status[ok[~sure]] = _NUMERIC
    dist = distances(X - x0, None if m.unit_wt else m.wt)
    raw = Raw(X, nit, status, lams, pth.method, distance=dist, grad_norm=gn)
    return path_result(model, x0, k, target, raw, names, proba)


class InsideBox:
    """The box's re-aim policy: each numerical failure of the box solver, solved without it.

    Where the unconstrained answer lies in the row's box it is the boxed answer too (it is
    feasible, and no point of the smaller set is closer): exact. The projected Newton method of
    the box failed (status 4) where x̄ is far from the origin and its logits cancel (x̄ ~ 2e5,
    logits ~ 2e3: ``docs/scripts/soak_zoo.py``) while the unconstrained solvers answer.
    :meth:`pick` names those rows, the route solves them without the box
    (:func:`fastcf._linear.solvers.constrained`), and :meth:`merge` keeps each answer that
    succeeds inside its row's box: one round of the stage's loop (:func:`fastcf._stage.reaim`).

    Parameters
    ----------
    bnd : tuple of ndarray
        The query's box (lo, hi), of shape (D,) or (N, D).
    """

    def __init__(self, bnd):
        self.bnd = bnd

    def pick(self, sol, _r):
        """Return the rows the box solver failed numerically (status 4)."""
        return np.flatnonzero(sol.status == _NUMERIC)

    def merge(self, sol, rows, sub):
        """Return ``sol`` with the answers of ``sub`` (those ``rows``) that succeed in the box."""
        lo, hi = row_box(self.bnd, rows)
        inside = sub.success & np.all((sub.x >= lo) & (sub.x <= hi), axis=1)
        if not inside.any():
            return sol
        take = np.flatnonzero(inside)
        return replace_rows(sol, rows[take], take_rows(sub, take))
