"""The figure of the trees guide: exact, ``exact=False`` and ``plausible=True`` answers compared.

Breast cancer (scikit-learn's bundled copy, offline), a 75/25 stratified split (seed 0), a
``GradientBoostingClassifier`` (50 trees of depth 3, seed 0) and a ``TreeExplainer`` with
``fit_data`` on the training rows. The 20 first test rows the model calls malignant (0) are
asked for benign (1), 1/MAD weights, Manhattan. Left: the distance of each answer — the exact
one (the certified optimum), the quick search's (``exact=False``) and the closest point of a
region holding a training row (``plausible=True``) — rows sorted by the exact distance. Right:
the time per query of each (one call each after a warm-up query; a shared machine, so times
are context).

Writes ``docs/figures/trees_answers.png``. Run from the repository root:
python docs/scripts/trees_figure.py
"""

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from fastcf import TreeExplainer  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "figures" / "trees_answers.png"
KINDS = {
    "exact": {},
    "exact=False": {"exact": False},
    "plausible=True": {"plausible": True},
}


def main(n=20):
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    model = GradientBoostingClassifier(n_estimators=50, max_depth=3, random_state=0)
    model.fit(X_train, y_train)
    ex = TreeExplainer(model).fit_data(X_train)
    rejected = X_test[model.predict(X_test) == 0][:n]
    ex.explain(rejected[0], 1, weights="mad")  # warm-up: kernels loaded, the program built
    dist = {k: np.empty(len(rejected)) for k in KINDS}
    secs = {k: np.empty(len(rejected)) for k in KINDS}
    for i, x in enumerate(rejected):
        for kind, opts in KINDS.items():
            t0 = time.perf_counter()
            res = ex.explain(x, 1, weights="mad", **opts)
            secs[kind][i] = time.perf_counter() - t0
            assert res.success and model.predict(res.x[None])[0] == 1
            dist[kind][i] = res.distance
    assert np.all(dist["exact=False"] >= dist["exact"] * (1 - 1e-9))
    assert np.all(dist["plausible=True"] >= dist["exact"] * (1 - 1e-9))

    order = np.argsort(dist["exact"])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.2), width_ratios=[1.6, 1.0])
    fig.set_layout_engine("constrained")
    styles = {"exact": ("o", "C0"), "exact=False": ("x", "C1"), "plausible=True": ("s", "C2")}
    rank = np.arange(1, len(rejected) + 1)
    for kind, (marker, color) in styles.items():
        ax.plot(rank, dist[kind][order], marker, color=color, label=kind, mfc="none", ms=7)
    ax.set_yscale("log")
    ax.set_xticks(rank)
    ax.set_xlabel("rejected test case (sorted by the exact distance)")
    ax.set_ylabel("distance (Manhattan, MAD units)")
    ax.set_title(f"{len(rejected)} cases predicted malignant, asked for benign")
    ax.legend()
    bx.boxplot([1e3 * secs[k] for k in KINDS], tick_labels=list(KINDS))
    bx.set_yscale("log")
    bx.set_ylabel("time per query (ms)")
    bx.set_title("GradientBoostingClassifier, 50 trees of depth 3")
    fig.savefig(OUT, dpi=110)
    gap = dist["exact=False"] / dist["exact"] - 1
    extra = dist["plausible=True"] / dist["exact"]
    print(
        f"wrote {OUT}: exact=False optimal on {int((gap <= 1e-9).sum())}/{len(gap)}, "
        f"at most {100 * gap.max():.1f}% above; plausible/exact median {np.median(extra):.2f}, "
        f"max {extra.max():.2f}; median ms: "
        + ", ".join(f"{k} {1e3 * np.median(v):.1f}" for k, v in secs.items())
    )


if __name__ == "__main__":
    main()
