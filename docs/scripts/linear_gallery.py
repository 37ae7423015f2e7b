"""Gallery figures drawn with ``fastcf.plot`` on data that ships with scikit-learn.

* ``linear_gallery_changes.png``: breast cancer (StandardScaler + LogisticRegression), the closest
  version of a malignant-predicted case with p(benign) ≥ 0.9, MAD-weighted, within the data range;
  the ten largest changes in MAD units (``plot_changes``).
* ``linear_gallery_path.png``: the λ-path of the same case (``plot_path``).
* ``linear_gallery_digits.png``: softmax on the 8×8 digits; three sources turned into another
  digit with p_target ≥ 0.9, pixels kept in [0, 16] (``plot_image``).
* ``linear_gallery_enum.png``: EnumSV rank plot of linear SVMs on breast cancer
  (``plot_enumeration``).

Run from the repository root:  python docs/scripts/linear_gallery.py
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import fastcf  # noqa: E402
from fastcf.plot import plot_changes, plot_enumeration, plot_image, plot_path  # noqa: E402

FIG = Path(__file__).resolve().parents[1] / "figures"


def breast_cancer():
    data = load_breast_cancer()
    X, y = data.data, data.target
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    ex = fastcf.LinearExplainer(model).fit_mad(X)
    i = int(np.flatnonzero(model.predict(X) == 0)[0])
    bounds = (X.min(axis=0), X.max(axis=0))
    res = ex.explain(X[i], 1, proba=0.9, weights="mad", bounds=bounds)
    names = list(data.feature_names)
    ax = plot_changes(res, top=10, scale=ex.mad_, feature_names=names)
    ax.set_title(f"case {i}: p(benign) ≥ 0.9; 10 largest of {res.changed.size} changes, in MADs")
    ax.figure.savefig(FIG / "linear_gallery_changes.png", dpi=110)
    path = ex.path(X[i], 1, np.logspace(3, -5, 100), weights="mad")
    axes = plot_path(path, classes=ex)
    axes[0].figure.suptitle(f"breast cancer, case {i}: λ-path (MAD-weighted distance)")
    axes[0].figure.savefig(FIG / "linear_gallery_path.png", dpi=110)
    return res


def digits():
    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(max_iter=2000).fit(X, y)
    ex = fastcf.LinearExplainer(model)
    fig, axs = plt.subplots(3, 3, figsize=(8, 8), layout="constrained")
    out = []
    for row, (i, target) in zip(axs, ((3, 8), (7, 1), (0, 6)), strict=True):
        res = ex.explain(X[i], target, proba=0.9, bounds=(0.0, 16.0))
        plot_image(res, (8, 8), classes=ex, axes=row)
        row[0].set_title(f"source: {y[i]}")
        out.append(res)
    fig.suptitle("digits: closest image with p(target) ≥ 0.9, pixels in [0, 16]")
    fig.savefig(FIG / "linear_gallery_digits.png", dpi=110)
    return out


def enumeration():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    sc = StandardScaler().fit(Xtr)
    top = fastcf.enumerate_svms(sc.transform(Xtr), ytr, k=30, C=1.0)
    axes = plot_enumeration(top, sc.transform(Xte), yte, label="breast cancer, C = 1")
    axes[0].figure.savefig(FIG / "linear_gallery_enum.png", dpi=110)
    return top


def main():
    res = breast_cancer()
    print("breast cancer:", res.success, res.proba, res.changed.size)
    for r in digits():
        print("digits:", r.target, r.success, r.proba.max())
    top = enumeration()
    print("enumeration:", len(top), top[-1].objective / top[0].objective)
    plt.close("all")


if __name__ == "__main__":
    main()
