"""NetExplainer's ``time_limit=`` bounds the whole query (issue 54, "Bounded latency").

The limit runs from the row's start: the neurons' bounds tightened by linear and conic
programs, the searches, HiGHS's program and the multiclass ``proba=`` cuts all stop at it. A
limit already spent when the first answer is found leaves one program of the search (its root,
for the bound) and nothing more: counted here, not timed, so that the tests do not depend on
the machine's load (the overrun on the clock is measured, not asserted: the changelog).
"""

from net_models import mlp as fitted_mlp

from fastcf import NetExplainer
from fastcf._net import euclid, search


def _counting(monkeypatch, owner, name):
    calls = []
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _rejected(hidden=(24, 24), D=6, K=2, seed=3, rows=4):
    mlp, X = fitted_mlp(hidden, D, K, seed, n=300)
    ex = NetExplainer(mlp).fit_data(X)
    X0 = X[:rows]
    return mlp, ex, X0, (mlp.predict(X0) + 1) % K


def _valid_or_stopped(res, mlp, x0, t):
    if res.success:
        assert mlp.predict(res.x[None])[0] == t
        assert res.status in (0, 1)
        assert res.info["bound"] <= res.distance * (1 + 1e-9) + 1e-12
    else:
        assert res.status == 1 and "time_limit" in res.message, res.message


def test_a_spent_limit_leaves_the_manhattan_search_its_root(monkeypatch):
    mlp, ex, X0, T = _rejected()
    for x0, t in zip(X0, T, strict=True):
        ex.explain(x0, t)  # (kernels loaded)
        runs = _counting(monkeypatch, search._Lp, "run")
        res = ex.explain(x0, t, time_limit=1e-9)
        assert len(runs) <= 1  # the root relaxation (the bound), no tightening, no node
        _valid_or_stopped(res, mlp, x0, t)
        monkeypatch.undo()


def test_a_spent_limit_leaves_the_euclidean_search_its_root(monkeypatch):
    mlp, ex, X0, T = _rejected()
    for x0, t in zip(X0, T, strict=True):
        lps = _counting(monkeypatch, search._Lp, "run")  # (tighten_layers)
        cones = _counting(monkeypatch, euclid, "tighten_ball")
        nodes = _counting(monkeypatch, euclid._Layout, "solve")
        res = ex.explain(x0, t, metric="euclidean", time_limit=1e-9)
        assert not lps  # no neuron tightened past the limit
        assert len(nodes) <= 1  # the root's relaxation
        assert len(cones) <= 1  # (entered at most once, and it returns at once)
        _valid_or_stopped(res, mlp, x0, t)
        monkeypatch.undo()


def test_a_spent_limit_stops_the_multiclass_proba_cuts(monkeypatch):
    from fastcf._net import answer

    mlp, ex, X0, T = _rejected(hidden=(16,), D=4, K=3, seed=2)
    for x0, t in zip(X0, T, strict=True):
        rows = _counting(monkeypatch, answer, "_row")
        res = ex.explain(x0, t, proba=0.9, time_limit=1e-9)
        assert len(rows) == 1  # the first program only
        if res.success:
            assert mlp.predict_proba(res.x[None])[0, t] >= 0.9
        else:
            assert res.status == 1 and "time_limit" in res.message, res.message
        monkeypatch.undo()
