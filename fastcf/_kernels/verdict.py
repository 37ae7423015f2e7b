"""The row verdicts of linear models' answers: one row's tests in one loop, for any batch size.

What :mod:`fastcf._linear.binary`, :class:`fastcf._linear.model.BinaryModel` and
:func:`fastcf._linear.softmax.judge` ask of an answer row — its probabilities, its verdict and
status, its certificate, whether it is surely in its target class — were a score of NumPy calls
on (N,) arrays. At N = 1 each costs a microsecond of
dispatch, and a batch of one paid them all (the single query's latency, issue 31). These kernels
run the same tests row by row, so a batch and a single query run one code with one set of bits:

* :func:`verdict_row`: the one rule of a verdict (success, and the status that says why not),
  for every row of :func:`verdicts` (:func:`fastcf._linear.verify.verdict`'s batch) and of
  :func:`binary_finish`;
* :func:`binary_finish`: probabilities, verdict, status and certificate of solver answers;
* :func:`binary_judge`: the verification's test (the class beyond the rounding need, and
  ``p ≥ τ`` where asked) on the model's own logits;
* :func:`binary_needs`: the rounding need ``4γ (Σ_j |w_j x_j| + |c|)``, the one formula of
  :meth:`~fastcf._linear.model.BinaryModel.rounding_need` (a sequential dot product, not BLAS:
  the region rounds and the verification read the same bits);
* :func:`softmax_judge`: the verdict of a softmax model's ``proba=τ`` / ``region=True``
  answers on the model's own logits and probabilities (NumPy's: BLAS and NumPy's ``exp`` are
  the model's arithmetic, :func:`fastcf._linear.softmax.judge`);
* :func:`clear_of_need`: which margins are above four times the cheap bound of the need (the
  first test of :func:`fastcf._linear.verify.margin_rises`);
* :func:`softmax_below`: the sources x̄ whose p_target is surely below τ in the model's own
  arithmetic (a first test of ``keep_source`` that spares the others the model's products).

The cheap bound of the need at a row is :func:`.linalg.need_bound` (that of
:meth:`~fastcf._linear.model._LinearModel.need_bound`).
"""

from __future__ import annotations

import math

import numpy as np

from fastcf._status import Status

from . import kernel
from .linalg import need_bound as _bound
from .roots import sigmoid_pair

__all__ = [
    "binary_finish",
    "binary_judge",
    "binary_needs",
    "clear_of_need",
    "softmax_below",
    "softmax_judge",
    "verdict_row",
    "verdicts",
]

_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_NOT_TARGET = int(Status.NOT_TARGET)
_BELOW_DECISION = int(Status.BELOW_DECISION)
_UNREACHABLE = int(Status.UNREACHABLE)
_PENDING = int(Status.PENDING)


@kernel(callee=True)
def _need(x, abs_w, abs_c, g):
    # 4γ (Σ_j |w_j x_j| + |c|), the terms summed in order
    s = 0.0
    for j in range(x.shape[0]):
        s += abs(x[j]) * abs_w[j]
    return 4.0 * g * (s + abs_c)


@kernel()
def binary_needs(X, abs_w, abs_c, g):
    """Return the rounding need ``4γ (Σ_j |w_j x_j| + |c|)`` of each row of ``X``."""
    out = np.empty(X.shape[0])
    for n in range(X.shape[0]):
        out[n] = _need(X[n], abs_w, abs_c, g)
    return out


@kernel()
def clear_of_need(X, margins, g, row_norm, abs_b):
    """Return (clear, n_clear): ``margins > 4 ×`` the cheap bound of the need at each row."""
    N = X.shape[0]
    clear = np.empty(N, dtype=np.bool_)
    count = 0
    for n in range(N):
        clear[n] = margins[n] > 4.0 * _bound(X[n], g, row_norm, abs_b)
        count += clear[n]
    return clear, count


@kernel(callee=True)
def verdict_row(in_class, s, p_t, has_tau, proba_min, lam_mode, unreachable):
    """Return (success, status) of one answer: the one rule of a verdict.

    Success = the model classifies the answer as the target (``in_class``) and the solver's
    status ``s`` is OK, and p_target ``p_t ≥ proba_min`` where τ is asked (``has_tau``). The
    status of an answer that is not a success says why: BELOW_DECISION (τ met below the
    decision threshold), UNREACHABLE (``unreachable``: no free feature moves the logit),
    NOT_TARGET (``lam_mode``: the optimum of problem (2) is in another class) or NUMERIC
    (``proba=`` / ``region=True`` answers the model does not confirm).
    """
    ok = s == _OK
    good = ok and in_class
    if has_tau:
        met = p_t >= proba_min
        if ok and met and not good:
            s = _BELOW_DECISION
        good = good and met
    if unreachable and s == _OK and not good:
        s = _UNREACHABLE
    if s == _OK and not good:
        s = _NOT_TARGET if lam_mode else _NUMERIC
    return good, s


@kernel()
def verdicts(pred, P, tidx, status, proba_min, lam_mode, unreachable):
    """Return (success, status) of N answers by :func:`verdict_row` (``proba_min`` NaN: no τ).

    ``pred``: the class index the model predicts for each answer; ``P`` (N, K): its
    probabilities.
    """
    N = tidx.shape[0]
    success = np.empty(N, dtype=np.bool_)
    st = np.empty(N, dtype=np.int64)
    has_tau = not math.isnan(proba_min)
    for n in range(N):
        t = tidx[n]
        success[n], st[n] = verdict_row(
            pred[n] == t, status[n], P[n, t], has_tau, proba_min, lam_mode, unreachable
        )
    return success, st


@kernel()
def binary_finish(
    Xs, zeta, tidx, status, dist, proba_min, lam_mode, unreachable, scale, cert_mode, g,
    row_norm, abs_b,
):  # fmt: skip
    """Return (P, success, status, certified) of N solver answers of a binary model.

    ``zeta``: the target logits at ``Xs`` (the model predicts ``classes_[1]`` iff its logit is
    > 0); ``status``: the solver's. A solver's success whose row or distance is not finite is a
    numerical failure. Then :func:`verdict_row` (``proba_min`` NaN: no τ asked).
    ``cert_mode`` 1: a success with ``zeta > 4γ scale`` is certified; 2: one with ``zeta``
    above the cheap bound of the need at the row; 0: none (all False).
    """
    N = Xs.shape[0]
    P = np.empty((N, 2))
    success = np.empty(N, dtype=np.bool_)
    st = np.empty(N, dtype=np.int64)
    cert = np.zeros(N, dtype=np.bool_)
    has_tau = not math.isnan(proba_min)
    for n in range(N):
        t = tidx[n]
        z = zeta[n] if t == 1 else -zeta[n]
        P[n, 0], P[n, 1] = sigmoid_pair(z)
        s = status[n]
        if s == _OK:
            finite = math.isfinite(dist[n])
            for j in range(Xs.shape[1]):
                if not math.isfinite(Xs[n, j]):
                    finite = False
                    break
            if not finite:
                s = _NUMERIC
        good, s = verdict_row(
            (1 if z > 0 else 0) == t, s, P[n, t], has_tau, proba_min, lam_mode, unreachable
        )
        success[n] = good
        st[n] = s
        if good and cert_mode == 1:
            cert[n] = zeta[n] > 4.0 * g * scale[n]
        elif good and cert_mode == 2:
            cert[n] = zeta[n] > _bound(Xs[n], g, row_norm, abs_b)
    return P, success, st, cert


@kernel()
def binary_judge(X, wx, c, tidx, proba, only_meets, abs_w, abs_c, g, row_norm, abs_b):
    """Return (z, P, meets, good): the verification's test of N rows on the model's logits.

    ``wx`` (N, 1): the products w·x of the rows as the model computes them (BLAS one row at a
    time), and ``z = wx + c`` their class-1 logits (the bits of
    :meth:`~fastcf._linear.model.BinaryModel.check_logits`); ``P``: their probabilities;
    ``meets``: ``p_target ≥ proba`` (all True for ``proba`` NaN: no τ). ``good``: the target
    logit exceeds the rounding need (the cheap bound decides most rows, the exact need the
    rest, :func:`binary_needs`' formula) and ``meets``. With ``only_meets`` the class is
    tested only where ``meets`` (``good`` False elsewhere, as it would be).
    """
    N = X.shape[0]
    z = np.empty(N)
    P = np.empty((N, 2))
    meets = np.empty(N, dtype=np.bool_)
    good = np.zeros(N, dtype=np.bool_)
    has_tau = not math.isnan(proba)
    for n in range(N):
        t = tidx[n]
        z[n] = wx[n, 0] + c
        P[n, 0], P[n, 1] = sigmoid_pair(z[n])
        meets[n] = P[n, t] >= proba if has_tau else True
        if only_meets and not meets[n]:
            continue
        tm = z[n] if t == 1 else -z[n]
        sure = tm > _bound(X[n], g, row_norm, abs_b)
        if not sure:
            need = _need(X[n], abs_w, abs_c, g)
            sure = math.isfinite(need) and tm > need
        good[n] = sure and meets[n]
    return z, P, meets, good


@kernel()
def softmax_judge(Xs, Z, P, tidx, status, proba, g, row_norm, abs_b):
    """Return (status, certified, n_near) of N softmax answers on the model's own Z and P.

    The rules of :func:`fastcf._linear.softmax.judge` (``proba`` NaN: ``region=True``): a
    converged row (OK) becomes, with τ, PENDING where p_target < τ (``P``: the model's
    probabilities) and BELOW_DECISION where another class wins (``np.argmax``: ties to the
    first class, a NaN first); without τ NUMERIC where another class wins. The others stay
    OK, ``certified`` where the target margin ``z_t − max_{j≠t} z_j`` (NaN where a logit is)
    exceeds the cheap bound of the need; ``n_near``: with τ, how many OK rows the bound does
    not certify (the caller tests those against the exact need). Two arrays and a count: at
    N = 1 each array returned costs a third of a microsecond.
    """
    N, K = Z.shape
    st = np.empty(N, dtype=np.int64)
    cert = np.zeros(N, dtype=np.bool_)
    n_near = 0
    has_tau = not math.isnan(proba)
    for n in range(N):
        t = tidx[n]
        s = status[n]
        ok = s == _OK
        if has_tau and ok and not P[n, t] >= proba:
            s = _PENDING
            ok = False
        if ok:
            best = 0  # np.argmax: the first maximum, or the first NaN
            bv = Z[n, 0]
            if not math.isnan(bv):
                for j in range(1, K):
                    v = Z[n, j]
                    if math.isnan(v):
                        best = j
                        break
                    if v > bv:
                        best = j
                        bv = v
            if best != t:
                s = _BELOW_DECISION if has_tau else _NUMERIC
                ok = False
        st[n] = s
        if ok:
            other = -math.inf  # max over j ≠ t, NaN if any is (np.max)
            for j in range(K):
                if j != t:
                    v = Z[n, j]
                    if math.isnan(v) or math.isnan(other):
                        other = math.nan
                    elif v > other:
                        other = v
            cert[n] = Z[n, t] - other > _bound(Xs[n], g, row_norm, abs_b)
            n_near += has_tau and not cert[n]
    return st, cert, n_near


@kernel()
def softmax_below(Z, X, tidx, log_tau, g, row_norm, abs_b):
    """Return which rows x̄ of ``X`` a softmax model surely gives p_target < τ.

    ``Z``: logits z̃ = A x̄ + b of the rows, in any arithmetic (fastcf's row kernels or BLAS:
    the bound below holds for every order of the sums); the model's own p_target(x̄) (its
    BLAS call, NumPy's softmax) is not computed here. log p̃ = z̃_t − max z̃ −
    log Σ_j exp(z̃_j − max z̃). A row is "surely below" when

        log p̃ + 2 · need_bound(x̄) + 1e-8 (1 + |log p̃|) + 1e-12 K < log τ.

    Why that suffices: each evaluation of a logit z_i (any order of the sum, FMA or not) is
    within γ S_i ≤ γ M of the exact one, M = max_i ‖a_i‖₂ ‖x̄‖₂ + max_i |b_i| (``need_bound``
    is 8γM(1 + 8γ)), so the two evaluations' logits differ by at most 2γM each, and log p_t =
    z_t − LSE(z) (LSE 1-Lipschitz in the max norm) by at most 4γM < need_bound. The rest of
    either evaluation (a subtraction, K exponentials, a sum, a log or a division) errs by a
    few ulps of |z_t − max z| ≤ |log p| and of K, far inside the other two terms. A NaN or an
    infinite bound is never "below": those rows get the model's own test.
    """
    N, K = Z.shape
    below = np.zeros(N, dtype=np.bool_)
    for n in range(N):
        m = -math.inf
        for i in range(K):
            if Z[n, i] > m:
                m = Z[n, i]
        acc = 0.0
        for i in range(K):
            acc += math.exp(Z[n, i] - m)
        lp = Z[n, tidx[n]] - m - math.log(acc)
        slack = 2.0 * _bound(X[n], g, row_norm, abs_b) + 1e-8 * (1.0 + abs(lp)) + 1e-12 * K
        below[n] = lp + slack < log_tau  # False for NaN or inf anywhere
    return below
