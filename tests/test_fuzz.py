"""Fuzzing every public entry point with hypothesis.

Invariants checked on every example:

* the call raises nothing (the inputs are valid; hostile *values* — huge or tiny magnitudes,
  degenerate models — are not errors), and in particular no NumPy warning (pytest turns warnings
  into errors);
* ``status`` is a documented code, ``success`` implies ``status == 0``;
* ``success`` implies a finite ``x`` and ``distance`` and that the model — the explainer's
  ``predict`` and, for scikit-learn models, the scikit-learn model itself — classifies ``x`` as
  the target, and meets ``proba`` when that was asked;
* iteration counts stay within the documented caps (no hang);
* a failed ``region=``/``proba=`` query of a linear model has no witness: no point that answers
  it with room to spare (``reference.linear_witness``: an LP whose point is then checked in
  floating point), within the precision the source's logits allow (``_no_false_failure``).

Profiles: ``ci`` (default, fixed seed, at most 100 examples per test, some tests fewer) and
``long``: ``HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py`` (10 000 per test).
"""

import itertools
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import linear_witness, svm_kernel_ref

from fastcf import (
    LinearExplainer,
    LVQExplainer,
    SVMEnumerator,
    check_gradient,
    counterfactual,
)
from fastcf._status import Status
from fastcf.lvq import GLVQ, GMLVQ, LGMLVQ
from fastcf.results import STATUS_MESSAGES

LONG = settings.default.max_examples >= 10_000


def examples(ci):
    """``ci`` examples in the CI profile, the profile's count (10 000) in the long one.

    ``FASTCF_FUZZ_EXAMPLES=n`` overrides both (for a soak run with a time budget).
    """
    if os.environ.get("FASTCF_FUZZ_EXAMPLES"):
        return int(os.environ["FASTCF_FUZZ_EXAMPLES"])
    return settings.default.max_examples if LONG else ci


@pytest.fixture(autouse=True)
def _pure_python_kernels_errstate():
    """With NUMBA_DISABLE_JIT=1 the kernels run on NumPy scalars, which warn on overflow where
    the compiled kernels (error_model="numpy") give the same inf/NaN silently: silence them
    there. With the JIT (the CI run) every NumPy warning is still an error."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") == "1":
        with np.errstate(all="ignore"):
            yield
    else:
        yield


# ------------------------------------------------------------------------------ strategies
def scaled(shape, max_exp=4, min_exp=-3):
    """Arrays with entries in [-1, 1] times 10**e, e drawn once per array (hostile scales)."""

    @st.composite
    def strategy(draw):
        e = draw(st.integers(min_exp, max_exp))
        base = draw(
            hnp.arrays(
                np.float64,
                shape,
                elements=st.floats(-1, 1, allow_nan=False, allow_subnormal=False),
            )
        )
        return base * 10.0**e

    return strategy()


lams = st.floats(-8, 8).map(lambda e: 10.0**e)
probas = st.floats(1e-6, 1 - 1e-6)


@st.composite
def linear_models(draw, binary):
    D = draw(st.integers(1, 6))
    K = 1 if binary else draw(st.integers(2, 5))
    A = draw(scaled((K, D), max_exp=4))
    kind = draw(st.sampled_from(["plain", "zero-row", "dup-rows", "one-feature"]))
    if kind == "zero-row":
        A[draw(st.integers(0, K - 1))] = 0.0
    elif kind == "dup-rows" and K > 1:
        A[1] = A[0]
    elif kind == "one-feature":
        A[:, 1:] = 0.0
    b = draw(scaled((K,), max_exp=4))
    return LinearExplainer.from_arrays(A, b), D, max(K, 2)


@st.composite
def linear_options(draw, D):
    opts = {}
    mode = draw(st.sampled_from(["lam", "proba", "region"]))
    if mode == "lam":
        opts["lam"] = draw(lams)
    elif mode == "proba":
        opts["proba"] = draw(probas)
    else:
        opts["region"] = True
        opts["margin"] = draw(st.sampled_from([0.0, 1e-6, 1.0]))
    if draw(st.booleans()):
        opts["frozen"] = draw(st.lists(st.integers(0, D - 1), max_size=D, unique=True))
    if draw(st.booleans()):
        opts["weights"] = draw(st.floats(-3, 3).map(lambda e: 10.0**e)) * (
            1.0 + draw(hnp.arrays(np.float64, D, elements=st.floats(0, 10)))
        )
    return opts


def _check(ex, res, targets, proba=None, cap=None, sk_model=None):
    single = np.ndim(res.status) == 0
    X = np.atleast_2d(res.x)
    status = np.atleast_1d(res.status)
    success = np.atleast_1d(res.success)
    dist = np.atleast_1d(res.distance)
    targets = np.atleast_1d(np.asarray(targets, dtype=object))
    assert set(status.tolist()) <= set(STATUS_MESSAGES), status
    # LVQ: the penalty CCP may stop at its round cap (status 1) at a point that the model
    # classifies as the target; that is reported as success with status 1
    ok_codes = (0, 1) if isinstance(ex, LVQExplainer) else (0,)
    assert not (success & ~np.isin(status, ok_codes)).any()
    if cap is not None:
        assert (np.atleast_1d(res.nit) <= cap).all(), res.nit
    ok = np.flatnonzero(success)
    if ok.size == 0:
        return
    assert np.isfinite(X[ok]).all(), (
        X[ok],
        getattr(ex, "coef_", None),
        getattr(ex, "intercept_", None),
        np.asarray(res.x0).tolist(),
    )
    assert np.isfinite(dist[ok]).all()
    pred = ex.predict(X[ok])
    assert (pred == targets[ok % targets.size] if targets.size > 1 else pred == targets[0]).all()
    if sk_model is not None:
        sk_pred = sk_model.predict(X[ok])
        assert (sk_pred == (targets[ok] if targets.size > 1 else targets[0])).all()
    if proba is not None:
        cls = list(ex.classes_)
        t_idx = np.array([cls.index(t) for t in (targets[ok] if targets.size > 1 else targets)])
        # p_target ≥ τ in the documented arithmetic: predict_proba of each row alone. The answer
        # sits at p = τ, where another evaluation (a batch GEMM, scikit-learn's pipeline) can
        # round lower by the rounding of the logits: log p moves by at most
        # 2γ(S_k + max_j S_j), S = |A||x| + |b| (Higham §3.1), ~1e-14 at ordinary magnitudes
        # (the documented tolerance; a pipeline's own scaling adds its rounding: 1e-12 floor)
        t_col = t_idx if t_idx.size > 1 else np.full(ok.size, t_idx[0])
        P = np.vstack([ex.predict_proba(X[i : i + 1]) for i in ok])
        assert (P[np.arange(ok.size), t_col] >= proba).all()
        if hasattr(ex, "coef_"):
            A_, b_ = np.atleast_2d(ex.coef_), np.atleast_1d(ex.intercept_)
            S = np.abs(X[ok]) @ np.abs(A_).T + np.abs(b_)
            u = 2.0**-53 * (A_.shape[1] + 1)
            slack = proba * np.expm1(4 * u / (1 - u) * S.max(axis=1)) + 8e-16
            Pb = ex.predict_proba(X[ok])
            assert (Pb[np.arange(ok.size), t_col] >= proba - slack).all()
            if sk_model is not None:
                Psk = sk_model.predict_proba(X[ok])
                assert (Psk[np.arange(ok.size), t_col] >= proba - np.maximum(slack, 1e-12)).all()
    if single:
        assert isinstance(res.success, bool)


def _no_false_failure(ex, res, X, T, opts):
    """A failed ``region=``/``proba=`` row has no witness: no point that answers the query with
    room to spare (:func:`reference.linear_witness`, an LP whose point is checked in floating
    point). ``lam=`` (not reaching the target is an answer), ``max_changes`` and the documented
    outcome of ``proba=`` whose optimum another class wins (BELOW_DECISION) are not judged.

    Nor are sources whose logits round by more than 1e-7 (ε·(|A||x̄| + |b|), logits beyond
    ~4.5e8): there the K-space forms (z̄ + G y cancels) carry more noise than their tolerances,
    and ``proba=`` / ``lam=`` can fail honestly (iteration limit, numerical failure; see
    docs/reliability.md, known limitations). Nor are models whose free coefficients are all
    below 1e-150 in magnitude (their squares, the metric G, underflow: a known limitation of the
    softmax forms and of boxes), nor witnesses more than 1e30 (relative) from x̄ (the λ-search
    brackets λ over e^±80 and calls what lies beyond a numerical failure). Successes are still
    checked there (``_check``)."""
    if "lam" in opts or "max_changes" in opts:
        return
    form = "region" if opts.get("region") else "proba"
    param = opts.get("margin", 1e-6) if form == "region" else opts["proba"]
    X = np.atleast_2d(X)
    T = np.atleast_1d(T)
    success = np.atleast_1d(res.success)
    status = np.atleast_1d(res.status)
    frozen = None
    if opts.get("frozen"):
        frozen = np.zeros(X.shape[1], dtype=bool)
        frozen[opts["frozen"]] = True
    lo, hi = opts.get("bounds", (None, None))
    cls = list(ex.classes_)
    # p ≥ τ ≥ 1/2 makes the target win (up to a tie at 1/2); below, proba= answers the
    # closest point with p ≥ τ, and one that another class wins or ties is a documented outcome
    wins = form == "region" or param >= 0.5
    documented = [int(Status.BELOW_DECISION)] + ([] if wins else [int(Status.NUMERIC)])
    A_, b_ = np.atleast_2d(ex.coef_), np.atleast_1d(ex.intercept_)
    mags = np.abs(A_ if frozen is None else A_[:, ~frozen])
    if mags.max(initial=0.0) < 1e-150:
        return
    for n in np.flatnonzero(~success & ~np.isin(status, documented)):
        with np.errstate(over="ignore", invalid="ignore"):
            S = np.abs(A_) @ np.abs(X[n]) + np.abs(b_)
        if not np.finfo(float).eps * S.max() <= 1e-7:
            continue
        k = cls.index(T[n % T.size])
        w = linear_witness(
            ex.coef_, ex.intercept_, X[n], k, form, param, frozen=frozen, lo=lo, hi=hi, wins=wins
        )
        if w is not None and np.abs(w - X[n]).max() > 1e30 * max(1.0, np.abs(X[n]).max()):
            continue  # astronomically far: beyond the λ-search's bracket (see the docstring)
        assert w is None, (
            "false failure",
            int(status[n]),
            np.atleast_1d(res.message)[n] if np.ndim(res.message) else res.message,
            ex.coef_.tolist(),
            ex.intercept_.tolist(),
            X[n].tolist(),
            int(T[n % T.size]),
            opts,
            w.tolist(),
        )


# ------------------------------------------------------------------------- LinearExplainer
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
@settings(max_examples=examples(100))
@given(data=st.data())
def test_fuzz_linear_explain(binary, data):
    ex, D, n_cls = data.draw(linear_models(binary))
    N = data.draw(st.integers(1, 4))
    X = data.draw(scaled((N, D), max_exp=12))
    T = data.draw(hnp.arrays(np.int64, N, elements=st.integers(0, n_cls - 1)))
    opts = data.draw(linear_options(D))
    if data.draw(st.booleans()):
        lo = X.min(axis=0) - data.draw(st.sampled_from([0.0, 1.0, np.inf]))
        hi = X.max(axis=0) + data.draw(st.sampled_from([0.0, 1.0, np.inf]))
        opts["bounds"] = (lo, hi)
    if not binary and "bounds" in opts and "region" in opts:
        X, T = X[:1], T[:1]  # one cvxpy QP per row: keep it small
    res = ex.explain(X, T, **opts)
    _check(ex, res, T, proba=opts.get("proba"), cap=None)
    _no_false_failure(ex, res, X, T, opts)
    one = ex.explain(X[0], int(T[0]), **opts)
    _check(ex, one, T[:1], proba=opts.get("proba"))
    _no_false_failure(ex, one, X[:1], T[:1], opts)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
@settings(max_examples=examples(60))
@given(data=st.data())
def test_fuzz_linear_path(binary, data):
    ex, D, n_cls = data.draw(linear_models(binary))
    x = data.draw(scaled((D,), max_exp=12))
    t = data.draw(st.integers(0, n_cls - 1))
    ls = np.sort(data.draw(st.lists(lams, min_size=1, max_size=6)))[::-1]
    opts = {}
    if data.draw(st.booleans()):
        opts["frozen"] = [0]
    if data.draw(st.booleans()):
        opts["bounds"] = (x - 1.0, x + 1.0)
    path = ex.path(x, t, lams=ls.copy(), warm_start=data.draw(st.booleans()), **opts)
    assert path.X.shape == (ls.size, D)
    assert set(path.status.tolist()) <= set(STATUS_MESSAGES)
    # each solve within max_iter (100); on a model with nearly equal rows a λ whose answer is
    # not stationary in input space is solved again, shifted, and its iterations are added
    # (the library's convention, as every re-solve's): two solves at most
    cap = 200 if getattr(ex._model, "close_rows", False) else 100
    assert (path.nit <= cap).all(), path.nit
    ok = np.flatnonzero(path.success)
    assert not (path.success & (path.status != 0)).any()
    if ok.size:
        assert np.isfinite(path.X[ok]).all() and np.isfinite(path.distance[ok]).all()
        assert (ex.predict(path.X[ok]) == t).all()


def _check_few(ex, res, x0, t, opts):
    """The options of a few-changes answer hold: frozen bits, the box, at most m changes."""
    if not res.success:
        return
    x = np.asarray(res.x)
    frozen = opts.get("frozen") or []
    assert np.array_equal(x[frozen], x0[frozen])  # bit for bit
    if "bounds" in opts:
        lo, hi = opts["bounds"]
        assert (x >= lo).all() and (x <= hi).all()
    if "max_changes" in opts:
        assert np.count_nonzero(x != x0) <= opts["max_changes"]


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
@settings(max_examples=examples(60))
@given(data=st.data())
def test_fuzz_linear_few_changes(binary, data):
    """Manhattan, max_changes= and enumerate(): success iff the model agrees; options hold."""
    ex, D, n_cls = data.draw(linear_models(binary))
    x = data.draw(scaled((D,), max_exp=12))
    t = data.draw(st.integers(0, n_cls - 1))
    opts = data.draw(linear_options(D))
    opts["metric"] = data.draw(st.sampled_from(["euclidean", "manhattan"]))
    if data.draw(st.booleans()):
        opts["max_changes"] = data.draw(st.integers(1, D))
    if (binary or opts["metric"] == "manhattan") and data.draw(st.booleans()):
        # (a softmax Euclidean box is a cvxpy program per node: not fuzzed here)
        opts["bounds"] = (x - data.draw(st.sampled_from([0.0, 1.0, np.inf])), x + 1.0)
    res = ex.explain(x, t, **opts)
    _check(ex, res, [t], proba=opts.get("proba"))
    _check_few(ex, res, x, t, opts)
    _no_false_failure(ex, res, x, [t], opts)
    k = data.draw(st.integers(1, 4))
    alts = ex.enumerate(x, t, k=k, **opts)
    assert len(alts) <= k
    sets = []
    for a in alts:
        assert a.success  # enumerate returns counterfactuals only
        _check(ex, a, [t], proba=opts.get("proba"))
        _check_few(ex, a, x, t, opts)
        s = frozenset(np.flatnonzero(np.asarray(a.x) != x).tolist())
        assert not any(prev <= s for prev in sets)  # no answer contains a cheaper one's set
        sets.append(s)
    if "lam" not in opts:  # increasing distance (problem (2): increasing objective, not checked)
        d = [a.distance for a in alts]
        assert all(d[i] <= d[i + 1] * (1 + 1e-9) + 1e-300 for i in range(len(d) - 1))
    if alts and res.success and "max_changes" not in opts:
        assert alts[0].distance == res.distance  # the first answer is explain's


@settings(max_examples=examples(100))
@given(data=st.data())
def test_fuzz_from_arrays_and_fit_mad(data):
    K = data.draw(st.integers(1, 4))
    D = data.draw(st.integers(1, 5))
    A = data.draw(scaled((K, D), max_exp=12, min_exp=-12))
    b = data.draw(scaled((K,), max_exp=12, min_exp=-12))
    ex = LinearExplainer.from_arrays(A, b)
    n = data.draw(st.integers(2, 8))
    Xtr = data.draw(scaled((n, D), max_exp=12))
    if data.draw(st.booleans()):
        Xtr[:] = Xtr[0]  # all rows duplicated: MAD = 0 everywhere
    ex.fit_mad(Xtr)
    assert np.isfinite(ex.mad_).all() and (ex.mad_ > 0).all()
    P = ex.predict_proba(Xtr)
    assert np.isfinite(P).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    res = ex.explain(Xtr[:2], ex.classes_[-1], weights="mad", region=True)
    _check(ex, res, [ex.classes_[-1]])


@settings(max_examples=examples(40))
@given(data=st.data())
def test_fuzz_counterfactual_sklearn(data):
    """success ⇒ the scikit-learn model itself predicts the target (and meets proba)."""
    from sklearn.linear_model import LogisticRegression

    n_cls = data.draw(st.integers(2, 3))
    D = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    Xtr = rng.normal(size=(30, D)) * 10.0 ** data.draw(st.integers(-2, 4))
    y = np.arange(30) % n_cls
    model = LogisticRegression(C=data.draw(st.sampled_from([1e-2, 1.0, 1e4])), max_iter=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning is the model's business
        model.fit(Xtr, y)
    x = Xtr[data.draw(st.integers(0, 29))]
    t = data.draw(st.integers(0, n_cls - 1))
    mode = data.draw(st.sampled_from([{"region": True}, {"proba": 0.75}, {"lam": 1e-3}]))
    res = counterfactual(model, x, t, **mode)
    ex = LinearExplainer(model)
    _check(ex, res, [t], proba=mode.get("proba"), sk_model=model)


# ---------------------------------------------------------------------------- LVQExplainer
@st.composite
def lvq_models(draw, local=False):
    D = draw(st.integers(1, 5))
    n_cls = draw(st.integers(2, 3))
    per = draw(st.integers(1, 2))
    labels = np.repeat(np.arange(n_cls), per)
    # the data's own scale, shared by the prototypes and the queries (the tests multiply their
    # queries by ``ex._fuzz_scale``): scale-dependent tolerances called queries at 10⁵
    # "infeasible" (soak round T)
    scale = 2.0 ** draw(st.integers(-30, 60))
    P = draw(scaled((labels.size, D), max_exp=6)) * scale
    if draw(st.booleans()) and labels.size > 2:
        P[-1] = P[0]  # a duplicated prototype (of another class)
    kind = draw(st.sampled_from(["euclidean", "global"] + (["local"] if local else [])))
    if local:
        kind = "local"
    omega = None
    if kind == "global":
        d = draw(st.integers(1, D))
        omega = draw(scaled((d, D), max_exp=2, min_exp=-2))
        if not np.any(omega):
            omega[0, 0] = 1.0
    elif kind == "local":
        omega = []
        for _ in range(labels.size):
            o = draw(scaled((D, D), max_exp=1, min_exp=-1))
            if not np.any(o):
                o[0, 0] = 1.0
            omega.append(o)
    ex = LVQExplainer.from_arrays(P, labels, omega=omega)
    ex._fuzz_scale = scale
    return ex, D, n_cls


def _lvq_no_false_failure(ex, res, X, T, opts):
    """A failed LVQ row has no witness: no target prototype (in the box, no frozen features)
    that the model puts in the target class with room (every other class's prototypes farther
    by twice the margin and 1e-9 of the distance, in the model's own arithmetic).

    Not judged: ``margin=0`` (a tie is then an answer, and which side of it the model's
    arithmetic puts a point is the tie-break's business: ties of prototypes 1e-164 apart, or
    of a target prototype with a copy in another class, fail numerically; docs/reliability.md,
    known limitations); rows whose squared distances at x̄ round by more than a quarter of that room
    (8 (D + 2) ε max_j d(x̄, p_j)): the nearest point of the cell, seen from x̄, can lie where
    the distances cannot tell the classes apart (a cell 0.5 wide with x̄ at 10⁷ in the other
    coordinates), and the answer is a numerical failure, said so. Nor are witnesses whose room
    is below 1e-280 (a metric Ω of 1e-165: squared distances near the subnormals, and
    Λ = ΩᵀΩ, which the solvers use, underflows; as the linear oracle skips coefficients whose
    squares underflow)."""
    if opts.get("frozen") or opts.get("margin", 1e-6) == 0.0:
        return
    X = np.atleast_2d(X)
    success = np.atleast_1d(res.success)
    status = np.atleast_1d(res.status)
    eps = opts.get("margin", 1e-6)
    lo, hi = opts.get("bounds", (None, None))
    P, cls = ex.prototypes_, ex._geo.cls
    d = ex.distances(P)  # (M, M): row i, the squared distances of p_i to every prototype
    for n in np.flatnonzero(~success):
        t = int(T[n % T.size])
        with np.errstate(over="ignore", invalid="ignore"):
            src = 8 * (X.shape[1] + 2) * np.finfo(float).eps * ex.distances(X[n][None]).max()
        for i in np.flatnonzero(cls == t):
            if lo is not None and not ((P[i] >= lo) & (P[i] <= hi)).all():
                continue
            mine, other = d[i][cls == t].min(), d[i][cls != t].min()
            room = other - mine - 2 * eps
            if room > max(1e-9 * other, 1e-280) and not src > room / 4:
                raise AssertionError(
                    ("false failure", int(status[n]), np.atleast_1d(res.message)[n],
                     P.tolist(), ex.prototype_labels_.tolist(), ex._geo.omegas.tolist(),
                     X[n].tolist(), t, {k: np.asarray(v).tolist() for k, v in opts.items()})
                )  # fmt: skip


@settings(max_examples=examples(100))
@given(data=st.data())
def test_fuzz_lvq_fast(data):
    ex, D, n_cls = data.draw(lvq_models())
    N = data.draw(st.integers(1, 4))
    X = data.draw(scaled((N, D), max_exp=12)) * ex._fuzz_scale
    T = data.draw(hnp.arrays(np.int64, N, elements=st.integers(0, n_cls - 1)))
    opts = {"margin": data.draw(st.sampled_from([0.0, 1e-6, 1e-2]))}
    if data.draw(st.booleans()):
        opts["frozen"] = data.draw(st.lists(st.integers(0, D - 1), max_size=D, unique=True))
    if data.draw(st.booleans()):
        opts["bounds"] = (X.min(axis=0) - 1.0, X.max(axis=0) + 1.0)
    if data.draw(st.booleans()):
        opts["weights"] = 0.5 + data.draw(hnp.arrays(np.float64, D, elements=st.floats(0, 4)))
    res = ex.explain(X, T, **opts)
    cap = 100 * ex.prototypes_.shape[0]  # nit adds the NNLS steps (max_iter=100 each) of the
    _check(ex, res, T, cap=cap)  # target's prototypes
    _lvq_no_false_failure(ex, res, X, T, opts)
    one = ex.explain(X[0], int(T[0]), **opts)
    _check(ex, one, T[:1], cap=cap)
    _lvq_no_false_failure(ex, one, X[:1], T[:1], opts)


@settings(max_examples=examples(8))
@given(data=st.data())
def test_fuzz_lvq_cvxpy(data):
    """Manhattan LP and the localised (penalty CCP) program, through cvxpy: few examples."""
    local = data.draw(st.booleans())
    ex, D, n_cls = data.draw(lvq_models(local=local))
    x = data.draw(scaled((D,), max_exp=4)) * ex._fuzz_scale
    t = data.draw(st.integers(0, n_cls - 1))
    metric = data.draw(st.sampled_from(["euclidean", "manhattan"]))
    res = ex.explain(x, t, metric=metric, max_iter=10 if local else None)
    # nit adds the CCP rounds (max_iter=10 each) of the target's prototypes
    _check(ex, res, [t], cap=None if not local else 10 * ex.prototypes_.shape[0])
    _lvq_no_false_failure(ex, res, x, np.array([t]), {})


# --------------------------------------------------------------------------- LVQ estimators
@settings(max_examples=examples(15))
@given(data=st.data())
def test_fuzz_lvq_estimators(data):
    Model = data.draw(st.sampled_from([GLVQ, GMLVQ, LGMLVQ]))
    D = data.draw(st.integers(1, 4))
    n = data.draw(st.integers(4, 12))
    X = data.draw(scaled((n, D), max_exp=6))
    if data.draw(st.booleans()):
        X[1::2] = X[0::2][: X[1::2].shape[0]]  # duplicated rows
    y = np.arange(n) % data.draw(st.integers(2, 3))
    m = Model(random_state=0, max_iter=30).fit(X, y)
    assert np.isfinite(m.prototypes_).all()
    pred = m.predict(X)
    assert set(pred.tolist()) <= set(m.classes_.tolist())
    ex = LVQExplainer(m)
    np.testing.assert_array_equal(ex.predict(X), pred)


# -------------------------------------------------------------------------- SVM enumeration
@settings(max_examples=examples(30))
@given(data=st.data())
def test_fuzz_svm_enumerate(data):
    n = data.draw(st.integers(2, 8))
    D = data.draw(st.integers(1, 3))
    X = data.draw(scaled((n, D), max_exp=4))
    if data.draw(st.booleans()):
        X[-1] = X[0]  # duplicated row (maybe with the other label)
    y = np.arange(n) % 2
    kernel = data.draw(st.sampled_from(["linear", "rbf", "poly"]))
    C = data.draw(st.floats(-3, 3).map(lambda e: 10.0**e))
    k = data.draw(st.integers(1, 5))
    with np.errstate(over="ignore", under="ignore"):
        # (a variance at the rounding level of X is 0, and gamma 1, as documented: soak of
        # 2026-11-26, six entries 2.83e-145 equal but for their last bits, var ~1e-305)
        tiny = 16 * np.finfo(float).eps * float(np.mean(X * X))
        gamma_overflows = X.var() > tiny and not np.isfinite(1.0 / (D * X.var()))
    if kernel != "linear" and gamma_overflows:
        # gamma="scale" overflows (a variance of ~1e-309): a clear error, not garbage
        with pytest.raises(ValueError, match="gamma='scale'"):
            SVMEnumerator(C=C, kernel=kernel).enumerate(X, y, k=k)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning is documented (status 1)
        it = SVMEnumerator(C=C, kernel=kernel, max_iter=100_000).enumerate(X, y)
        top = list(itertools.islice(it, k))
    assert 1 <= len(top) <= k
    objectives = [m.objective for m in top]
    assert all(np.isfinite(objectives))
    assert all(m.status in (0, 1) for m in top)
    if all(m.status == 0 for m in top):  # a solve at its iteration cap is approximate
        # descending, up to the solver's tolerance and the rounding of f = Σα − ½αᵀQα, which
        # is relative to its terms (≤ Σα + ½(Σα_i √K_ii)²), not to |f| (six equal points of
        # opposite labels, poly kernel: f = 20, terms 1e26)
        sqrt_kd = np.sqrt(np.diag(svm_kernel_ref(X, X, kernel, gamma=it.gamma)))
        terms = [m.alpha.sum() + 0.5 * (m.alpha @ sqrt_kd) ** 2 for m in top]
        tol = [
            1e-9 * (1 + abs(f)) + 8 * n * np.finfo(float).eps * t
            for f, t in zip(objectives, terms, strict=True)
        ]
        for r in range(len(top) - 1):
            assert objectives[r] >= objectives[r + 1] - tol[r] - tol[r + 1]
    supports = [tuple(m.support_.tolist()) for m in top]
    assert len(set(supports)) == len(supports)
    for r, m in enumerate(top, start=1):
        assert m.rank == r
        assert np.isfinite(m.alpha).all() and (m.alpha >= -1e-12).all()
        assert (m.alpha <= C * (1 + 1e-9)).all()
        assert np.isfinite(m.decision_function(X)).all()
        assert set(m.predict(X).tolist()) <= {0, 1}


# --------------------------------------------------------------------------- check_gradient
@settings(max_examples=examples(100))
@given(data=st.data())
def test_fuzz_check_gradient(data):
    D = data.draw(st.integers(1, 5))
    M = data.draw(scaled((D, D), max_exp=3, min_exp=-3))
    H = M @ M.T + np.eye(D)
    x = data.draw(scaled((D,), max_exp=3))

    def f(z):
        return float(0.5 * z @ H @ z + math.fsum(np.sin(z))), H @ z + np.cos(z)

    d = data.draw(scaled((D,), max_exp=0, min_exp=0))
    if not np.any(d):
        d[0] = 1.0
    d /= np.abs(d).max()
    d /= np.linalg.norm(d)

    def wrong(z):  # wrong along d (the Taylor test only sees the direction it probes)
        v, g = f(z)
        return v, g + 0.5 * (1.0 + np.linalg.norm(g)) * d

    assert check_gradient(f, x).passed
    assert check_gradient(f, x, direction=d).passed
    assert not check_gradient(wrong, x, direction=d).passed
