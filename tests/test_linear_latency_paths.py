"""The short path of one common query (``fastcf._linear.fast``).

It checks the arguments by type tests, builds the query that ``make_query`` builds, and answers
it with the long path's own body (``route.answer``): equal by construction.
:func:`test_common_query_is_make_query` checks the construction (the same query, field by
field, over every option the short path takes); the tests after it check the consequence
(the same answers, bit for bit) and the guarantees of that body: the rounding re-solve of
``region=True`` at huge logits, the ulp re-solve loop of ``proba=``, the verification in the
model's own arithmetic. A float64 ``tol`` (``np.float64``, not ``float``) sends a query the long
way, for comparison.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fastcf import LinearExplainer
from fastcf._linear import fast, route

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
    inner = fast.common_query

    def counted(*args):
        out = inner(*args)
        calls["answered" if out is not None else "handed_over"] += 1
        return out

    monkeypatch.setattr("fastcf._linear.paths.common_query", counted)
    return calls


def _same_query(a, b):
    assert a._fields == b._fields
    for name, u, v in zip(a._fields, a, b, strict=True):
        if isinstance(u, np.ndarray) or isinstance(v, np.ndarray):
            assert type(u) is type(v) and u.dtype == v.dtype, name
            assert np.array_equal(u, v), name
        else:
            assert type(u) is type(v) and u == v, name


OPTIONS = [
    {"lam": 0.1},
    {},  # lam=0.01, the default form
    {"lam": 0.1, "weights": "mad"},
    {"lam": 0.1, "metric": "manhattan"},
    {"region": True},
    {"region": True, "margin": 0.0},
    {"region": True, "metric": "manhattan", "weights": "mad"},
    {"proba": 0.7},
    {"proba": 0.2, "weights": "mad", "tol": 1e-8, "max_iter": 7},
    {"proba": 0.9, "metric": "manhattan", "method": "reduced"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_common_query_is_make_query(problem, options):
    """The construction: the short path's query is the long path's, field by field.

    ``common_query``'s rows, targets and :class:`~fastcf._linear.route.Query` against the long
    path's (``_queries`` and ``make_query`` of the same arguments, with its defaults), for every
    option the short path takes; with the same body after it (``route.answer``, spied on
    below), the two paths answer alike by construction.
    """
    ex, X = problem
    ex = ex.fit_mad(X)
    args = {
        "lam": None, "proba": None, "region": False, "margin": 1e-6, "weights": None,
        "metric": "euclidean", "method": "auto", "tol": 1e-10, "max_iter": 100,
    }  # fmt: skip
    args.update(options)
    x = np.ascontiguousarray(X[5])
    for t in ex.classes_:
        short = fast.common_query(ex, x, t, **args)
        assert short is not None
        Xl, _single, names, tl = ex._queries(x, t)
        long = route.make_query(
            ex, Xl, tl, names, args["lam"], args["proba"], args["region"], args["margin"],
            None, args["weights"], None, args["metric"], None, args["method"], args["tol"],
            args["max_iter"],
        )  # fmt: skip
        assert np.array_equal(short[0], Xl) and short[0].dtype == Xl.dtype
        assert np.array_equal(short[1], tl) and short[1].dtype == tl.dtype
        _same_query(short[2], long)


def test_the_short_path_is_the_long_paths_body(problem, monkeypatch):
    """Both paths hand ``route.answer`` the same rows, targets and query, once each."""
    ex, X = problem
    seen = []
    real = route.answer

    def recorded(ex_, X_, tidx, q):
        seen.append((X_.copy(), tidx.copy(), q))
        return real(ex_, X_, tidx, q)

    monkeypatch.setattr("fastcf._linear.paths.answer", recorded)
    monkeypatch.setattr("fastcf.linear.answer", recorded)
    x = np.ascontiguousarray(X[2])
    for form in FORMS:
        seen.clear()
        ex.explain(x, ex.classes_[0], **form)
        ex.explain(x, ex.classes_[0], **form, **LONG)
        assert len(seen) == 2
        (xa, ta, qa), (xb, tb, qb) = seen
        assert np.array_equal(xa, xb) and np.array_equal(ta, tb)
        _same_query(qa, qb)


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_short_path_equals_the_long_path_bit_for_bit(problem, form, spy):
    ex, X = problem
    rows = range(0, len(X), max(1, len(X) // 12))
    for i in rows:
        x = np.ascontiguousarray(X[i])
        for t in ex.classes_:
            _same(ex.explain(x, t, **form), ex.explain(x, t, **form, **LONG))
    n = len(rows) * len(ex.classes_)
    assert spy["answered"] == n  # the short path took every common query
    assert spy["handed_over"] == n  # and handed over every LONG one


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_huge_logits_raise_the_margin_and_still_agree(problem, form, spy):
    ex, X = problem
    x = np.ascontiguousarray(X[3] * 1e9)
    for t in ex.classes_:
        a = ex.explain(x, t, **form)
        _same(a, ex.explain(x, t, **form, **LONG))
        if a.success:  # the class holds in the model's own arithmetic
            assert ex.predict(a.x[None])[0] == t
    assert spy["answered"] == len(ex.classes_)  # (the re-solves run inside the same body)


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
def test_manhattan_short_path_equals_the_long_path_bit_for_bit(problem, form, spy):
    """Manhattan (binary knapsack, softmax LP and λ-search) answers as the long path."""
    ex, X = problem
    ex = ex.fit_mad(X)
    rows = range(0, len(X), max(1, len(X) // 6))
    for i in rows:
        x = np.ascontiguousarray(X[i])
        for t in ex.classes_:
            a = ex.explain(x, t, metric="manhattan", **form)
            _same(a, ex.explain(x, t, metric="manhattan", **form, **LONG))
            if a.success:
                assert ex.predict(a.x[None])[0] == t
    assert spy["answered"] == len(rows) * len(ex.classes_)  # the short path answered each


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
