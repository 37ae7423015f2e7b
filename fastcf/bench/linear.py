"""Benchmark rows of the linear family (paper 000): logistic and softmax against their baselines.

The baselines (SciPy's L-BFGS on the D-dimensional energy, the paper's Woodbury Newton, NumPy's two
products with A) are timed in the same process, on the same problems, as fastcf.

Every speed row is a distribution over a set of problems (:func:`problems`: seeded random
sources, targets other than the predicted class, λ drawn from :data:`LAM_GRID`), not one query.
The worst-case rows (:func:`worst_rows`) follow the paper's protocol: 50 problems per shape, each
query (``lam=``, ``region=True``, ``proba=0.9``) timed alternately with its baseline (NumPy's
``A @ x`` and ``Aᵀ @ y``, or ``w @ x`` for a binary model), and report the median, p95 and max of
the per-query ratios; at the small shapes (digits, breast cancer) the ratios region / lam and
proba / lam over the data set's rows.

Examples
--------
>>> import numpy as np
>>> from fastcf.bench.linear import LAM_GRID, problems
>>> A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
>>> X, T, L = problems(A, np.zeros(3), 5, seed=0)
>>> X.shape, len(T), all(lam in LAM_GRID for lam in L)
((5, 3), 5, True)
>>> bool(np.all(np.asarray(T) != np.argmax(X @ A.T, axis=1)))
True
"""

from __future__ import annotations

import time
import warnings
from functools import cache, partial

import numpy as np

from .._linear.reference import softmax_energy
from .common import alternate, one_thread, paired, timeit
from .common import row as _row

__all__ = ["linear_rows", "worst_rows", "small_rows", "problems", "fitted_model", "LAM_GRID"]

#: The λ grid the problems draw from: 10⁻⁴, 10⁻³, …, 10².
LAM_GRID = tuple(float(v) for v in 10.0 ** np.arange(-4, 3))

_MODES = (
    ("lam", None),
    ("region", {"region": True}),
    ("proba", {"proba": 0.9}),
)


@cache
def fitted_model(name):
    """Return (model, X, y) for "digits" (LogisticRegression) or "cancer" (scaled + logistic).

    Fitted once per process, with one BLAS thread: on a loaded machine, OpenBLAS threads waiting
    for each other make a fit of the digits take tens of seconds (setup, not a timing).
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        model = LogisticRegression(max_iter=300)
    else:
        X, y = load_breast_cancer(return_X_y=True)
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return model, X, y


def _softmax_model(D, K, seed=0):
    """Return a seeded random softmax model (K, D): logits of order one on unit-variance inputs."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((K, D)) * (3.0 / np.sqrt(D))
    b = rng.standard_normal(K)
    return A, b


def problems(A, b, n, seed=0, X=None):
    """Draw ``n`` problems (source, target, λ) for the model ``z = A x + b`` with a fixed seed.

    Parameters
    ----------
    A : ndarray of shape (K, D)
        ``K = 1``: a binary model (classes 0 and 1).
    b : ndarray of shape (K,)
    n : int
    seed : int, default=0
    X : ndarray of shape (M, D), optional
        Rows to draw the sources from (a data set); unit-variance Gaussian sources by default.

    Returns
    -------
    X : ndarray of shape (n, D)
        The sources.
    targets : list of int
        A class other than the predicted one, uniformly.
    lams : list of float
        λ drawn uniformly from :data:`LAM_GRID`.
    """
    rng = np.random.default_rng(seed)
    K, D = A.shape
    if X is None:
        Xs = rng.standard_normal((n, D))
    else:
        Xs = np.ascontiguousarray(X[rng.choice(len(X), n, replace=n > len(X))], dtype=np.float64)
    Z = Xs @ A.T + b
    if K == 1:
        targets = 1 - (Z[:, 0] > 0).astype(int)
    else:
        targets = (np.argmax(Z, axis=1) + rng.integers(1, K, n)) % K
    lams = rng.choice(np.array(LAM_GRID), n)
    return Xs, [int(t) for t in targets], [float(v) for v in lams]


def _query(ex, x, t, lam, mode_opts):
    if mode_opts is None:
        return partial(ex.explain, x, t, lam=lam)
    return partial(ex.explain, x, t, **mode_opts)


def _energy(A, b):
    """Return (A, b) of the softmax energy of a model (a binary one as the two-class softmax)."""
    if A.shape[0] == 1:
        return np.vstack([np.zeros(A.shape[1]), A[0]]), np.array([0.0, b[0]])
    return A, b


def _dist_note(values, what):
    v = np.asarray(values)
    if not v.any():
        return ""
    return f"{what} median {np.median(v):.3g}, max {v.max():.3g}"


def _protocol_rows(ex, A, b, n, rep, label, baseline, targets, seed=0, single=False):
    """lam=, region=True and proba=0.9 over ``n`` problems, each alternated with its baseline.

    The baseline is one product ``w @ x`` (binary) or the two products ``A @ x``, ``Aᵀ @ y``
    (softmax). One row per mode with the per-query ratios query / baseline; ``targets`` maps a
    mode to the ratio every query should stay within (counted in the note). ``single``: under
    :func:`~fastcf.bench.common.one_thread`, timed by the calling thread's CPU time.
    """
    X, T, L = problems(A, b, n, seed)
    y = np.ones(A.shape[0])
    if A.shape[0] == 1:
        w = A[0]

        def base(x):
            return w @ x
    else:

        def base(x):
            return A @ x, A.T @ y

    calls = [[_query(ex, X[i], T[i], L[i], opts) for i in range(n)] for _, opts in _MODES]
    fn_lists = [*calls, [partial(base, X[i]) for i in range(n)]]
    if single:
        with one_thread():
            times = alternate(fn_lists, rep, clock=time.thread_time)
        label = f"{label}, 1 thread, CPU time:"
    else:
        # each side in a block per query: Numba's and OpenBLAS's thread pools, alternated call
        # by call, wait for each other's spinning threads (a 1 ms product then takes 30 ms)
        times = alternate(fn_lists, rep, block=True)
    tb = times[-1]
    Ae, be = _energy(A, b)
    rows = []
    for (mode, _), fns, tf in zip(_MODES, calls, times[:-1], strict=True):
        res = [f() for f in fns]
        nit = [r.nit for r in res]
        ok = sum(bool(r.success) for r in res)
        if mode == "lam":
            gn = [
                np.linalg.norm(softmax_energy(Ae, be, X[i], T[i], L[i], res[i].x)[1])
                for i in range(n)
            ]
            acc = f"max ‖∇E‖={max(gn):.1e}; classified as target {ok}/{n}"
        else:
            what = "classified as target" if mode == "region" else "p(target) ≥ 0.9"
            acc = f"{what} {ok}/{n}"
        acc = "; ".join(v for v in (acc, _dist_note(nit, "nit")) if v)
        note = ""
        if mode in targets:
            within = int(np.sum(tf / tb <= targets[mode]))
            note = f"target ≤ {targets[mode]:g}×: {within}/{n} queries within"
        name = {
            "lam": f"{label} lam= (λ ∈ 1e-4…1e2)",
            "region": f"{label} region=True",
            "proba": f"{label} proba=0.9",
        }[mode]
        rows.append(_row(f"{name} vs {baseline}, {n} problems", tf, tb, baseline, acc, note))
    return rows


def worst_rows(quick=False, n=None):
    """Run the worst-case protocol: every query form over many problems per shape; small shapes.

    Per softmax shape of :func:`linear_rows` ((784, 10), (8192, 16), (47 236, 51), (131 072, 16))
    and per binary D (784, 47 236, 131 072): ``n`` problems (50), each query form (``lam=``,
    ``region=True``, ``proba=0.9``) timed alternately with the products with A; the rows give the
    median, p95 and max of the per-query ratios and how many queries meet the issue's target at
    the large shapes (2.5× the two products for D ≥ 47 236; 3× one ``w @ x`` for a λ-query of a
    binary model at D = 131 072). For D ≥ 8192 the
    same again with one thread (BLAS and Numba) timed by CPU time: the ratio without the threads'
    waits of a loaded machine. Then :func:`small_rows`.

    Parameters
    ----------
    quick : bool, default=False
        20 problems at (784, 10), (8192, 16) and D = 784, 10 at (131 072, 16) and D = 131 072,
        the one-thread rows at D = 131 072 only; (47 236, 51) and D = 47 236 left out.
    n : int, optional
        Problems per shape (overrides the defaults).

    Returns
    -------
    list of dict
    """
    from ..linear import LinearExplainer

    rep = 5 if quick else 7

    def count(D):
        if n is not None:
            return n
        return (10 if D > 8192 else 20) if quick else 50

    def single(D):
        return D >= 131072 if quick else D >= 8192

    rows = []
    for D in [784, 131072] if quick else [784, 47236, 131072]:
        rng = np.random.default_rng(D)
        w = rng.standard_normal(D) * (3.0 / np.sqrt(D))
        A, b = w[None], np.array([0.2])
        ex = LinearExplainer.from_arrays(A, b)
        target = {"lam": 3} if D >= 131072 else {}
        for one in (False, True) if single(D) else (False,):
            rows += _protocol_rows(
                ex, A, b, count(D), rep, f"logistic D={D}", "one w @ x", target, D, one
            )
    shapes = (
        [(784, 10), (8192, 16), (131072, 16)]
        if quick
        else [(784, 10), (8192, 16), (47236, 51), (131072, 16)]
    )
    for D, K in shapes:
        targets = dict.fromkeys(("lam", "region", "proba"), 2.5) if D >= 47236 else {}
        A, b = _softmax_model(D, K)
        ex = LinearExplainer.from_arrays(A, b)
        for one in (False, True) if single(D) else (False,):
            rows += _protocol_rows(
                ex,
                A,
                b,
                count(D),
                rep,
                f"softmax ({D}, {K})",
                "A @ x and Aᵀ @ y",
                targets,
                D + K,
                one,
            )
    rows += small_rows(quick)
    return rows


def small_rows(quick=False):
    """Time single queries at small shapes: region / lam and proba / lam over a data set's rows.

    One ``lam=``, ``region=True`` and ``proba=0.9`` query per row; the target is ≤ 2×.

    Digits (64 features, 10 classes, ``LogisticRegression``): rows drawn from the data set, a
    target other than the predicted class, λ from :data:`LAM_GRID`. Breast cancer (30 features,
    binary, ``StandardScaler`` + ``LogisticRegression``): the rows predicted malignant, target
    benign. Each query's three forms are timed alternately.

    Parameters
    ----------
    quick : bool, default=False
        30 queries per data set instead of 200 (digits) and every rejected row (breast cancer).

    Returns
    -------
    list of dict
    """
    from ..linear import LinearExplainer

    rep = 7 if quick else 15
    rows = []
    digits, Xd, _ = fitted_model("digits")
    ex = LinearExplainer(digits)
    n = 30 if quick else 200
    X, T, L = problems(ex.coef_, ex.intercept_, n, seed=3, X=Xd)
    rows += _small(ex, X, T, L, rep, "digits (64, 10)")
    cancer, Xb, _ = fitted_model("cancer")
    ex = LinearExplainer(cancer)
    rejected = np.flatnonzero(cancer.predict(Xb) == 0)
    if quick:
        rejected = rejected[:30]
    n = len(rejected)
    lams = np.random.default_rng(4).choice(np.array(LAM_GRID), n)
    X = np.ascontiguousarray(Xb[rejected])
    rows += _small(ex, X, [1] * n, [float(v) for v in lams], rep, "breast cancer (30, binary)")
    return rows


def _small(ex, X, T, L, rep, label):
    n = len(X)
    calls = [[_query(ex, X[i], T[i], L[i], opts) for i in range(n)] for _, opts in _MODES]
    t_lam, t_region, t_proba = alternate(calls, rep)
    ok = [sum(bool(f().success) for f in fns) for fns in calls]
    rows = [
        _row(
            f"{label}: one lam= query (λ ∈ 1e-4…1e2), {n} rows",
            t_lam,
            note=f"classified as target {ok[0]}/{n}",
        )
    ]
    for name, t, k in (("region=True", t_region, 1), ("proba=0.9", t_proba, 2)):
        within = int(np.sum(t / t_lam <= 2))
        rows.append(
            _row(
                f"{label}: one {name} query vs one lam= query, {n} rows",
                t,
                t_lam,
                "lam= on the same row",
                f"success {ok[k]}/{n}",
                f"fastcf/baseline = {name.split('=')[0]} / lam (target ≤ 2×: {within}/{n} within)",
            )
        )
    return rows


def _method_rows(ex, A, b, X, T, L, label, methods, rep, max_iter, big):
    """Time fastcf's λ-query against the reference methods on the same problems (gap in E)."""
    n = len(X)
    Ae, be = _energy(A, b)
    ours = [partial(ex.explain, X[i], T[i], lam=L[i]) for i in range(n)]
    rows = []
    for method in methods:
        kw = {"method": method} if max_iter is None else {"method": method, "max_iter": max_iter}
        theirs = [partial(ex.explain, X[i], T[i], lam=L[i], **kw) for i in range(n)]
        tf, tb = paired(ours, theirs, rep, 1 if big else 3, warm="first" if big else "each")
        gaps, nits = [], []
        for i in range(n):
            f = partial(softmax_energy, Ae, be, X[i], T[i], L[i])
            e_ours = f(ours[i]().x)[0]
            other = theirs[i]()
            gaps.append((f(other.x)[0] - e_ours) / abs(e_ours))
            nits.append(other.nit)
        gaps = np.asarray(gaps)
        rows.append(
            _row(
                f"{label}: λ-query vs {method}, {n} problems",
                tf,
                tb,
                method,
                f"E gap {gaps[np.argmax(np.abs(gaps))]:+.1e} (largest), "
                f"{_dist_note(nits, method + ' nit')}",
            )
        )
    return rows


def _softmax_rows(D, K, rep, quick):
    from ..linear import LinearExplainer

    A, b = _softmax_model(D, K)
    ex = LinearExplainer.from_arrays(A, b)
    big = D > 8192
    n = 3 if quick or big else 5
    X, T, L = problems(A, b, n, seed=D + K)
    # λ-path: warm vs cold, and the path against one solve, measured next to each other with
    # the same protocol (before the baselines, whose BLAS threads can keep spinning on the
    # second core after they return: OMP_WAIT_POLICY)
    lams = np.logspace(3, -5, 100)
    one = [partial(ex.explain, X[i], T[i], lam=0.01) for i in range(n)]
    warm = [partial(ex.path, X[i], T[i], lams) for i in range(n)]
    cold = [partial(ex.path, X[i], T[i], lams, warm_start=False) for i in range(n)]
    t_warm, t_one = paired(warm, one, rep)
    t_warm2, t_cold = paired(warm, cold, rep, max(rep // 2, 1))
    nit_warm = [int(f().nit.sum()) for f in warm]
    rows = [
        _row(
            f"λ-path of 100 values ({D}, {K}): warm vs cold start, {n} problems",
            t_warm2,
            t_cold,
            "cold start",
            _dist_note(nit_warm, "nit warm"),
        ),
        _row(
            f"λ-path of 100 values ({D}, {K}) vs one solve (λ = 0.01), {n} problems",
            t_warm,
            t_one,
            "one explain",
            note=f"fastcf/baseline = path / one solve (target ≤ 5: "
            f"{int(np.sum(t_warm / t_one <= 5))}/{n} within)",
        ),
    ]
    methods = ["woodbury", "lbfgs", "cg"] + ([] if big or quick else ["gd"])
    rows += _method_rows(ex, A, b, X, T, L, f"softmax ({D}, {K})", methods, rep, 1000, big)
    return rows


def _logistic_rows(D, rep, quick):
    from ..linear import LinearExplainer

    rng = np.random.default_rng(D)
    w = rng.standard_normal(D) * (3.0 / np.sqrt(D))
    A, b = w[None], np.array([0.2])
    ex = LinearExplainer.from_arrays(A, b)
    n = 3 if quick or D > 8192 else 5
    X, T, L = problems(A, b, n, seed=D)
    return _method_rows(
        ex,
        A,
        b,
        X,
        T,
        L,
        f"logistic closed form, D={D}",
        ("woodbury", "lbfgs"),
        rep,
        None,
        D > 8192,
    )


def _digits_rows(rep, N, quick):
    from ..linear import LinearExplainer

    model, Xd, _ = fitted_model("digits")
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
            "one problem (a batch): median over repeated calls",
        )
    ]
    n = 5 if quick else 10
    X, T, L = problems(ex.coef_, ex.intercept_, n, seed=2, X=Xd)
    methods = ("woodbury", "lbfgs", "cg", "gd")
    rows += _method_rows(
        ex, ex.coef_, ex.intercept_, X, T, L, "digits (64, 10)", methods, rep, 5000, False
    )
    return rows


def linear_rows(quick=False):
    """Benchmark rows of the logistic and softmax explainers against the reference methods.

    The λ-queries against Woodbury, L-BFGS, CG, GD and the λ-paths over a few problems per shape,
    the batch throughputs. The query forms against the products with A are in :func:`worst_rows`.

    Parameters
    ----------
    quick : bool, default=False
        Smaller shapes and fewer repeats (under two minutes in all).

    Returns
    -------
    list of dict
    """
    from ..linear import LinearExplainer

    rep = 3 if quick else 7
    rows = []
    for D in [784, 131072] if quick else [784, 47236, 131072]:
        rows += _logistic_rows(D, rep, quick)
    shapes = (
        [(784, 10), (8192, 16)] if quick else [(784, 10), (8192, 16), (47236, 51), (131072, 16)]
    )
    for D, K in shapes:
        rows += _softmax_rows(D, K, rep, quick)
    N = 10_000
    rows += _digits_rows(rep, N, quick)
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

    t_bb, t_np = paired([lambda: exb.explain(Xb, 1, lam=0.01)], [numpy_baseline], rep + 2)
    rows.append(
        _row(
            f"logistic batch of {N} queries, D={D}, vs NumPy X @ w + writing (N, D)",
            t_bb,
            t_np,
            "NumPy",
            f"{N / t_bb[0]:,.0f} queries/s",
            "one problem (a batch): median over repeated calls",
        )
    )
    return rows
