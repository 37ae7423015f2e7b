"""Measure what the single-query short path saves (``fastcf/_linear/fast.py``, issue 31).

One common query (one float64 row, no options but its form) takes the short path; the same
row given as a batch of one takes the long path. The short path is the long path's own body
(``route.answer``) on the query ``make_query`` would build, so both answers are the same by
construction: what it saves is the validation of the arguments (``_queries``, ``make_query``),
replaced by type tests. The two are timed alternately in the same process: 5 rounds of 200
calls each, the median of the rounds' medians.

Usage: ``python docs/scripts/short_path.py``
"""

import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fastcf


def _median(f, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main(rounds=5, calls=200):
    """Print the short and the long path's medians per data set and form, and their ratio."""
    warnings.filterwarnings("ignore")
    data = {"breast_cancer": load_breast_cancer, "digits": load_digits}
    print(f"{'data':14s} {'form':40s} {'short':>10s} {'long':>10s} {'ratio':>6s}")
    for name, load in data.items():
        X, y = load(return_X_y=True)
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
        ex = fastcf.LinearExplainer(model)
        x = np.ascontiguousarray(X[3], dtype=float)
        k = int(np.searchsorted(model.classes_, model.predict(X[3:4])[0]))
        t = model.classes_[(k + 1) % len(model.classes_)]
        forms = (
            {"region": True},
            {"proba": 0.9},
            {"lam": 0.1},
            {"region": True, "metric": "manhattan"},
            {"proba": 0.9, "metric": "manhattan"},
        )
        for kw in forms:
            ex.explain(x, t, **kw), ex.explain(x[None], [t], **kw)  # compiled, cached
            short, long = [], []
            for _ in range(rounds):
                one = lambda ex=ex, x=x, t=t, kw=kw: ex.explain(x, t, **kw)  # noqa: E731
                batch = lambda ex=ex, x=x, t=t, kw=kw: ex.explain(x[None], [t], **kw)  # noqa: E731
                short.append(_median(one, calls))
                long.append(_median(batch, calls))
            a, b = np.median(short), np.median(long)
            print(f"{name:14s} {str(kw):40s} {a * 1e6:8.1f}µs {b * 1e6:8.1f}µs {b / a:6.2f}")


if __name__ == "__main__":
    main()
