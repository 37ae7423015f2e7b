"""Fuzzing NetExplainer against the brute force over every activation pattern.

Random small networks (1–2 hidden layers, at most 6 hidden neurons, 2–3 inputs, 2–3 classes),
their weights drawn by hypothesis (magnitudes 10⁻³…10³, zero rows and repeated rows included)
and set into a scikit-learn ``MLPClassifier`` (fitted once for its attributes): the model the
user gives is then exactly that network, and its own ``predict`` judges. Random boxes, weights,
frozen features, ``max_changes`` and metric. Invariants:

* a success is classified as the target by the model's ``predict``, lies in the box, keeps the
  frozen features and changes at most ``max_changes``;
* its cost is the brute force's (``reference.relu_net_brute_force``: one LP per pattern) within
  1e-6 relative: no suboptimal answer;
* a failure only where the brute force's point is not classified as the target by the model
  either (no false failure).

Profiles as ``tests/test_fuzz.py`` (``HYPOTHESIS_PROFILE=long``: 10 000 examples;
``FASTCF_FUZZ_EXAMPLES=n`` overrides).
"""

import os
import warnings

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from reference import relu_net_brute_force
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from fastcf import NetExplainer

LONG = settings.default.max_examples >= 10_000


def examples(ci):
    if os.environ.get("FASTCF_FUZZ_EXAMPLES"):
        return int(os.environ["FASTCF_FUZZ_EXAMPLES"])
    return settings.default.max_examples if LONG else ci


_BASE = {}


def _base(hidden, D, K):
    """A fitted MLPClassifier of this shape (its attributes; the weights are replaced)."""
    key = (hidden, D, K)
    if key not in _BASE:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(12 * K, D))
        y = np.arange(12 * K) % K
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _BASE[key] = MLPClassifier(hidden, max_iter=2, random_state=0).fit(X, y)
    return _BASE[key]


def _values(draw, shape):
    exp = draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape)),
                        max_size=int(np.prod(shape))))  # fmt: skip
    sgn = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=len(exp), max_size=len(exp)))
    mant = draw(st.lists(st.floats(1.0, 9.99), min_size=len(exp), max_size=len(exp)))
    v = np.array([s * m * 10.0**e for s, m, e in zip(sgn, mant, exp, strict=True)]).reshape(shape)
    if draw(st.booleans()):  # a zero row, or two equal rows: degenerate networks
        r = draw(st.integers(0, shape[0] - 1))
        v[r] = 0.0 if draw(st.booleans()) else v[(r + 1) % shape[0]]
    return v


@st.composite
def problems(draw):
    K = draw(st.integers(2, 3))
    D = draw(st.integers(2, 3))
    hidden = draw(st.sampled_from([(2,), (3,), (4,), (6,), (2, 2), (3, 2), (2, 3)]))
    mlp = _base(hidden, D, K)
    sizes = [D, *hidden, 1 if K == 2 else K]
    mlp.coefs_ = [_values(draw, (sizes[i], sizes[i + 1])) for i in range(len(sizes) - 1)]
    mlp.intercepts_ = [_values(draw, (sizes[i + 1], 1))[:, 0] for i in range(len(sizes) - 1)]
    x0 = np.array(draw(st.lists(st.floats(-2, 2), min_size=D, max_size=D)))
    width = np.array(draw(st.lists(st.floats(0.1, 3.0), min_size=D, max_size=D)))
    lo, hi = x0 - width * draw(st.floats(0.0, 1.0)), x0 + width
    w = np.array(draw(st.lists(st.floats(0.1, 10.0), min_size=D, max_size=D)))
    target = draw(st.integers(0, K - 1))
    frozen = draw(st.sampled_from([None, [0]]))
    metric = draw(st.sampled_from(["manhattan", "manhattan", "l0"]))
    max_changes = draw(st.sampled_from([None, None, 1]))
    return mlp, x0, lo, hi, w, target, frozen, metric, max_changes


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(problems())
def test_fuzz_net_explain_equals_the_brute_force(problem):
    mlp, x0, lo, hi, w, t, frozen, metric, max_changes = problem
    note(f"coefs={[c.tolist() for c in mlp.coefs_]!r}")
    note(f"intercepts={[c.tolist() for c in mlp.intercepts_]!r} w={w.tolist()!r}")
    ex = NetExplainer(mlp)
    label = mlp.classes_[t]
    res = ex.explain(x0, label, bounds=(lo, hi), weights=w, frozen=frozen, metric=metric,
                     max_changes=max_changes)  # fmt: skip
    blo, bhi = lo.copy(), hi.copy()
    if frozen:
        blo[frozen], bhi[frozen] = x0[frozen], x0[frozen]
    cost, xr = relu_net_brute_force(
        mlp.coefs_, mlp.intercepts_, x0, t, 1e-6, w, blo, bhi, binary=len(mlp.classes_) == 2,
        metric=metric, max_changes=max_changes,
    )  # fmt: skip
    if mlp.predict(x0[None])[0] == label:  # x̄ itself, as the model classifies it
        cost, xr = 0.0, x0
    if res.success:
        assert mlp.predict(res.x[None])[0] == label
        assert np.all(res.x >= lo) and np.all(res.x <= hi)
        if frozen:
            assert res.x[0] == x0[0]
        if max_changes is not None:
            assert np.count_nonzero(res.x != x0) <= max_changes
        if np.isfinite(cost):
            # (the brute force at margin 1e-6: an answer re-aimed at a larger margin costs more)
            # (below it is no error: a point within HiGHS's tolerance of the margin that the
            # model itself classifies as the target, e.g. on a tie it gives the first class)
            assert res.distance <= cost * (1 + 1e-6) + 1e-9, (
                res.distance,
                cost,
                res.x,
                xr,
                mlp.coefs_,
                mlp.intercepts_,
            )
    else:
        # no false failure: the reference's point (at margin 1e-6, to the LP's tolerance) is
        # not one the model itself puts in the target either
        assert xr is None or mlp.predict(xr[None])[0] != label, (
            res.status,
            res.message,
            cost,
            xr,
            mlp.coefs_,
            mlp.intercepts_,
        )
