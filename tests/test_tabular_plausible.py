"""TabularExplainer(plausible=True) on tree pipelines, against a brute force over grid rows.

The reference (tests/reference.py, ``tabular_plausible_brute_force``) scores every combination
of grid values and categories, keeps the rows whose leaves (the pipeline's own ``transform``
and the model's ``apply``) are those of a training row, and has the pipeline's ``predict``
judge them.
"""

import numpy as np
import pytest
from reference import tabular_plausible_brute_force
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from tree_models import W, tabular_cost, tabular_data, tabular_grids, tabular_pipe

import fastcf
from fastcf import Status


def _data(n=160, seed=0):
    return tabular_data(n, seed, n_top=10, d_top=2.0, n_scale=3, cuts=(3.5,))


_pipe = tabular_pipe


MODELS = {
    "tree": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    "forest": lambda: RandomForestClassifier(4, max_depth=3, random_state=0),
    "boosting": lambda: GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    X, y = _data()
    model = _pipe(MODELS[request.param]()).fit(X, y)
    return X, model, fastcf.TabularExplainer(model, X, weights=W)


_grids = tabular_grids
_cost = tabular_cost


@pytest.mark.parametrize(
    "opts", [{}, {"max_changes": 1}, {"bounds": {"n": (2, 7)}}, {"proba": 0.6}], ids=str
)
def test_matches_the_brute_force(fitted, opts):
    X, model, tx = fitted
    checked = 0
    for target in (0, 1):
        rows = X[model.predict(X) != target].iloc[:3]
        for i in range(rows.shape[0]):
            row = rows.iloc[[i]]
            box = None
            if "bounds" in opts:
                n0 = int(row.n.iloc[0])
                box = {"n": (min(2, n0), max(7, n0))}
            g = _grids(X, row, box)
            kw = {**opts, "bounds": box} if box else opts
            ref, _ = tabular_plausible_brute_force(
                model, X, row, g, _cost(row), target, proba=opts.get("proba"),
                max_changes=opts.get("max_changes"),
            )  # fmt: skip
            res = tx.explain(row, target, plausible=True, **kw)
            if np.isfinite(ref):
                checked += 1
                assert res.success, res.message
                assert model.predict(res.x)[0] == target
                assert res.distance == pytest.approx(ref, rel=1e-9, abs=1e-12)
                free = tx.explain(row, target, **kw)
                assert free.distance <= res.distance + 1e-9
            else:
                assert not res.success and res.status in (Status.UNREACHABLE, Status.INFEASIBLE)
                assert "plausible" in res.message
    assert checked > 0


def test_refusals():
    X, y = _data()
    tx = fastcf.TabularExplainer(_pipe(LogisticRegression()).fit(X, y), X)
    with pytest.raises(ValueError, match="plausible=True is answered for pipelines ending"):
        tx.explain(X.iloc[[0]], 1, plausible=True)
    tree = fastcf.TabularExplainer(_pipe(DecisionTreeClassifier(max_depth=3)).fit(X, y), X)
    with pytest.raises(ValueError, match="plausible must be True or False"):
        tree.explain(X.iloc[[0]], 1, plausible=1)


def test_enumerate_forwards_plausible(fitted):
    X, model, tx = fitted
    row = X[model.predict(X) != 1].iloc[[0]]
    first = tx.explain(row, 1, plausible=True)
    alts = tx.enumerate(row, 1, k=3, plausible=True)
    assert first.success and alts and alts[0].distance == first.distance
    seen = {tuple(r) for r in np.asarray(model[-1].apply(model[:-1].transform(X))).reshape(
        len(X), -1).tolist()}  # fmt: skip
    for a in alts:
        assert a.success and model.predict(a.x)[0] == 1
        lf = np.asarray(model[-1].apply(model[:-1].transform(a.x))).reshape(1, -1)[0]
        assert tuple(lf.tolist()) in seen  # in a region that holds a training row
    assert [a.distance for a in alts] == sorted(a.distance for a in alts)
