"""Benchmark rows of the linear family (paper 000): logistic and softmax against their baselines.

The baselines (SciPy's L-BFGS on the D-dimensional energy, the paper's Woodbury Newton, NumPy's two
products with A) are timed in the same process, on the same problem, as fastcf.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from .._linear.reference import softmax_energy
from .common import row as _row
from .common import timeit

__all__ = ["linear_rows"]


def _softmax_model(D, K, seed=0):
    """Return a seeded random softmax model (K, D) and 64 unit-variance inputs."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((K, D)) * (3.0 / np.sqrt(D))
    b = rng.standard_normal(K)
    X = rng.standard_normal((64, D))
    return A, b, X


def _logistic_rows(D, rep):
    from ..linear import LinearExplainer

    rng = np.random.default_rng(D)
    w = rng.standard_normal(D) * (3.0 / np.sqrt(D))
    x = rng.standard_normal(D)
    ex = LinearExplainer.from_arrays(w[None], [0.2])
    target = 1 - int(ex.predict(x)[0])
    f = partial(softmax_energy, np.vstack([np.zeros(D), w]), np.array([0.0, 0.2]), x, target, 0.01)
    cf = ex.explain(x, target, lam=0.01)
    t_cf = timeit(lambda: ex.explain(x, target, lam=0.01), rep * 10, 0.2)
    t_dot = timeit(lambda: w @ x, rep * 10, 0.2)
    rows = [
        _row(
            f"logistic closed form, D={D}: explain vs one w @ x",
            t_cf,
            t_dot,
            "NumPy w @ x",
            f"‖∇E‖={np.linalg.norm(f(cf.x)[1]):.1e}",
        )
    ]
    for method in ("woodbury", "lbfgs"):
        other = ex.explain(x, target, lam=0.01, method=method)
        t_m = timeit(lambda m=method: ex.explain(x, target, lam=0.01, method=m), 3)
        gap = (f(other.x)[0] - f(cf.x)[0]) / abs(f(cf.x)[0])
        rows.append(
            _row(
                f"logistic closed form vs {method}, D={D}",
                t_cf,
                t_m,
                method,
                f"E gap {gap:+.1e}, ‖∇E‖ {method} {np.linalg.norm(f(other.x)[1]):.1e}",
            )
        )
    return rows


def _softmax_rows(D, K, rep, quick):
    from ..linear import LinearExplainer

    A, b, X = _softmax_model(D, K)
    ex = LinearExplainer.from_arrays(A, b)
    x = X[0]
    k = int(np.argmin(A @ x + b))
    f = partial(softmax_energy, A, b, x, k, 0.01)
    cf = ex.explain(x, k, lam=0.01)
    t_red = timeit(lambda: ex.explain(x, k, lam=0.01), rep * 4, 0.2)
    y = np.ones(K)
    t_mv = timeit(lambda: (A @ x, A.T @ y), rep * 4, 0.2)
    rows = [
        _row(
            f"softmax reduced ({D}, {K}): explain vs two products with A",
            t_red,
            t_mv,
            "A @ x and Aᵀ @ y",
            f"nit={cf.nit}, ‖∇E‖={np.linalg.norm(f(cf.x)[1]):.1e}",
        )
    ]
    # λ-path: warm vs cold, and the path against one solve, measured next to each other with
    # the same protocol (before the baselines, whose BLAS threads can keep spinning on the
    # second core after they return: OMP_WAIT_POLICY)
    lams = np.logspace(3, -5, 100)
    t_one = timeit(lambda: ex.explain(x, k, lam=0.01), rep * 4, 0.2)
    t_warm = timeit(lambda: ex.path(x, k, lams), rep * 4, 0.2)
    t_cold = timeit(lambda: ex.path(x, k, lams, warm_start=False), rep, 0.2)
    rows.append(
        _row(
            f"λ-path of 100 values ({D}, {K}): warm vs cold start",
            t_warm,
            t_cold,
            "cold start",
            f"nit warm {int(ex.path(x, k, lams).nit.sum())}",
        )
    )
    rows.append(
        _row(
            f"λ-path of 100 values ({D}, {K}) vs one solve",
            t_one,
            t_warm,
            "one explain",
            "speed-up column = path / one solve (target ≤ 5)",
        )
    )
    methods = ["woodbury", "lbfgs", "cg"] + ([] if D > 8192 or quick else ["gd"])
    for method in methods:
        other = ex.explain(x, k, lam=0.01, method=method, max_iter=1000)
        t_m = timeit(
            lambda m=method: ex.explain(x, k, lam=0.01, method=m, max_iter=1000),
            1 if D > 8192 else 3,
        )
        gap = (f(other.x)[0] - f(cf.x)[0]) / abs(f(cf.x)[0])
        rows.append(
            _row(
                f"softmax reduced vs {method} ({D}, {K})",
                t_red,
                t_m,
                method,
                f"E gap {gap:+.1e}, {method} nit={other.nit}, "
                f"‖∇E‖ {np.linalg.norm(f(other.x)[1]):.1e}",
            )
        )
    return rows


def _digits_rows(rep, N):
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from ..linear import LinearExplainer

    Xd, yd = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(max_iter=300).fit(Xd, yd)
    ex = LinearExplainer(model)
    rng = np.random.default_rng(1)
    idx = rng.integers(0, len(Xd), N)
    Xb = np.ascontiguousarray(Xd[idx])
    tb = (model.predict(Xb) + 1 + rng.integers(0, 9, N)) % 10
    batch = ex.explain(Xb, tb, lam=0.01)
    t_b = timeit(lambda: ex.explain(Xb, tb, lam=0.01), 3)
    rows = [
        _row(
            f"digits batch of {N} queries (64, 10), λ=0.01",
            t_b,
            None,
            "",
            f"{N / t_b[0]:,.0f} queries/s; max ‖∇E‖={batch.grad_norm.max():.1e}; "
            f"success {int(batch.success.sum())}/{N}",
        )
    ]
    f = partial(softmax_energy, ex.coef_, ex.intercept_, Xd[0], 3, 0.01)
    one = ex.explain(Xd[0], 3, lam=0.01)
    t_one = timeit(lambda: ex.explain(Xd[0], 3, lam=0.01), rep * 20, 0.2)
    for method in ("woodbury", "lbfgs", "cg", "gd"):
        other = ex.explain(Xd[0], 3, lam=0.01, method=method, max_iter=5000)
        t_m = timeit(lambda m=method: ex.explain(Xd[0], 3, lam=0.01, method=m, max_iter=5000), 3)
        gap = (f(other.x)[0] - f(one.x)[0]) / abs(f(one.x)[0])
        rows.append(
            _row(
                f"digits one query: reduced vs {method}",
                t_one,
                t_m,
                method,
                f"E gap {gap:+.1e}, {method} nit={other.nit}",
            )
        )
    return rows


def linear_rows(quick=False):
    """Benchmark rows of the logistic and softmax explainers (see the module docstring).

    Parameters
    ----------
    quick : bool, default=False
        Smaller shapes and fewer repeats (under two minutes in all).

    Returns
    -------
    list of dict
    """
    from ..linear import LinearExplainer

    rep = 5 if quick else 15
    rows = []
    for D in [784, 131072] if quick else [784, 47236, 131072]:
        rows += _logistic_rows(D, rep)
    shapes = (
        [(784, 10), (8192, 16)] if quick else [(784, 10), (8192, 16), (47236, 51), (131072, 16)]
    )
    for D, K in shapes:
        rows += _softmax_rows(D, K, rep, quick)
    N = 10_000
    rows += _digits_rows(rep, N)
    # binary batch vs NumPy computing X @ w and writing an (N, D) output
    D = 784
    rng = np.random.default_rng(7)
    w = rng.standard_normal(D) * (3.0 / np.sqrt(D))
    exb = LinearExplainer.from_arrays(w[None], [0.0])
    Xb = rng.standard_normal((N, D))

    def numpy_baseline():
        z = Xb @ w
        out = np.empty_like(Xb)
        np.multiply(Xb, 1.0, out=out)
        return z, out

    t_bb = timeit(lambda: exb.explain(Xb, 1, lam=0.01), rep)
    t_np = timeit(numpy_baseline, rep)
    rows.append(
        _row(
            f"logistic batch of {N} queries, D={D}, vs NumPy X @ w + writing (N, D)",
            t_bb,
            t_np,
            "NumPy",
            f"{N / t_bb[0]:,.0f} queries/s",
        )
    )
    return rows
