"""The short path of one common query (``fastcf._linear.fast``): ``lam=``, ``proba=``, ``region=``.

It answers by the long path's own body (``_stage.answer``) on the query ``route.common_query``
builds: that query must be the one ``make_query`` builds from the same arguments (compared field
by field), and the answers are then the long path's, bit for bit, with its guarantees: the
rounding re-solves of ``region=True`` at huge logits, the ulp re-solve loop of ``proba=``, the
verification in the model's own arithmetic. A float64 ``tol`` (``np.float64``, not ``float``)
sends a query the long way, for comparison.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fastcf import LinearExplainer
from fastcf._linear import fast
from fastcf.results import Counterfactual

FIELDS = ("x", "x0", "proba", "distance", "success", "status", "nit", "lam", "grad_norm")
FORMS = [
    {"region": True},
    {"region": True, "margin": 0.5},
    {"region": True, "margin": 0.0},
    {"proba": 0.7},
    {"proba": 0.999999},
    {"proba": 0.01},
]
LONG = {"tol": np.float64(1e-10)}  # not a float: the long path


def _same(a, b):
    for f in FIELDS:
        u, v = getattr(a, f), getattr(b, f)
        if u is None or v is None:
            assert u is None and v is None, f
        else:
            assert np.array_equal(np.asarray(u), np.asarray(v), equal_nan=True), f
    assert (a.message, a.method, a.target, a.info) == (b.message, b.method, b.target, b.info)


@pytest.fixture(scope="module", params=["breast_cancer", "iris", "wine"])
def problem(request):
    loader = {"breast_cancer": load_breast_cancer, "iris": load_iris, "wine": load_wine}
    X, y = loader[request.param](return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(X, y)
    return LinearExplainer(model), X


@pytest.fixture
def spy(monkeypatch):
    """Count the short path's answers (and its hand-overs to the long path)."""
    calls = {"answered": 0, "handed_over": 0}
    inner = fast.one_query

    def counted(*args):
        out = inner(*args)
        calls["answered" if out is not None else "handed_over"] += 1
        return out

    monkeypatch.setattr("fastcf._linear.paths.one_query", counted)
    return calls


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_short_path_equals_the_long_path_bit_for_bit(problem, form, spy):
    ex, X = problem
    rows = range(0, len(X), max(1, len(X) // 12))
    for i in rows:
        x = np.ascontiguousarray(X[i])
        for t in ex.classes_:
            _same(ex.explain(x, t, **form), ex.explain(x, t, **form, **LONG))
    n = len(rows) * len(ex.classes_)
    assert spy["answered"] == n  # (margin=0 too: verify.region's raises are on this path)
    assert spy["handed_over"] == n  # the LONG calls


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_huge_logits_raise_the_margin_on_both_paths_alike(problem, form, spy, monkeypatch):
    from fastcf._linear import verify

    ex, X = problem
    raises = {"n": 0}
    real = verify.raise_margin

    def counted(*args, **kwargs):
        raises["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(verify, "raise_margin", counted)
    x = np.ascontiguousarray(X[3] * 1e9)
    for t in ex.classes_:
        a = ex.explain(x, t, **form)
        _same(a, ex.explain(x, t, **form, **LONG))
        if a.success:  # the class holds in the model's own arithmetic
            assert ex.predict(a.x[None])[0] == t
    assert spy["answered"] == len(ex.classes_)
    if "region" in form and form.get("margin", 1e-6) < 1e-3:
        assert raises["n"] > 0  # the margin had to be raised above rounding


@pytest.mark.parametrize("shorts", [1, 2])
def test_softmax_proba_that_needs_a_re_solve_still_answers_as_the_long_path(shorts, monkeypatch):
    """An answer short of τ goes on in ``proba_solution``'s re-solve loop.

    The re-solves are rare (the search aims inside τ by more than the formed logits round), so
    they are forced, the same way on both paths: the model's logits of the first ``shorts``
    answers of each query reported with p_target just below τ. The short path's answer is the
    long path's, bit for bit, after the same re-solves, and meets τ.
    """
    from fastcf._linear import softmax

    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(X, y)
    ex = LinearExplainer(model)
    real_rows = softmax.rows_proba
    real_check = ex._model.check_logits
    seen = {"re_solves": 0, "armed": 0}

    def counted_rows(*args, warm=None):
        seen["re_solves"] += warm is not None
        return real_rows(*args, warm=warm)

    def check_short(Xs):
        Z = real_check(Xs)
        if seen["armed"]:  # the target's logit where p_target is just below τ = 0.8
            seen["armed"] -= 1
            others = np.delete(Z[0], t)
            lse = others.max() + np.log(np.exp(others - others.max()).sum())
            tau = 0.8 * (1 - 1e-6)
            Z = Z.copy()
            Z[0, t] = np.log(tau / (1 - tau)) + lse
        return Z

    monkeypatch.setattr(softmax, "rows_proba", counted_rows)
    monkeypatch.setattr(ex._model, "check_logits", check_short)
    for i in (0, 70, 140):
        x = np.ascontiguousarray(X[i])
        for t in ex.classes_:
            answers = []
            for extra in ({}, LONG):
                seen["armed"], before = shorts, seen["re_solves"]
                answers.append(ex.explain(x, t, proba=0.8, **extra))
                assert seen["armed"] == 0  # every short verdict was seen
                assert seen["re_solves"] - before == shorts  # and re-solved
            _same(*answers)
            a = answers[0]
            assert a.success and a.proba[list(ex.classes_).index(t)] >= 0.8


L1_FORMS = [
    {"region": True},
    {"region": True, "margin": 0.5},
    {"region": True, "weights": "mad"},
    {"proba": 0.7},
    {"proba": 0.7, "weights": "mad"},
]


@pytest.mark.parametrize("form", L1_FORMS, ids=str)
def test_manhattan_short_path_equals_the_long_path_bit_for_bit(problem, form, monkeypatch):
    """Manhattan (binary knapsack, softmax LP and λ-search) answers as the long path."""
    ex, X = problem
    ex = ex.fit_mad(X)
    calls = {"answered": 0}
    inner = fast.one_query

    def counted(*args):
        out = inner(*args)
        calls["answered"] += out is not None
        return out

    monkeypatch.setattr("fastcf._linear.paths.one_query", counted)
    rows = range(0, len(X), max(1, len(X) // 6))
    for i in rows:
        x = np.ascontiguousarray(X[i])
        for t in ex.classes_:
            a = ex.explain(x, t, metric="manhattan", **form)
            _same(a, ex.explain(x, t, metric="manhattan", **form, **LONG))
            if a.success:
                assert ex.predict(a.x[None])[0] == t
    assert calls["answered"] == len(rows) * len(ex.classes_)  # the short path answered each


COMMON = [
    {},
    {"lam": 0.5},
    {"lam": 0.05, "metric": "manhattan", "weights": "mad"},
    {"region": True},
    {"region": True, "margin": 0.0},
    {"region": True, "margin": 0.25, "weights": "mad"},
    {"proba": 0.7},
    {"proba": 0.3, "weights": "mad", "method": "reduced"},
    {"region": True, "metric": "manhattan"},
    {"proba": 0.9, "metric": "manhattan", "weights": "mad", "tol": 1e-8, "max_iter": 7},
]


@pytest.mark.parametrize("form", COMMON, ids=str)
def test_the_short_paths_query_is_the_long_paths(problem, form, monkeypatch):
    """The short path answers by ``_stage.answer`` on ``common_query``'s query, the long path by
    the stage (``fastcf._stage.run``) on ``make_query``'s; both solve by ``route.solved`` and
    judge and package by the stage. The queries that reach ``solved`` are recorded and compared
    field by field: equal queries through the same steps are the same answer."""
    from fastcf._linear import route

    ex, X = problem
    ex = ex.fit_mad(X)
    seen = []
    real = route.solved

    def recorded(ex_, X_, tidx, q):
        seen.append((X_, tidx, q))
        return real(ex_, X_, tidx, q)

    monkeypatch.setattr(route, "solved", recorded)  # (each caller's own name of it)
    monkeypatch.setattr("fastcf.linear.solved", recorded)
    args = {"margin": 1e-6, "metric": "euclidean", "method": "auto", "tol": 1e-10, "max_iter": 100}
    args.update(form)
    x = np.ascontiguousarray(X[5])
    t = ex.classes_[-1]
    short = ex.explain(x, t, **args)
    assert len(seen) == 1  # answered by the short path (common_query)
    long = ex.explain(x[None], [t], **args)  # a batch: the long path (make_query)
    assert len(seen) == 2
    (X1, t1, q1), (X2, t2, q2) = seen
    assert np.array_equal(X1, X2) and X1.dtype == X2.dtype and np.array_equal(t1, t2)
    assert t1.dtype == t2.dtype
    for name, a, b in zip(q1._fields, q1, q2, strict=True):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            assert type(a) is type(b) and a.dtype == b.dtype, name
            assert np.array_equal(a, b), name
        else:
            assert type(a) is type(b) and a == b, name
    _same(short, long[0])


@pytest.mark.parallel
def test_the_answers_are_the_batch_answers(problem):
    ex, X = problem
    X6 = np.ascontiguousarray(X[:6])
    for form in FORMS:
        t = ex.classes_[-1]
        batch = ex.explain(X6, t, **form)
        for i in range(6):
            one = ex.explain(X6[i], t, **form)
            assert np.array_equal(one.x, batch.x[i]) and one.status == batch.status[i]
            assert one.success == batch.success[i]


def test_a_packaged_answer_is_the_dataclass_it_claims(problem):
    # results._counterfactual builds the frozen dataclass from its dict: the same object as
    # Counterfactual(**fields), every field set (defaults included), still frozen
    ex, X = problem
    one = ex.explain(np.ascontiguousarray(X[0]), ex.classes_[-1], proba=0.7)
    names = [f.name for f in dataclasses.fields(Counterfactual)]
    assert sorted(vars(one)) == sorted(names)
    again = Counterfactual(**{n: getattr(one, n) for n in names})
    assert vars(again).keys() == vars(one).keys()
    assert all(getattr(again, n) is getattr(one, n) for n in names)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.distance = 0.0
    assert repr(one) == repr(again)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"region": True, "margin": 1},  # an int margin: validated the long way
        {"proba": np.float64(0.7)},
        {"region": True, "frozen": [0]},
        {"proba": 0.7, "method": "reduced"},
    ],
)
def test_unusual_arguments_go_the_long_way(problem, kwargs, spy):
    ex, X = problem
    res = ex.explain(np.ascontiguousarray(X[0]), ex.classes_[0], **kwargs)
    assert res.status >= 0
    expected = 1 if kwargs.get("method") == "reduced" else 0
    assert spy["answered"] == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"region": True, "proba": 0.7},
        {"region": 1, "proba": 0.7},
        {"lam": 0.1, "region": True},
        {"lam": 0.1, "proba": 0.5},
    ],
)
def test_two_problems_at_once_still_raise(problem, kwargs):
    ex, X = problem
    with pytest.raises(ValueError, match="only one of"):
        ex.explain(np.ascontiguousarray(X[0]), ex.classes_[0], **kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"proba": 1.0}, {"proba": 0.0}, {"region": True, "margin": -1.0}]
)
def test_bad_values_raise_as_before(problem, kwargs):
    ex, X = problem
    with pytest.raises(ValueError):
        ex.explain(np.ascontiguousarray(X[0]), ex.classes_[0], **kwargs)


def test_binary_theta_is_cached_and_meets_tau():
    ex = LinearExplainer.from_arrays(np.array([[1.0, -2.0]]), np.array([0.3]))
    model = ex._model
    for tau in (0.5, 0.7, 0.9, 1 - 1e-12, 1e-9):
        theta = model.theta(tau)
        assert model.proba_from_logits(np.array([theta]))[0, 1] >= tau
        assert model.proba_from_logits(np.array([np.nextafter(theta, -np.inf)]))[0, 1] < tau or (
            theta == np.log(tau) - np.log1p(-tau)
        )
        assert model.theta(tau) == theta
