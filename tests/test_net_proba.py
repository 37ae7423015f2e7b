"""NetExplainer's ``proba=τ`` on multiclass networks: tangent cuts of log-sum-exp.

Exactness against one convex program per activation pattern with the softmax condition itself
(``reference.relu_net_proba_brute_force``: cvxpy's ``log_sum_exp`` on Clarabel): the answer
costs no more than the reference's at fastcf's margins (1e-6 on the logit gaps and on
log(1/τ)) and no less than the reference's at none (1e-5 relative: the reference's exponential
cone is solved to ~1e-8). Validity by the model's own ``predict`` and ``predict_proba``.
"""

import numpy as np
import pytest
from net_models import mlp as fitted_mlp
from reference import relu_net_proba_brute_force

from fastcf import NetExplainer


def _mlp(hidden, D, K, seed):
    return fitted_mlp(hidden, D, K, seed, n=150)


@pytest.mark.parametrize("metric", ["manhattan", "euclidean"])
@pytest.mark.parametrize("hidden,D,K,seed", [((4,), 2, 3, 1), ((3, 2), 3, 3, 2), ((5,), 2, 4, 2)])
def test_multiclass_proba_equals_the_brute_force(hidden, D, K, seed, metric):
    mlp, X = _mlp(hidden, D, K, seed)
    ex = NetExplainer(mlp)
    lo, hi = -1.5 * np.ones(D), 1.5 * np.ones(D)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=D)
    answered = 0
    for x0 in X[:2]:
        t = (int(mlp.predict(x0[None])[0]) + 1) % K
        for tau in (0.4, 0.8):
            res = ex.explain(x0, t, proba=tau, weights=w, bounds=(lo, hi), metric=metric)
            ref = dict(coefs=mlp.coefs_, intercepts=mlp.intercepts_, x0=x0, target=t, tau=tau,
                       w=w, lo=lo, hi=hi, metric=metric)  # fmt: skip
            top, _ = relu_net_proba_brute_force(**ref, margin=1e-6, slack=1e-6)
            if not np.isfinite(top):
                low, _ = relu_net_proba_brute_force(**ref)
                if not np.isfinite(low):
                    assert not res.success and res.status == 3, res.message
                continue
            assert res.success, res.message
            assert mlp.predict(res.x[None])[0] == t
            assert mlp.predict_proba(res.x[None])[0, t] >= tau
            assert res.distance <= top * (1 + 1e-5) + 1e-9
            low, _ = relu_net_proba_brute_force(**ref)
            assert res.distance >= low * (1 - 1e-5) - 1e-9
            answered += 1
    assert answered


def test_multiclass_proba_batch_exact_false_and_enumerate():
    mlp, X = _mlp((8, 8), 3, 3, 0)
    ex = NetExplainer(mlp).fit_data(X)
    Q = X[:8]
    T = (mlp.predict(Q) + 1) % 3
    res = ex.explain(Q, T, proba=0.6, weights="mad")
    ok = res.success
    assert ok.sum() >= 4
    P = mlp.predict_proba(res.x[ok])
    assert (P[np.arange(ok.sum()), T[ok]] >= 0.6).all()
    plain = ex.explain(Q, T, weights="mad")
    assert np.all(res.distance[ok] >= plain.distance[ok] * (1 - 1e-9))
    fast = ex.explain(Q, T, proba=0.6, weights="mad", exact=False)
    assert (fast.success == ok).all()
    Pf = mlp.predict_proba(fast.x[ok])
    assert (Pf[np.arange(ok.sum()), T[ok]] >= 0.6).all()
    assert np.all(fast.distance[ok] >= res.distance[ok] * (1 - 1e-6))
    i = int(np.flatnonzero(ok)[0])
    alts = ex.enumerate(Q[i], T[i], k=2, proba=0.6, weights="mad")
    assert alts and all(mlp.predict_proba(a.x[None])[0, T[i]] >= 0.6 for a in alts)
