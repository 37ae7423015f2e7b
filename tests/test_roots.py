"""φ(α, β): relative precision of t and 1 − t against mpmath at 60 digits."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import phi_mp

from fastcf._kernels.roots import phi, phi_batch

TINY = 2.2250738585072014e-308  # below this, doubles are subnormal: no relative precision


def rel_err(value, exact):
    exact = float(exact) if exact >= TINY else None
    if exact is None:  # not representable as a normal double: must be (close to) 0
        return 0.0 if value < 1e-300 else math.inf
    return abs(value - exact) / exact


ALPHAS = np.logspace(-12, 12, 25)
BETAS = np.concatenate([-np.logspace(-4, 4, 17), [0.0], np.logspace(-4, 4, 17)])


@pytest.mark.parametrize("alpha", ALPHAS)
def test_phi_grid_relative_precision(alpha):
    worst = 0.0
    for beta in BETAS:
        t, q, nit, status = phi(alpha, beta, 100)
        assert status == 0
        assert 0.0 <= t <= 1.0 and 0.0 <= q <= 1.0
        t_ex, q_ex = phi_mp(alpha, beta)
        worst = max(worst, rel_err(t, t_ex), rel_err(q, q_ex))
    assert worst <= 1e-14


@given(
    log_alpha=st.floats(-12, 12),
    beta=st.floats(-1e4, 1e4, allow_nan=False),
)
def test_phi_hypothesis(log_alpha, beta):
    alpha = 10.0**log_alpha
    t, q, nit, status = phi(alpha, beta, 100)
    assert status == 0
    assert nit <= 60
    t_ex, q_ex = phi_mp(alpha, beta)
    assert rel_err(t, t_ex) <= 1e-14
    assert rel_err(q, q_ex) <= 1e-14


def test_phi_solves_its_equation_and_symmetry():
    # t = 1/(1 + exp(α t + β)) and 1 − φ(α, β) = φ(α, −α − β)
    for alpha, beta in [(1.0, 0.0), (3.0, -2.0), (0.5, 7.0), (1e3, -400.0)]:
        t, q, _, _ = phi(alpha, beta, 100)
        assert t == pytest.approx(1.0 / (1.0 + math.exp(alpha * t + beta)), rel=1e-15)
        t2, q2, _, _ = phi(alpha, -alpha - beta, 100)
        assert t2 == pytest.approx(q, rel=1e-14) and q2 == pytest.approx(t, rel=1e-14)


def test_phi_alpha_zero_and_bad_input():
    t, q, nit, status = phi(0.0, 1.5, 100)
    assert status == 0 and t == pytest.approx(1 / (1 + math.exp(1.5)), rel=1e-15)
    for bad in [(np.nan, 0.0), (1.0, np.inf), (-1.0, 0.0)]:
        assert phi(bad[0], bad[1], 100)[3] == 4


def test_phi_batch_is_bitwise_the_scalar_kernel(rng):
    alpha = 10.0 ** rng.uniform(-12, 12, 500)
    beta = rng.uniform(-1e4, 1e4, 500) * rng.choice([1e-4, 1e-2, 1.0], 500)
    t, q, nit, status = phi_batch(alpha, beta, 100)
    for i in range(500):
        ts, qs, its, sts = phi(alpha[i], beta[i], 100)
        assert (t[i], q[i], nit[i], status[i]) == (ts, qs, its, sts)
