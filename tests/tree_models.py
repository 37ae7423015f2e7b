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
