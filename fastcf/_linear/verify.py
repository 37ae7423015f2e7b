"""Verdicts, result building and the rounding-safe ``region=True`` of linear models (paper 000).

* :func:`verdict`: success = the model classifies the answer as the target (and ``p ≥ τ`` when
  ``proba=`` asked), and the status of an answer that is not a success says why.
* :func:`softmax_verdict`: the verdict of a softmax model's answers from their logits, which
  every softmax solver's answers pass.
* :func:`finish`: the one finish of the solvers' raw answers (:class:`Raw`: the binary closed
  forms', by their finish kernel, :func:`finish_binary`; the Euclidean softmax solvers' in R^D,
  :func:`finish_softmax`), applied by the route to whichever solver answered.
* :func:`region`: ``region=True`` with a margin raised, where the logits are so large that their
  rounding could exceed it, above the worst-case rounding of every evaluation of the model (the
  bound of :meth:`fastcf._linear.model.BinaryModel.rounding_need`, Higham §3.1).
* :func:`path_result`: the :class:`~fastcf.results.CounterfactualPath` of a λ-path, built here
  alone (every path solver hands its answers to it).

The final check of every answer (does the model's own arithmetic put it in the target class?) is
the judge of the one stage (:func:`fastcf._stage.judge`), through the model's ``in_target``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._kernels import verdict as _vk
from .._resolve import raise_margin
from .._stage import reaim, replace_rows, take_rows
from .._status import Status
from ..results import CounterfactualPath, Solution
from .metric import distances, row_box

__all__ = [
    "Raw",
    "finish",
    "finish_binary",
    "finish_softmax",
    "margin_rises",
    "path_result",
    "region",
    "softmax_verdict",
    "verdict",
]

# the codes as plain ints: NumPy compares an array with an int much faster than with an
# IntEnum member (as the kernels do, see fastcf._kernels)
_BELOW_DECISION = int(Status.BELOW_DECISION)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
_OK = int(Status.OK)
_TINY = float(np.finfo(float).tiny)
_FLOOR = 2.0**-900  # the margin floor per unit of the rows' norm (far above the subnormals)
_EMPTY_1 = np.empty(0)  # the binary finish kernel's scale when there is none (never read)


def verdict(pred, P, tidx, status, proba_min, lam_mode, unreachable):
    """Return (success, status): success = classified as the target (and p ≥ τ when asked).

    The status of an answer that is not a success says why: UNREACHABLE (no free feature moves
    the logit), NUMERIC (``proba=`` / ``region=True`` answers that the model does not confirm),
    NOT_TARGET (the optimum of problem (2) is in another class) or BELOW_DECISION (τ met below
    the decision threshold). The rule is one kernel function
    (:func:`fastcf._kernels.verdict.verdict_row`), which binary answers run inside their finish
    kernel.
    """
    return _vk.verdicts(
        np.ascontiguousarray(pred, dtype=np.int64), P, tidx, status,
        math.nan if proba_min is None else float(proba_min), bool(lam_mode), bool(unreachable),
    )  # fmt: skip


def softmax_verdict(model, Xs, tidx, status, lams, proba_min, unreachable=False, Z=None):
    """Return (P, success, status) of softmax answers ``Xs``: the one verdict of their logits.

    ``Z``: the logits of ``Xs`` when the caller has them (the row kernels'). An answer that is
    not finite (a step that overflowed) is a numerical failure, not an answer; then the rule of
    :func:`verdict` (``lams`` given and no ``proba_min``: problem (2), whose optimum may lie in
    another class). Every softmax solver's answers pass here (:func:`finish_softmax`, the
    Manhattan solvers).
    """
    Z = model.logits(Xs) if Z is None else Z
    # a failed answer may be huge or non-finite: no warnings for its P
    with np.errstate(over="ignore", invalid="ignore"):
        P, pred = model.rows_proba_pred(Z)
    if not np.isfinite(Xs).all():
        status = status.copy()
        status[(status == _OK) & ~np.isfinite(Xs).all(axis=1)] = _NUMERIC
    lam_mode = lams is not None and proba_min is None
    success, status = verdict(pred, P, tidx, status, proba_min, lam_mode, unreachable)
    return P, success, status


class Raw(NamedTuple):
    """The raw answers of a linear solver: what :func:`finish` makes a Solution.

    (A λ-path's answers, one per λ, are what :func:`path_result` makes a path.)

    The solvers that do not judge their own answers return these (the binary closed forms,
    the softmax solvers in R^D: the box's, the reference methods); the route finishes them,
    once, whichever solver answered. (The primal active set's answers, a fallback of the box's
    region QP, are read there, unfinished: :mod:`fastcf._linear.boxed_region`. The Manhattan
    solvers finish their own, in their cost: :mod:`fastcf._linear.manhattan`.)
    """

    x: np.ndarray  # (N, D) the answers
    nit: np.ndarray
    status: np.ndarray  # the solver's own
    lam: np.ndarray | None  # λ of each answer (problem (2), a λ-path, or proba=τ's λ-search)
    method: str
    info: dict | None = None
    zeta: np.ndarray | None = None  # binary: the target logit at x, by the kernel
    distance: np.ndarray | None = None  # binary: the kernel's distances; a λ-path's
    grad_norm: np.ndarray | None = None  # binary problem (2): the kernel's; a λ-path's
    scale: np.ndarray | None = None  # binary problem (2): the rounding scale of each ζ
    unreachable: bool = False  # binary problem (2): no free feature moves the logit
    certify: bool = False  # binary region=True: certify by the cheap bound of the need


def finish(model, X, tidx, m, bnd, raw, proba_min=None):
    """Return the :class:`~fastcf.results.Solution` of a solver's raw answers (:class:`Raw`).

    The one finish of the linear solvers that do not judge their own answers: binary answers
    (``raw.zeta`` given) by the binary finish kernel (:func:`finish_binary`), softmax answers
    in R^D by :func:`finish_softmax`. ``proba_min``: τ of ``proba=τ`` (None otherwise).
    """
    if raw.zeta is not None:
        return finish_binary(model, raw, tidx, proba_min)
    return finish_softmax(model, X, tidx, m, bnd, raw, proba_min)


def finish_binary(model, raw, tidx, proba_min=None):
    """Return the :class:`~fastcf.results.Solution` of binary kernels' answers and verdicts.

    ``raw``: the kernels' :class:`Raw` answers (the route's :func:`finish`, and the binary
    Manhattan solvers, hand them here). ``zeta`` is the target logit at ``Xs``, recomputed from
    ``Xs``; the model predicts ``classes_[1]`` iff z > 0. ``scale``: the rounding scale
    Σ|w_i x_i| + |c| of each ``zeta`` (a success with ``zeta > 4γ scale`` is ``certified``);
    else, with ``certify`` (the class
    alone, no τ: the probabilities here are the kernel's), a success with ``zeta`` above the
    cheap bound of that need (``model.need_bound``) is. Either way every evaluation of the
    logit, the model's own included, differs from the kernel's by less than the need (Higham's
    bound holds for any order of the sums), so it puts the answer in the target: the
    explainer's verification need not recompute it.
    """
    # one kernel for the whole verdict (a score of NumPy calls on (N,) arrays cost a single
    # query more than its solve): a step that overflowed (tiny w, e.g. |w| = 1e-158) lands at
    # ±inf, where the logit "classifies" it, and is a numerical failure, not an answer; then
    # the one rule of a verdict (verdict_row, as verify.verdict), and the certificate
    Xs, nit, status, lams, method, info, zeta, dist, gn, scale, unreachable, certify = raw
    mode = 1 if scale is not None else (2 if certify else 0)
    P, success, status, cert = _vk.binary_finish(
        Xs, zeta, tidx, status, dist, math.nan if proba_min is None else float(proba_min),
        lams is not None, bool(unreachable), _EMPTY_1 if scale is None else scale, mode,
        model.gamma, model.max_row_norm, model.max_abs_b,
    )  # fmt: skip
    if mode == 0:
        cert = None
    return Solution.of(Xs, P, dist, success, status, nit, method, lams, gn, cert, info)


def finish_softmax(model, X, tidx, m, bnd, raw, proba_min=None):
    """Return the :class:`~fastcf.results.Solution` of Euclidean softmax answers in R^D.

    ``raw``: the :class:`Raw` answers of a solver in R^D (the boxed solvers, the reference
    methods), which the route finishes (:func:`finish`). The verdict
    (:func:`softmax_verdict`; the stage's judge re-checks with ``predict``'s arithmetic), the
    distances in the metric ``m``, and for problem (2) (``lams`` given, no ``proba_min``) the
    norm of the (projected, with ``bnd``) gradient of E at the answer.
    """
    Xs, nit, status, lams, method, info = raw[:6]
    N = X.shape[0]
    v, wt = m.v, m.wt
    P, success, status = softmax_verdict(model, Xs, tidx, status, lams, proba_min)
    gn = None
    diff = Xs - X
    dist = distances(diff, None if np.all(wt == 1) else wt)
    if lams is not None and proba_min is None:
        Pm = P.copy()
        Pm[np.arange(N), tidx] -= 1.0
        G = lams[:, None] * wt * diff + Pm @ model.A
        G[:, v == 0] = 0.0
        if bnd is not None:
            lo, hi = bnd
            G = np.where((Xs <= lo) & (G > 0), 0.0, G)
            G = np.where((Xs >= hi) & (G < 0), 0.0, G)
        gn = np.sqrt(np.einsum("ij,ij->i", G, G))
    return Solution.of(Xs, P, dist, success, status, nit, method, lams, gn, None, info)


def _rhs_scale(model, X, tidx, margins):
    """Return each row's largest ``|margin − (z̄_t − z̄_j)|``, j ≠ t, in logits.

    The size of the right-hand sides of the row's region constraints at x̄: a solver's
    feasibility tolerance is relative to it.
    """
    Z = model.logits(X)
    rows = np.arange(X.shape[0])
    rhs = np.abs(margins[:, None] - (Z[rows, tidx][:, None] - Z))
    rhs[rows, tidx] = 0.0
    return rhs.max(axis=1, initial=0.0)


def margin_rises(model, Xs, X, tidx, margins, status):
    """Return (rises, need, tm): which ``region=True`` answers :func:`region` re-solves.

    The rule of a round of :func:`region`, one function for every caller that must answer as it
    does (the region rounds, and ``manhattan.binary_flipsets``' alternatives, which return the
    kernel's answers only where no round would re-solve them). ``Xs``: the answers (N, D);
    ``X``: their sources (N, D), or one (1, D) for all; ``margins`` (N,): the margins they were
    solved with; ``status``: the solver's. ``rises`` (N,) bool, or ``None`` when no row can
    rise; ``need`` and ``tm``: the rounding need and the answer's own margin in the model's
    arithmetic (``model.check_logits``), computed only where the cheap bound cannot decide
    (0 and inf elsewhere).

    Candidates are the successes and the failures of the solver's own check (NUMERIC;
    BELOW_DECISION for a binary ``proba=τ ≥ 1/2`` solved as a region, at a tie of the classes)
    that a larger margin can repair.
    """
    N = Xs.shape[0]
    # the exact need, and the answer's own margin, only where the cheap bound (need ≤ bound)
    # cannot clear the margin asked with room for the answer to fall short of it by twice as
    # much again (K-space meets the margin in z̄ + G y, the formed point has its own rounding);
    # that decides every row at ordinary magnitudes, so it comes first (one kernel, no warnings)
    clear, n_clear = model.clear_of_need(Xs, margins)
    if n_clear == N:
        return None, None, None
    with np.errstate(over="ignore", invalid="ignore"):
        ok = (status == _OK) | (status == _NUMERIC) | (status == _BELOW_DECISION)
        ok &= np.isfinite(Xs).all(axis=1) & ~clear
        if not ok.any():
            return None, None, None
        need = np.zeros(N)
        tm = np.full(N, np.inf)
        need[ok] = model.rounding_need(Xs[ok], tidx[ok])
        tm[ok] = model.target_margin(model.check_logits(Xs[ok]), tidx[ok])
        # the verification's test (tm > need) would refuse the answer, or the margin asked
        # does not clear the need
        bump = ok & (~(margins > need) | ~(tm > need)) & np.isfinite(2 * need)
        # but x̄ itself, already in its class in every arithmetic and by the margin asked,
        # is the answer (distance 0): raised past a margin 0 it moved by 2.4e-271 off
        # x̄ = −2.2e-308, while the same query with x̄'s one feature frozen kept x̄, and
        # enumerate listed the cheaper answer second (a 10 000-example soak of
        # test_fuzz_linear_few_changes[binary], 2026-11-26)
        bump &= ~((Xs == X).all(axis=1) & (tm > need) & (tm >= margins))
    return bump, need, tm


def region(model, X, tidx, bnd, margin, constrained):
    """``region=True``: solve with ``margin``; re-solve rows where rounding can exceed it.

    ``constrained(X, tidx, bnd, margins)`` solves the rows ``X`` with one margin each (the
    Euclidean or the Manhattan solver). At ordinary magnitudes the rounding of the logits
    (~1e-13) is far below the default margin and nothing is re-solved. At logits ~1e10 the
    margin of a row is raised to twice the margin it needs (``model.rounding_need``, evaluated
    at the answer), so that a success does not depend on which arithmetic (batch or single row,
    BLAS or not) evaluates it. A margin is kept only where it is strictly above the need: at an
    exact tie (need 0, margin 0) it is raised to a floor of 2⁻⁹⁰⁰ per unit of the rows' norm.
    """
    margins = np.empty(X.shape[0])
    margins.fill(margin)
    own = None  # the rows' own margins of the round (without x̄'s need)

    def pick(sol, _r):
        nonlocal own
        bump, need, tm = margin_rises(model, sol.x, X, tidx, margins, sol.status)
        if bump is None:
            return None
        idx = np.flatnonzero(bump)
        if idx.size == 0:
            return idx
        # at least twice the need at x̄ too, and a floor: with margin 0 an
        # answer whose logits are exact (need 0 there) can tie — x̄ = 0 with b = 0, or an
        # answer x̄ + δ = 0 whose δ cancelled x̄ — and the same margin would keep it
        with np.errstate(over="ignore", invalid="ignore"):
            src = model.rounding_need(X[idx], tidx[idx])
        # the floor: a normal double, and a step to it (~ floor / ‖a_k − a_j‖) normal too (a
        # subnormal step lost the bits the guard needs)
        floor = max(_FLOOR * 2.0 * model.max_row_norm, _TINY * 4.0)
        # a margin asked above the need that the answer still missed in the model's own
        # arithmetic (K-space met 3.5e-13, the formed point had 1.4e-13 against a need of
        # 1.8e-13: soak round T, seed 414, a four-way tie at margin 0 with weights): doubled
        short = (margins[idx] > need[idx]) & ~(tm[idx] > need[idx])
        own = raise_margin(margins[idx], need[idx], floor, doubled=short)
        # and at least twice the solver's own feasibility tolerance where it reports one: the
        # Manhattan LP meets its rows to 1e-12 of the largest |rhs|, and a raise below that
        # came back as the same point, round after round (soak round O)
        rtol = sol.info.get("feas_rtol") if sol.info else None
        if rtol is not None:
            own = np.maximum(own, 2.0 * rtol * _rhs_scale(model, X[idx], tidx[idx], margins[idx]))
        margins[idx] = np.maximum(own, 2 * src)
        return idx

    def solve(idx):
        # a per-row box goes with its rows (the whole (N, D) box would pair row idx[0] with
        # box 0)
        sub = constrained(X[idx], tidx[idx], row_box(bnd, idx), margins[idx])
        # x̄'s need can exceed every margin the box allows where the answer's logits are far
        # smaller than x̄'s (w = (1e-9, −0.5), x̄ = (1, 0), the corner (0, 0) with ζ = 8e-89 in
        # a box [0, 1] × [−6e-119, 0]: soak round R, seed 359): where that made the row
        # infeasible, it is solved with the answer's own need and the floor alone
        again = (sub.status == _INFEASIBLE) & (margins[idx] > own)
        if again.any():
            j = np.flatnonzero(again)
            margins[idx[j]] = own[j]
            sub = replace_rows(
                sub, j, constrained(X[idx[j]], tidx[idx[j]], row_box(bnd, idx[j]), own[j])
            )
        return sub

    def merge(sol, idx, sub):
        # an answer already in its class in every arithmetic (its own margin above the need,
        # hence above the margin asked) stays where the raised margin fails: x̄ inside by
        # 2.2e-308 with margin 0 and rows that nothing moves missed the floor 4·2⁻¹⁰²², a false
        # "unreachable" (soak round S, seed 381). Where the raised margin succeeds it answers
        # (the re-solve is the more precise: Clarabel's 0.02 past a margin-0 optimum 10⁸ away)
        lost = np.flatnonzero((sub.status != _OK) & (sol.status[idx] == _OK))
        if lost.size:
            with np.errstate(over="ignore", invalid="ignore"):
                sure = model.surely_in(sol.x[idx[lost]], tidx[idx[lost]])[0]
            keep = np.zeros(idx.size, dtype=bool)
            keep[lost[sure]] = True
            idx, sub = idx[~keep], take_rows(sub, np.flatnonzero(~keep))
        return replace_rows(sol, idx, sub)

    return reaim(constrained(X, tidx, bnd, margins), pick, solve, merge)


def path_result(model, x0, k, target, raw, names, P=None):
    """Return the :class:`~fastcf.results.CounterfactualPath` of a λ-path's answers.

    The one builder of a linear λ-path. ``raw``: the path solver's :class:`Raw` answers, one
    per λ: ``x`` (L, D), ``lam`` the path's λ, ``distance``, ``nit``, ``status``,
    ``grad_norm``, ``method``. Without ``P``, the answers are judged here: the class is the
    model's decision on its own logits (BLAS, as ``predict``: the probabilities can round to
    a tie). With ``P`` (the K-space path's kernel, which judged its own rows), the solver's
    probabilities and ``status`` stand, and ``raw.x`` may be a callable that forms the
    answers on first access of ``path.X``.
    """
    XL, nit, status, lams, method = raw[:5]
    dist, gn = raw.distance, raw.grad_norm
    if P is None:
        Z = model.model_logits(XL)
        P = model.proba_from_logits(Z)
        pred = model.predict_index(Z)
        finite = np.isfinite(Z).all(axis=-1) if Z.ndim == 2 else np.isfinite(Z)
        status = np.where((status == _OK) & ~(finite & np.isfinite(dist)), _NUMERIC, status)
        success, status = verdict(pred, P, np.full(XL.shape[0], k), status, None, True, False)
    else:
        success = status == _OK
    return CounterfactualPath(
        lams=lams,
        X=XL,
        x0=x0,
        target=target,
        proba=P,
        distance=dist,
        nit=np.asarray(nit),
        success=success,
        status=status,
        grad_norm=np.asarray(gn),
        method=method,
        feature_names=names,
    )
