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
rather than only in the limit; the answer is then exact for that margin.
"""

from __future__ import annotations

import math

import numpy as np

from .._trees.forest import Softmax

__all__ = ["p_target", "cut", "ROUNDS"]

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
