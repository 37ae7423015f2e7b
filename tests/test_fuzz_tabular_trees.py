"""A fuzz of ``TabularExplainer`` on ColumnTransformer pipelines ending in tree models.

Pipelines (a scaler on the numeric columns ``n`` (integers) and ``d`` (one decimal), one-hot
``job``, ordinal ``edu`` (an ordered Categorical)) ending in each tree model kind, binary and
3-class, with drawn immutables, bounds, allowed sets, ``max_changes`` and ``proba``, queries on
training rows. Each answer is held against the brute force over every combination of the
columns' values (``reference.tabular_model_brute_force``, scored by the pipeline's own
``predict``/``predict_proba``):

* no false success: the pipeline classifies the answer as the target (and meets ``proba``), the
  answer keeps the immutables, stays in the bounds and allowed sets, changes at most
  ``max_changes`` columns, and costs what the brute force's optimum costs (1e-9);
* no false failure: a failure is matched by the brute force finding nothing.

The fitted explainers are cached over examples (a few seeds per kind): the examples vary the
queries. ``HYPOTHESIS_PROFILE=long`` runs 10 000 examples; ``FASTCF_FUZZ_EXAMPLES=n``
overrides.
"""

import importlib.util
import math
import os
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import tabular_model_brute_force
from tree_models import EDU, W, lgb, tabular_cost, tabular_data, tabular_pipe, xgb

import fastcf

# (XGBoost and LightGBM where installed: an extra)
_KINDS = ["tree", "forest", "extra", "gb", "hist"] + [
    lib for lib in ("xgboost", "lightgbm") if importlib.util.find_spec(lib) is not None
]
_IMMUTABLE = [(), ("job",), ("n", "d")]
_CACHE = {}


def _examples(ci):
    if os.environ.get("FASTCF_FUZZ_EXAMPLES"):
        return int(os.environ["FASTCF_FUZZ_EXAMPLES"])
    return settings.default.max_examples if settings.default.max_examples >= 10_000 else ci


def _data(seed, classes):
    return tabular_data(240, seed, classes, cuts=(4.5,) if classes == 2 else (3.5, 5.0))


def _classifier(kind, seed):
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.tree import DecisionTreeClassifier

    if kind == "tree":
        return DecisionTreeClassifier(max_depth=4, random_state=seed)
    if kind == "forest":
        return RandomForestClassifier(5, max_depth=3, random_state=seed)
    if kind == "extra":
        return ExtraTreesClassifier(5, max_depth=3, random_state=seed)
    if kind == "gb":
        return GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=seed)
    if kind == "hist":
        return HistGradientBoostingClassifier(max_iter=5, max_depth=2, random_state=seed)
    if kind == "xgboost":
        return xgb(n_estimators=5, max_depth=2)
    return lgb(n_estimators=5, num_leaves=4)


def _fitted(kind, seed, classes, scaler, immutable):
    key = (kind, seed, classes, scaler, immutable)
    if key not in _CACHE:
        from sklearn.preprocessing import MinMaxScaler, RobustScaler, StandardScaler

        X, y = _data(seed, classes)
        sc = {"standard": StandardScaler, "minmax": MinMaxScaler, "robust": RobustScaler}[scaler]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (small data: the libraries warn about it)
            model = tabular_pipe(_classifier(kind, seed), sc).fit(X, y)
        tx = fastcf.TabularExplainer(model, X, weights=W, immutable=list(immutable))
        _CACHE[key] = (X, model, tx)
    return _CACHE[key]


_cost = tabular_cost


@settings(max_examples=_examples(15), deadline=None)
@given(data=st.data())
def test_fuzz_tabular_tree_explain_equals_the_brute_force(data):
    draw = data.draw
    kind = draw(st.sampled_from(_KINDS))
    classes = draw(st.sampled_from([2, 3]))
    immutable = draw(st.sampled_from(_IMMUTABLE))
    X, model, tx = _fitted(
        kind,
        draw(st.integers(0, 2)),
        classes,
        draw(st.sampled_from(["standard", "minmax", "robust"])),
        immutable,
    )
    row = X.iloc[[draw(st.integers(0, X.shape[0] - 1))]]
    r0 = row.iloc[0]
    target = draw(st.integers(0, classes - 1))

    # the values each column may take by default: its training range widened to hold the row
    d_top = round(max(X.d.max(), r0.d) * 10)
    g = {
        "n": list(range(int(min(X.n.min(), r0.n)), int(max(X.n.max(), r0.n)) + 1)),
        "d": [k / 10 for k in range(round(min(X.d.min(), r0.d) * 10), d_top + 1)],
        "job": sorted(X.job.unique()),
        "edu": list(EDU),
    }
    opts = {}
    if draw(st.booleans()):  # a box on the numeric columns, on their grids
        n_lo = draw(st.integers(0, 15))
        n_hi = draw(st.integers(n_lo, 15))
        d_lo = draw(st.integers(0, 40))
        d_hi = draw(st.integers(d_lo, 40))
        opts["bounds"] = {"n": (n_lo, n_hi), "d": (d_lo / 10, d_hi / 10)}
        g["n"] = [v for v in g["n"] if n_lo <= v <= n_hi]
        g["d"] = [v for v in g["d"] if d_lo <= round(v * 10) <= d_hi]
    if draw(st.booleans()):  # allowed sets (they may leave out the row's own category)
        job = draw(st.lists(st.sampled_from(g["job"]), min_size=1, max_size=3, unique=True))
        edu = draw(st.lists(st.sampled_from(EDU), min_size=1, max_size=3, unique=True))
        opts["allowed"] = {"job": job, "edu": edu}
        g["job"], g["edu"] = sorted(job), [e for e in EDU if e in edu]
    if draw(st.booleans()):
        opts["max_changes"] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        opts["proba"] = draw(st.sampled_from([0.5, 0.6, 0.8]))
    contradiction = False
    for c in immutable:
        contradiction |= r0[c] not in g[c]
        g[c] = [r0[c]]

    res = tx.explain(row, target, **opts)
    best = math.inf
    if not contradiction:
        best, _ = tabular_model_brute_force(
            model, row, g, _cost(row), target, proba=opts.get("proba"),
            max_changes=opts.get("max_changes"),
        )  # fmt: skip

    if res.success:
        x = res.x
        assert model.predict(x)[0] == target, (kind, opts)
        if "proba" in opts:
            assert model.predict_proba(x)[0, target] >= opts["proba"], (kind, opts)
        for c in g:
            assert x[c].iloc[0] in g[c], (c, x[c].iloc[0], kind, opts, immutable)
        changed = sum(x[c].iloc[0] != r0[c] for c in g)
        assert changed <= opts.get("max_changes", 4), (kind, opts)
        assert x.n.dtype == X.n.dtype and x.edu.dtype == X.edu.dtype
        own = sum(_cost(row)(c, x[c].iloc[0]) for c in W)
        assert res.distance == pytest.approx(own, rel=1e-9, abs=1e-12)
        assert math.isfinite(best), ("the brute force finds no answer", kind, opts, immutable)
        assert res.distance == pytest.approx(best, rel=1e-9, abs=1e-12), (kind, opts, immutable)
    else:
        assert not math.isfinite(best), (
            "false failure", kind, opts, immutable, res.status, res.message, best,
        )  # fmt: skip
