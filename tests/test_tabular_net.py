"""TabularExplainer on ColumnTransformer pipelines ending in a ReLU MLPClassifier.

Exactness against two references written apart from fastcf (tests/reference.py): the model's
own ``predict`` over every combination of the columns' grid values
(:func:`tabular_model_brute_force`), and, for a continuous column, one linear program per
activation pattern and combination of the discrete columns' values
(:func:`tabular_net_brute_force`).
"""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import tabular_model_brute_force, tabular_net_brute_force
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from tree_models import EDU, W, tabular_cost, tabular_data, tabular_grids, tabular_pipe

import fastcf
from fastcf import Status


def _fit(classes=2, hidden=(4,), activation="relu", seed=0, n=240):
    X, y = tabular_data(n, seed, classes, cuts=(4.5,) if classes == 2 else (3.5, 5.0))
    mlp = MLPClassifier(
        hidden, activation=activation, solver="lbfgs", max_iter=3000, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = tabular_pipe(mlp).fit(X, y)
    return X, model


#: the same fitted pipelines across the multiclass proba= tests (none of them changes its model)
_fit_once = functools.cache(_fit)


@pytest.fixture(scope="module", params=[(2, (4,)), (3, (4,)), (2, (3, 2)), (3, (3, 3))])
def fitted(request):
    classes, hidden = request.param
    X, model = _fit(classes, hidden)
    return X, model, fastcf.TabularExplainer(model, X, weights=W)


def _targets(model, row):
    p = model.predict(row)[0]
    return [t for t in model.classes_ if t != p]


def _own_cost(res, row):
    cost = tabular_cost(row)
    return sum(cost(c, res.x[c].iloc[0]) for c in W)


def _check(model, res, row, target, ref, proba=None):
    """A success is the target under the pipeline's predict, costs what it says, is optimal."""
    value, _ = ref
    if not np.isfinite(value):
        assert not res.success
        assert res.status == Status.INFEASIBLE, res.message
        return
    assert res.success, res.message
    assert res.status == Status.OK
    assert model.predict(res.x)[0] == target
    if proba is not None:
        k = list(model.classes_).index(target)
        assert model.predict_proba(res.x)[0, k] >= proba
    assert res.distance == pytest.approx(_own_cost(res, row), rel=1e-9, abs=1e-12)
    assert res.distance == pytest.approx(value, rel=1e-7, abs=1e-9)


def _is_answer_row(X, res):
    """Integer columns integral, the categories seen in training, the dtypes kept."""
    x = res.x
    assert list(x.dtypes) == list(X.dtypes)
    assert float(x.n.iloc[0]).is_integer()
    assert round(float(x.d.iloc[0]) * 10) == pytest.approx(float(x.d.iloc[0]) * 10, abs=1e-9)
    assert x.job.iloc[0] in set(X.job)
    assert x.edu.iloc[0] in EDU


def test_exact_on_the_grid(fitted):
    """Every column on its grid: the brute force over every grid combination agrees."""
    X, model, tx = fitted
    for i in range(8):
        row = X.iloc[[i]]
        for t in _targets(model, row):
            res = tx.explain(row, t)
            ref = tabular_model_brute_force(model, row, tabular_grids(X, row), tabular_cost(row), t)
            _check(model, res, row, t, ref)
            _is_answer_row(X, res)


@pytest.mark.parametrize("classes", [2, 3])
def test_exact_identity_activation(classes):
    X, model = _fit(classes, (4,), activation="identity")
    tx = fastcf.TabularExplainer(model, X, weights=W)
    for i in range(5):
        row = X.iloc[[i]]
        for t in _targets(model, row):
            res = tx.explain(row, t)
            ref = tabular_model_brute_force(model, row, tabular_grids(X, row), tabular_cost(row), t)
            _check(model, res, row, t, ref)


@pytest.mark.parametrize("classes,hidden", [(2, (4,)), (3, (3,)), (2, (2, 2))])
def test_exact_continuous_column(classes, hidden):
    """A continuous column: one LP per activation pattern and discrete combination agrees."""
    X, model = _fit(classes, hidden)
    tx = fastcf.TabularExplainer(model, X, weights=W, resolution={"d": None})
    assert tx.kinds_["d"] == "continuous"
    for i in range(5):
        row = X.iloc[[i]]
        n0 = int(row.n.iloc[0])
        lo_d, hi_d = min(X.d.min(), row.d.iloc[0]), max(X.d.max(), row.d.iloc[0])
        grids = tabular_grids(X, row, fixed=["edu"])
        grids["n"] = list(range(n0 - 2, n0 + 3))  # (the box of bounds=: past the training range)
        del grids["d"]  # (the continuous column: the reference's LPs move it)
        for t in _targets(model, row):
            res = tx.explain(row, t, bounds={"n": ("-2", "+2")}, frozen=["edu"])
            ref = tabular_net_brute_force(
                model, row, grids, tabular_cost(row), {"d": (lo_d, hi_d, W["d"])}, t
            )
            if not np.isfinite(ref[0]):
                assert not res.success
                continue
            assert res.success, res.message
            assert model.predict(res.x)[0] == t
            assert res.distance == pytest.approx(_own_cost(res, row), rel=1e-9)
            # (the margin 1e-6 on the logits: the two optima agree to its order)
            assert res.distance == pytest.approx(ref[0], rel=1e-5, abs=1e-6)


def test_constraints_against_brute_force():
    """immutable, increase/decrease-only, bounds, allowed, transitions, frozen, max_changes."""
    X, model = _fit(2, (4,))
    tx = fastcf.TabularExplainer(
        model, X, weights=W, immutable=["job"], increase_only=["edu"], decrease_only=["d"]
    )
    tx2 = fastcf.TabularExplainer(model, X, weights=W)
    checked = 0
    for i in range(10):
        row = X.iloc[[i]]
        t = _targets(model, row)[0]
        g = tabular_grids(X, row, fixed=["job"])
        d0, e0 = row.d.iloc[0], EDU.index(row.edu.iloc[0])
        g["d"] = [v for v in g["d"] if v <= d0]
        g["edu"] = EDU[e0:]
        ref = tabular_model_brute_force(model, row, g, tabular_cost(row), t)
        _check(model, tx.explain(row, t), row, t, ref)
        # bounds on n (absolute and relative), and allowed categories of job
        n0 = int(row.n.iloc[0])
        g = tabular_grids(X, row)
        g["n"] = list(range(max(0, n0 - 3), n0 + 2))
        g["job"] = sorted({"b", "d", row.job.iloc[0]})
        res = tx2.explain(
            row, t, bounds={"n": ("-3", n0 + 1)}, allowed={"job": ["b", "d", row.job.iloc[0]]}
        )
        _check(model, res, row, t, tabular_model_brute_force(model, row, g, tabular_cost(row), t))
        # transitions: from the row's job only to "c"; edu frozen for this query
        g = tabular_grids(X, row, fixed=["edu"])
        g["job"] = sorted({"c", row.job.iloc[0]})
        jobs = sorted(set(X.job))
        res = tx2.explain(row, t, transitions={"job": {j: ["c"] for j in jobs}}, frozen=["edu"])
        _check(model, res, row, t, tabular_model_brute_force(model, row, g, tabular_cost(row), t))
        # max_changes
        for m in (1, 2):
            res = tx2.explain(row, t, max_changes=m)
            ref = tabular_model_brute_force(
                model, row, tabular_grids(X, row), tabular_cost(row), t, max_changes=m
            )
            _check(model, res, row, t, ref)
            if res.success:
                assert int((res.x.iloc[0] != row.iloc[0]).sum()) <= m
        checked += 1
    assert checked == 10


def test_immutable_row_outside_allowed_is_refused_with_reason():
    X, model = _fit(2, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W, immutable=["job"])
    row = X.iloc[[0]]
    t = _targets(model, row)[0]
    other = sorted(set(X.job) - {row.job.iloc[0]})
    res = tx.explain(row, t, allowed={"job": other})
    assert not res.success and res.status == Status.INFEASIBLE
    assert "'job' is immutable" in res.message


def test_unreachable_target_is_infeasible():
    """Everything held but one column that cannot reach: success=False, status INFEASIBLE."""
    X, model = _fit(2, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W)
    for i in range(20):
        row = X.iloc[[i]]
        t = _targets(model, row)[0]
        g = tabular_grids(X, row, fixed=["n", "d", "job"])
        ref = tabular_model_brute_force(model, row, g, tabular_cost(row), t)
        res = tx.explain(row, t, frozen=["n", "d", "job"])
        _check(model, res, row, t, ref)
        if not np.isfinite(ref[0]):
            assert "infeasible" in res.message
            return
    pytest.skip("every row could reach its target by its edu alone")


def _proba_against_the_grid(tx, model, X, row, t, tau):
    """Ask ``proba=tau`` of one row; check it against the grid's brute force (the pipeline's own
    predict_proba) and its reported probability against the model's; return the answer."""
    res = tx.explain(row, t, proba=tau)
    ref = tabular_model_brute_force(
        model, row, tabular_grids(X, row), tabular_cost(row), t, proba=tau
    )
    _check(model, res, row, t, ref, proba=tau)
    if res.success:
        k = list(model.classes_).index(t)
        assert res.proba[k] == pytest.approx(model.predict_proba(res.x)[0, k])
    return res


@pytest.mark.parametrize("tau", [0.6, 0.9])
def test_proba_binary(tau):
    X, model = _fit(2, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W)
    for i in range(6):
        row = X.iloc[[i]]
        t = _targets(model, row)[0]
        _proba_against_the_grid(tx, model, X, row, t, tau)


@pytest.mark.parametrize("hidden", [(4,), (3, 3)])
def test_proba_multiclass_on_the_grid(hidden):
    """Three classes, every column on its grid: the pipeline's own predict_proba over every grid
    combination agrees (the tangent cuts of the softmax: some rows need them)."""
    X, model = _fit_once(3, hidden)
    tx = fastcf.TabularExplainer(model, X, weights=W)
    cuts = 0
    for i in range(3):
        row = X.iloc[[i]]
        for t in _targets(model, row):
            for tau in (0.45, 0.8):
                res = _proba_against_the_grid(tx, model, X, row, t, tau)
                cuts += res.info["cuts"] if res.success else 0
    assert cuts or hidden != (4,)  # (the loop exercised, not only its first program)


def test_proba_multiclass_continuous_column():
    """Three classes, a continuous column: one exponential-cone program per activation pattern
    and job (the softmax itself, at fastcf's margins: 1e-6 on the logit gaps and on log 1/τ)."""
    X, model = _fit_once(3, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W, resolution={"d": None})
    answered = 0
    for i in (1, 2):
        row = X.iloc[[i]]
        lo_d, hi_d = min(X.d.min(), row.d.iloc[0]), max(X.d.max(), row.d.iloc[0])
        grids = tabular_grids(X, row, fixed=["edu", "n"])
        del grids["d"]  # (the continuous column: the reference's programs move it)
        t = _targets(model, row)[0]
        k = list(model.classes_).index(t)
        for tau in (0.8,):  # (0.45: no cut on these rows)
            res = tx.explain(row, t, proba=tau, frozen=["edu", "n"])
            ref = tabular_net_brute_force(
                model, row, grids, tabular_cost(row), {"d": (lo_d, hi_d, W["d"])}, t,
                proba=tau, margin=1e-6, slack=1e-6,
            )  # fmt: skip
            assert np.isfinite(ref[0]) and res.success, res.message
            assert res.status == Status.OK
            assert model.predict(res.x)[0] == t
            assert model.predict_proba(res.x)[0, k] >= tau
            assert res.distance == pytest.approx(_own_cost(res, row), rel=1e-9)
            assert res.distance == pytest.approx(ref[0], rel=1e-6)
            answered += res.info["cuts"] > 0
    assert answered == 2


def test_proba_multiclass_batch_and_enumerate():
    X, model = _fit_once(3, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W)
    rows = X.iloc[:4]
    targets = [_targets(model, rows.iloc[[i]])[0] for i in range(4)]
    batch = tx.explain(rows, targets, proba=0.7, time_limit=30.0)
    for i in range(4):
        one = tx.explain(rows.iloc[[i]], targets[i], proba=0.7)
        assert batch.success[i] == one.success
        assert batch.distance[i] == pytest.approx(one.distance, rel=1e-9)
        if batch.success[i]:
            k = list(model.classes_).index(targets[i])
            assert model.predict_proba(batch.x.iloc[[i]])[0, k] >= 0.7
    alts = tx.enumerate(rows.iloc[[0]], targets[0], k=2, proba=0.7)
    k = list(model.classes_).index(targets[0])
    assert alts and all(model.predict_proba(a.x)[0, k] >= 0.7 for a in alts)


@pytest.mark.parametrize("activation", ["tanh", "logistic"])
def test_smooth_activations_refused(activation):
    X, model = _fit(2, (3,), activation=activation)
    with pytest.raises(TypeError, match="not piecewise linear.*TabularExplainer answers exactly"):
        fastcf.TabularExplainer(model, X)


def test_plausible_refused():
    X, model = _fit(2, (3,))
    tx = fastcf.TabularExplainer(model, X)
    with pytest.raises(ValueError, match="tree model.*network"):
        tx.explain(X.iloc[[0]], 1, plausible=True)


def test_infinite_bound_refused():
    X, model = _fit(2, (3,))
    tx = fastcf.TabularExplainer(model, X, resolution={"d": None})
    row = X.iloc[[0]]
    with pytest.raises(ValueError, match="finite box.*'d'"):
        tx.explain(row, _targets(model, row)[0], bounds={"d": (None, np.inf)})


def test_batch_time_limit_and_enumerate():
    X, model = _fit(2, (4,))
    tx = fastcf.TabularExplainer(model, X, weights=W)
    rows = X.iloc[:6]
    targets = [1 - int(p) for p in model.predict(rows)]
    batch = tx.explain(rows, targets, time_limit=30.0)
    assert batch.x.shape == rows.shape
    for i in range(6):
        one = tx.explain(rows.iloc[[i]], targets[i])
        assert batch.success[i] == one.success
        assert batch.distance[i] == pytest.approx(one.distance, rel=1e-9)
        assert not batch.success[i] or model.predict(batch.x.iloc[[i]])[0] == targets[i]
    row = X.iloc[[0]]
    t = _targets(model, row)[0]
    alts = tx.enumerate(row, t, k=3)
    assert alts and alts[0].distance == pytest.approx(tx.explain(row, t).distance)
    costs = [a.distance for a in alts]
    assert costs == sorted(costs)
    for a in alts:
        assert model.predict(a.x)[0] == t


def test_front_door_and_explainer_for():
    X, model = _fit(2, (4,))
    ex = fastcf.explainer_for(model, X_train=X, immutable=["job"])
    assert isinstance(ex, fastcf.TabularExplainer)
    row = X.iloc[[3]]
    t = _targets(model, row)[0]
    res = fastcf.counterfactual(model, row, t, X_train=X, immutable=["job"], weights=W)
    assert res.success and model.predict(res.x)[0] == t
    assert res.x.job.iloc[0] == row.job.iloc[0]
    ref = tabular_model_brute_force(
        model, row, tabular_grids(X, row, fixed=["job"]), tabular_cost(row), t
    )
    _check(model, res, row, t, ref)


def test_imputed_and_levels():
    """A SimpleImputer in front of a column, and a column kept at its levels."""
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(1)
    n = 300
    X = pd.DataFrame(
        {
            "income": rng.integers(20, 80, n).astype(float),
            "term": rng.choice([36, 60], n),
            "home": rng.choice(["rent", "own", "parents"], n),
        }
    )
    y = ((X.income / 10 - (X.term == 60) * 2 + (X.home == "own") * 1.5) > 4.5).astype(int)
    pre = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()), ["income"]),
        (StandardScaler(), ["term"]),
        (OneHotEncoder(), ["home"]),
    )
    mlp = MLPClassifier((4,), solver="lbfgs", max_iter=3000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make_pipeline(pre, mlp).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    assert tx.kinds_["term"] == "levels"
    row = X[model.predict(X) == 0].iloc[[0]].copy()
    res = tx.explain(row, 1)
    assert res.success and model.predict(res.x)[0] == 1
    assert res.x.term.iloc[0] in (36, 60)
    row.loc[:, "income"] = np.nan  # imputed: the model reads the training mean
    res = tx.explain(row, 1)
    assert res.success and model.predict(res.x)[0] == 1


def test_bad_fold_is_refused():
    """A step that does not do what the fold assumes: refused at construction."""
    X, model = _fit(2, (3,))
    tx = fastcf.TabularExplainer(model, X)
    tx._program.net.W[0][0, 0] += 1.0  # (fastcf's copy of the first layer, made wrong)
    with pytest.raises(TypeError, match="does not reproduce the pipeline"):
        tx._program.check(X)


@settings(max_examples=6)
@given(
    seed=st.integers(0, 10_000),
    classes=st.sampled_from([2, 3]),
    hidden=st.sampled_from([(2,), (4,), (6,), (2, 2), (3, 2)]),
    max_changes=st.sampled_from([None, 1, 2]),
)
def test_fuzz_small_pipelines(seed, classes, hidden, max_changes):
    """Random small pipelines and rows: every answer valid and the brute force's optimum."""
    X, model = _fit(classes, hidden, seed=seed % 50, n=160)
    tx = fastcf.TabularExplainer(model, X, weights=W)
    rng = np.random.default_rng(seed)
    for i in rng.choice(X.shape[0], 2, replace=False):
        row = X.iloc[[int(i)]]
        for t in _targets(model, row):
            res = tx.explain(row, t, max_changes=max_changes)
            ref = tabular_model_brute_force(
                model, row, tabular_grids(X, row), tabular_cost(row), t, max_changes=max_changes
            )
            _check(model, res, row, t, ref)


# soak_tabular_net.py --wild, seed 7020 (binary, hidden (4, 3), weights of 10^±3): the
# network's weights the soak put in place of the fitted ones
_WILD_COEFS = [
    [
        [3.8930078938057138, 990.6350866377643, -1.494811774311448, 10.361304943781665],
        [0.0477874597427938, 0.09056501353898329, 9507.665145994364, -0.06455035895312784],
        [-5.733317243858255, -0.007854641582842138, 2145.056989068157, -0.009898708345396308],
        [679.8080328992698, 5.901494785861721, 0.5328405170419792, -0.4937210854100805],
        [-880.1249091899684, 53.50033163797139, 18.57458212630053, -0.007298972732289322],
        [-0.006501802179674644, -428.68181090307786, -6.246762198930305, 8311.173309986063],
        [6.592250838886206, 0.8958506219806344, -285.9136552867841, -111.95196573205189],
    ],
    [
        [1.87302496665531, 61.56028500896302, -3226.5569662485573],
        [0.08859155749027299, 88.51709949757898, 6.159050662759173],
        [63.99859387650654, -78.12263610484004, -0.006202470877552361],
        [1.87302496665531, 61.56028500896302, -3226.5569662485573],
    ],
    [[0.0], [35.54807644884952], [0.705811341576213]],
]
_WILD_INTERCEPTS = [
    [0.0, -4.726978393255342, 1561.73335766232, -521.1162442605929],
    [0.00478649380835802, -0.2833401819408598, 0.0],
    [0.0],
]


def _wild_pipeline():
    """soak_tabular_net.py --wild, seed 7020: the pipeline with its MLP's wild weights set."""
    X, model = _fit(2, (4, 3), "relu", seed=7020, n=160)
    mlp = model[-1]
    mlp.coefs_ = [np.array(c) for c in _WILD_COEFS]
    mlp.intercepts_ = [np.array(b) for b in _WILD_INTERCEPTS]
    return X, model, fastcf.TabularExplainer(model, X, weights=W)


def test_a_program_answer_off_the_network_is_repaired_regression():
    # the program's answer was x̄ itself at cost 0 (a binary a within HiGHS's tolerance of 0
    # let a big-M leak through an "off" neuron), its pattern's polytope missed the target, and
    # the program's own point was kept: refused by the pipeline at every margin, a false
    # failure where moving n to 9 (cost 0.6) is an answer. Now the pattern is excluded by a
    # no-good row over the ReLU binaries and the program solved again
    X, model, tx = _wild_pipeline()
    row = X.iloc[[159]]
    target = _targets(model, row)[0]
    res = tx.explain(row, target, proba=0.75)
    ref = tabular_model_brute_force(
        model, row, tabular_grids(X, row), tabular_cost(row), target, proba=0.75
    )
    assert np.isfinite(ref[0])
    _check(model, res, row, target, ref, proba=0.75)


# soak_tabular_net.py --wild, seed 7008 (3 classes, identity layers (2, 2, 2), weights of
# 10^±3)
_IDENTITY_COEFS = [
    [
        [-6596.121504141118, -11.55499907197402],
        [0.8405441357667833, -0.7535891111164368],
        [-0.040528634278872676, 0.005281286006308263],
        [7995.559679877582, -2.6422914044115924],
        [0.0091522151172845, 0.009207597675908872],
        [0.0, 0.0],
        [2103.960450806948, -0.004224284911875401],
    ],
    [[-0.0015708610674288633, -6531.249605671359], [-0.0015708610674288633, -6531.249605671359]],
    [[0.0, 0.0], [899.034564898562, 1.3693460543764657]],
    [
        [-3.6510570013435513, 0.04558749617151706, -562.4950106334085],
        [-3.6510570013435513, 0.04558749617151706, -562.4950106334085],
    ],
]
_IDENTITY_INTERCEPTS = [
    [-73.92434876732658, -7.794815992392306],
    [-0.34439011827012994, -426.95729687432],
    [-0.0011696598868210933, -0.0011696598868210933],
    [99.10620021610725, 3058.0905258884595, -0.07600484745441559],
]


def test_a_program_answer_on_a_tie_is_kept_by_the_repairs_regression():
    # the same pipeline, row 96, target 0: the cheapest answer (cost 0.6) lies on a tie (every
    # neuron off, the logit exactly 0: the pipeline's class 0). The program's point is no
    # point of the network at the margin, but is the pipeline's answer on the tie: the repairs
    # (which excluded it, then said "infeasible") now accept it, as the network family does
    X, model, tx = _wild_pipeline()
    row = X.iloc[[96]]
    res = tx.explain(row, 0)
    ref = tabular_model_brute_force(model, row, tabular_grids(X, row), tabular_cost(row), 0)
    assert np.isfinite(ref[0])
    _check(model, res, row, 0, ref)


def test_identity_layers_of_wild_weights_are_one_affine_map_regression():
    # the chain of y = z rows (weights of 10³ multiplied layer after layer) made HiGHS fail
    # ("Solve error"), a false failure where moving job to b (cost 0.9) is an answer; the
    # identity layers are now one affine map of the program's input
    X, model = _fit(3, (2, 2, 2), "identity", seed=7008, n=160)
    mlp = model[-1]
    mlp.coefs_ = [np.array(c) for c in _IDENTITY_COEFS]
    mlp.intercepts_ = [np.array(b) for b in _IDENTITY_INTERCEPTS]
    tx = fastcf.TabularExplainer(model, X, weights=W)
    row = X.iloc[[90]]
    res = tx.explain(row, 2, max_changes=2)
    ref = tabular_model_brute_force(
        model, row, tabular_grids(X, row), tabular_cost(row), 2, max_changes=2
    )
    assert np.isfinite(ref[0])
    _check(model, res, row, 2, ref)


def _wild_answer_is_exact(classes, hidden, seed, coefs, intercepts, i, target, imm=None, **query):
    """Check row ``i``'s answer of a soak_tabular_net.py --wild pipeline against the brute force.

    The pipeline is refitted as the soak's ``seed`` and its MLP's wild weights set; the brute
    force must have an answer.
    """
    X, model = _fit(classes, hidden, "relu", seed=seed, n=160)
    mlp = model[-1]
    mlp.coefs_ = [np.array(c) for c in coefs]
    mlp.intercepts_ = [np.array(b) for b in intercepts]
    tx = fastcf.TabularExplainer(model, X, weights=W, immutable=imm)
    row = X.iloc[[i]]
    res = tx.explain(row, target, **query)
    grids = tabular_grids(X, row, fixed=imm or ())
    ref = tabular_model_brute_force(model, row, grids, tabular_cost(row), target, **query)
    assert np.isfinite(ref[0])
    _check(model, res, row, target, ref)


# soak_tabular_net.py --wild, seed 8095 (binary, hidden (2,), an output bias of 0)
_TIE_COEFS = [
    [
        [0.033647814210608314, -0.42785039898556987],
        [1355.9283933267932, 0.3559088344747055],
        [-0.28499635976679344, 0.04571198077724288],
        [0.8713442919469039, -0.008396675248419222],
        [0.9957642703262413, 0.00235921426033952],
        [-0.028735502854948178, 0.0702553219117646],
        [56.505197121889154, -3635.8184460651],
    ],
    [[238.76274804424514], [-0.04397311840052173]],
]
_TIE_INTERCEPTS = [[-0.04533819309154126, -0.04533819309154126], [0.0]]


def test_a_tie_cheaper_than_the_margin_answer_is_found_regression():
    # the cheapest answer (1.87) lies where both neurons are off and the logit is exactly 0 (a
    # tie, the pipeline's class 0); the program at margin 1e-6 answered 3.07, called optimal.
    # The tie's program is now solved too below the margin answer's cost (as NetExplainer's)
    _wild_answer_is_exact(2, (2,), 8095, _TIE_COEFS, _TIE_INTERCEPTS, 157, 0, ["job"])


# soak_tabular_net.py --wild, seed 9076 (binary, hidden (2,), job immutable, an output bias
# of 0 and output weights >= 0: the logit is never below 0)
_TIE_ONLY_COEFS = [
    [
        [0.004029408298857136, -0.005144295929710513],
        [-69.0832404170967, -0.060909373710373464],
        [95.90032226716347, -0.005036385178124048],
        [-0.008368171022776297, -0.0058524046562350145],
        [-0.008368171022776297, -0.0058524046562350145],
        [0.053440819886713155, -0.007863738405825979],
        [0.001974982883596629, -423.20012232384937],
    ],
    [[0.07371642582113386], [0.0]],
]
_TIE_ONLY_INTERCEPTS = [[0.5790815941332946, -0.4888598569106294], [0.0]]


def test_a_target_reached_only_on_a_tie_is_found_regression():
    # class 0 needs a logit <= 0, and no point has one below 0: the program at margin 1e-6 is
    # infeasible, and the tie's program was solved only against a margin answer, so the row
    # was called "infeasible" where moving d to 2.3 (cost 2.04; both neurons off, the logit
    # exactly 0, the pipeline's class 0) is an answer. The tie's program now runs where the
    # margin's has no answer too (as NetExplainer's)
    _wild_answer_is_exact(2, (2,), 9076, _TIE_ONLY_COEFS, _TIE_ONLY_INTERCEPTS, 56, 0, ["job"])


# soak_tabular_net.py --wild, seed 9044 (3 classes, hidden (3, 2), big-M bounds of 8·10⁶)
_PRESOLVE_COEFS = [
    [
        [0.04686247886730536, 0.002376905395564353, 8383.528962276252],
        [8602.43351530205, 0.004743250143975639, 29.161090863084134],
        [-0.058485956034781766, 0.8121864804832364, 0.0036141576159156538],
        [-727.5130695389119, 673.6039401990045, 0.09337792291254397],
        [82.37347476676696, 0.054198617922709656, -5488.508584957839],
        [4.7601832909990245, -42.10105538156317, -0.025860748065512352],
        [-5043.875526162715, -0.00305184875682534, 9.041724847226932],
    ],
    [
        [-0.0019929602110540655, -5.842895064292245],
        [-570.2531050969549, 9.352652050053358],
        [-570.2531050969549, 9.352652050053358],
    ],
    [
        [422.650543808297, 5444.537581218888, -794.8778178121167],
        [-6604.1300223433445, 0.8989379425673919, -5301.3862441641595],
    ],
]
_PRESOLVE_INTERCEPTS = [
    [7.7969884757899575, -47.655510600471914, -0.06743897322627485],
    [364.00578912537276, 2.6091375111884623],
    [418.83504906347645, -0.07762837870237305, -111.45006408576785],
]


def test_a_program_presolve_removed_the_optimum_of_is_answered_regression():
    # max_changes=1, target 0: moving job to b (cost 0.9; every second-layer neuron off, the
    # logits the output bias, class 0 by 530) is the optimum. HiGHS 1.16's presolve, on this
    # program's big-M rows (a coefficient of 8·10⁶ beside ones of 10⁻³), removed it and HiGHS
    # called moving n by 8 (cost 2.4) optimal at the root. The tabular network program now
    # runs without presolve
    _wild_answer_is_exact(
        3, (3, 2), 9044, _PRESOLVE_COEFS, _PRESOLVE_INTERCEPTS, 68, 0, max_changes=1
    )


# soak_tabular_net.py --wild, seed 9360 (binary, hidden (4, 3), job immutable, an output bias
# of 0)
_TIE_LEAK_COEFS = [
    [
        [1.0362627005385416, 6201.373434807909, 0.08312677089885886, 13.774562825646813],
        [-0.3249247456404529, 477.23859288923427, -0.6987199480320606, -4.41998722981927],
        [923.4333955556192, -0.6666244870990736, 3165.1342284848038, -697.814817451514],
        [0.5775286436519144, 0.29324696595861915, 0.7117634562787313, -0.41098781824510633],
        [0.0473352267552922, -91.22088876256427, 3682.2660153919146, 8587.003869557353],
        [5.377529642484229, -45.93829439119328, -762.2493585690244, -0.00729487036846357],
        [-687.059413493698, -0.0025926579776806894, 47.47812269129247, 8.555758847198078],
    ],
    [
        [0.001254226303485717, 3933.5712529772645, 0.008742607727429406],
        [0.007353274185709571, 0.096181234009745, -616.4161687325483],
        [-906.1786065745272, -599.2693863820548, 709.8807003344172],
        [0.0, 0.0, 0.0],
    ],
    [[-3546.991817962029], [21.76015017409894], [0.022482512645494765]],
]
_TIE_LEAK_INTERCEPTS = [
    [0.08177467563078865, -11.832055319456448, -0.5956528599884668, 0.0],
    [-0.0038175617915194413, 4.122055518746379, 0.0],
    [0.0],
]


def test_a_tie_program_answer_off_the_network_is_repaired_regression():
    # the cheapest answer (1.5) lies on a tie (every last-layer neuron off, the logit exactly 0:
    # the pipeline's class 0); the margin's answer costs 2.44. The tie's program answered x̄
    # itself (cost 0) through a big-M leak (a last-layer neuron at z = 4.1 taken as off), which
    # is no point of the network, and the margin's answer was kept as optimal. The tie
    # program's answer is now repaired as the margin's are
    _wild_answer_is_exact(2, (4, 3), 9360, _TIE_LEAK_COEFS, _TIE_LEAK_INTERCEPTS, 133, 0, ["job"])
