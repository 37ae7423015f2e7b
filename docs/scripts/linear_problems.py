"""Models and problem instances shared by the softmax reproductions (paper 000, Appendix A).

Two softmax classifiers trained with scikit-learn's ``LogisticRegression`` (multinomial):

* ``digits``: scikit-learn's 8×8 digits, pixels scaled to [0, 1] (D = 64, K = 10);
* ``synthetic784``: generated data of MNIST's shape (D = 784, K = 10): class means drawn at random,
  Gaussian noise around them, N = 2000 (the paper's MNIST is not bundled and not downloaded here);
* ``synthetic8192``: the same at VGGFeat64's shape (D = 8192, K = 16), N = 1600.

Problems as in the paper's Appendix A: ``n_far`` sources picked uniformly at random from the
training set with the *farthest* class (lowest probability) as target and λ = 0.01, and
``n_second`` with the second most probable class and λ = 0.1.
"""

import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

import fastcf

DATASETS = {
    "digits": "digits (D = 64, K = 10)",
    "synthetic784": "synthetic (D = 784, K = 10)",
    "synthetic8192": "synthetic (D = 8192, K = 16)",
}


def load(name, seed=0):
    """Return ``(explainer, X_train)`` for one data set of :data:`DATASETS`."""
    rng = np.random.default_rng(seed)
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        C = 1.0
    elif name == "synthetic784":
        D, K, N = 784, 10, 2000
        means = rng.normal(scale=0.08, size=(K, D))
        y = rng.integers(0, K, N)
        X = means[y] + rng.normal(size=(N, D))
        C = 0.01
    elif name == "synthetic8192":
        D, K, N = 8192, 16, 1600
        means = rng.normal(scale=0.04, size=(K, D))
        y = rng.integers(0, K, N)
        X = means[y] + rng.normal(size=(N, D))
        C = 0.2
    else:
        raise ValueError(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=C, max_iter=500).fit(X, y)
    return fastcf.LinearExplainer(model), X, float(model.score(X, y))


def problems(ex, X, n_far=40, n_second=10, seed=0):
    """Return a list of ``(x̄, target label, λ)`` triplets (Appendix A)."""
    rng = np.random.default_rng(seed)
    out = []
    for n, rank, lam in ((n_far, -1, 0.01), (n_second, -2, 0.1)):
        idx = rng.choice(X.shape[0], size=n, replace=False)
        P = ex.predict_proba(X[idx])
        order = np.argsort(P, axis=1, kind="stable")
        for i, row in zip(idx, order, strict=True):
            # rank -1: the farthest class (lowest p); rank -2 of the sorted-descending order
            k = row[0] if rank == -1 else row[-2]
            out.append((X[i].copy(), ex.classes_[k].item(), lam))
    return out


def objective(ex, x, x0, k, lam):
    """E(x) = λ/2 ‖x − x̄‖² − log p_k(x), evaluated stably (log-sum-exp shifted by the max)."""
    z = ex.coef_ @ x + ex.intercept_
    m = z.max()
    d = x - x0
    return 0.5 * lam * float(d @ d) + m + np.log(np.exp(z - m).sum()) - z[k]
