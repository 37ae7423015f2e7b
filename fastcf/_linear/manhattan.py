"""Weighted-L1 ("Manhattan") counterfactuals of linear models: exact solvers of three problems.

The cost of a change is ``Σ_i c_i |x_i − x̄_i|`` (``cost`` c > 0, frozen features fixed bit for
bit), inside an optional box lo ≤ x ≤ hi. This is the weighted Manhattan distance of paper 001
(eq. 2), whose counterfactuals are linear programs there (eq. 10, 21); here the model is a
logistic or softmax classifier (paper 000), and the three problems of paper 000 change only in
their cost: ``proba=τ`` (p_target(x) ≥ τ), ``region=True`` (z_target ≥ z_j + margin for every
j ≠ target) and problem (2) (min λ Σ c|δ| − log p_target). The L1 cost is not smooth, so the
closed form of Theorem 4.2 and the Newton methods of §3 do not apply; what takes their place:

**Binary models** (:mod:`fastcf._kernels.l1`, first part). Only the target logit
ζ = s (w·x + c) matters, and feature i raises it at the price c_i / |w_i| per unit, up to its room
in the box. The cheapest way to raise ζ by t is a fractional knapsack: the features in
increasing price (ties: lowest index), each up to its room; its cost h(t) is convex and piecewise
linear. ``proba=`` / ``region=True`` cover t = θ − ζ̄ (θ = logit τ, or the margin): without a box
one feature moves (the cheapest, O(D)); with one, the features that run out of room are followed
by the next ones from a streaming selection of the cheapest 64 (O(D), redone for 8× as many
when they run out), never a full sort.
Problem (2) is min λ h(t) − log σ(ζ̄ + t): on a piece of price g the derivative
λ g − σ(−(ζ̄ + t)) increases and vanishes at ζ̄ + t = log1p(−λg) − log(λg) (for λg < 1), so the
walk stops inside the piece where it crosses 0 or at a kink. Both are exact up to rounding; the
answer of ``proba=`` / ``region=True`` lands on ζ = θ as the kernel computes it, raised by the
rounding level of the dot product and pushed on while short (as the Euclidean projection).

**Softmax models, region=True**: the linear program

    min Σ_i c_i (δ⁺_i + δ⁻_i)  s.t.  (a_t − a_j)·(δ⁺ − δ⁻) ≥ margin − (z̄_t − z̄_j)  (j ≠ t),
                                      0 ≤ δ⁺ ≤ hi − x̄,  0 ≤ δ⁻ ≤ x̄ − lo,

K − 1 rows and 2D bounded columns, solved by a dense dual simplex (:func:`~fastcf._kernels.l1.
region_lp_one`): the slack basis is dual feasible (c > 0), the basis is (K−1)×(K−1), factored
afresh at each pivot; Harris' ratio test on cost-scaled reduced costs, so that the pivots do not
depend on the features' units. A basic optimum moves at most K − 1 features. HiGHS (``highspy``,
measured) costs 0.5–1.5 ms per solve at (784, 10) for its set-up alone; the kernel solves the
whole LP in ~75 µs. The answer's duality gap is in ``info["gap"]``. A row the kernel calls
infeasible is solved again by HiGHS (:func:`second_opinion`, here with the LP it checks):
"infeasible" is a claim made to the user.

**Softmax models, problem (2) and proba=τ**: with the margins m = m̄ + M δ (rows of M:
a_t − a_j) and F(δ) = log(1 + Σ_j exp(−m_j)) = −log p_t, the Fenchel dual of
min λ Σ c|δ| + F(δ) over the box is

    max_q  −m̄ᵀq − Σ_{k=0}^{K−1} q_k log q_k − Σ_i [U_i (M_iᵀq − λc_i)⁺ + L_i (−M_iᵀq − λc_i)⁺],

q the non-target probabilities (q_0 = 1 − Σ q, the target's), U_i = hi_i − x̄_i,
L_i = x̄_i − lo_i (an infinite room: the hard constraint |M_iᵀq| ≤ λ c_i). It is strictly
concave in K − 1 variables; an active-set method (:func:`~fastcf._kernels.l1.lam_dual`) takes
Newton steps on the face of the features on a kink (|M_iᵀq| = λ c_i) — straight to the face's
optimum when damped Newton on the face's primal finds it — an exact line search across the
kinks, and releases a kink feature whose multiplier (its δ_i) leaves [0, U_i]. The
primal answer is read off the final face (0 inside, the bound beyond the kink, the multiplier
on it) and polished by Newton on the primal stationarity of that face. ``proba=τ`` is a search
over λ (p_t(x*(λ)) is continuous and nonincreasing), warm-started, that stops when the KKT
system of ``proba=`` on the current face (its δ and λ, with log p_t = log τ) has a solution at
which every feature's state is optimal: exact, not a bracket. Certificates: the KKT residual
(``grad_norm``) and the duality gap (``info["gap"]``; for ``proba=`` against the Lagrangian
bound (Ψ_λ(q) + log τ)/λ).

Every answer is judged by the model's own arithmetic (:func:`fastcf._linear.verify.verdict`):
success = classified as the target (and p ≥ τ). ``region=True`` answers of softmax models and
``proba=`` answers are re-solved with a margin (or τ) raised by a few ulps where rounding left
them short, as the Euclidean solvers do.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import l1 as _l1
from .._resolve import ROUNDS, raise_at_least, raise_log_tau
from .._stage import reaim
from .._status import Status
from ..results import Solution
from . import verify
from .binary import kernel_box
from .verify import Raw, softmax_verdict

__all__ = [
    "binary_constrained",
    "binary_constrained_lean",
    "binary_flipsets",
    "constrained_l1",
    "lam_l1",
    "second_opinion",
]

_OK = int(Status.OK)
_EPS = float(np.finfo(float).eps)
_BINARY_METHOD = "manhattan (closed form)"
_LP_METHOD = "manhattan LP (dual simplex)"
_DUAL_METHOD = "manhattan (entropy dual, active set)"


def _is_binary(model):
    return getattr(model, "w", None) is not None


def constrained_l1(model, X, tidx, cost, free, bnd, proba, margins, tol, max_iter, rounds=ROUNDS):
    """Cheapest point in the weighted L1 cost with p_target ≥ τ, or in the target's region.

    Parameters
    ----------
    model : BinaryModel or SoftmaxModel
        From :func:`fastcf._linear.model.make_model`.
    X : ndarray of shape (N, D)
        The queries x̄ (float64, C-contiguous).
    tidx : ndarray of shape (N,)
        Target class indices (int64).
    cost : ndarray of shape (D,)
        Per-feature cost c_i > 0 (finite): the distance is ``Σ_i c_i |x_i − x̄_i|``.
    free : ndarray of bool, shape (D,)
        False for frozen features (they keep their bits).
    bnd : tuple of ndarray or None
        (lo, hi), each of shape (D,) or (N, D); ±inf allowed; every x̄ inside its box.
    proba : float or None
        τ in (0, 1): ``min Σ c|δ|`` s.t. ``p_target ≥ τ`` (``margins`` None).
    margins : ndarray of shape (N,) or None
        ``region=True``: ``z_target ≥ z_j + margins[n]`` for every j ≠ target (binary:
        ``s (w·x + c) ≥ margins[n]``).
    tol : float
        Unused by the exact methods (kept for the common solver signature).
    max_iter : int
        Iteration limit of the softmax methods (at least ``10 K + 100`` simplex pivots, and
        ``20 K + 200`` active-set steps per λ of ``proba=``).

    Returns
    -------
    Solution
        ``info["n_moved"]``: features changed per answer; softmax ``info["gap"]``: the
        duality gap; ``proba=`` of softmax models: ``lam``, the multiplier 1/λ's λ;
        ``region=True`` of softmax models: ``info["highs"]``, the rows the kernel called
        infeasible and HiGHS answered (:func:`second_opinion`).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf._linear.model import make_model
    >>> from fastcf._linear.manhattan import constrained_l1
    >>> model = make_model(np.array([[1.0, 2.0]]), np.array([0.0]))
    >>> sol = constrained_l1(model, np.array([[-1.0, -1.0]]), np.array([1]), np.ones(2),
    ...                      np.ones(2, dtype=bool), None, None, np.array([0.5]), 1e-10, 100)
    >>> np.round(sol.x[0], 12).tolist(), round(float(sol.distance[0]), 12), bool(sol.success[0])
    ([-1.0, 0.75], 1.75, True)
    """
    if _is_binary(model):
        return binary_constrained(model, X, tidx, cost, free, bnd, proba, margins)
    if proba is None:
        return _softmax_region(model, X, tidx, cost, free, bnd, margins, max_iter, rounds)
    return _softmax_proba(model, X, tidx, cost, free, bnd, proba, max_iter)


def lam_l1(model, X, tidx, cost, free, bnd, lams, tol, max_iter):
    """Problem (2) with the weighted L1 cost: ``min λ Σ c_i |x_i − x̄_i| − log p_target(x)``.

    Parameters
    ----------
    model, X, tidx, cost, free, bnd
        As in :func:`constrained_l1`.
    lams : ndarray of shape (N,)
        λ > 0 per query.
    tol : float
        Unused (the methods are exact; ``grad_norm`` reports the KKT residual).
    max_iter : int
        Iteration limit of the softmax active-set method (at least ``20 K + 200``).

    Returns
    -------
    Solution
        ``grad_norm``: the KKT residual (the least element of the subdifferential plus the box's
        normal cone, 2-norm); softmax ``info["gap"]``: the duality gap.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf._linear.model import make_model
    >>> from fastcf._linear.manhattan import lam_l1
    >>> model = make_model(np.array([[1.0, 2.0]]), np.array([0.0]))
    >>> sol = lam_l1(model, np.array([[-1.0, -1.0]]), np.array([1]), np.ones(2),
    ...              np.ones(2, dtype=bool), None, np.array([0.1]), 1e-10, 100)
    >>> z = float(sol.x[0] @ [1.0, 2.0])  # ζ* = log((1 − λg)/(λg)), g = 1/2
    >>> round(z, 12) == round(float(np.log(0.95 / 0.05)), 12)
    True
    """
    if _is_binary(model):
        return _binary_lam(model, X, tidx, cost, free, bnd, lams)
    return _softmax_lam(model, X, tidx, cost, free, bnd, lams, max_iter)


# ---------------------------------------------------------------------------- binary
def binary_constrained(model, X, tidx, cost, free, bnd, proba, margins):
    """Solve ``proba=`` / ``region=True`` for a binary model (the knapsack kernel, judged).

    θ = logit τ for ``proba=τ``, raised to ``margins`` where both are given (τ ≥ 1/2 solved
    as ``region=True`` at margin logit τ, as :func:`fastcf._linear.binary.project`).
    """
    N = X.shape[0]
    signs = np.where(tidx == 1, 1.0, -1.0)
    thetas = np.full(N, model.theta(proba)) if proba is not None else margins
    if proba is not None and margins is not None:
        thetas = np.maximum(thetas, margins)
    lo, hi = kernel_box(bnd)
    Xs, zeta, status, dist, nmv = _l1.constrained_batch(
        X, model.w, model.c, signs, cost, free, thetas, lo, hi, bnd is not None, N > 1
    )
    raw = Raw(
        Xs, np.zeros(N, dtype=np.int64), status, None, _BINARY_METHOD, {"n_moved": nmv}, zeta, dist
    )
    return verify.finish_binary(model, raw, tidx, proba)


def binary_constrained_lean(model, X, tidx, cost, free, bnd, proba, margins):
    """Return the kernel's answers of ``proba=`` / ``region=True`` (binary model), unjudged.

    The search nodes of ``max_changes=`` and ``enumerate`` need only the answer and its cost:
    a :class:`~fastcf.results.Solution` with ``x``, ``distance`` and the kernel's ``status``
    (no probabilities, no verdict). The answers they return are solved again in full by
    :func:`constrained_l1`.
    """
    N = X.shape[0]
    signs = np.where(tidx == 1, 1.0, -1.0)
    thetas = np.full(N, model.theta(proba)) if proba is not None else margins
    lo, hi = kernel_box(bnd)
    Xs, _zeta, status, dist, _nmv = _l1.constrained_batch(
        X, model.w, model.c, signs, cost, free, thetas, lo, hi, bnd is not None, N > 1
    )
    zeros = np.zeros(N, dtype=np.int64)
    return Solution(Xs, None, dist, status == _OK, status, zeros, _BINARY_METHOD, [""] * N)


_KEYS = {}  # D -> the random keys of the node sets' hashes (fixed seed: reproducible)


def binary_flipsets(model, X, tidx, cost, free, bnd, proba, margin, k, max_nodes):
    """Return the first ``k`` alternatives of one binary Manhattan query, or None.

    Lawler's scheme in one kernel (:func:`fastcf._kernels.l1_enum.lawler_l1`) and the answers
    finished as :func:`binary_constrained` finishes them (the same bits, row by row), with
    ``verify.region``'s first round of each. ``None`` whenever the Python scheme could answer
    differently: a candidate the kernel did not solve to OK, or (``region=True``) whose margin
    is below its rounding need. The caller judges the answers by the model (and takes the
    Python scheme if one is not confirmed).
    """
    from .._kernels import l1_enum
    from .verify import margin_rises

    D = X.shape[1]
    keys = _KEYS.get(D)
    if keys is None:
        keys = np.random.default_rng(0x5EED).integers(-(2**63), 2**63 - 1, D, dtype=np.int64)
        _KEYS[D] = keys
    sign = 1.0 if tidx[0] == 1 else -1.0
    theta = model.theta(proba) if proba is not None else float(margin)
    lo, hi = kernel_box(bnd)
    n, _Z, Xs, zeta, status, dist, nmv, fallback, limited = l1_enum.lawler_l1(
        X[0], model.w, sign, model.c, cost, ~free, theta, lo[0], hi[0], bnd is not None, keys,
        k, max_nodes,
    )  # fmt: skip
    if fallback:
        return None
    t = np.full(n, tidx[0], dtype=np.int64)
    info = {"n_moved": nmv[:n], **({"enumeration_stopped": "max_nodes"} if limited else {})}
    raw = Raw(
        Xs[:n], np.zeros(n, dtype=np.int64), status[:n], None, _BINARY_METHOD, info, zeta[:n],
        dist[:n],
    )  # fmt: skip
    sol = verify.finish_binary(model, raw, t, proba)
    if proba is None or model.proba_as_region(proba):
        # verify.region's first round, by its own rule (proba=τ ≥ 1/2 is region=True at margin
        # logit τ there): an answer it would re-solve is the Python scheme's to give
        rises = margin_rises(model, sol.x, X[:1], t, np.full(n, theta), sol.status)[0]
        if rises is not None and rises.any():
            return None
    return sol


def _binary_lam(model, X, tidx, cost, free, bnd, lams):
    N = X.shape[0]
    signs = np.where(tidx == 1, 1.0, -1.0)
    lo, hi = kernel_box(bnd)
    Xs, zeta, dist, gn, scale, nmv = _l1.lam_batch(
        X, model.w, model.c, signs, cost, free, lams, lo, hi, bnd is not None, N > 1
    )
    unreachable = not bool(np.any(free & (model.w != 0.0)))
    raw = Raw(
        Xs, np.zeros(N, dtype=np.int64), np.zeros(N, dtype=np.int64), lams, _BINARY_METHOD,
        {"n_moved": nmv}, zeta, dist, gn, scale, unreachable,
    )  # fmt: skip
    return verify.finish_binary(model, raw, tidx)


# ---------------------------------------------------------------------------- softmax
def _distance(X, Xs, cost, free):
    """Σ_free c_i |x_i − x̄_i| per row (a frozen feature does not move: its term is 0).

    inf, silently, where the sum overflows: a move of ~1e300 along a feature whose rows are
    ~1e-299 (a max_changes node that may move only it), an answer no cheaper than any other.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return np.abs(Xs - X) @ cost


def _margin_short(Z, tidx, margins):
    """Per row and class, the shortfall of z_t − z_j below the row's margin (≤ 0: met).

    NaN (silently) where an answer's logits are infinite: a failed answer may hold ±inf.
    """
    rows = np.arange(tidx.size)
    with np.errstate(invalid="ignore"):
        short = margins[:, None] - (Z[rows, tidx][:, None] - Z)
    short[rows, tidx] = -np.inf
    return short


def _softmax_finish(model, X, tidx, cost, free, raw, proba_min=None, Z=None):
    """Return the :class:`~fastcf.results.Solution` of the softmax solvers' raw answers.

    ``raw``: their :class:`~fastcf._linear.verify.Raw` answers (``x``, ``nit``, ``status``,
    ``lam``, ``method``, ``info``, ``grad_norm``); the verdict of their logits
    (:func:`~fastcf._linear.verify.softmax_verdict`) and their cost Σ c |x − x̄|. ``Z``: the
    row kernels' logits of ``raw.x`` when the caller has them.
    """
    Xs, nit, status, lams, method, info = raw[:6]
    unreachable = False
    if lams is not None and proba_min is None:  # no free feature changes a logit difference
        unreachable = not bool(np.any(free & model.moves_logits))
    P, success, status = softmax_verdict(model, Xs, tidx, status, lams, proba_min, unreachable, Z)
    dist = _distance(X, Xs, cost, free)
    return Solution.of(Xs, P, dist, success, status, nit, method, lams, raw.grad_norm, None, info)


def _softmax_region(model, X, tidx, cost, free, bnd, margins, max_iter, rounds=ROUNDS):
    """``region=True`` of a softmax model: the LP, with margins raised where rounding needs it.

    Each row's margin against class j starts raised by 2ε (S_t + S_j), S_k = Σ_i |a_ki x̄_i| +
    |b_k|, the rounding level of the logit difference; rows whose answer the row kernels still
    put short of the margin are re-solved with the shortfall added (twice), up to ``rounds``
    times. A row infeasible with the raised margin is solved again with the margin itself.
    Under :func:`fastcf._linear.verify.region` (the explainer's ``region=True``) ``rounds`` is
    0: its rounds are the only re-solves, raising each margin past the rounding need and past
    the LP's feasibility tolerance (``info["feas_rtol"]``, relative to the rows' largest
    ``|margin − (z̄_t − z̄_j)|``); the search nodes of ``max_changes``
    (no verify.region around them) keep these rounds.
    """
    N, K = X.shape[0], model.A.shape[0]
    Zbar = model.logits(X)
    S = np.abs(X) @ model.abs_A.T + model.abs_b
    rows = np.arange(N)
    Margins = margins[:, None] + 2 * _EPS * (S + S[rows, tidx][:, None])
    # x̄ that meets the margin in the model's own arithmetic (the test its answer gets below) is
    # its own answer: its margin is not raised, so the LP keeps it. Raised, a margin met only in
    # floating point moved x̄ by ulps, and a restriction of it (enumerate) then returned x̄
    # itself at cost 0 after it (soak round M); the Euclidean form returns x̄ there too.
    meets = np.all(_margin_short(Zbar, tidx, margins) <= 0.0, axis=1)
    Margins[meets] = margins[meets, None]
    lo, hi = kernel_box(bnd)
    bounded = bnd is not None
    iters = max(int(max_iter), 10 * K + 100)
    Xs, nit, status, gap, _y = _l1.region_lp_batch(
        model.AT, Zbar, tidx, Margins, cost, free, X, lo, hi, bounded, iters, N > 1
    )
    per_row = lo.shape[0] > 1
    # a box that meets the margin exactly (at a vertex) fails the raised one: those rows are
    # solved again with the margin itself (their answer is then judged as computed)
    redo = np.flatnonzero(status == int(Status.INFEASIBLE))
    by_highs = np.zeros(N, dtype=bool)  # rows HiGHS answered (info["highs"])
    if redo.size:
        Margins[redo] = margins[redo, None]
        sub = _l1.region_lp_batch(
            model.AT, Zbar[redo], tidx[redo], Margins[redo], cost, free, X[redo],
            lo[redo] if per_row else lo, hi[redo] if per_row else hi, bounded, iters,
            redo.size > 1,
        )  # fmt: skip
        Xs[redo], status[redo], gap[redo] = sub[0], sub[2], sub[3]
        nit[redo] += sub[1]
        # "infeasible" is a claim to the user: HiGHS is asked too (the kernel skips pivots
        # below 1e-11 of a row's largest entry; a model row of 6.8e-12 made it say so wrongly)
        redo = np.flatnonzero(status == int(Status.INFEASIBLE))
        if redo.size:
            found, sX, sgap = second_opinion(
                model, X, tidx, Margins, Zbar, cost, free, lo, hi, bounded, redo
            )
            Xs[redo[found]], gap[redo[found]] = sX[found], sgap[found]
            status[redo[found]] = _OK
            by_highs[redo[found]] = True
    Z = None  # the row kernels' logits of the answers, when the last round changed none

    def pick(_state, _r):
        nonlocal Z
        Z = model.logits(Xs)
        short = _margin_short(Z, tidx, margins)
        redo = np.flatnonzero((status == _OK) & (short.max(axis=1) > 0.0))
        if redo.size == 0:
            return redo
        Z = None
        # the LP meets its rows to a relative tolerance (_LP_PRIMAL of the largest |rhs| in
        # logits): a shortfall below that (x̄ at a tie, margin 0: short 1.8e-15 beside a row of
        # slack 1) came back as the same point, round after round (soak round O). Raised above it
        rhs = np.abs(Margins[redo] - (Zbar[redo, tidx[redo]][:, None] - Zbar[redo]))
        rhs[np.arange(redo.size), tidx[redo]] = 0.0
        lp_tol = 2.0 * _l1._LP_PRIMAL * rhs.max(axis=1, initial=0.0)
        bump = np.where(short[redo] > 0.0, 2.0 * short[redo] + lp_tol[:, None], 0.0)
        Margins[redo] += bump + 4 * _EPS * np.abs(Margins[redo])
        return redo

    def solve(redo):
        return _l1.region_lp_batch(
            model.AT, Zbar[redo], tidx[redo], Margins[redo], cost, free, X[redo],
            lo[redo] if per_row else lo, hi[redo] if per_row else hi, bounded, iters,
            redo.size > 1,
        )  # fmt: skip

    def merge(state, redo, sub):
        Xs[redo], status[redo], gap[redo] = sub[0], sub[2], sub[3]
        nit[redo] += sub[1]
        return state

    reaim(None, pick, solve, merge, rounds)
    # the LP's feasibility tolerance, relative to the largest |rhs| of a row in logits (what
    # verify.region raises a margin past, computing the rows' rhs only for the rows it raises)
    info = {
        "gap": gap,
        "n_moved": np.count_nonzero(Xs != X, axis=1),
        "feas_rtol": _l1._LP_PRIMAL,
        "highs": by_highs,
    }
    return _softmax_finish(
        model, X, tidx, cost, free, Raw(Xs, nit, status, None, _LP_METHOD, info), Z=Z
    )


# ------------------------------------------------------- softmax region: HiGHS's second opinion
#: HiGHS's primal feasibility tolerance on the scaled region LP (its smallest accepted value)
_FEAS = 1e-10


def second_opinion(model, X, tidx, Margins, Zbar, cost, free, lo, hi, bounded, rows):
    """Solve the region LP of ``rows`` by HiGHS; return ``(found, Xs, gap)`` for those rows.

    The dense dual simplex of :func:`~fastcf._kernels.l1.region_lp_one` skips pivots smaller than
    ``1e-11`` of the tableau row's largest entry, as any simplex code must to stay stable. A row
    whose only way into the target class runs through a coefficient that small — a model row of
    6.8e-12 beside rows of 1 (soak, ``test_fuzz_linear_few_changes[softmax]``) — is then reported
    *infeasible* though a point of the class exists. "Infeasible" is a claim made to the user, so
    every row the kernel calls infeasible is solved again here, by HiGHS through
    :func:`scipy.optimize.linprog`, on the same program

        min Σ_i c_i (u_i + v_i)  s.t.  (a_t − a_j)·(u − v) ≥ margin_j − (z̄_t − z̄_j)  (j ≠ t),
                                       0 ≤ u ≤ hi − x̄,  0 ≤ v ≤ x̄ − lo,  u_i = v_i = 0 (frozen),

    with each row divided by its largest coefficient and the step scaled so that the largest
    right-hand side is 1 (HiGHS's tolerances are absolute: unscaled, a margin of 1e-300 would be
    met by x̄ itself), and a primal feasibility tolerance of 1e-10. Where HiGHS finds a point, it
    replaces the kernel's verdict; the point is judged by the model's own arithmetic like every
    answer (and :func:`fastcf._linear.verify.region` raises the margin where it falls short). Where
    HiGHS agrees, the row stays infeasible. The rows are rare; the ~1 ms per row of HiGHS's set-up
    is paid only by them.

    Parameters
    ----------
    model : softmax model
        Its ``A`` (K, D) rows.
    X : ndarray of shape (N, D)
        The queries x̄.
    tidx : ndarray of int, shape (N,)
    Margins : ndarray of shape (N, K)
        The margin against each class (the target's column unused).
    Zbar : ndarray of shape (N, K)
        The logits of x̄.
    cost : ndarray of shape (D,)
    free : ndarray of bool, shape (D,)
    lo, hi : ndarray of shape (1, D) or (N, D)
        The box (read only when ``bounded``).
    bounded : bool
    rows : ndarray of int
        The rows to solve.

    Returns
    -------
    found : ndarray of bool, shape (len(rows),)
        Where HiGHS found the program feasible (an optimum).
    Xs : ndarray of shape (len(rows), D)
        Its answers (x̄ where not found).
    gap : ndarray of shape (len(rows),)
        The duality gap of each answer from HiGHS's multipliers, in cost units (nan where not
        found).
    """
    A = model.A
    K, D = A.shape
    idx = np.flatnonzero(free)
    found = np.zeros(rows.size, dtype=bool)
    Xs = X[rows].copy()
    gap = np.full(rows.size, np.nan)
    for n, r in enumerate(rows):
        with np.errstate(all="ignore"):  # hostile scales: a row that does not scale is skipped
            out = _highs_one(
                A, X[r], int(tidx[r]), Margins[r], Zbar[r], cost, idx, lo, hi, bounded, r
            )
        if out is not None:
            Xs[n, idx], gap[n] = out
            found[n] = True
    return found, Xs, gap


def _highs_one(A, x, t, margins, zbar, cost, idx, lo, hi, bounded, r):
    """Return (the free features' answer, the duality gap) of one row by HiGHS, or None.

    None where HiGHS finds no point, and where the program does not scale to finite numbers
    (a row of 1e-310 beside a right-hand side of 1: the kernel's verdict then stands).
    """
    from scipy.optimize import linprog

    K = A.shape[0]
    others = np.array([j for j in range(K) if j != t], dtype=np.int64)
    G = A[t, idx][None, :] - A[others][:, idx]  # (K − 1, F)
    rhs = margins[others] - (zbar[t] - zbar[others])
    gmax = np.abs(G).max(axis=1, initial=0.0)
    if np.any((gmax == 0.0) & (rhs > 0.0)):
        return None  # a row no free feature moves, and x̄ short of it: infeasible indeed
    keep = gmax > 0.0
    G, rhs = G[keep] / gmax[keep, None], rhs[keep] / gmax[keep]
    sigma = float(np.max(rhs, initial=0.0))
    if not (0.0 < sigma < np.inf) or not (np.isfinite(G).all() and np.isfinite(rhs).all()):
        return None  # x̄ meets every row (not a row the kernel calls infeasible), or no scale
    x0 = x[idx]
    if bounded:
        b = 0 if lo.shape[0] == 1 else r
        up, down = (hi[b, idx] - x0) / sigma, (x0 - lo[b, idx]) / sigma
    else:
        up = down = np.full(idx.size, np.inf)
    c = np.concatenate([cost[idx], cost[idx]])
    A_ub = -np.hstack([G, -G])
    b_ub = -rhs / sigma
    bnds = np.column_stack([np.zeros(2 * idx.size), np.concatenate([up, down])])
    if not (np.isfinite(c).all() and np.isfinite(b_ub).all()) or np.isnan(bnds).any():
        return None
    # HiGHS meets each scaled row only to _FEAS, absolutely: a row whose right-hand side is
    # below _FEAS of the largest (1e-14 beside 1: a margin of 1e-6 through a row of 1.67
    # beside one through 1.6e-14, soak of docs/scripts/soak_manhattan_region.py) was met by a
    # tie, the margin was raised (verify.region) and raised again, doubling until the box
    # ran out: a false "infeasible". Each row is first asked 2 _FEAS past its right-hand side,
    # so that HiGHS's point meets every row; the program as it is only where that one fails
    # (a box met at a vertex)
    for lift in (2 * _FEAS, 0.0):
        res = linprog(
            c, A_ub=A_ub, b_ub=b_ub - lift, bounds=bnds, method="highs",
            options={"primal_feasibility_tolerance": _FEAS},
        )  # fmt: skip
        if res.status == 0:
            break
    if res.status != 0:
        return None
    u, v = res.x[: idx.size], res.x[idx.size :]
    xs = x0 + sigma * (u - v)
    if bounded:  # x̄ + σ(u − v) rounds past a bound it reaches (x = −1000.0000000000001)
        xs = np.clip(xs, lo[b, idx], hi[b, idx])
    if not np.isfinite(xs).all():
        return None
    b_ub = b_ub - lift
    ub = np.where(np.isfinite(bnds[:, 1]), bnds[:, 1], 0.0)
    dual = b_ub @ res.ineqlin.marginals + ub @ res.upper.marginals
    return xs, sigma * abs(res.fun - dual)


def _softmax_lam(model, X, tidx, cost, free, bnd, lams, max_iter):
    N = X.shape[0]
    lo, hi = kernel_box(bnd)
    Zbar = model.logits(X)
    iters = max(int(max_iter), 20 * model.A.shape[0] + 200)
    Xs, nit, status, gn, gap, nmv = _l1.softmax_lam_batch(
        model.AT, Zbar, tidx, lams, cost, free, X, lo, hi, bnd is not None, iters, N > 1
    )
    raw = Raw(Xs, nit, status, lams, _DUAL_METHOD, {"gap": gap, "n_moved": nmv}, grad_norm=gn)
    return _softmax_finish(model, X, tidx, cost, free, raw)


def _softmax_proba(model, X, tidx, cost, free, bnd, proba, max_iter):
    """``proba=τ`` of a softmax model, re-solved by the stage's loop (:func:`fastcf._stage.reaim`).

    Rows that rounding leaves an ulp short of τ (in the row kernels' or BLAS's probabilities)
    are re-solved for a τ a few ulps higher (at most ``ROUNDS`` times).
    """
    N = X.shape[0]
    lo, hi = kernel_box(bnd)
    per_row = lo.shape[0] > 1
    bounded = bnd is not None
    Zbar = model.logits(X)
    log_tau = np.full(N, math.log(proba))
    args = (cost, free)
    iters = max(int(max_iter), 20 * model.A.shape[0] + 200)
    Xs, lamv, nit, status, gap = _l1.softmax_proba_batch(
        model.AT, Zbar, tidx, log_tau, *args, X, lo, hi, bounded, iters, N > 1
    )
    rows = np.arange(N)

    def pick(_state, r):
        with np.errstate(over="ignore", invalid="ignore"):
            p1 = model.proba_from_logits(model.logits(Xs))[rows, tidx]
            p2 = model.proba_from_logits(model.check_logits(Xs))[rows, tidx]
        short = (status == _OK) & ((p1 < proba) | (p2 < proba))
        # p_t ≥ τ but the class within rounding of its boundary (τ = 1/2 with two classes in
        # contention): re-solved for a higher τ too, as softmax.proba_solution does
        near = np.zeros(N, dtype=bool)
        met = np.flatnonzero((status == _OK) & ~short)
        if met.size:
            with np.errstate(over="ignore", invalid="ignore"):
                sure, _Z = model.surely_in(Xs[met], tidx[met])
            near[met[~sure]] = True
        redo = np.flatnonzero(short | near)
        if redo.size == 0:
            return redo
        # twice the shortfall, not a few ulps of log τ: at logits of scale 10⁴ an ulp of the
        # move shifts log p by ~10⁻¹³, and a raise of 3e-15 left the answer the same bits
        up = raise_log_tau(proba, np.minimum(p1[redo], p2[redo]))
        nr = near[redo]
        if nr.any():
            need = model.finite_need(Xs[redo[nr]], tidx[redo[nr]])
            up[nr] = raise_at_least(proba, up[nr], 2 * need + 8 * _EPS)
        if r > 0:
            # still short after a re-solve: the answer x̄ + δ is formed in x̄'s precision, so
            # a raise below the rounding of x̄'s logits can leave it the same bits (x̄ = 10⁵:
            # soak round N). From the second re-solve, at least twice that rounding
            up = raise_at_least(proba, up, 2 * model.finite_need(X[redo], tidx[redo]))
        log_tau[redo] += up
        return redo

    def solve(redo):
        return _l1.softmax_proba_batch(
            model.AT, Zbar[redo], tidx[redo], log_tau[redo], *args, X[redo],
            lo[redo] if per_row else lo, hi[redo] if per_row else hi, bounded, iters,
            redo.size > 1,
        )  # fmt: skip

    def merge(state, redo, sub):
        Xs[redo], lamv[redo], status[redo], gap[redo] = sub[0], sub[1], sub[3], sub[4]
        nit[redo] += sub[2]
        return state

    reaim(None, pick, solve, merge)
    info = {"gap": gap, "n_moved": np.count_nonzero(Xs != X, axis=1)}
    return _softmax_finish(
        model, X, tidx, cost, free, Raw(Xs, nit, status, lamv, _DUAL_METHOD, info), proba
    )
