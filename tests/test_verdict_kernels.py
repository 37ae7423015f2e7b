"""The row-verdict kernels (``fastcf._kernels.verdict``) against the rules written with NumPy.

The kernels replaced a score of NumPy calls on whole arrays (issue 31: a single query paid each
of them a microsecond). These tests compare them with those rules (``tests/reference.py``) on
arrays that reach every branch: every status code, NaN and infinite rows, logits, distances and
probabilities, exact ties of the logits, τ equal to a probability, and bounds equal to a margin.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import binary_need_numpy, sigmoid_pair_numpy, verdict_numpy

from fastcf._kernels import logistic as _lk
from fastcf._kernels import verdict as _vk
from fastcf._linear.model import make_model
from fastcf._status import Status

CODES = {s.name: int(s) for s in Status}
STATUSES = [CODES[k] for k in ("OK", "OK", "OK", "NUMERIC", "MAXITER", "INFEASIBLE", "PENDING")]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]


def _values(rng, shape, special=0.2):
    """Random normal values with a share of the special ones (zeros, huge, inf, NaN)."""
    out = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)
    mask = rng.random(shape) < special
    out[mask] = rng.choice(SPECIAL, size=int(mask.sum()))
    return out


def _tau(rng, P, tidx):
    """None, a random τ, or τ equal to one row's p_target (the tie of ``p ≥ τ``)."""
    pick = rng.integers(3)
    if pick == 0:
        return None
    if pick == 1:
        return float(rng.uniform(0.01, 0.99))
    p = P[rng.integers(len(tidx)), :][tidx[0]]
    return float(p) if math.isfinite(p) and 0.0 < p < 1.0 else 0.5


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), k=st.integers(2, 5))
def test_verdicts_equal_the_numpy_rule(seed, n, k):
    rng = np.random.default_rng(seed)
    tidx = rng.integers(k, size=n)
    pred = np.where(rng.random(n) < 0.5, tidx, rng.integers(k, size=n))
    P = rng.dirichlet(np.ones(k), size=n)
    P[rng.random((n, k)) < 0.1] = math.nan
    status = rng.choice(STATUSES, size=n).astype(np.int64)
    tau = _tau(rng, P, tidx)
    lam_mode, unreachable = bool(rng.integers(2)), bool(rng.integers(2))
    got = _vk.verdicts(
        pred, P, tidx, status, math.nan if tau is None else tau, lam_mode, unreachable
    )
    want = verdict_numpy(pred, P, tidx, status, tau, lam_mode, unreachable, CODES)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), d=st.integers(1, 6))
def test_binary_finish_equals_the_numpy_rules(seed, n, d):
    rng = np.random.default_rng(seed)
    model = make_model(_values(rng, (1, d), 0.0), rng.normal(size=1))
    Xs = _values(rng, (n, d), 0.05)
    zeta = _values(rng, n)
    tidx = rng.integers(2, size=n)
    status = rng.choice(STATUSES, size=n).astype(np.int64)
    dist = np.abs(_values(rng, n, 0.1))
    scale = np.abs(_values(rng, n, 0.1))
    bound = model.need_bound(Xs)
    # a few logits equal to the bound or the scaled rounding (the certificates' ties)
    tie = rng.random(n) < 0.2
    half = rng.random(int(tie.sum())) < 0.5
    zeta[tie] = np.where(half, bound[tie], 4.0 * model.gamma * scale[tie])
    z = np.where(tidx == 1, zeta, -zeta)
    P_want = _lk.binary_proba(z)  # the model's probabilities of the logits (as before)
    np.testing.assert_allclose(P_want, sigmoid_pair_numpy(z), rtol=1e-14, atol=0, equal_nan=True)
    tau = _tau(rng, P_want, tidx)
    lam_mode, unreachable = bool(rng.integers(2)), bool(rng.integers(2))
    for mode in (0, 1, 2):
        P, success, st_, cert = _vk.binary_finish(
            Xs, zeta, tidx, status, dist, math.nan if tau is None else tau, lam_mode,
            unreachable, scale, mode, model.gamma, model.max_row_norm, model.max_abs_b,
        )  # fmt: skip
        s0 = status.copy()
        bad = (s0 == CODES["OK"]) & ~(np.isfinite(Xs).all(axis=1) & np.isfinite(dist))
        s0[bad] = CODES["NUMERIC"]
        pred = (z > 0).astype(np.int64)
        ok, st_want = verdict_numpy(pred, P_want, tidx, s0, tau, lam_mode, unreachable, CODES)
        np.testing.assert_array_equal(P, P_want)
        np.testing.assert_array_equal(success, ok)
        np.testing.assert_array_equal(st_, st_want)
        with np.errstate(all="ignore"):
            want_cert = [
                np.zeros(n, bool),
                ok & (zeta > 4.0 * model.gamma * scale),
                ok & (zeta > bound),
            ][mode]
        np.testing.assert_array_equal(cert, want_cert)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), d=st.integers(1, 6))
def test_binary_judge_equals_the_numpy_rules(seed, n, d):
    rng = np.random.default_rng(seed)
    model = make_model(_values(rng, (1, d), 0.0), rng.normal(size=1))
    X = _values(rng, (n, d), 0.05)
    tidx = rng.integers(2, size=n)
    with np.errstate(all="ignore"):
        z = model.check_logits(X)  # the model's own logits (BLAS one row at a time)
        # the model's probabilities of them (fastcf's σ, whose exp is libm's through Numba);
        # NumPy's exp can differ by an ulp (NumPy 1.2x on the lowest-versions stage), and τ
        # drawn equal to a probability then tested a different number
        P = model.proba_from_logits(z)
        np.testing.assert_allclose(P, sigmoid_pair_numpy(z), rtol=1e-14, atol=0, equal_nan=True)
        tm = np.where(tidx == 1, z, -z)
        need = binary_need_numpy(X, model.abs_w, abs(model.c), model.gamma)
        sure = (tm > model.need_bound(X)) | (np.isfinite(need) & (tm > need))
    tau = _tau(rng, P, tidx)
    meets = np.ones(n, bool) if tau is None else P[np.arange(n), tidx] >= tau
    np.testing.assert_array_equal(model.in_target(X, tidx, tau), sure & meets)
    np.testing.assert_array_equal(model.surely_in(X, tidx)[0], sure)
    np.testing.assert_array_equal(model.surely_in(X, tidx)[1], z)
    np.testing.assert_array_equal(model.rounding_need(X, tidx), need)  # the one formula of the need
    if tau is not None:
        P0, hit, good = model.source_tests(X, tidx, tau)
        np.testing.assert_array_equal(hit, meets)
        np.testing.assert_array_equal(good, sure[meets])
        np.testing.assert_array_equal(P0, P)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), k=st.integers(3, 5))
def test_softmax_judge_equals_the_numpy_rules(seed, n, k):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    model = make_model(_values(rng, (k, d), 0.0), rng.normal(size=k))
    Xs = _values(rng, (n, d), 0.05)
    with np.errstate(all="ignore"):
        Z = model.check_logits(Xs)
        # exact ties of the target with another class, and NaN logits
        tidx = rng.integers(k, size=n)
        tie = rng.random(n) < 0.3
        Z[tie, (tidx[tie] + 1) % k] = Z[tie, tidx[tie]]
        Z[rng.random((n, k)) < 0.05] = math.nan
        P = model.proba_from_logits(Z)
    status = rng.choice(STATUSES, size=n).astype(np.int64)
    tau = _tau(rng, P, tidx)
    rows = np.arange(n)
    st_, cert, n_near = _vk.softmax_judge(
        Xs, Z, P, tidx, status, math.nan if tau is None else tau, model.gamma,
        model.max_row_norm, model.max_abs_b,
    )  # fmt: skip
    with np.errstate(all="ignore"):
        Zo = Z.copy()
        Zo[rows, tidx] = -np.inf
        tm_want = Z[rows, tidx] - Zo.max(axis=1)
        ok = status == CODES["OK"]
        s = status.copy()
        if tau is not None:
            short = ok & ~(P[rows, tidx] >= tau)
            s[short] = CODES["PENDING"]
            ok &= ~short
        lost = ok & (np.argmax(Z, axis=1) != tidx)
        s[lost] = CODES["NUMERIC" if tau is None else "BELOW_DECISION"]
        ok &= ~lost
        cert_want = ok & (tm_want > model.need_bound(Xs))
    np.testing.assert_array_equal(st_, s)
    np.testing.assert_array_equal(cert, cert_want)
    assert n_near == np.count_nonzero((tau is not None) & ok & ~cert_want)


@pytest.mark.parametrize("n", [1, 4])
def test_clear_of_need_is_the_margin_above_four_bounds(n):
    rng = np.random.default_rng(n)
    model = make_model(rng.normal(size=(3, 4)), rng.normal(size=3))
    Xs = _values(rng, (n, 4), 0.2)
    bound = model.need_bound(Xs)
    margins = np.where(rng.random(n) < 0.5, 4.0 * bound, np.abs(_values(rng, n, 0.2)))
    clear, count = model.clear_of_need(Xs, margins)
    with np.errstate(all="ignore"):
        want = margins > 4.0 * bound
    np.testing.assert_array_equal(clear, want)
    assert count == int(want.sum())


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), k=st.integers(3, 6))
def test_softmax_source_tests_equal_the_models_own_test(seed, n, k):
    # keep_source's first test (verdict.softmax_below) spares the model's products only on
    # rows whose p_target is below τ beyond rounding: the answer is the model's own test on
    # every row — at τ equal to a row's p_target, and at huge logits where two classes tie
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    A = _values(rng, (k, d), 0.0)
    if rng.random() < 0.4:  # two classes in contention: a row of A nearly another's
        A[1] = A[0] * (1 + rng.normal() * 10.0 ** -rng.integers(8, 16))
    model = make_model(A, rng.normal(size=k))
    X = _values(rng, (n, d), 0.05) * 10.0 ** rng.integers(0, 9)
    tidx = rng.integers(k, size=n)
    with np.errstate(all="ignore"):
        P = model.proba_from_logits(model.check_logits(X))  # the model's own (BLAS, NumPy)
    pick = rng.integers(3)
    p = P[rng.integers(n), :][tidx[0]]
    tau = float(rng.uniform(0.01, 0.99)) if pick == 0 or not 0.0 < p < 1.0 else float(p)
    if pick == 2 and 0.0 < p < 1.0:
        tau = float(np.nextafter(p, 1.0))  # an ulp above: not met
    rows = np.arange(n)
    meets_want = P[rows, tidx] >= tau
    # its logits may come in any arithmetic (the bound holds for every order of the sums):
    # fastcf's row kernels (what source_tests passes), a BLAS GEMM of the batch, exact sums
    Xc = np.ascontiguousarray(X)
    with np.errstate(all="ignore"):
        logits = [model.logits(Xc), Xc @ model.A.T + model.b]
        try:  # the sums correctly rounded (where no partial sum overflows)
            terms = [[np.append(model.A[j] * x, model.b[j]) for j in range(k)] for x in Xc]
            logits.append(np.array([[math.fsum(t) for t in row] for row in terms]))
        except OverflowError:
            pass
    for Z in logits:
        below_z = _vk.softmax_below(
            Z, Xc, tidx, math.log(tau), model.gamma, model.max_row_norm, model.max_abs_b
        )
        assert not (below_z & meets_want).any()  # never "below" where the model meets τ
    below = _vk.softmax_below(
        logits[0], Xc, tidx, math.log(tau), model.gamma, model.max_row_norm, model.max_abs_b
    )
    P0, meets, sure = model.source_tests(X, tidx, tau)
    np.testing.assert_array_equal(meets, meets_want)
    np.testing.assert_array_equal(sure, model.in_target(X[meets_want], tidx[meets_want], tau))
    np.testing.assert_array_equal(P0[~below], P[~below])
    assert np.isnan(P0[below]).all()


def test_softmax_below_decides_ordinary_rows():
    # the first test is not vacuous: rows of ordinary magnitude far from τ are decided by it
    rng = np.random.default_rng(0)
    model = make_model(rng.normal(size=(4, 5)), rng.normal(size=4))
    X = rng.normal(size=(50, 5))
    tidx = rng.integers(4, size=50)
    P = model.proba_from_logits(model.check_logits(X))
    below = _vk.softmax_below(
        model.logits(X), X, tidx, math.log(0.9), model.gamma, model.max_row_norm, model.max_abs_b
    )
    far = P[np.arange(50), tidx] < 0.9 * (1 - 1e-6)
    assert far.sum() > 30
    np.testing.assert_array_equal(below, far)
