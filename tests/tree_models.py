"""Model makers shared by the tree tests (imported as ``from tree_models import ...``)."""

import pytest


def xgb(**kw):
    """An ``XGBClassifier`` (one thread, seeded); the test is skipped without XGBoost."""
    xgboost = pytest.importorskip("xgboost")
    return xgboost.XGBClassifier(n_jobs=1, random_state=0, **kw)


def lgb(**kw):
    """A silent ``LGBMClassifier`` (one thread, seeded; 5 rows a leaf by default)."""
    lightgbm = pytest.importorskip("lightgbm")
    kw.setdefault("min_child_samples", 5)
    return lightgbm.LGBMClassifier(n_jobs=1, verbose=-1, random_state=0, **kw)


def tabular_pipe(clf, scaler=None):
    """The tabular tests' pipeline: scaled ``n``, ``d``; one-hot ``job``; ordinal ``edu``."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

    scaler = StandardScaler if scaler is None else scaler
    pre = make_column_transformer(
        (scaler(), ["n", "d"]), (OneHotEncoder(), ["job"]), (OrdinalEncoder(), ["edu"])
    )
    return make_pipeline(pre, clf)


# the tabular tests' table: integer ``n``, one-decimal ``d``, nominal ``job``, ordinal ``edu``
EDU = ["hs", "ba", "ms"]  # an ordered Categorical: its order is not the encoder's (alphabetical)
W = {"n": 0.3, "d": 1.7, "job": 0.9, "edu": 0.6}


def tabular_data(n=240, seed=0, classes=2, n_top=16, d_top=4.0, n_scale=4, cuts=(4.5,)):
    """The tabular tests' DataFrame and labels (2 classes: ``s > cuts[0]``; 3: two cuts)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "n": rng.integers(0, n_top, n),
            "d": rng.uniform(0.0, d_top, n).round(1),
            "job": rng.choice(["a", "b", "c", "d"], n),
            "edu": pd.Categorical(rng.choice(EDU, n), categories=EDU, ordered=True),
        }
    )
    s = X.n / n_scale + X.d + 1.5 * (X.job == "c") - (X.job == "a") + X.edu.cat.codes
    s = s + rng.normal(0, 0.7, n)
    y = (s > cuts[0]).astype(int) if classes == 2 else np.digitize(s, cuts)
    return X, y


def tabular_grids(X, row, box=None, fixed=(), allowed=None):
    """The values each column may take by default: every grid point of its training range
    (widened to hold the row), within ``box``; ``fixed`` columns at the row's value."""
    box = box or {}
    lo_n, hi_n = box.get("n", (min(X.n.min(), row.n.iloc[0]), max(X.n.max(), row.n.iloc[0])))
    lo_d, hi_d = box.get("d", (min(X.d.min(), row.d.iloc[0]), max(X.d.max(), row.d.iloc[0])))
    g = {
        "n": list(range(int(lo_n), int(hi_n) + 1)),
        "d": [k / 10 for k in range(round(lo_d * 10), round(hi_d * 10) + 1)],
        "job": sorted(X.job.unique()),
        "edu": EDU,
    }
    for c in fixed:
        g[c] = [row[c].iloc[0]]
    g.update(allowed or {})
    return g


def tabular_cost(row):
    """The cost of each column's value under :data:`W` (ranks for ``edu``, 0/1 for ``job``)."""

    def cost(c, v):
        v0 = row[c].iloc[0]
        if c == "job":
            return W[c] * (v != v0)
        if c == "edu":
            return W[c] * abs(EDU.index(v) - EDU.index(v0))
        return W[c] * abs(float(v) - float(v0))

    return cost
