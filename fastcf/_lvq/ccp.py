"""LGMLVQ: the penalty convex–concave procedure of Park & Boyd (paper 001, §6.4).

With one Ω_k per prototype the constraints of eq. 9 are differences of convex quadratics,

    f_i(x) + ε − g_j(x) ≤ 0,   f_i(x) = d(x, p_i) = ‖Ω_i(x − p_i)‖²,   g_j(x) = d(x, p_j)

(eq. 14, 24–27, 36–38), and the program is a non-convex QCQP. The penalty CCP solves it
approximately: starting from p_i ("Suggest"), the concave part −g_j is replaced by its
linearisation at the current point x_k,

    ĝ_j(x; x_k) = g_j(x_k) + ∇g_j(x_k)·(x − x_k),   ∇g_j(x_k) = 2 Λ_j (x_k − p_j)   (eq. 40–42),

slack variables s_j ≥ 0 enter the linearised constraints f_i(x) + ε − ĝ_j(x; x_k) ≤ s_j, their
sum is penalised with τ in the objective θ(x, x̄) + τ Σ_j s_j, and τ ← min(μτ, τ_max) after
every round (τ₀ = 1, μ = 2, τ_max = 10⁶). Each round is a convex program (a QCQP in cvxpy,
:func:`fastcf._lvq.programs.program` with ``ccp=True``). The procedure stops when the relative
change of θ and the largest slack are both below ``tol``.

Since g_j is convex its linearisation under-estimates it, so an iterate with zero slack is
feasible for the true constraints, and from the feasible start the objective never increases.
Each target prototype is tried and the best answer kept; an answer must meet the true
(non-linearised) constraints, checked here in the model's arithmetic.

A round can fail (Clarabel, run at tolerances of 1e-10, reports some rounds "inaccurate" on an
ill-conditioned Ω_i, whose singular values can span four decades; the relative change of θ then
stays above ``tol``, τ doubles up to 10⁶ and a late round may end with a spurious "unbounded").
Such a failure does not discard what is known: the last iterate, or the start p_i, are points of
the target class when they meet the true and the hard constraints, and the answer is then the
last such point, with status MAXITER ("stopped early") instead of no answer at all. So the CCP
answers every query for which some target prototype p_i (frozen features kept) is won by p_i and
meets the box and the user constraints.

``time_limit=`` bounds each row, program builds included (:func:`fastcf._validation.deadline`
from the row's start): the clock is read before each target prototype's program is built and
before each round. A stop keeps the best valid answer, as a failed round does: the last iterate
(or the start p_i) when it meets the true and the hard constraints, status MAXITER and a
message naming the time_limit; past the limit the prototypes left are not tried once the row has
an answer, and one without an answer yet is answered by a prototype's start point alone (no
program built, no round). A row with no valid point by then fails (``success=False``, status
MAXITER, the reason in its message).

Typo in the paper, for the record: eq. 24 has p_jᵀΩ_i p_j where p_jᵀΩ_j p_j is meant (eq. 27 has
it right).
"""

from __future__ import annotations

import time

import numpy as np

from fastcf._status import Status, message
from fastcf.results import Solution

from .._validation import deadline
from .options import row_options
from .programs import program, set_box, snap_l1, solve, theta

__all__ = ["METHOD", "solve_ccp"]

METHOD = "penalty CCP"
_OK, _MAXITER = int(Status.OK), int(Status.MAXITER)
_INFEASIBLE, _NUMERIC = int(Status.INFEASIBLE), int(Status.NUMERIC)
#: the message of a row its time_limit stopped before any answer
_LATE = "time_limit reached before the penalty CCP found an answer"


def _meets_hard_constraints(x, lo, hi, C, c):
    """Whether x meets the box and the user rows (frozen features are the caller's job)."""
    return bool(np.all(x >= lo) and np.all(x <= hi) and np.all(C @ x <= c))


def _wins(x, i, others, P, Lams):
    """Whether p_i is strictly closer to x than every p_j of another class (true distances)."""
    di = (x - P[i]) @ Lams[i] @ (x - P[i])
    dj = np.einsum("mi,mij,mj->m", x - P[others], Lams[others], x - P[others])
    return not np.any(di >= dj)


def solve_ccp(
    cache, geo, X, tgt, metric, opts, solver, max_iter, tol, tau0=1.0, mu=2.0, tau_max=1e6,
    time_limit=None,
) -> Solution:  # fmt: skip
    """Run the penalty CCP from every target prototype of every query; return a Solution.

    Parameters
    ----------
    cache : dict
        The explainer's program cache.
    geo : fastcf._lvq.model.Geometry
        A model with one Ω_k per prototype (``kind == "local"``).
    X : ndarray of shape (N, D)
    tgt : ndarray of shape (N,)
        Target class indices.
    metric : {"euclidean", "manhattan"}
    opts : fastcf._lvq.options.Options
        Its box lo/hi is shared, shape (D,), or one per query, shape (N, D).
    solver : str or None
        cvxpy solver of the convex rounds (None: Clarabel).
    max_iter : int
        Rounds per target prototype.
    tol : float
        Stopping tolerance (relative change of θ and largest slack).
    tau0, mu, tau_max : float
        Penalty schedule τ ← min(μτ, τ_max), from τ₀.
    time_limit : float or None
        Seconds for each row, from its start (program builds included): the procedure stops
        there with the best valid answer found (status MAXITER), or fails with status MAXITER
        when it has none (see the module's notes). None: no limit.

    Returns
    -------
    Solution
        ``nit`` adds the rounds over the target prototypes; ``info["prototype"]`` is the winning
        prototype, ``info["fallback_distance"]`` the distance to the closest target prototype
        that meets the hard constraints (the Suggest step's own answer).
    """
    w, free, C, c, eps = opts.w, opts.free, opts.C, opts.c, opts.margin
    N, D = X.shape
    P, Om, Lams = geo.prototypes, geo.omegas, geo.lams
    Xcf = X.copy()
    dist = np.full(N, np.inf)
    proto = np.full(N, -1, dtype=np.int64)
    nit = np.zeros(N, dtype=np.int64)
    status = np.full(N, _INFEASIBLE, dtype=np.int64)
    messages = [message(_INFEASIBLE)] * N
    fallback = np.full(N, np.inf)
    for a in range(N):
        end = deadline(time_limit)  # (inf: no limit)
        x0 = X[a]
        ro = row_options(opts, a)  # the row's own box when the bounds are per row
        lo, hi = ro.lo, ro.hi
        fail = None
        late = False  # the row's time_limit stopped a round or left a prototype untried
        for i in np.flatnonzero(geo.cls == tgt[a]):
            # fallback of the Suggest step: p_i itself, when it meets the hard constraints
            zf = P[i] - x0
            if np.all(zf[~free] == 0) and _meets_hard_constraints(P[i], lo, hi, C, c):
                fallback[a] = min(fallback[a], theta(zf, metric, w))
            stopped = time.perf_counter() > end  # (before the program is built)
            if stopped and proto[a] >= 0:
                late = True
                break  # an answer already: the prototypes left are not tried
            with np.errstate(over="ignore", invalid="ignore"):
                off = Om[i] @ (x0 - P[i])
            if not np.isfinite(off).all():
                fail = (_NUMERIC, "numerical failure: the distances overflow")
                continue
            others = np.flatnonzero(geo.valid[i])  # (the program's "others")
            if not stopped:  # (past the limit no round runs: no program is built)
                prog = program(cache, geo, i, metric, ro, ccp=True)
                par = prog["par"]
                set_box(prog, x0, lo, hi)
                par["off"].value = off
                if "hu" in par:
                    par["hu"].value = c - C @ x0
            # Suggest: start at the target prototype (feasible for eq. 9b when ε is small)
            zk = P[i] - x0
            zk[~free] = 0.0
            z_start = zk  # a known point of the target class when it meets every constraint
            start_ok = _meets_hard_constraints(x0 + zk, lo, hi, C, c) and _wins(
                x0 + zk, i, others, P, Lams
            )
            st_i, msg_i, it = _MAXITER, message(_MAXITER), 0
            tau = tau0
            prev = np.inf
            for it in range(1, 0 if stopped else max_iter + 1):
                if time.perf_counter() > end:
                    stopped, it = True, it - 1  # (rounds done)
                    break
                xk = x0 + zk
                with np.errstate(over="ignore", invalid="ignore"):
                    diff = xk[None, :] - P[others]  # (m, D)
                    Ld = np.einsum("mij,mj->mi", Lams[others], diff)  # Λ_j (x_k − p_j)
                    g = np.einsum("mi,mi->m", diff, Ld)  # d(x_k, p_j)
                    R = 2.0 * Ld  # ∇g_j(x_k)
                    # ĝ_j(x) = g_j(x_k) + R_j·(z − z_k);  constraint: f_i(z) + ε − ĝ_j(z) ≤ s_j
                    kappa = g - R @ zk - eps
                if np.isfinite(R).all() and np.isfinite(kappa).all():
                    par["R"].value = R
                    par["kappa"].value = kappa
                    par["tau"].value = tau
                    st, msg = solve(prog["prob"], solver)
                else:
                    # squared distances beyond the doubles (prototypes ~1e154 apart): cvxpy
                    # raised ValueError on the parameter; a failed round, said so
                    st, msg = _NUMERIC, "numerical failure: the squared distances overflow"
                if st != _OK:
                    # a failed round does not discard the known points of the target class:
                    # the last iterate (checked below) or the start
                    if it > 1 or start_ok:
                        st_i = _MAXITER
                        msg_i = f"stopped early: round {it} of the penalty CCP failed ({msg})"
                    else:
                        st_i, msg_i = st, msg
                    break
                znew = np.asarray(prog["z"].value, dtype=np.float64)
                znew[~free] = 0.0
                smax = float(np.max(par["s"].value, initial=0.0))
                obj = theta(znew, metric, w)
                change = abs(prev - obj)
                zk, prev = znew, obj
                if change <= tol * max(1.0, obj) and smax <= tol:
                    st_i, msg_i = _OK, message(_OK) + f" (penalty CCP, {it} rounds)"
                    break
                tau = min(mu * tau, tau_max)
            nit[a] += it
            if stopped:
                late = True
                if it == 0 and not start_ok:
                    fail = (_MAXITER, _LATE)  # no round, and the start is no answer
                    continue
                st_i = _MAXITER
                msg_i = f"stopped early: time_limit reached after {it} round(s) of the penalty CCP"
                if it == 0:  # (the start: the message below would say it again otherwise)
                    zk = z_start
                    msg_i += "; the answer is the start point p_i (frozen features kept)"
                else:
                    msg_i += "; the answer is the best found"
            if st_i not in (_OK, _MAXITER):
                if st_i != _INFEASIBLE:
                    fail = (st_i, msg_i)
                continue
            # the true (non-linearised) constraints must hold, with the solver's accuracy
            if not _wins(x0 + zk, i, others, P, Lams):
                if not start_ok:
                    fail = (
                        (_MAXITER, _LATE)
                        if stopped
                        else (_NUMERIC, "numerical failure: the penalty CCP iterate is infeasible")
                    )
                    continue
                zk, st_i = z_start, _MAXITER
                msg_i = (
                    msg_i
                    if msg_i.startswith("stopped early")
                    else "the penalty CCP iterate is infeasible"
                ) + "; the answer is the start point p_i (frozen features kept)"
            if metric == "manhattan":
                # the rounds' interior-point residue (~1e-11 moves): 0 where the answer still
                # wins and meets the box and the user rows (:func:`.programs.snap_l1`)
                zs = snap_l1(zk, w)
                if zs is not zk and _meets_hard_constraints(x0 + zs, lo, hi, C, c):
                    zk = zs if _wins(x0 + zs, i, others, P, Lams) else zk
            x = x0 + zk
            dd = theta(zk, metric, w)
            if dd < dist[a] or proto[a] < 0:  # (an answer beyond the doubles' reach is one)
                dist[a], Xcf[a], proto[a], status[a], messages[a] = dd, x, i, st_i, msg_i
        if proto[a] < 0 and fail is not None:
            status[a], messages[a] = fail
        elif late and status[a] == _OK:  # converged, with target prototypes left untried
            status[a] = _MAXITER
            messages[a] = (
                "stopped early: time_limit reached before every target prototype was tried; "
                "the answer is the best found"
            )
    return Solution(
        x=Xcf,
        proba=None,
        distance=dist,
        # the round cap (MAXITER) at an iterate that meets the true constraints is an answer
        # (a row stopped by its time_limit before any answer has none: proto -1)
        success=((status == _OK) | (status == _MAXITER)) & (proto >= 0),
        status=status,
        nit=nit,
        method=METHOD,
        message=messages,
        info={"prototype": proto, "fallback_distance": fallback},
    )
