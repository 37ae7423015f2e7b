"""TreeExplainer.enumerate: Lawler's scheme over restrictions, against the brute force over
all 2^D restrictions of a query (each solved by the brute force over the threshold grid)."""

import numpy as np
import pytest
from reference import enumerate_brute_force, tree_cells_brute_force
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from fastcf import TreeExplainer


@pytest.fixture(scope="module")
def forest():
    X, y = make_classification(200, 3, n_informative=3, n_redundant=0, random_state=3)
    model = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    return X, model


@pytest.mark.parametrize("row", [0, 1, 2, 3])
@pytest.mark.parametrize("kw", [{}, {"max_changes": 1}], ids=["default", "max_changes"])
def test_enumerate_equals_the_brute_force_over_restrictions(forest, row, kw):
    X, model = forest
    x0 = X[row]
    target = 1 - int(model.predict(X[row : row + 1])[0])
    ex = TreeExplainer(model)
    alts = ex.enumerate(x0, target, k=8, **kw)

    def solve(free):  # features outside ``free`` frozen: the box pins them to x0
        lo = np.where(free, -np.inf, x0)
        hi = np.where(free, np.inf, x0)
        return tree_cells_brute_force(model, x0, target, lo=lo, hi=hi)

    ref = enumerate_brute_force(
        solve, np.ones(3, dtype=bool), 8,
        in_target=lambda x: int(model.predict(x[None])[0]) == target,
        changed=lambda x: x != x0, max_changes=kw.get("max_changes"),
    )  # fmt: skip
    assert len(alts) == len(ref) >= 1
    for a, (val, S) in zip(alts, ref, strict=True):
        assert a.success and int(model.predict(a.x[None])[0]) == target
        assert a.distance == pytest.approx(val, rel=1e-9, abs=1e-12)
        assert set(a.changed_index.tolist()) == S
    # no answer's changed set contains an earlier one's
    sets = [set(a.changed_index.tolist()) for a in alts]
    assert not any(sets[i] <= sets[j] for j in range(len(sets)) for i in range(j))


def test_enumerate_of_several_rows_is_each_rows_and_a_lazy_iterator(forest):
    X, model = forest
    ex = TreeExplainer(model)
    T = 1 - model.predict(X[:3])
    many = ex.enumerate(X[:3], T, k=3, frozen=[2])
    assert len(many) == 3
    for i in range(3):
        one = ex.enumerate(X[i], T[i], k=3, frozen=[2])
        assert [a.distance for a in many[i]] == [a.distance for a in one]
        assert all(a.x[2] == X[i, 2] for a in one)  # frozen kept
    it = ex.enumerate(X[0], T[0], k=None)
    first = next(it)
    assert first.distance == ex.explain(X[0], T[0]).distance
    with pytest.raises(ValueError, match="k"):
        ex.enumerate(X[0], T[0], k=0)
