"""LVQ counterfactuals (paper 001): programs vs an independent cvxpy reference, KKT of the fast
path, the penalty CCP for LGMLVQ, adapters, bad input, pickling."""

import pickle
import warnings
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
from reference import lvq_counterfactual_reference, lvq_kkt_residual
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fastcf._lvq.certify import margin_scale_message
from fastcf._status import BOUNDARY_MESSAGE
from fastcf.lvq import GLVQ, GMLVQ, LGMLVQ, LVQExplainer


def _data(name):
    if name == "bc":
        X, y = load_breast_cancer(return_X_y=True)
        nc = 5
    else:
        X, y = load_digits(return_X_y=True)
        nc = 10
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    pre = make_pipeline(StandardScaler(), PCA(nc, random_state=0)).fit(Xtr)
    return pre.transform(Xtr), pre.transform(Xte), ytr, yte


@pytest.fixture(scope="module")
def bc():
    return _data("bc")


@pytest.fixture(scope="module")
def digits():
    return _data("digits")


_MODELS = {}


def _model(cls, name, data):
    key = (cls.__name__, name)
    if key not in _MODELS:
        Xtr, _, ytr, _ = data
        _MODELS[key] = cls(prototypes_per_class=3, random_state=0, max_iter=300).fit(Xtr, ytr)
    return _MODELS[key]


def _other_targets(model, X, seed=0):
    """A target label different from the prediction for every row."""
    rng = np.random.default_rng(seed)
    pred = model.predict(X)
    out = []
    for p in pred:
        choices = [c for c in model.classes_ if c != p]
        out.append(choices[rng.integers(len(choices))])
    return np.array(out)


def _assert_valid(ex, res):
    """Every success=True counterfactual is predicted as the target by the model itself."""
    ok = np.atleast_1d(res.success)
    X = np.atleast_2d(res.x)
    tg = np.atleast_1d(res.target)
    if ok.any():
        assert np.all(ex.predict(X[ok]) == tg[ok])


# ------------------------------------------------------------------------------ models
@pytest.mark.needs_jit
def test_model_accuracy_breast_cancer(bc):
    _, Xte, _, yte = bc
    # published GLVQ/GMLVQ results on WDBC are about 0.93-0.97
    for cls in (GLVQ, GMLVQ, LGMLVQ):
        acc = _model(cls, "bc", bc).score(Xte, yte)
        assert acc >= 0.90, (cls.__name__, acc)


@pytest.mark.needs_jit
def test_model_accuracy_digits(digits):
    _, Xte, _, yte = digits
    # 10 PCA components keep roughly 3/4 of the variance; LVQ reaches about 0.85-0.93
    for cls in (GLVQ, GMLVQ, LGMLVQ):
        acc = _model(cls, "digits", digits).score(Xte, yte)
        assert acc >= 0.84, (cls.__name__, acc)


@pytest.mark.needs_jit
def test_fitted_attributes(bc):
    m = _model(GMLVQ, "bc", bc)
    assert m.prototypes_.shape == (6, 5)
    assert set(m.prototype_labels_) == {0, 1}
    assert np.isclose(np.trace(m.omega_.T @ m.omega_), 1.0)
    lm = _model(LGMLVQ, "bc", bc)
    assert lm.omegas_.shape == (6, 5, 5)
    assert np.allclose(np.einsum("kij,kij->k", lm.omegas_, lm.omegas_), 1.0)


def test_string_labels_and_decision_function():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (30, 2)), rng.normal(4, 1, (30, 2))])
    y = np.array(["neg"] * 30 + ["pos"] * 30)
    m = GLVQ(random_state=0).fit(X, y)
    df = m.decision_function(X)
    assert df.shape == (60,)
    assert np.all((df > 0) == (m.predict(X) == "pos"))


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("act", [0, 1])
def test_cost_gradient_taylor(mode, act):
    from fastcf import check_gradient
    from fastcf._kernels.lvq_cost import glvq_cost_grad

    rng = np.random.default_rng(mode * 2 + act)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 2, 40).astype(np.int64)
    wlab = np.array([0, 1, 0, 1], dtype=np.int64)
    W0 = rng.normal(size=(4, 3))
    M = 1 if mode < 2 else 4
    O0 = rng.normal(size=(M, 2, 3))
    nW = W0.size

    def f(theta):
        W = theta[:nW].reshape(W0.shape)
        om = theta[nW:].reshape(O0.shape) if mode else O0
        c, gW, gO = glvq_cost_grad(X, y, W, wlab, om, mode, act, 2.0)
        return c, (np.concatenate([gW.ravel(), gO.ravel()]) if mode else gW.ravel())

    theta = np.concatenate([W0.ravel(), O0.ravel()]) if mode else W0.ravel()
    chk = check_gradient(f, theta, h0=1e-2)
    assert chk.passed, chk.table()


# ------------------------------------------------------------------------ explainer vs reference
def _options(kind, X, D):
    lo = np.minimum(X.min(axis=0), -1.0) - 0.2
    hi = np.maximum(X.max(axis=0), 1.0) * 0.6 + 0.2
    lo = np.minimum(lo, X.min(axis=0))
    hi = np.maximum(hi, X.max(axis=0))
    # tighter on two features so that the box binds
    hi[1] = X[:, 1].max() + 0.05
    lo[2] = X[:, 2].min() - 0.05
    a = np.zeros(D)
    a[0], a[3] = 1.0, -1.0  # x0 − x3 ≤ max over the queries (a "1stFlr ≥ 2ndFlr"-type rule)
    cmax = float(np.median(X @ a)) - 0.5  # binds for several queries
    opts = {
        "none": {},
        "frozen": {"frozen": [1, 4]},
        "bounds": {"bounds": (lo, hi)},
        "constraints": {"constraints": [(a, cmax)]},
        "all": {"frozen": [4], "bounds": (lo, hi), "constraints": [(a, cmax)]},
    }[kind]
    ref = {
        "frozen": None if "frozen" not in opts else np.isin(np.arange(D), opts["frozen"]),
        "lo": opts.get("bounds", (None, None))[0],
        "hi": opts.get("bounds", (None, None))[1],
        "constraints": opts.get("constraints", ()),
    }
    return opts, ref


@pytest.mark.needs_jit
@pytest.mark.parametrize("model_cls", [GLVQ, GMLVQ])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("kind", ["none", "frozen", "bounds", "constraints", "all"])
def test_matches_reference(bc, model_cls, metric, kind):
    _, Xte, _, _ = bc
    m = _model(model_cls, "bc", bc)
    ex = LVQExplainer(m)
    X = Xte[:6]
    tg = _other_targets(m, X)
    opts, ref = _options(kind, X, X.shape[1])
    omega = getattr(m, "omega_", None)
    runs = [{}, {"method": "cvxpy"}] if metric == "euclidean" else [{}, {"solver": "HIGHS"}]
    for run in runs:
        res = ex.explain(X, tg, metric=metric, **run, **opts)
        _assert_valid(ex, res)
        for k in range(len(X)):
            d_ref, _ = lvq_counterfactual_reference(
                m.prototypes_,
                m.prototype_labels_,
                X[k],
                tg[k],
                omega=omega,
                metric=metric,
                **ref,
            )
            if np.isfinite(d_ref):
                assert res.success[k], (k, res.message[k])
                assert res.distance[k] == pytest.approx(d_ref, rel=1e-6, abs=1e-9)
            else:
                assert not res.success[k]
                assert res.status[k] == 3


@pytest.mark.needs_jit
def test_matches_reference_multiclass_digits(digits):
    _, Xte, _, _ = digits
    m = _model(GMLVQ, "digits", digits)
    ex = LVQExplainer(m)
    X = Xte[:5]
    tg = _other_targets(m, X, seed=3)
    for metric in ("euclidean", "manhattan"):
        res = ex.explain(X, tg, metric=metric, frozen=[0])
        _assert_valid(ex, res)
        for k in range(len(X)):
            d_ref, _ = lvq_counterfactual_reference(
                m.prototypes_,
                m.prototype_labels_,
                X[k],
                tg[k],
                omega=m.omega_,
                metric=metric,
                frozen=np.arange(10) == 0,
            )
            assert res.success[k]
            assert res.distance[k] == pytest.approx(d_ref, rel=1e-6)


@pytest.mark.needs_jit
def test_mad_weights_match_reference(bc):
    Xtr, Xte, _, _ = bc
    m = _model(GLVQ, "bc", bc)
    Xm = Xtr.copy()
    Xm[: len(Xm) // 2 + 5, 2] = 0.0  # MAD of feature 2 is 0: the guard must keep it finite
    ex = LVQExplainer(m).fit_mad(Xm)
    assert np.all(np.isfinite(ex.mad_)) and np.all(ex.mad_ > 0)
    X = Xte[:4]
    tg = _other_targets(m, X)
    for metric in ("euclidean", "manhattan"):
        res = ex.explain(X, tg, metric=metric, weights="mad")
        _assert_valid(ex, res)
        for k in range(len(X)):
            d_ref, _ = lvq_counterfactual_reference(
                m.prototypes_,
                m.prototype_labels_,
                X[k],
                tg[k],
                metric=metric,
                weights=1.0 / ex.mad_,
            )
            assert res.distance[k] == pytest.approx(d_ref, rel=1e-6)


@pytest.mark.needs_jit
@pytest.mark.parametrize("model_cls", [GLVQ, GMLVQ])
def test_fast_path_kkt(bc, model_cls):
    _, Xte, _, _ = bc
    m = _model(model_cls, "bc", bc)
    ex = LVQExplainer(m)
    X = Xte[:10]
    tg = _other_targets(m, X)
    opts, _ = _options("all", X, X.shape[1])
    w = np.linspace(0.5, 2.0, X.shape[1])
    res = ex.explain(X, tg, weights=w, **opts)
    assert res.method == "ldp (dual active set)"
    lo, hi = opts["bounds"]
    D = X.shape[1]
    free = ~np.isin(np.arange(D), opts["frozen"])
    Lam = np.eye(D) if model_cls is GLVQ else m.omega_.T @ m.omega_
    P, lab = m.prototypes_, m.prototype_labels_
    for k in np.flatnonzero(res.success):
        i = res.info["prototype"][k]
        rows, rhs = [], []
        for j in np.flatnonzero(lab != lab[i]):
            rows.append(2 * Lam @ (P[j] - P[i]))
            rhs.append(P[j] @ Lam @ P[j] - P[i] @ Lam @ P[i] - 1e-6)
        for a, c in opts["constraints"]:
            rows.append(a)
            rhs.append(c)
        for q in range(D):
            e = np.eye(D)[q]
            rows += [e, -e]
            rhs += [hi[q], -lo[q]]
        viol, stat, comp = lvq_kkt_residual(
            res.x[k], X[k], np.array(rows), np.array(rhs), weights=w * w, free=free
        )
        assert viol <= 1e-9
        assert stat <= 1e-8 * max(1.0, np.linalg.norm(res.x[k] - X[k]))
        assert comp <= 1e-8
        assert np.all(res.x[k][~free] == X[k][~free])


def test_infeasible_returns_reason():
    ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1])
    res = ex.explain([0.0, 0.0], 1, frozen=[0])
    assert not res.success and res.status == 3 and "infeasible" in res.message
    res = ex.explain([0.0, 0.0], 1, constraints=[([1.0, 0.0], 0.5)], metric="manhattan")
    assert not res.success and res.status == 3
    res = ex.explain([0.0, 0.0], 1, bounds=(-1.0, 0.9))
    assert not res.success and res.status == 3


def test_single_query_and_target_already_reached():
    ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1])
    res = ex.explain(np.array([0.2, 0.3]), 0)
    assert res.success and res.distance == 0.0
    np.testing.assert_array_equal(res.x, [0.2, 0.3])
    res = ex.explain(np.array([0.2, 0.3]), 1)
    np.testing.assert_allclose(res.x, [1.0, 0.3], atol=1e-6)
    # scalar and None bounds are broadcast; a box that cuts the target region off is infeasible
    res = ex.explain(np.array([0.2, 0.3]), 1, bounds=(None, 3.0), metric="manhattan")
    assert res.success and res.distance == pytest.approx(0.8, abs=1e-6)
    res = ex.explain(np.array([0.2, 0.3]), 1, bounds=(-1.0, None))
    assert res.success


def test_pandas_feature_names():
    pd = pytest.importorskip("pandas")
    ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1], feature_names=["a", "b"])
    res = ex.explain(pd.Series([0.0, 0.0], index=["a", "b"]), 1, frozen=["b"])
    assert res.success
    assert list(res.to_frame()["feature"]) == ["a", "b"]


# ------------------------------------------------------------------------------ LGMLVQ
@pytest.mark.needs_jit
@pytest.mark.parametrize("name", ["bc", "digits"])
def test_lgmlvq_ccp_converges(name, bc, digits):
    data = bc if name == "bc" else digits
    _, Xte, _, _ = data
    m = _model(LGMLVQ, name, data)
    ex = LVQExplainer(m)
    assert ex.kind == "local"
    X = Xte[:4]
    tg = _other_targets(m, X)
    for metric in ("euclidean", "manhattan"):
        res = ex.explain(X, tg, metric=metric)
        assert res.method == "penalty CCP"
        assert np.all(res.success), res.message
        assert np.all(res.status == 0), res.message
        _assert_valid(ex, res)
        assert np.all(res.distance <= res.info["fallback_distance"] * (1 + 1e-9))
        # the margin of eq. 9b holds for the winning prototype
        dist = ex.distances(res.x)
        for k in range(len(X)):
            i = res.info["prototype"][k]
            other = m.prototype_labels_ != tg[k]
            assert dist[k, i] + 1e-6 * (1 - 1e-3) <= dist[k, other].min()


@pytest.mark.needs_jit
def test_lgmlvq_with_constraints(bc):
    _, Xte, _, _ = bc
    m = _model(LGMLVQ, "bc", bc)
    ex = LVQExplainer(m)
    X = Xte[:3]
    tg = _other_targets(m, X)
    opts, _ = _options("all", X, X.shape[1])
    res = ex.explain(X, tg, metric="manhattan", **opts)
    _assert_valid(ex, res)
    for k in np.flatnonzero(res.success):
        lo, hi = opts["bounds"]
        assert np.all(res.x[k] >= lo - 1e-7) and np.all(res.x[k] <= hi + 1e-7)
        assert res.x[k][4] == X[k][4]
        a, c = opts["constraints"][0]
        assert a @ res.x[k] <= c + 1e-7


def test_lgmlvq_explain_does_not_depend_on_earlier_calls_regression():
    # soak_stage.py --only lvq --n 10000 --seed 541, case i=380: the first explain failed
    # (round 1 of the CCP: Clarabel failed), a second explain of the same query, and
    # enumerate's first node, succeeded (607.62). cvxpy's Problem.solve warm-starts by default:
    # each CCP round reused the Clarabel solver of the cached program's last round (its data
    # updated in place), so an answer depended on the queries asked before it.
    P = np.array(
        [
            [123.64541860698746, -225.21197010854033, -29.29189385584013],
            [294.09937028565787, 425.61399687857386, 212.36925426917568],
            [244.14878393088946, -83.69969992829132, 677.474110931102],
        ]
    )
    omega = [
        np.array(
            [
                [0.46054547995407435, -0.37766039253935363, 0.8219289340731524],
                [-1.1271773331239925, 1.4607499352233513, 0.8761436903637799],
                [-0.006269112768471986, -0.5955115693551138, 0.537918560800013],
            ]
        ),
        np.array(
            [
                [0.7098474057930444, 0.424011708008897, -0.3080613913212116],
                [-0.12683032843570868, 1.3099973735451202, -0.009608654881749473],
                [-0.8845785338713125, 1.2014781642439658, 0.5948937645519754],
            ]
        ),
        np.array(
            [
                [1.6063328385561229, -0.5326608436208454, -0.3606319752476659],
                [0.07949734852521498, 0.37154645001016007, -0.6699819409218377],
                [0.05041392525229585, 0.6382809097907307, -0.03771709640023402],
            ]
        ),
    ]
    x = np.array([584.0962430893914, 483.8156793843557, 321.75155327194653])
    lo = np.array([-129.7929200952616, 355.0468932893683, -7.160024782027293])
    hi = np.array([np.inf, 548.0802641614272, 728.3636079407412])
    opts = dict(metric="manhattan", bounds=(lo, hi), frozen=[1])
    ex = LVQExplainer.from_arrays(P, [0, 1, 1], omega=omega)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = ex.explain(x, 0, **opts)
        again = ex.explain(x, 0, **opts)
        alts = ex.enumerate(x, 0, k=1, **opts)
    assert again.success == first.success and again.status == first.status
    assert again.distance == first.distance or not first.success
    if first.success:
        assert len(alts) == 1 and alts[0].distance == first.distance
    else:
        assert alts == []


# ------------------------------------------------------------------------------ adapters
def _nearest(P, labels, oms, X):
    d = np.array([[(x - p) @ (o.T @ o) @ (x - p) for p, o in zip(P, oms, strict=True)] for x in X])
    return labels[np.argmin(d, axis=1)]


def test_adapters_sklearn_lvq_and_sklvq():
    rng = np.random.default_rng(1)
    P = rng.normal(size=(4, 3))
    lab = np.array([0, 1, 0, 1])
    oms = [rng.normal(size=(3, 3)) for _ in range(4)]
    ocls = [rng.normal(size=(2, 3)) for _ in range(2)]
    X = rng.normal(size=(50, 3))
    eye = [np.eye(3)] * 4
    cases = [
        (SimpleNamespace(w_=P, c_w_=lab, classes_=np.array([0, 1])), "euclidean", eye),
        (
            SimpleNamespace(w_=P, c_w_=lab, classes_=np.array([0, 1]), omega_=oms[0]),
            "global",
            [oms[0]] * 4,
        ),
        (
            SimpleNamespace(
                w_=P, c_w_=lab, classes_=np.array([0, 1]), omegas_=oms, classwise=False
            ),
            "local",
            oms,
        ),
        (
            SimpleNamespace(
                w_=P, c_w_=lab, classes_=np.array([0, 1]), omegas_=ocls, classwise=True
            ),
            "local",
            [ocls[c] for c in lab],
        ),
        (
            SimpleNamespace(prototypes_=P, prototypes_labels_=lab, classes_=np.array(["a", "b"])),
            "euclidean",
            eye,
        ),
        (
            SimpleNamespace(
                prototypes_=P, prototypes_labels_=lab, classes_=np.array(["a", "b"]), omega_=oms[1]
            ),
            "global",
            [oms[1]] * 4,
        ),
        (
            SimpleNamespace(
                prototypes_=P,
                prototypes_labels_=lab,
                classes_=np.array(["a", "b"]),
                omega_=np.array(oms),
            ),
            "local",
            oms,
        ),
        (
            SimpleNamespace(
                prototypes_=P,
                prototypes_labels_=lab,
                classes_=np.array(["a", "b"]),
                omega_=np.array(ocls),
                localization="class",
            ),
            "local",
            [ocls[c] for c in lab],
        ),
    ]
    for obj, kind, om_list in cases:
        ex = LVQExplainer(obj)
        assert ex.kind == kind
        labels = obj.classes_[lab] if hasattr(obj, "prototypes_labels_") else lab
        np.testing.assert_array_equal(ex.predict(X), _nearest(P, labels, om_list, X))
        tgt = ex.classes_[1]
        res = ex.explain(X[:3], tgt)
        assert np.all(res.success)
        _assert_valid(ex, res)


def test_from_arrays_local_and_relevance():
    P = [[0.0, 0.0], [2.0, 0.0]]
    ex = LVQExplainer.from_arrays(P, [0, 1], relevance=[[2.0, 0.0], [0.0, 1.0]])
    assert ex.kind == "global"
    np.testing.assert_allclose(ex.distances([[1.0, 1.0]]), [[3.0, 3.0]])
    ex = LVQExplainer.from_arrays(P, [0, 1], omega=[np.eye(2), 2 * np.eye(2)])
    assert ex.kind == "local"
    res = ex.explain([0.0, 0.0], 1)
    assert res.success


# ------------------------------------------------------------------------------ bad input
def test_bad_input():
    P = [[0.0, 0.0], [2.0, 0.0]]
    ex = LVQExplainer.from_arrays(P, [0, 1])
    with pytest.raises(ValueError, match="x has 3 features"):
        ex.explain([0.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="NaN"):
        ex.explain([np.nan, 0.0], 1)
    with pytest.raises(ValueError, match="target=7"):
        ex.explain([0.0, 0.0], 7)
    with pytest.raises(ValueError, match="metric"):
        ex.explain([0.0, 0.0], 1, metric="cosine")
    with pytest.raises(ValueError, match="fit_mad"):
        ex.explain([0.0, 0.0], 1, weights="mad")
    with pytest.raises(ValueError, match="solver"):
        ex.explain([0.0, 0.0], 1, solver="nope")
    with pytest.raises(ValueError, match="method must be"):
        ex.explain([0.0, 0.0], 1, method="nope")
    with pytest.raises(ValueError, match="margin must be a finite real number >= 0"):
        ex.explain([0.0, 0.0], 1, margin=-1.0)
    with pytest.raises(TypeError, match="margin must be"):
        ex.explain([0.0, 0.0], 1, margin="a")
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        ex.explain([0.0, 0.0], 1, max_iter=0)
    with pytest.raises(TypeError, match="max_iter must be"):
        ex.explain([0.0, 0.0], 1, max_iter=True)
    with pytest.raises(ValueError, match="tol must be a finite real number > 0"):
        ex.explain([0.0, 0.0], 1, tol=0.0)
    with pytest.raises(ValueError, match="constraints\\[0\\]\\[0\\]"):
        ex.explain([0.0, 0.0], 1, constraints=[([1.0], 0.0)])
    with pytest.raises(ValueError, match="positive semi-definite"):
        LVQExplainer.from_arrays(P, [0, 1], relevance=[[1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(ValueError, match="symmetric"):
        LVQExplainer.from_arrays(P, [0, 1], relevance=[[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="omega must have shape"):
        LVQExplainer.from_arrays(P, [0, 1], omega=np.eye(3))
    with pytest.raises(ValueError, match="one per prototype"):
        LVQExplainer.from_arrays(P, [0, 1], omega=[np.eye(2)] * 3)
    with pytest.raises(ValueError, match="all zeros"):
        LVQExplainer.from_arrays(P, [0, 1], omega=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="no prototype"):
        LVQExplainer.from_arrays(P, [0, 1], classes=[0, 1, 2]).explain([0.0, 0.0], 2)
    with pytest.raises(ValueError, match="labels must have shape"):
        LVQExplainer.from_arrays(P, [0, 1, 1])
    with pytest.raises(ValueError, match="NaN"):
        LVQExplainer.from_arrays([[0.0, np.nan], [1.0, 1.0]], [0, 1])
    with pytest.raises(TypeError, match="LVQExplainer needs.*no fastcf explainer takes a object"):
        LVQExplainer(object())
    with pytest.raises(ValueError, match="method='ldp'"):
        ex.explain([0.0, 0.0], 1, method="ldp", metric="manhattan")
    with pytest.raises(ValueError, match="method='ldp'"):
        ex.explain([0.0, 0.0], 1, method="ldp", solver="CLARABEL")
    with pytest.raises(ValueError, match="method='ccp'"):
        ex.explain([0.0, 0.0], 1, method="ccp")
    local = LVQExplainer.from_arrays(P, [0, 1], omega=[np.eye(2), 2 * np.eye(2)])
    with pytest.raises(ValueError, match="method='cvxpy'"):
        local.explain([0.0, 0.0], 1, method="cvxpy")
    with pytest.raises(ValueError, match="prototypes_per_class"):
        GLVQ(prototypes_per_class=0).fit([[0.0], [1.0]], [0, 1])


# ------------------------------------------------------------------------------ pickling
@pytest.mark.needs_jit
def test_pickle_models_and_explainers(bc):
    _, Xte, _, _ = bc
    for cls in (GLVQ, GMLVQ, LGMLVQ):
        m = _model(cls, "bc", bc)
        m2 = pickle.loads(pickle.dumps(m))
        np.testing.assert_array_equal(m.predict(Xte), m2.predict(Xte))
        ex = LVQExplainer(m)
        tg = _other_targets(m, Xte[:2])
        metric = "manhattan"
        r1 = ex.explain(Xte[:2], tg, metric=metric)
        ex2 = pickle.loads(pickle.dumps(ex))
        r2 = ex2.explain(Xte[:2], tg, metric=metric)
        np.testing.assert_allclose(r1.distance, r2.distance, rtol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_fast_path_random_problems(seed):
    """Random prototypes, weights, boxes, frozen features and user rows: the exact LDP path
    agrees with the independent reference, including on infeasible combinations."""
    rng = np.random.default_rng(100 + seed)
    D = int(rng.integers(2, 7))
    M = int(rng.integers(3, 10))
    P = rng.normal(size=(M, D)) * 2
    lab = rng.integers(0, 3, M)
    lab[:3] = [0, 1, 2]
    omega = None if seed % 2 == 0 else rng.normal(size=(D, D))
    ex = LVQExplainer.from_arrays(P, lab, omega=omega)
    X = rng.normal(size=(8, D)) * 2
    tg = rng.integers(0, 3, 8)
    w = rng.uniform(0.3, 3.0, D)
    lo = X.min(axis=0) - rng.uniform(0, 1, D)
    hi = X.max(axis=0) + rng.uniform(0, 1, D)
    frozen = np.zeros(D, dtype=bool)
    frozen[rng.integers(0, D)] = seed >= 3
    a = rng.normal(size=D)
    cons = [(a, float(np.median(X @ a)))]
    res = ex.explain(
        X, tg, weights=w, bounds=(lo, hi), frozen=np.flatnonzero(frozen), constraints=cons
    )
    _assert_valid(ex, res)
    for k in range(len(X)):
        d_ref, _ = lvq_counterfactual_reference(
            P,
            lab,
            X[k],
            tg[k],
            omega=omega,
            weights=w,
            frozen=frozen,
            lo=lo,
            hi=hi,
            constraints=cons,
        )
        if np.isfinite(d_ref):
            assert res.success[k], res.message[k]
            assert res.distance[k] == pytest.approx(d_ref, rel=1e-6, abs=1e-9)
        else:
            assert res.status[k] == 3


@pytest.mark.needs_jit
def test_compiled_clarabel_path_matches_problem_solve(bc):
    """The compiled re-solve (affine parameter map read from cvxpy) and cvxpy's own
    Problem.solve on the same parameterised program agree."""
    _, Xte, _, _ = bc
    m = _model(GMLVQ, "bc", bc)
    X = Xte[:6]
    tg = _other_targets(m, X)
    opts, _ = _options("all", X, X.shape[1])
    from fastcf._lvq.options import resolve_options
    from fastcf._lvq.programs import solve_cvxpy

    for metric in ("euclidean", "manhattan"):
        ex = LVQExplainer(m)
        r1 = ex.explain(X, tg, metric=metric, method="cvxpy", **opts)
        assert r1.method == f"cvxpy {'QP' if metric == 'euclidean' else 'LP'} (CLARABEL)"
        o = resolve_options(
            X,
            5,
            metric,
            None,
            opts["frozen"],
            opts["bounds"],
            opts["constraints"],
            1e-6,
            None,
            None,
        )
        tidx = np.searchsorted(m.classes_, tg)
        r2 = solve_cvxpy({}, ex._geo, X, tidx, metric, o, None, compiled=False)
        np.testing.assert_array_equal(r1.status, r2.status)
        ok = r1.success
        np.testing.assert_allclose(r1.distance[ok], r2.distance[ok], rtol=1e-7)


def test_dataframe_model_feature_names():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(60, 3)), columns=["u", "v", "w"])
    y = (df["u"] + df["v"] > 0).astype(int)
    m = GLVQ(random_state=0).fit(df, y)
    ex = LVQExplainer(m)
    row = df.iloc[0]
    res = ex.explain(row, 1 - m.predict(df.iloc[:1])[0], frozen=["w"])
    assert res.success
    assert list(res.to_frame()["feature"]) == ["u", "v", "w"]
    assert res.x[2] == row["w"]


def test_parallel_batch_kernel_matches_serial():
    from fastcf._kernels.lvq_qp import Metric, Settings, Tables, UserRows, lvq_fast_batch

    rng = np.random.default_rng(7)
    P = rng.normal(size=(6, 4))
    ex = LVQExplainer.from_arrays(P, [0, 1, 2, 0, 1, 2])
    X = rng.normal(size=(50, 4))
    tg = rng.integers(0, 3, 50).astype(np.int64)
    D = 4
    geo = ex._geo
    args = (
        X,
        tg,
        Tables(geo.A, geo.b, geo.valid, geo.cls),
        Metric(
            np.ones(D),
            np.ones(D, dtype=bool),
            np.full((1, D), -2.0),  # the box as (R, D): R = 1 shared by every query
            np.full((1, D), np.inf),
        ),
        UserRows(np.zeros((0, D)), np.zeros(0)),
        Settings(1e-6, 100),
    )
    batch = lvq_fast_batch(*args, False)
    for a, b in zip(batch, lvq_fast_batch(*args, True), strict=True):
        np.testing.assert_array_equal(a, b)
    # a single query (lvq_qp._solve_query called from Python, no batch kernel): the batch's row
    for n in range(0, 50, 7):
        one = lvq_fast_batch(X[n : n + 1], tg[n : n + 1], *args[2:], False)
        for got, want in zip(one, batch, strict=True):
            assert got.shape == (1, *want.shape[1:]) and got.dtype == want.dtype
            np.testing.assert_array_equal(got[0], want[n])


def test_equal_distances_keep_the_first_target_prototype():
    # target prototypes 1 and 2 mirror each other across the query's axis: their LDPs give the
    # same distance, and the rule (lvq_qp._solve_query: a strictly smaller distance wins) keeps
    # the first, in whichever order they come, for a single query and in a batch alike
    for first, second in (([2.0, 1.0], [2.0, -1.0]), ([2.0, -1.0], [2.0, 1.0])):
        ex = LVQExplainer.from_arrays([[0.0, 0.0], first, second], [0, 1, 1])
        one = ex.explain([0.0, 0.0], 1)
        batch = ex.explain([[0.0, 0.0], [0.0, 0.0]], [1, 1])
        assert one.success and one.info["prototype"] == 1
        assert np.sign(one.x[1]) == np.sign(first[1])
        assert batch.info["prototype"].tolist() == [1, 1]
        np.testing.assert_array_equal(batch.x, [one.x, one.x])


# ------------------------------------------------------------------------------ protocol
def test_explainer_protocol_and_no_deprecated_names():
    """The unreleased version carries no deprecation shims (epsilon=, solver='fast'/'cvxpy')."""
    from fastcf._base import BaseExplainer

    P = [[0.0, 0.0], [2.0, 0.0]]
    ex = LVQExplainer.from_arrays(P, [0, 1], feature_names=["a", "b"])
    assert isinstance(ex, BaseExplainer)
    assert list(ex.feature_names_in_) == ["a", "b"]
    assert not hasattr(ex, "feature_names")
    ref = ex.explain([0.0, 0.0], 1, margin=0.5)
    assert ref.method == "ldp (dual active set)"
    with pytest.raises(TypeError, match="epsilon"):
        ex.explain([0.0, 0.0], 1, epsilon=0.5)
    for old in ("fast", "cvxpy"):
        with pytest.raises(ValueError, match="solver must be None or a cvxpy solver name"):
            ex.explain([0.0, 0.0], 1, solver=old)
    assert ex.explain([0.0, 0.0], 1, method="cvxpy").method == "cvxpy QP (CLARABEL)"
    assert ex.explain([0.0, 0.0], 1, solver="CLARABEL").method == "cvxpy QP (CLARABEL)"
    res = ex.explain([0.0, 0.0], 1, metric="manhattan", solver="HIGHS")
    assert res.method == "cvxpy LP (HIGHS)" and res.success
    local = LVQExplainer.from_arrays(P, [0, 1], omega=[np.eye(2), 2 * np.eye(2)])
    assert local.explain([0.0, 0.0], 1).method == "penalty CCP"


def test_bench_module_is_outside_the_api():
    import fastcf.lvq
    from fastcf.bench.lvq import rebuild_and_solve

    assert fastcf.lvq.__all__ == ["GLVQ", "GMLVQ", "LGMLVQ", "LVQExplainer"]
    assert not hasattr(fastcf.lvq, "bench_rows")
    ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0], [0.0, 3.0]], [0, 1, 1])
    x0 = np.array([0.1, 0.2])
    for metric in ("euclidean", "manhattan"):
        d = rebuild_and_solve(ex, x0, 1, metric=metric)
        assert ex.explain(x0, 1, metric=metric).distance == pytest.approx(d, rel=1e-6)


def test_estimator_parameters_validated_at_fit():
    X, y = [[0.0], [1.0], [0.1], [0.9]], [0, 1, 0, 1]
    GLVQ(beta=-1.0)  # construction does not validate (scikit-learn convention)
    for kw, exc, text in [
        ({"beta": -1.0}, ValueError, "beta must be a finite real number > 0"),
        ({"beta": "a"}, TypeError, "beta must be"),
        ({"max_iter": 0}, ValueError, "max_iter must be an integer >= 1"),
        ({"max_iter": 1.5}, TypeError, "max_iter must be an integer"),
        ({"tol": -1.0}, ValueError, "tol must be a finite real number >= 0"),
        ({"prototypes_per_class": 0}, ValueError, "prototypes_per_class must be an integer >= 1"),
        ({"activation": "relu"}, ValueError, "activation must be"),
    ]:
        with pytest.raises(exc, match=text):
            GLVQ(**kw).fit(X, y)
    with pytest.raises(ValueError, match=r"n_components must be an integer in \[1, 1\]"):
        GMLVQ(n_components=2).fit(X, y)


@pytest.mark.needs_jit
@pytest.mark.parametrize("name", ["digits", "iris", "bc"])
@pytest.mark.parametrize("ppc", [1, 2, 3])
def test_lgmlvq_ccp_answers_when_a_target_point_is_known_regression(name, ppc):
    # digits, 1 prototype per class: a late CCP round ended with Clarabel's spurious "unbounded"
    # (τ ≈ 5e5, Ω_i with singular values from 0.7 down to 6e-5) and the whole prototype was
    # dropped, so 4 of these 12 queries got no answer although p_i is a point of the target class
    if name == "iris":
        from sklearn.datasets import load_iris

        X, y = load_iris(return_X_y=True)
        Xtr, Xte, ytr, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    else:
        Xtr, Xte, ytr, _ = _data(name)
    m = LGMLVQ(prototypes_per_class=ppc, random_state=0, max_iter=300).fit(Xtr, ytr)
    ex = LVQExplainer(m)
    X = Xte[: 12 if (name, ppc) == ("digits", 1) else 4]
    tg = _other_targets(m, X)
    # the premise: a target prototype is classified as the target (a known point of the class)
    for t in np.unique(tg):
        own = m.prototypes_[m.prototype_labels_ == t]
        assert np.any(m.predict(own) == t)
    res = ex.explain(X, tg)
    assert np.all(res.success), res.message
    assert set(res.status.tolist()) <= {0, 1}
    _assert_valid(ex, res)
    assert np.all(res.distance <= res.info["fallback_distance"] * (1 + 1e-9))


@pytest.mark.parametrize("Model", [GLVQ, GMLVQ, LGMLVQ])
@pytest.mark.parametrize("power", [-600, 600])
def test_fit_at_an_extreme_scale_is_the_fit_at_unit_scale(Model, power):
    # found by the fuzz suite: a feature of 8e-162 made LGMLVQ's gradient inf - inf (squared
    # distances underflow). The GLVQ cost is invariant to translating and rescaling the data,
    # so fit centres data of extreme spread and divides it by a power of two. With the spread
    # of X at 1 and s a power of two, the fit of s·X is exactly the fit of X − mean(X), scaled
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = X[:, :2] - X[:, :2].mean(axis=0)
    X = X / np.max(np.abs(X))
    s = 2.0**power
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, underflow to nan, or inf - inf
        big = Model(random_state=0, max_iter=50).fit(X * s, y)
    m = X.mean(axis=0)
    unit = Model(random_state=0, max_iter=50).fit(X - m, y)
    assert np.isfinite(big.prototypes_).all()
    np.testing.assert_array_equal(big.prototypes_, (unit.prototypes_ + m) * s)
    assert (unit.predict(X - m) == y).mean() > 0.7  # a real fit, not a degenerate one
    # (predicting at this scale is another matter: squared distances of 2^±1200 are not
    # float64 numbers, for the model and LVQExplainer alike)


@pytest.mark.parametrize("Model", [GLVQ, GMLVQ, LGMLVQ])
@pytest.mark.parametrize("value", [2.39186666e-89, 1e-300, -5e30])
def test_fit_on_one_repeated_point_at_an_extreme_magnitude(Model, value):
    # soak round R (seed 340): nine copies of one point at 2.4e-89 have spread 0, so fit kept
    # the data as they were; L-BFGS's first steps made squared distances of ~1e-178, whose square
    # in the gradient's denominator underflowed to 0: inf − inf (a RuntimeWarning). Such data are
    # now centred (to 0 exactly) and the prototypes shifted back: every prototype is the point
    y = np.arange(9) % 3
    for X in (np.full((9, 1), value), np.full((9, 2), value)):
        _fit_repeated(Model, X, y, value)


def _fit_repeated(Model, X, y, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = Model(random_state=0, max_iter=30).fit(X, y)
        assert (m.prototypes_ == value).all()
        np.testing.assert_array_equal(LVQExplainer(m).predict(X), m.predict(X))


@pytest.mark.parametrize("Model", [GLVQ, LGMLVQ])
def test_fit_near_the_float64_limit_is_finite(Model):
    # values of ±1.5e308: the mean and the differences overflow, so fit only rescales
    X = np.array([[1.5e308], [1.4e308], [-1.5e308], [-1.4e308]])
    y = np.array([0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = Model(random_state=0, max_iter=50).fit(X, y)
    assert np.isfinite(m.prototypes_).all()
    assert m.prototypes_[0, 0] > 0 > m.prototypes_[1, 0]  # one prototype on each side


@pytest.mark.parametrize("scale", [1e155, 3e200])
def test_prototypes_whose_squared_distances_overflow_fail_honestly(scale):
    """Prototypes ~1e155 and more apart: their squared distances overflow the doubles. LGMLVQ's
    penalty CCP handed cvxpy an inf − inf parameter (ValueError from cvxpy at 3e200, a crash),
    and at 1e155 the distance of its answer, the target prototype itself, overflowed to inf and
    the answer was dropped as no closer than none: a false "infeasible". Now a round whose
    linearisation overflows fails (said so), the known point of the target class is the answer
    (status 1, as for any CCP stopped early), and θ is computed scaled. The plain and global
    metrics fail numerically, said so (not solved at this scale; see docs/reliability.md)."""
    P = np.array([[0.0, 0.0], [scale, 0.0], [0.0, scale]])
    for omega in (None, [[1.0, 0.5], [0.0, 1.0]], [np.eye(2), 2 * np.eye(2), np.eye(2)]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ex = LVQExplainer.from_arrays(P, [0, 1, 2], omega=omega)
            res = ex.explain(np.array([1.0, 1.0]), 1)
        if ex.kind == "local":
            assert res.success and res.status == 1, res.message
            assert res.x.tolist() == [scale, 0.0]
            assert res.distance == pytest.approx(np.hypot(scale - 1.0, 1.0), rel=1e-15)
        if res.success:
            assert ex.predict(res.x[None])[0] == 1
        else:
            assert res.status == 4, res.message


@pytest.mark.parametrize("e", [17, 40, 130, -40])
@pytest.mark.parametrize("omega", ["euclidean", "global"])
def test_ldp_answers_scale_with_the_data(e, omega):
    """GLVQ/GMLVQ's answers are equivariant under x, p → s x, s p with ε → s² ε (squared
    distances scale by s²); s = 2^e keeps every number exact. The LDP → NNLS reduction mixed the
    unit rows of G with h of the data's scale and judged it with absolute tolerances: at data of
    scale 10⁵ 3 of 20 queries were "infeasible" (false), at 10¹⁰ every one. h is now scaled to
    max |h| = 1 inside the LDP (an exact homogeneity), and rows are judged free of the free
    features relative to their own coefficients, not to 1."""
    rng = np.random.default_rng(0)
    P = rng.standard_normal((6, 4))
    om = None if omega == "euclidean" else rng.standard_normal((4, 4))
    X = rng.standard_normal((20, 4))
    s = 2.0**e
    ex1 = LVQExplainer.from_arrays(P, [0, 0, 1, 1, 2, 2], omega=om)
    exs = LVQExplainer.from_arrays(P * s, [0, 0, 1, 1, 2, 2], omega=om)
    T = (ex1.predict(X) + 1) % 3
    r1 = ex1.explain(X, T)
    rs = exs.explain(X * s, T, margin=1e-6 * s * s)
    assert r1.success.all() and rs.success.all()
    np.testing.assert_allclose(rs.x / s, r1.x, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rs.distance / s, r1.distance, rtol=1e-9)


@pytest.mark.parametrize("scale", [1e5, 1e10, 1e40])
@pytest.mark.parametrize(
    "kw", [{}, {"method": "cvxpy"}, {"metric": "manhattan"}], ids=["ldp", "cvxpy", "manhattan"]
)
def test_default_margin_at_large_scales_is_raised_past_rounding(scale, kw):
    """Data of scale 10⁵ and beyond with the default margin ε = 1e-6 (in squared distance,
    below the distances' rounding there): the QP's answer sat on the boundary and the
    verification refused 10 of 20 as within rounding; the cvxpy programs (Clarabel, absolute
    tolerances) called every query "infeasible" at 10¹⁰ and 1 of 10 at 10⁵, false claims. The
    programs are now solved with their parameters scaled by a power of 2 (exact: they are
    positively homogeneous), and answers the verification would refuse are re-solved with ε
    raised past the rounding need and the solver's own shortfall: every query succeeds, in
    the model's own arithmetic."""
    rng = np.random.default_rng(0)
    P = rng.standard_normal((6, 4)) * scale
    for om in (None, rng.standard_normal((4, 4))):
        ex = LVQExplainer.from_arrays(P, [0, 0, 1, 1, 2, 2], omega=om)
        X = rng.standard_normal((10, 4)) * scale
        T = (ex.predict(X) + 1) % 3
        res = ex.explain(X, T, **kw)
        assert res.success.all(), res.message
        assert (ex.predict(res.x) == T).all()


@pytest.mark.parametrize(
    "kw", [{}, {"method": "cvxpy"}, {"metric": "manhattan"}], ids=["ldp", "cvxpy", "manhattan"]
)
def test_margin_beyond_the_squared_distances_fails_saying_so(kw):
    """Data of scale 10⁻²⁰ with the default margin 1e-6 (absolute, in squared distance, and
    10³⁴ times the squared distances): reaching it takes a move of ~10¹⁴, where rounding
    exceeds it for two of three queries (the third succeeds, at ~1.4·10¹⁴), and the refusals
    told the user to "increase margin=", the wrong way. The message now says the margin is
    larger than every squared distance from the query, and a margin at the data's scale
    succeeds. A refusal at a margin below the distances keeps the usual message."""
    rng = np.random.default_rng(0)
    P = rng.standard_normal((3, 2)) * 1e-20
    ex = LVQExplainer.from_arrays(P, [0, 1, 2])
    X = P + 1e-22
    T = (ex.predict(X) + 1) % 3
    res = ex.explain(X, T, **kw)
    assert (res.status[~res.success] == 4).all()
    assert (~res.success).sum() == 2
    for m in np.asarray(res.message)[~res.success]:
        assert "margin=1e-06 is in squared distance, and larger than every squared" in m
    ok = ex.explain(X, T, margin=1e-44, **kw)
    assert ok.success.all(), ok.message
    assert (ex.predict(ok.x) == T).all()
    # the criterion, both sides: refusals at data of scale 1 keep the usual message under a
    # margin below their squared distances (~1), and get the new one above them
    S = namedtuple("S", "message")
    ex1 = LVQExplainer.from_arrays(P * 1e20, [0, 1, 2])
    kept = margin_scale_message(ex1, S([BOUNDARY_MESSAGE, "converged"]), X[:2] * 1e20, 1e-6)
    assert kept.message == [BOUNDARY_MESSAGE, "converged"]
    told = margin_scale_message(ex1, S([BOUNDARY_MESSAGE, "converged"]), X[:2] * 1e20, 1e9)
    assert "larger than every squared distance" in told.message[0]
    assert told.message[1] == "converged"


@pytest.mark.parametrize(
    "P, labels, omega, x, t, margin",
    [
        # a target prototype whose copy belongs to another class (and wins their ties), x̄ at
        # -8e8: the rounding need was taken at the copy, 0; now at the answer's own prototype
        ([[-800.0], [0.0], [-200.0], [-800.0]], [0, 0, 1, 1], None, [-8e8], 1, 1e-6),
        # a boundary 5e-148 from x̄ + δ = 0: forming x = −1 + (1 + 5e-148) rounds to 0
        ([[9.859226533459001e-148], [1.0], [0.0], [1.0]], [0, 0, 1, 1], None, [-1.0], 0, 0.0),
        # Λ = 1e-200: the row norm Σ a² of the LDP underflowed and the row was dropped,
        # "infeasible"
        ([[1.0], [0.0]], [0, 1], [[1e-100]], [0.0], 0, 0.0),
        # x̄ ~ 1e9 cancelling to a projection of ~500: the rounding need squared |Ω||x − p| and
        # raised the margin past the cell's room
        (
            [
                [-1000.0, 0.0, 0.0, 0.0],
                [0.0, 0.0, 0.0, 0.0],
                [-312.5, 250.0, 0.0, 0.0],
                [0.0, 0.0, 0.0, 0.0],
            ],
            [0, 0, 1, 1],
            [[1.0, 1.0, 1.0, 1.0]],
            [7.5e8, -1e9, 0.0, 0.0],
            1,
            1e-6,
        ),  # fmt: skip
    ],
    ids=["copy-in-another-class", "formed-in-x0-precision", "row-norm-underflow", "cancelling"],
)
def test_round_t_lvq_findings_are_answered(P, labels, omega, x, t, margin):
    """Soak round T (the LVQ fuzz at data scales 2^-30 … 2^60 with an oracle of false
    failures: a target prototype that wins with room is a witness). Each query failed (a
    numerical failure, or a false "infeasible") and is answered now, in the model's own
    arithmetic."""
    ex = LVQExplainer.from_arrays(P, labels, omega=omega)
    res = ex.explain(np.array(x), t, margin=margin)
    assert res.success and res.status == 0, res.message
    assert ex.predict(res.x[None])[0] == t


def test_linear_constraints_keep_the_difference_of_squared_norms():
    """b_ij = p_jΛp_j − p_iΛp_i of the shared-metric constraints, formed as (p_j − p_i)ᵀ Λ
    (p_j + p_i): with Ω = (1e-9, 1, 1e-9) the squared norms are ~1 and differ by ~2e-9, and the
    difference of the norms lost the 1e-18 that holds p_0's cell; every margin was then
    "infeasible", a false claim below the cell's room (1e-18). Checked against exact rational
    arithmetic on the same doubles."""
    from fractions import Fraction

    P = np.array([[0.0, -1.0, -1.0], [1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    om = np.array([[1e-09, 1.0, 1e-09]])
    ex = LVQExplainer.from_arrays(P, [0, 1, 2], omega=om)
    lam = ex._geo.lams[0]
    L = [[Fraction(v) for v in row] for row in lam]
    for i in range(3):
        for j in range(3):
            q = [[Fraction(v) for v in P[k]] for k in (i, j)]
            exact = sum(q[1][a] * L[a][b] * q[1][b] - q[0][a] * L[a][b] * q[0][b]
                        for a in range(3) for b in range(3))  # fmt: skip
            got = Fraction(ex._geo.b[i, j])
            assert abs(got - exact) <= Fraction(1, 10**15) * abs(exact) + Fraction(1, 10**40)
    x0 = np.array([-1.0, -1.0, -1.0])
    assert ex.explain(x0, 0, margin=1e-20).status != 3  # p_0 wins by 1e-18 at p_0
    assert ex.explain(x0, 0, margin=1e-6).status == 3  # more than the cell holds: infeasible


def test_cvxpy_program_with_a_row_of_1e_118_fails_without_warnings():
    """Soak round T (seed 428, ``lvq_cvxpy``): Ω = 2.3e-59, prototypes 0 and 1, Manhattan. A
    program row of 1e-118 against a right-hand side of ~1 overflowed in the division (a
    RuntimeWarning) and gave cvxpy a parameter that is not finite. Now no warning; the default
    margin 1e-6 (in squared distance) needs a move of ~1e111 there, so the answer is a numerical
    failure, said so."""
    ex = LVQExplainer.from_arrays([[0.0], [1.0]], [0, 1], omega=[[2.3101907430158225e-59]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for kw in ({"metric": "manhattan"}, {"method": "cvxpy"}):
            res = ex.explain(np.array([0.0]), 1, **kw)
            assert res.success or res.status == 4, res.message
            if res.success:
                assert ex.predict(res.x[None])[0] == 1


@pytest.mark.parametrize("kw", [{"metric": "manhattan"}, {"method": "cvxpy"}, {}])
def test_target_prototype_equal_to_another_class_under_a_margin(kw):
    """Soak round T (seed 431, ``lvq_cvxpy``): prototypes 5e5, 0 (class 0) and 1e6, 0 (class 1:
    a copy of class 0's, which comes first and wins their ties), x̄ = 0, the default margin.
    The copy's program holds the row 0·z ≤ −1e-6 (no point): Clarabel, on the program scaled by
    2⁻²⁰, met it within its tolerance and that "answer" at x̄ won, then failed the verification
    three times. Such rows are now decided before any solver; the answer is 7.5e5 + the margin."""
    ex = LVQExplainer.from_arrays([[5e5], [0.0], [1e6], [0.0]], [0, 0, 1, 1], omega=[[1.0]])
    res = ex.explain(np.array([0.0]), 1, **kw)
    assert res.success and res.status == 0, res.message
    assert ex.predict(res.x[None])[0] == 1
    assert res.x[0] == pytest.approx(7.5e5, rel=1e-9)


def test_lgmlvq_answer_refused_by_the_model_falls_back_to_a_target_prototype():
    """Soak round T (``lvq_cvxpy``, local metrics): the penalty CCP's Manhattan answer passed its
    own check (true distances, strict) but the model's arithmetic put it on the other side of a
    tie, and the verification refused it while the target prototype p_2 wins outright. The row
    now takes the nearest target prototype that the model puts in the target class (status 1,
    as the CCP's own fallback to its start point)."""
    P = [[0.0] + [65536.0] * 4, [0.0] + [65536.0] * 4, [65536.0] * 5, [0.0] + [65536.0] * 4]
    e0 = np.zeros((5, 5))
    e0[0, 0] = 1.0
    om = [np.full((5, 5), 10.0), e0, e0, np.r_[[[0.0] + [0.5] * 4], np.full((4, 5), 0.5)]]
    ex = LVQExplainer.from_arrays(P, [0, 0, 1, 1], omega=om)
    res = ex.explain(np.array([0.0, 0.0, 655360.0, 0.0, 0.0]), 1, metric="manhattan", max_iter=10)
    assert res.success and res.status in (0, 1), res.message
    assert ex.predict(res.x[None])[0] == 1


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_in_target_kernel_is_the_decision_rule_on_its_distances(mode, seed):
    """``lvq_in_target`` (the verification's test) is ``cls[argmin(lvq_distances)] == tidx`` on
    finite rows, row for row: ties between copies of a prototype (first wins), distances that
    overflow to inf (ties at inf) or become NaN (inf − inf under a metric: the first NaN wins,
    as ``np.argmin``), and rows with a NaN or an infinity (never in the target)."""
    from fastcf._kernels.lvq_cost import lvq_distances, lvq_in_target

    rng = np.random.default_rng(seed)
    D, K, n = 3, 6, 400
    W = rng.standard_normal((K, D))
    W[3] = W[1]  # two copies of one prototype, of different classes below
    cls = np.array([0, 1, 2, 0, 1, 2], dtype=np.int64)
    M = 1 if mode < 2 else K
    omegas = rng.standard_normal((M, 2, D)) if mode else np.zeros((1, 1, D))
    omegas[:, 0, :2] = 2.0
    if mode == 2:  # prototypes 0 and 1 stay finite there: a NaN after finite distances
        omegas[:2, :, :2] = 0.5
    X = rng.standard_normal((n, D)) * 10.0 ** rng.integers(-3, 4, size=(n, 1))
    X[::7] = W[rng.integers(0, K, size=X[::7].shape[0])]  # on a prototype: a tie at 0 or not
    X[1::11] *= 1e160  # squared distances overflow: inf
    X[4::19, :2] = (1.7e308, -1.7e308)  # under Ω (row 0 below): inf − inf, a NaN distance
    X[2::13, rng.integers(0, D)] = np.nan
    X[3::17, rng.integers(0, D)] = -np.inf
    tidx = rng.integers(0, 3, size=n).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        dist = lvq_distances(np.ascontiguousarray(X), W, omegas, mode)
    want = np.isfinite(X).all(axis=1) & (cls[np.argmin(dist, axis=1)] == tidx)
    got = lvq_in_target(np.ascontiguousarray(X), W, omegas, mode, cls, tidx)
    assert np.array_equal(got, want)
    finite = np.isfinite(X).all(axis=1)
    assert np.isinf(dist[finite]).any() and got[finite].any() and not got[~finite].any()
    if mode:
        assert np.isnan(dist[finite]).any()  # (the NaN rule is exercised)
    if mode == 2:
        first = np.isfinite(dist[finite][:, :2]).all(axis=1) & np.isnan(dist[finite]).any(axis=1)
        assert first.any()


@pytest.mark.needs_jit
@pytest.mark.parametrize("model_cls", [GLVQ, GMLVQ, LGMLVQ])
def test_in_target_is_the_models_predict(bc, model_cls):
    """The verification's test of an LVQ explainer is its ``predict`` (and finite rows)."""
    model = _model(model_cls, "bc", bc)
    ex = LVQExplainer(model)
    rng = np.random.default_rng(0)
    X = np.vstack([bc[1], bc[1][:20] + rng.standard_normal((20, bc[1].shape[1])) * 1e-9])
    X[::9, 0] = np.nan
    tidx = rng.integers(0, 2, size=X.shape[0])
    want = np.isfinite(X).all(axis=1)
    want[want] &= ex.predict(X[want]) == ex.classes_[tidx[want]]
    assert np.array_equal(ex._in_target(X, tidx), want)
    assert want.any() and (~want).any()
