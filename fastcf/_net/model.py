"""A fitted ReLU network read as float64 layers.

A network of L affine layers ``z_ℓ = W_ℓ h_{ℓ-1} + b_ℓ`` (``h_0 = x``), each hidden layer
followed by ReLU (``h_ℓ = max(z_ℓ, 0)``) or by the identity, and a last layer of logits: one
logit for a binary model (class ``classes_[1]`` iff its logistic exceeds 1/2, as scikit-learn's
``MLPClassifier.predict`` thresholds ``predict_proba``), K logits for K classes (the first
largest wins, as ``argmax``).

Inside one *activation pattern* (which ReLU of each layer is on) the network is affine in x:
:meth:`Net.affine` composes it, the base of the exact linear programs of :mod:`.program`.

Examples
--------
>>> import numpy as np
>>> from sklearn.neural_network import MLPClassifier
>>> X = np.random.default_rng(0).normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int)
>>> mlp = MLPClassifier((4,), solver="lbfgs", max_iter=2000, random_state=0).fit(X, y)
>>> net = read_network(mlp)
>>> net.binary, [W.shape for W in net.W]
(True, [(4, 2), (1, 4)])
>>> bool(np.allclose(net.logits(X)[:, 0] > 0, mlp.predict(X) == 1))
True
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Net", "read_network", "ACTIVATIONS"]

#: the hidden activations answered exactly (ReLU's kink is one binary variable per neuron)
ACTIVATIONS = ("relu", "identity")


class Net(NamedTuple):
    """A network's layers in float64: ``W[ℓ]`` of shape (n_ℓ, n_{ℓ-1}), ``b[ℓ]`` (n_ℓ,)."""

    W: tuple  # the weight matrices, the last one the logits'
    b: tuple  # the biases
    relu: bool  # hidden layers: ReLU (True) or the identity (False)
    binary: bool  # one logit (two classes)
    unit: float = 2.0**-53  # the unit roundoff of the model's own arithmetic (float32: 2**-24)

    @property
    def n_hidden(self):
        """The number of hidden neurons."""
        return int(sum(W.shape[0] for W in self.W[:-1]))

    def hidden(self, X):
        """Return the pre-activations of every hidden layer at the rows of ``X`` (a list)."""
        out, h = [], np.asarray(X, dtype=np.float64)
        for W, b in zip(self.W[:-1], self.b[:-1], strict=True):
            z = h @ W.T + b
            out.append(z)
            h = np.maximum(z, 0.0) if self.relu else z
        return out

    def last_hidden(self, X):
        """Return the output of the last hidden layer at the rows of ``X`` (the logits' input)."""
        h = np.asarray(X, dtype=np.float64)
        for W, b in zip(self.W[:-1], self.b[:-1], strict=True):
            h = h @ W.T + b
            if self.relu:
                np.maximum(h, 0.0, out=h)
        return h

    def logits(self, X):
        """Return the logits at the rows of ``X``: shape (N, 1) binary, (N, K) otherwise."""
        return self.last_hidden(X) @ self.W[-1].T + self.b[-1]

    def meets(self, X, G, g):
        """Return which rows of ``X`` meet the target's rows ``G h ≥ g``.

        ``h``: the last hidden layer's output; ``G``, ``g``: from
        :func:`fastcf._net.program.output_rows`.
        """
        return np.all(self.last_hidden(X) @ G.T >= g, axis=1)

    def rounding(self, lo, hi):
        """Return a bound on how far the model's own arithmetic moves a logit gap over a box.

        For every x in [lo, hi] and every pair of logits, the gap ``z_k − z_j`` the model
        computes in its own precision (``unit``: the input cast to it, then each layer's sums
        and ReLU) lies within the returned value of the exact gap: the standard forward error
        bound of a dot product, ``|fl(w·h + b) − (w·h + b)| ≤ γ_{n+1} (|w|·|h| + |b|)`` with
        ``γ_m = m u / (1 − m u)`` (whatever the order of the sums), carried through the layers
        (``|W|`` times the error of the layer below; ReLU is 1-Lipschitz), the magnitudes
        ``|h|`` bounded by interval arithmetic over the box.
        """
        u = self.unit
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        a = np.maximum(np.abs(lo), np.abs(hi))  # |h| over the box
        e = u * a  # the input cast to the model's dtype
        last = len(self.W) - 1
        for i, (W, b) in enumerate(zip(self.W, self.b, strict=True)):
            m = W.shape[1] + 1
            gamma = m * u / (1.0 - m * u)
            aW = np.abs(W)
            e = aW @ e + gamma * (aW @ (a + e) + np.abs(b))
            c, r = W @ ((lo + hi) / 2) + b, aW @ ((hi - lo) / 2)
            lo, hi = c - r, c + r
            if i < last and self.relu:
                lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
            a = np.maximum(np.abs(lo), np.abs(hi))
        return float(2.0 * e.max())

    def pattern(self, x):
        """Return the activation pattern at ``x``: one bool array per hidden layer (z > 0)."""
        return [z[0] > 0.0 for z in self.hidden(np.asarray(x, dtype=np.float64)[None])]

    def affine(self, pattern):
        """Return the affine maps of the network inside ``pattern``.

        Returns
        -------
        pre : list of (A, c)
            Each hidden layer's pre-activations, ``z_ℓ = A x + c``.
        out : (A, c)
            The logits, ``z = A x + c``.
        """
        D = self.W[0].shape[1]
        A, c = np.eye(D), np.zeros(D)
        pre = []
        for W, b, on in zip(self.W[:-1], self.b[:-1], pattern, strict=True):
            A, c = W @ A, W @ c + b
            pre.append((A, c))
            if self.relu:
                A, c = A * on[:, None], c * on
        return pre, (self.W[-1] @ A, self.W[-1] @ c + self.b[-1])


def read_network(model, probe=None):
    """Return the :class:`Net` of a fitted ``MLPClassifier``, or of a pipeline ending in one.

    A pipeline's preprocessing steps (scalers, PCA, selectors, ...: :mod:`fastcf._fold`, the one
    fold of every family) are folded into the first layer, ``W₁ (M x + m) + b₁``, so that the
    network reads the raw features; the fold is checked against the steps' own ``transform``
    on probe rows (``probe``: training rows, else rows at the first step's scale).

    Raises
    ------
    TypeError
        ``model`` is no ``MLPClassifier`` (nor a pipeline ending in one), or a step is not affine.
    ValueError
        It is not fitted, its hidden activation is not ReLU or the identity (``tanh`` and
        ``logistic`` are smooth: no exact program), it has several outputs (multilabel), or the
        fold disagrees with the steps' ``transform``.
    """
    from .._fold import pipeline_parts

    steps, clf = pipeline_parts(model)
    name = type(clf).__name__
    if name != "MLPClassifier":
        raise TypeError(f"NetExplainer takes a fitted scikit-learn MLPClassifier; got {name}")
    if not hasattr(clf, "coefs_"):
        raise ValueError("the MLPClassifier is not fitted: call fit(X, y) first")
    act = clf.activation
    if act not in ACTIVATIONS:
        raise ValueError(
            f"MLPClassifier(activation={act!r}) is not piecewise linear: NetExplainer answers "
            f"exactly the activations {ACTIVATIONS} (refit with activation='relu')"
        )
    out = getattr(clf, "out_activation_", None)
    if out not in ("logistic", "softmax") or (out == "logistic" and clf.n_outputs_ != 1):
        raise ValueError(
            "a multilabel MLPClassifier (several logistic outputs) has no single class to aim "
            "for: NetExplainer takes binary and multiclass models"
        )
    W = [np.ascontiguousarray(np.asarray(c, dtype=np.float64).T) for c in clf.coefs_]
    b = [np.asarray(i, dtype=np.float64).copy() for i in clf.intercepts_]
    if not all(np.isfinite(w).all() for w in W) or not all(np.isfinite(v).all() for v in b):
        raise ValueError("the MLPClassifier's weights are not finite (a diverged fit)")
    if steps:
        W[0], b[0] = _fold_first_layer(steps, W[0], b[0], probe)
    return Net(tuple(W), tuple(b), act == "relu", out == "logistic")


def _fold_first_layer(steps, W0, b0, probe):
    """Return the first layer folded through ``steps``, checked against their ``transform``."""
    from .._fold import fold_scores, probe_rows

    Wf, bf, terms = fold_scores(steps, W0, b0, None)
    R = probe_rows(steps, Wf.shape[1], probe)
    T = R
    for _, step in steps:
        if step is not None and step != "passthrough":
            T = step.transform(T)
    T = np.asarray(T, dtype=np.float64)
    want = T @ W0.T + b0
    got = R @ Wf.T + bf
    scale = terms.scale(R)
    bad = ~(np.abs(got - want) <= 1e-9 * scale + 1e-300)
    if bad.any():
        r, j = np.argwhere(bad)[0]
        raise ValueError(
            f"the pipeline's steps ({', '.join(n for n, _ in steps)}) folded into the network's "
            f"first layer disagree with their own transform at neuron {j} of probe row {r}: "
            f"{got[r, j]!r} against {want[r, j]!r}"
        )
    return Wf, bf
