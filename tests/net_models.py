"""Small fitted networks shared by the network family's tests (``tests/test_net*.py``)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier


def mlp(hidden, D, K, seed, activation="relu", n=120):
    """Return ``(model, X)``: an ``MLPClassifier`` fitted on ``n`` rows of [−1, 1]^D.

    A non-linear labelling into K classes of (nearly) equal size, so that the network's
    regions matter (Adam, 300 iterations: not converged, which the tests do not need).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, D))
    score = np.sin(3 * X[:, 0]) + X[:, -1] * X[:, 0] + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, K + 1)[1:-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MLPClassifier(hidden, activation=activation, max_iter=300, random_state=seed)
        model.fit(X, y)
    return model, X
