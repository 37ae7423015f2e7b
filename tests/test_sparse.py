"""scipy.sparse queries (x of explain, X of fit_mad, model evaluations): made dense, same bits."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from fastcf import LinearExplainer, LVQExplainer
from fastcf._validation import as_queries

SENTENCES = [
    "the cat sat on the mat",
    "the dog chased the cat around the garden",
    "a quick brown fox jumps over the lazy dog",
    "stock markets fell sharply on monday",
    "the central bank raised interest rates again",
    "investors worry about inflation and rates",
    "the team won the final match of the season",
    "a late goal decided the match",
    "the coach praised the players after the game",
    "my cat sleeps all day in the sun",
    "shares of the bank rose after the report",
    "the striker scored twice in the second half",
]
LABELS = ["pets", "pets", "pets", "money", "money", "money"]
LABELS += ["sport", "sport", "sport", "pets", "money", "sport"]

FORMATS = {
    "csr_matrix": sp.csr_matrix,
    "csc_matrix": sp.csc_matrix,
    "coo_matrix": sp.coo_matrix,
    "csr_array": sp.csr_array,
    "csc_array": sp.csc_array,
    "coo_array": sp.coo_array,
    "lil_array": sp.lil_array,
    "dok_matrix": sp.dok_matrix,
}


@pytest.fixture(scope="module")
def tfidf():
    vec = TfidfVectorizer()
    X = vec.fit_transform(SENTENCES)  # CSR, float64
    y = np.array(LABELS)
    model = LogisticRegression(C=10.0, max_iter=5000).fit(X, y)
    return vec, X, y, model


def test_tfidf_model_folded(tfidf):
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    assert ex.n_features_in_ == len(vec.vocabulary_)
    np.testing.assert_allclose(ex.decision_function(X), model.decision_function(X), atol=1e-12)
    np.testing.assert_allclose(ex.predict_proba(X), model.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(ex.predict(X), model.predict(X))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("form", ["lam", "proba", "region"])
def test_explain_sparse_batch_equals_dense_bit_for_bit(tfidf, fmt, form):
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    kwargs = {"lam": {"lam": 0.05}, "proba": {"proba": 0.7}, "region": {"region": True}}[form]
    targets = np.roll(y, 1)
    dense = X.toarray()
    sparse = FORMATS[fmt](X)
    a = ex.explain(sparse, targets, **kwargs)
    b = ex.explain(dense, targets, **kwargs)
    assert type(a.x) is np.ndarray and a.x.flags.c_contiguous and a.x.dtype == np.float64
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.x0, b.x0)
    np.testing.assert_array_equal(a.proba, b.proba)
    np.testing.assert_array_equal(a.distance, b.distance)
    np.testing.assert_array_equal(a.success, b.success)
    assert a.success.all()
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(a.x)), targets)


@pytest.mark.parametrize("form", ["lam", "proba", "region"])
def test_explain_sparse_rows(tfidf, form):
    """One sparse row: a 1-D sparse array is one query; a csr_matrix row (1, D) a batch of one."""
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    kwargs = {"lam": {"lam": 0.05}, "proba": {"proba": 0.7}, "region": {"region": True}}[form]
    dense = X.toarray()
    for i in range(X.shape[0]):
        target = y[(i + 3) % len(y)]
        ref = ex.explain(dense[i], target, **kwargs)  # the dense single query (its short path)
        try:
            row = sp.csr_array(X)[i]  # 1-D coo_array
        except NotImplementedError:  # SciPy < 1.14 has no 1-D sparse arrays
            row = None
        if row is not None:
            assert row.ndim == 1
            one = ex.explain(row, target, **kwargs)
            np.testing.assert_array_equal(one.x, ref.x)
            np.testing.assert_array_equal(one.proba, ref.proba)
            assert one.distance == ref.distance and one.success == ref.success
        batch = ex.explain(X[i], target, **kwargs)  # csr_matrix row: shape (1, D)
        assert batch.x.shape == (1, X.shape[1])
        np.testing.assert_array_equal(batch.x[0], ref.x)


@pytest.mark.parallel  # a softmax Manhattan batch: the parallel Manhattan kernels
@pytest.mark.parametrize("form", [{"proba": 0.7}, {"region": True}])
def test_manhattan_answers_returned_sparse(tfidf, form):
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    targets = np.roll(y, 1)
    res = ex.explain(X, targets, metric="manhattan", **form)
    assert res.success.all()
    d = res.to_sparse()
    assert sp.issparse(d) and d.format == "csr" and d.shape == X.shape
    np.testing.assert_array_equal(d.toarray(), res.x - res.x0)  # every move, exactly
    assert d.nnz == np.count_nonzero(res.x - res.x0)  # no explicit zeros stored
    assert d.nnz <= X.shape[0] * (len(ex.classes_) - 1)  # a vertex: at most K − 1 moves per row
    xs = res.to_sparse("x")
    np.testing.assert_array_equal(xs.toarray(), res.x)
    np.testing.assert_array_equal(model.predict(xs), targets)  # the model reads it as it is
    one = res[2]
    np.testing.assert_array_equal(one.to_sparse().toarray(), d[[2]].toarray())
    with pytest.raises(ValueError, match="what must be"):
        one.to_sparse("dx")


def test_the_new_text_explained(tfidf):
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    x = vec.transform(["the cat chased the dog in the garden"])
    assert model.predict(x)[0] == "pets"
    res = ex.explain(x, "sport", proba=0.6)
    k = list(model.classes_).index("sport")
    assert res.success[0] and model.predict_proba(res.x)[0, k] == pytest.approx(0.6, abs=1e-9)
    words = vec.get_feature_names_out()
    gained = words[np.argsort(res.x[0] - x.toarray()[0])[-3:]]
    assert set(gained) & {"match", "the", "game", "players", "goal", "team", "final", "season"}


def test_model_evaluations_take_sparse(tfidf):
    vec, X, y, model = tfidf
    ex = LinearExplainer(model)
    dense = X.toarray()
    for fmt in FORMATS.values():
        Xs = fmt(X)
        np.testing.assert_array_equal(ex.decision_function(Xs), ex.decision_function(dense))
        np.testing.assert_array_equal(ex.predict_proba(Xs), ex.predict_proba(dense))
        np.testing.assert_array_equal(ex.predict(Xs), ex.predict(dense))


def test_non_probabilistic_model_on_sparse_text(tfidf):
    vec, X, y, _ = tfidf
    svm = LinearSVC().fit(X, y)
    ex = LinearExplainer(svm)
    assert not ex.probabilistic_
    res = ex.explain(X, np.roll(y, 2), region=True)
    assert res.success.all() and res.proba is None
    np.testing.assert_array_equal(svm.predict(res.x), np.roll(y, 2))
    ref = ex.explain(X.toarray(), np.roll(y, 2), region=True)
    np.testing.assert_array_equal(res.x, ref.x)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fit_mad_sparse_equals_dense(tfidf, fmt):
    vec, X, y, model = tfidf
    a = LinearExplainer(model).fit_mad(FORMATS[fmt](X)).mad_
    b = LinearExplainer(model).fit_mad(X.toarray()).mad_
    np.testing.assert_array_equal(a, b)
    # wider data: many rows, a mix of columns whose MAD is zero and not
    rng = np.random.default_rng(0)
    D = rng.standard_normal((501, 7)) * np.array([1e-3, 1, 10, 1e5, 1, 1, 3])
    D[rng.random(D.shape) < np.array([0.2, 0.4, 0.6, 0.8, 0.95, 1.0, 0.5])] = 0.0
    ex = LinearExplainer.from_arrays(np.ones((1, 7)), [0.0])
    np.testing.assert_array_equal(ex.fit_mad(FORMATS[fmt](D)).mad_, ex.fit_mad(D).mad_)
    # and it is then used by weights="mad" exactly as the dense MAD
    ex_s = LinearExplainer(model).fit_mad(FORMATS[fmt](X))
    ex_d = LinearExplainer(model).fit_mad(X.toarray())
    r_s = ex_s.explain(X, np.roll(y, 1), proba=0.7, weights="mad")
    r_d = ex_d.explain(X.toarray(), np.roll(y, 1), proba=0.7, weights="mad")
    np.testing.assert_array_equal(r_s.x, r_d.x)


def test_sparse_errors_name_the_argument():
    ex = LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3))
    with pytest.raises(ValueError, match=r"x has 3 features but the model expects 4 \(a scipy"):
        ex.explain(sp.csr_array(np.ones((2, 3))), 1, region=True)
    with pytest.raises(ValueError, match=r"X has 5 features but the model expects 4"):
        ex.fit_mad(sp.csr_matrix(np.ones((3, 5))))
    with pytest.raises(TypeError, match=r"x must be a real numeric array.*complex"):
        ex.explain(sp.csr_array(np.ones((2, 4), dtype=complex)), 1, region=True)
    bad = sp.csr_array(np.array([[np.nan, 0, 0, 1.0]]))
    with pytest.raises(ValueError, match="x contains 1 NaN"):
        ex.explain(bad, 1, region=True)
    with pytest.raises(ValueError, match="at least 2 rows"):
        ex.fit_mad(sp.csr_array(np.ones((1, 4))))
    with pytest.raises(ValueError, match="empty"):
        ex.explain(sp.csr_array((0, 4)), 1, region=True)


def test_integer_and_bool_sparse_are_read_as_float():
    X, single, names = as_queries(sp.csr_array(np.array([[0, 3, 0]], dtype=np.int32)), 3)
    assert X.dtype == np.float64 and X.tolist() == [[0.0, 3.0, 0.0]] and not single
    v = sp.coo_array(np.array([True, False, True]))  # 1-D from SciPy 1.13; (1, 3) before
    X, single, _ = as_queries(v, 3)
    assert single == (v.ndim == 1) and X.tolist() == [[1.0, 0.0, 1.0]]
    X, _, names = as_queries(sp.csr_matrix(np.ones((2, 2))), 2, feature_names=["a", "b"])
    assert names.tolist() == ["a", "b"]


def test_lvq_explainer_takes_sparse():
    ex = LVQExplainer.from_arrays([[0.0, 0.0, 0.0], [2.0, 0.0, 1.0]], [0, 1])
    Xd = np.array([[0.1, 0.0, 0.0], [0.0, 0.0, 0.2]])
    Xs = sp.csr_matrix(Xd)
    np.testing.assert_array_equal(ex.predict(Xs), ex.predict(Xd))
    np.testing.assert_array_equal(ex.distances(Xs), ex.distances(Xd))
    with warnings.catch_warnings():
        a = ex.explain(Xs, 1)
        b = ex.explain(Xd, 1)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.success.all()
