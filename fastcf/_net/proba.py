"""``proba=τ`` on a multiclass network: the target's probability by tangent cuts of log-sum-exp.

With logits z, ``p_t = softmax(z)_t ≥ τ`` ⟺ ``g(d) = log(1 + Σ_{j≠t} exp(d_j)) ≤ log(1/τ)``
with ``d_j = z_j − z_t``: a convex condition on the logits, which are linear in the last hidden
layer's output h. The programs are linear (or, Euclidean, quadratic), so they carry it as
linear rows: first the necessary ``z_t − z_j ≥ logit τ`` (two classes alone; the row's margin,
:func:`fastcf._net.answer.query`), then, each time an answer misses τ, the tangent of g at its
logits (:meth:`fastcf._trees.forest.Softmax.cut`, the tree family's cut; valid for every z by
convexity, and it cuts that answer off), until an answer meets τ (Kelley's cutting planes).

The set the rows describe holds every point with ``p_t ≥ τ``, so the program's optimum over it
bounds the true optimum from below: the first answer that meets τ is the optimum. The cuts are
taken at ``log(1/τ) − s`` (``s``: the row's margin beyond logit τ, ``margin=``, 1e-6 by
default), a little inside the set, so that the answers reach it after finitely many cuts
rather than only in the limit; the answer is then exact for that margin. Where a program's
answer misses a cut it was given beyond the cut's rounding, or comes back unmoved (logits of
10⁶: the linear program meets its rows to ~10⁻¹² of their terms, and a cut 10⁻⁶ inside lies within
that), the next cuts are taken ten times further inside (as the re-aim raises a refused row's
margin), and the answer is exact for that larger margin.

:func:`kelley` is the loop, one copy for every program that carries a network's target: the
network's own (:func:`fastcf._net.answer._proba_row`) and the tabular one
(:class:`fastcf._tabular.netprog.NetProgram`), each passing its solve of the program with the
cuts so far.
"""

from __future__ import annotations

import math

import numpy as np

from .._trees.forest import Softmax

__all__ = ["p_target", "cut", "kelley", "gave_up", "ROUNDS"]

#: the most cuts a row gets before it is given up (a NUMERIC failure that says so)
ROUNDS = 40


def p_target(net, x, t):
    """Return fastcf's float64 ``softmax(z(x))_t`` (log-sum-exp taken stably)."""
    z = net.logits(np.asarray(x, dtype=np.float64)[None])[0]
    top = float(z.max())
    return math.exp(float(z[t]) - top - math.log(float(np.exp(z - top).sum())))


def cut(net, t, tau, x, slack):
    """Return ``(G_row, g_row)``: the tangent at x's logits as a row ``G h ≥ g`` on h.

    ``a·z ≥ r + slack`` (the tangent of ``g(d) ≤ log(1/τ) − slack``) with ``z = W h + b``.
    """
    z = net.logits(np.asarray(x, dtype=np.float64)[None])[0]
    a, r = Softmax().cut(t, tau, z.copy())
    return (a @ net.W[-1])[None], np.array([r + slack - float(a @ net.b[-1])])


def kelley(solve, net, t, tau, slack):
    """Return ``(answer, met)``: a program solved with tangent cuts until its answer meets τ.

    Parameters
    ----------
    solve : callable
        ``solve(G, g)`` returns ``(answer, x)``: the program's answer with the rows
        ``G h ≥ g`` on ``net``'s last hidden layer added to the target's own (none at first:
        ``G`` has no row), and its point x, the input of ``net`` (None: no answer, which is
        returned as it is).
    net : Net
        The network whose ``softmax(z(x))_t`` the answers must meet.
    t : int
        The target's logit.
    tau : float
        The probability asked.
    slack : float
        How far inside the set the cuts are taken (:func:`cut`); raised tenfold (at least ten
        times the miss) where an answer misses a cut beyond its rounding or comes back unmoved.

    Returns
    -------
    answer : object
        The last answer of ``solve``.
    met : bool
        False where :data:`ROUNDS` answers missed τ (:func:`gave_up` says so).
    """
    G, g = np.zeros((0, net.W[-1].shape[1])), np.zeros(0)
    last = None
    for _ in range(ROUNDS):
        ans, x = solve(G, g)
        if x is None or p_target(net, x, t) >= tau:
            return ans, True
        x = np.asarray(x, dtype=np.float64)
        miss = _missed(net, x, G, g)
        if miss > 0.0 or (last is not None and np.array_equal(x, last)):
            # the program's answer misses a cut it was given beyond the rounding of the cut's
            # terms (or comes back unmoved): the cuts lie within the program's tolerance of it
            # (logits of 1e6, a point's rows met to ~1e-12 of their terms: soak_net, seed 49,
            # example 33, the same point 40 times). The next cuts are taken further inside, as
            # the re-aim raises a refused row's margin (``RaiseMargin``): the answer is then
            # exact for that larger margin
            slack = max(10.0 * slack, 10.0 * miss)
        last = x
        Gc, gc = cut(net, t, tau, x, slack)
        G, g = np.vstack([G, Gc]), np.concatenate([g, gc])
    return ans, False


def _missed(net, x, G, g):
    """Return how far ``x`` misses the rows ``G h ≥ g`` beyond their rounding (0: it meets them).

    The rounding: ~9000 unit roundoffs of the rows' terms ``|G| |h| + |g|`` (as
    :func:`fastcf._net.program.network_point`'s).
    """
    if not G.shape[0]:
        return 0.0
    h = net.last_hidden(x[None])[0]
    tol = 9e3 * net.unit * (np.abs(G) @ np.abs(h) + np.abs(g))
    return max(0.0, float(np.max(g - G @ h - tol)))


def gave_up(tau):
    """Return the message of a row whose answers missed ``p_target >= tau`` :data:`ROUNDS` times."""
    return (
        f"numerical failure: p_target >= {tau} not reached after {ROUNDS} tangent cuts of the "
        "softmax (ask a smaller proba=, or region=True)"
    )
