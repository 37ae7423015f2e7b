"""The fast paths of TreeExplainer's ensembles, against the full program and brute force.

The pruned program (incumbent, reductions, reduced-cost fixing, merged intervals, constant trees
left out, an objective cutoff) must give the optimum of the full interval program
(``plain=True``) and of the brute force over every cell (tests/reference.py), to 1e-9
relative, on many small forests — binary and multiclass, with bounds, frozen features,
``max_changes`` and ``proba=``. Each reduction is also checked on its own: every cell of cost
<= ρ that the model puts in the target keeps its intervals and its leaves. ``exact=False``
answers must be valid (the model's own ``predict``) with a bound at most the optimum.
"""

import math

import numpy as np
import pytest
from reference import (
    beam_round,
    branch_node_spread,
    branch_split_best,
    branch_split_even,
    incumbent_beam,
    tree_branch_loop,
    tree_cell_points,
    tree_cells_brute_force,
    tree_leaf_sums,
    tree_model_leaves,
    tree_reduce_rounds,
)
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from tree_models import lgb, xgb

from fastcf import Status, TreeExplainer
from fastcf._kernels.tree_branch import node_spread, split_best, split_even
from fastcf._trees import parse_hist, parse_lightgbm, parse_sklearn, parse_xgboost
from fastcf._trees.incumbent import Search
from fastcf._trees.milp import Program
from fastcf._trees.query import coord_cost
from fastcf._trees.reduce import lower_bound, reduce, reduce_from
from fastcf._trees.tighten import tighten

RTOL = 1e-9


def _data(k, seed, n=200):
    return make_classification(
        n_samples=n, n_features=3, n_informative=3, n_redundant=0, n_classes=k,
        n_clusters_per_class=1, random_state=seed,
    )  # fmt: skip


_FORESTS = {
    "rf2": (lambda s: RandomForestClassifier(n_estimators=8, max_depth=3, random_state=s), 2),
    "rf3": (lambda s: RandomForestClassifier(n_estimators=6, max_depth=3, random_state=s), 3),
    "rfpure": (lambda s: RandomForestClassifier(n_estimators=5, max_depth=None, random_state=s),
               2),
    "et3": (lambda s: ExtraTreesClassifier(n_estimators=6, max_depth=3, random_state=s), 3),
    "gb2": (lambda s: GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=s), 2),
    "gb3": (lambda s: GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=s), 3),
}  # fmt: skip


_CASES = [(name, seed) for name in sorted(_FORESTS) for seed in (0, 1)]


@pytest.fixture(scope="module", params=_CASES, ids=lambda p: f"{p[0]}-{p[1]}")
def forest(request):
    name, seed = request.param
    make, k = _FORESTS[name]
    X, y = _data(k, seed=10 * seed + k, n=120 if name == "rfpure" else 200)
    model = make(seed).fit(X, y)
    return model, TreeExplainer(model), X


def _same(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    return math.isclose(got, ref, rel_tol=RTOL, abs_tol=1e-12)


def _ref_opts(x0, opts):
    ref = {k: v for k, v in opts.items() if k in ("metric", "max_changes", "proba")}
    if "weights" in opts:
        ref["w"] = opts["weights"]
    lo, hi = np.full(x0.shape, -np.inf), np.full(x0.shape, np.inf)
    if "bounds" in opts:
        lo, hi = (np.broadcast_to(b, x0.shape).astype(float) for b in opts["bounds"])
    if "frozen" in opts:
        lo, hi = lo.copy(), hi.copy()
        lo[opts["frozen"]] = hi[opts["frozen"]] = x0[opts["frozen"]]
    ref["lo"], ref["hi"] = lo, hi
    return ref


def _query(ex, x0, target, opts):
    X, _, names, tidx = ex._queries(x0, target)
    q = ex._query(
        X, names, True, opts.get("proba"), opts.get("metric", "manhattan"), opts.get("weights"),
        opts.get("frozen"), opts.get("bounds"), opts.get("max_changes"),
    )  # fmt: skip
    return X, tidx, q


_OPTS = [
    {},
    {"metric": "euclidean"},
    {"metric": "l0"},
    {"weights": np.array([2.0, 0.5, 1.0])},
    {"bounds": (-1.0, 1.5)},
    {"frozen": [0]},
    {"max_changes": 1},
    {"max_changes": 2, "metric": "euclidean", "bounds": (-2.0, 2.0)},
    {"proba": 0.7},
]


# ---------------------------------------------------------------------------------- optimum
@pytest.mark.parametrize("opts", _OPTS, ids=lambda o: "-".join(o) or "default")
def test_pruned_equals_plain_and_brute_force(forest, opts):
    model, ex, X = forest
    x0s = np.clip(X[:3], -1.0, 1.5) if "bounds" in opts else X[:3]
    for x0 in x0s:
        for target in model.classes_:
            res = ex.explain(x0, target, **opts)
            Xq, tidx, q = _query(ex, x0, target, opts)
            full = ex._milp(Xq, tidx, q, plain=True)
            ref, _ = tree_cells_brute_force(model, x0, target, **_ref_opts(x0, opts))
            assert _same(res.distance, ref), (res.distance, ref, res.message)
            assert _same(float(full.distance[0]), ref), (full.distance, ref)
            if res.success:
                assert res.status == Status.OK and res.info["gap"] == 0.0
                assert model.predict(res.x[None])[0] == target
                if "proba" in opts:
                    col = list(model.classes_).index(target)
                    assert model.predict_proba(res.x[None])[0, col] >= opts["proba"]
                if "max_changes" in opts:
                    assert np.count_nonzero(res.x != x0) <= opts["max_changes"]


@pytest.mark.parametrize("switch", ["no_tighten", "distrust", "no_branch", "short_branch"])
def test_each_stage_alone_keeps_the_optimum(forest, switch, monkeypatch):
    model, ex, X = forest
    if switch == "no_tighten":
        monkeypatch.setattr(Program, "tighten", False)
    if switch == "no_branch":  # the program after the reductions, as before the branch and bound
        monkeypatch.setattr(Program, "budget", 0)
    if switch == "short_branch":  # the branch and bound stopped early, the program finishes
        monkeypatch.setattr(Program, "budget", 2)
    for x0 in X[3:6]:
        for target in model.classes_:
            Xq, tidx, q = _query(ex, x0, target, {})
            prog = ex._program or Program(ex._forest)

            def confirm(x, t=int(tidx[0])):
                return bool(ex._in_target(x[None], np.array([t]))[0])

            q = q._replace(trust=switch != "distrust")
            a = prog.solve(Xq[0], int(tidx[0]), q.lo[0], q.hi[0], q, confirm)
            ref, _ = tree_cells_brute_force(model, x0, target)
            assert _same(a.distance, ref), (a.distance, ref, a.message)


# ---------------------------------------------------------------------------------- reductions
def _setup(ex, model, x0, target, opts):
    Xq, tidx, q = _query(ex, x0, target, opts)
    prog = Program(ex._forest)
    t = int(tidx[0])
    c, points = prog._costs(Xq[0], q.lo[0], q.hi[0], q)
    forms = prog._forms(t, q)
    lforms = prog._leaf_forms(forms)
    P, ok = tree_cell_points(model, x0, target, q.lo[0], q.hi[0], opts.get("proba"))
    cost = coord_cost(P - x0, q.w, q.metric).sum(axis=1)
    return prog, q, t, c, points, forms, lforms, P, ok, cost


def _kept(prog, red, P):
    """Whether each point's intervals lie in the ranges and its leaves are all alive."""
    k = np.column_stack([np.searchsorted(B, P[:, f], side="left") for f, B in enumerate(prog.B)])
    inside = ((k >= red.ka) & (k <= red.kb)).all(axis=1)
    leaves = prog.forest.leaves(P)
    return inside & red.alive[prog.leafpos[leaves]].all(axis=1)


@pytest.mark.parametrize("opts", [{}, {"proba": 0.7}, {"metric": "euclidean", "frozen": [1]}],
                         ids=["default", "proba", "frozen"])  # fmt: skip
def test_reductions_keep_every_cheap_cell(forest, opts):
    model, ex, X = forest
    for x0 in X[6:9]:
        for target in model.classes_:
            prog, q, t, c, points, forms, lforms, P, ok, cost = _setup(ex, model, x0, target, opts)
            best = cost[ok].min() if ok.any() else 1.0
            wide = reduce(prog, c, 4.0 * best, lforms)
            for rho in (0.5 * best, best * (1 - 1e-9), best, 1.5 * best, 4.0 * best, math.inf):
                red = reduce(prog, c, rho, lforms)
                cheap = ok & (cost <= rho)
                if cheap.any():
                    assert not red.empty and _kept(prog, red, P[cheap]).all()
                    if rho <= 4.0 * best:  # started from a reduction at a higher cutoff
                        warm = reduce_from(prog, c, rho, lforms, wide)
                        assert not warm.empty and _kept(prog, warm, P[cheap]).all()
                        assert (warm.alive <= wide.alive).all()
                    # the relaxation's fixing keeps them too
                    red2, proven = tighten(prog, q, c, red, forms, lforms, rho)
                    assert not proven and not red2.empty and _kept(prog, red2, P[cheap]).all()
                # costs and hulls alone keep every cell of cost <= rho, valid or not
                red3 = reduce(prog, c, rho, lforms, margins=False)
                if (cost <= rho).any():
                    assert not red3.empty and _kept(prog, red3, P[cost <= rho]).all()
            if ok.any():  # the bisection bound, from the optimum's own cost
                assert lower_bound(prog, c, best, lforms) <= best * (1 + 1e-12)
            else:
                assert lower_bound(prog, c, math.inf, lforms) >= 0.0


def test_branch_node_steps_choose_as_the_numpy_reference(forest):
    """The branch and bound's per-node kernels: the NumPy passes' verdicts and splits."""
    model, ex, X = forest
    rng = np.random.default_rng(3)
    for x0 in X[3:5]:
        target = model.classes_[-1]
        for opts in ({}, {"proba": 0.6}):
            prog, q, t, c, points, forms, lforms, P, ok, cost = _setup(ex, model, x0, target, opts)
            base = reduce(prog, c, math.inf, lforms)
            if base.empty:
                continue
            coef = lforms.coef
            V = np.ascontiguousarray(prog.V, dtype=np.float64)
            for _ in range(25):  # nodes: leaves dropped at random (each tree keeps one), ranges cut
                alive = base.alive & (rng.random(base.alive.size) < rng.uniform(0.3, 1.0))
                alive[prog.tree_start] |= base.alive[prog.tree_start]
                ka = base.ka.copy()
                kb = base.kb.copy()
                f = int(rng.integers(ka.size))
                if kb[f] > ka[f]:
                    ka[f] = int(rng.integers(ka[f], kb[f] + 1))
                ids = np.flatnonzero(alive)
                got = node_spread(ids, prog.leaf_tree, V, coef, prog.tree_start.size)
                ref = branch_node_spread(alive, V, coef, prog.tree_start)
                np.testing.assert_array_equal(got[0], ref[0])
                np.testing.assert_array_equal(got[1], ref[1])  # (the same sums, bit for bit)
                np.testing.assert_array_equal(got[2], ref[2])
                for tt in range(prog.tree_start.size):
                    e0, e1 = np.searchsorted(
                        prog.b_leaf, [prog.tree_start[tt], prog.tree_start[tt + 1]
                                      if tt + 1 < prog.tree_start.size else prog.leaf_ids.size]
                    )  # fmt: skip
                    fj = split_even(tt, alive, ka, kb, int(e0), int(e1), prog.b_leaf,
                                    prog.b_feat, prog.e_ka, prog.e_kb)  # fmt: skip
                    want = branch_split_even(prog, alive, ka, kb, tt)
                    assert (None if fj[0] < 0 else tuple(map(int, fj))) == want
                undecided = got[0] | (rng.random(got[0].size) < 0.3)
                fj = split_best(
                    ids, undecided, coef, prog.leaf_tree, prog.tree_start.size, ka, kb,
                    prog.leaf_estart, prog.b_feat, prog.e_ka, prog.e_kb, prog.n_y + 1,
                )  # fmt: skip
                want = branch_split_best(prog, alive, ka, kb, coef, undecided)
                assert (None if fj[0] < 0 else tuple(map(int, fj))) == want


@pytest.mark.parametrize("kind", ["rf", "gb"])
def test_reductions_of_thinned_leaves_equal_the_full_pass(kind):
    """The reductions started from leaves thinned beforehand (as reduced-cost fixing leaves
    them: some leaves of some trees dead, the ranges wide) equal the NumPy pass over every entry
    (tests/reference.py), bit for bit: a tree that lost leaves before the call has hulls to
    narrow in its first round although it loses nothing in it (the kernel recomputes a tree's
    hulls only where it lost a leaf, and every tree's in a call's first round). Cutoffs from
    the cheapest cell's to none; with and without the margins."""
    X, y = _data(2, seed=12, n=300)
    if kind == "gb":
        model = GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0)
    else:
        model = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0)
    model.fit(X, y)
    ex = TreeExplainer(model)
    rng = np.random.default_rng(13)
    narrowed = 0
    for x0 in X[:6]:
        prog, q, t, c, points, forms, lforms, P, ok, cost = _setup(ex, model, x0, 1, {})
        for rho in (math.inf, float(cost[ok].min(initial=math.inf)) * 1.5, float(cost.max())):
            for margins in (True, False):
                alive = prog.leaf_ok & (rng.random(prog.leaf_ok.size) < 0.6)
                alive[prog.tree_start] |= prog.leaf_ok[prog.tree_start]
                got = reduce(prog, c, rho, lforms, alive=alive.copy(), margins=margins)
                want = tree_reduce_rounds(
                    prog, c.flat, c.kbar, c.ka, c.kb, rho * (1.0 + 1e-12), alive & prog.leaf_ok,
                    lforms.coef, lforms.r, lforms.tol, margins,
                )  # fmt: skip
                assert got.empty == want[0]
                if not got.empty:
                    np.testing.assert_array_equal(got.ka, want[2])
                    np.testing.assert_array_equal(got.kb, want[3])
                    np.testing.assert_array_equal(got.alive, want[4])
                    np.testing.assert_array_equal(got.pruned, want[5])
                    narrowed += int((got.ka > c.ka).any() or (got.kb < c.kb).any())
    assert narrowed > 5, narrowed


_SEARCHED = {
    "rf": lambda: RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0),
    "gb3": lambda: GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0),
    "et": lambda: ExtraTreesClassifier(n_estimators=10, max_depth=4, random_state=0),
}


_LOOPED = {  # (the searched kinds, and those that route a missing value)
    **_SEARCHED,
    "hgb": lambda: HistGradientBoostingClassifier(max_iter=20, max_depth=3, random_state=0),
    "xgb": lambda: xgb(n_estimators=20, max_depth=3),
    "lgb": lambda: lgb(n_estimators=20, num_leaves=8),
}


def _looped_data(kind, seed):
    """Return (X, y, k): data for a model of ``kind``, NaN in 10 % of X where it routes them."""
    k = 3 if kind == "gb3" else 2
    X, y = make_classification(
        n_samples=300, n_features=5, n_informative=4, n_redundant=0, n_classes=k,
        n_clusters_per_class=1, random_state=seed,
    )  # fmt: skip
    if kind in ("hgb", "xgb", "lgb"):  # (models that route a missing value)
        X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    return X, y, k


def _looped_queries(model, rows, k, seed):
    """Yield (i, x0, target) over ``rows``: two rows in three with their NaNs filled, the
    target the next class."""
    rng = np.random.default_rng(seed)
    for i, x0 in enumerate(rows):
        x0 = np.where(np.isnan(x0), rng.normal(size=x0.size), x0) if i % 3 else x0
        yield i, x0, model.classes_[(i + 1) % k]


@pytest.mark.parametrize("kind", sorted(_LOOPED))
def test_branch_kernel_equals_the_numpy_loop(kind, monkeypatch):
    """The branch and bound's node loop in one kernel (``fastcf._kernels.tree_search``)
    against the loop of NumPy steps in tests/reference.py (the reductions over every leaf-box
    entry, the spreads and splits, the level-by-level walk), on every search of real queries:
    the same nodes explored, the same candidates offered to the library's arithmetic in the
    same order, the same answer bit for bit, cutoff and verdict. Each search runs three ways:
    in one call; with a deadline (back to Python every 16 nodes); and from a stack and a pool
    of one entry each (enlarged as it goes). Binary and multiclass, missing values (NaN in the
    training data and in queries), ``proba=``, Euclidean with ``max_changes``, L0."""
    import fastcf._trees.branch as branch_mod
    import fastcf._trees.milp as milp

    X, y, k = _looped_data(kind, seed=1)
    model = _LOOPED[kind]().fit(X, y)
    real = branch_mod.branch
    seen = {"searches": 0, "nodes": 0, "offered": 0, "accepted": 0, "undone": 0}

    def compare(st, c, points, x0, rho, lforms, accept, q, budget, deadline):
        budget = min(budget, 300)  # (the reference is slow)

        def recorded(offered):  # accept, keeping each point offered
            def judged(x):
                offered.append(x.copy())
                return accept(x)

            return judged

        runs = []
        for way in ("one call", "deadline", "grown"):
            offered = []
            monkeypatch.setattr(branch_mod, "STACK0", 1 if way == "grown" else 64)
            monkeypatch.setattr(branch_mod, "POOL0", 1 if way == "grown" else 2)
            end = math.inf if way == "one call" else 1e300
            judged = recorded(offered)
            runs.append((real(st, c, points, x0, rho, lforms, judged, q, budget, end), offered))
        offered = []
        want = tree_branch_loop(st, c, points, x0, rho, lforms, recorded(offered), q, budget)
        for got, seen_x in runs:
            assert (got.nodes, got.done, got.rho, got.cost) == (want[3], want[2], want[4], want[1])
            assert (got.x is None) == (want[0] is None)
            if got.x is not None:
                np.testing.assert_array_equal(got.x, want[0])
            assert len(seen_x) == len(offered)
            for a, b in zip(seen_x, offered, strict=True):
                np.testing.assert_array_equal(a, b)
        seen["searches"] += 1
        seen["nodes"] += want[3]
        seen["offered"] += len(offered)
        seen["accepted"] += want[0] is not None
        seen["undone"] += not want[2]
        return runs[0][0]

    monkeypatch.setattr(milp, "branch", compare)
    ex = TreeExplainer(model)
    for _i, x0, target in _looped_queries(model, X[:40], k, seed=2):
        for opts in ({}, {"proba": 0.6}, {"metric": "euclidean", "max_changes": 2},
                     {"metric": "l0"}):  # fmt: skip
            ex.explain(x0, target, **opts)
    assert seen["searches"] >= 8 and seen["nodes"] > 100, seen
    assert seen["offered"] > 0 and seen["accepted"] > 0, seen


@pytest.mark.parametrize("kind", sorted(_LOOPED))
def test_beam_kernels_equal_the_numpy_loop(kind, monkeypatch):
    """The incumbent's beam rounds in kernels (``fastcf._kernels.tree_beam``) against the loop
    of NumPy steps in tests/reference.py, on every beam of real queries (both paces, both
    modes): the same answer bit for bit. Binary and multiclass, missing values, ``proba=``,
    Euclidean with ``max_changes``, L0, bounds."""
    X, y, k = _looped_data(kind, seed=3)
    make = _LOOPED[kind]
    if kind == "hgb":  # (ten trees of depth 3 leave the beam nothing to improve here)
        make = lambda: HistGradientBoostingClassifier(max_iter=40, random_state=0)  # noqa: E731
    model = make().fit(X, y)
    real = Search.beam
    seen = {"beams": 0, "better": 0}

    def compare(self, width=8, depth=None, best=None, pace=True):
        depth = self.depth if depth is None else depth
        got = real(self, width, depth, best, pace)
        want = incumbent_beam(self, width, depth, best, pace)
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_array_equal(got, want)
        seen["beams"] += 1
        seen["better"] += got is not None and got is not best
        return got

    monkeypatch.setattr(Search, "beam", compare)
    ex = TreeExplainer(model)
    for i, x0, target in _looped_queries(model, np.clip(X[:24], -5.0, 5.0), k, seed=4):
        for opts in ({}, {"proba": 0.6}, {"metric": "euclidean", "max_changes": 2},
                     {"metric": "l0"}, {"max_changes": 1, "bounds": (-5.0, 5.0)}):  # fmt: skip
            ex.explain(x0, target, exact=bool(i % 2), **opts)
    assert seen["beams"] >= 40 and seen["better"] > 0, seen


@pytest.mark.parametrize("kind", sorted(_LOOPED))
def test_incumbent_judges_as_the_library(kind, monkeypatch):
    """The incumbent asks the library's arithmetic only about moves whose margin is not far
    below 0 (``Search._judge``): on every batch of moves its searches judge in real queries,
    the verdicts equal the library's on every row (no move the library puts in the target,
    and meeting τ, is left out), while most rows are left out. Binary and multiclass, XGBoost's
    and LightGBM's own arithmetic, missing values, ``proba=`` near and far from 1/2."""
    X, y, k = _looped_data(kind, seed=7)
    model = _LOOPED[kind]().fit(X, y)
    real = Search._judge
    seen = {"rows": 0, "valid": 0, "left out": 0}

    def compare(self, Z):
        ok, m = real(self, Z)
        want = self._valid(self._scores(Z))
        np.testing.assert_array_equal(ok, want)
        np.testing.assert_array_equal(m, self._margin(Z))
        seen["rows"] += Z.shape[0]
        seen["valid"] += int(want.sum())
        tol = self.gap + self.rel * (1.0 + float(np.abs(Z).max(initial=0.0)))
        seen["left out"] += int(np.count_nonzero(m < -tol))
        return ok, m

    monkeypatch.setattr(Search, "_judge", compare)
    ex = TreeExplainer(model)
    for i, x0, target in _looped_queries(model, X[:30], k, seed=8):
        for opts in ({}, {"proba": 0.52}, {"proba": 0.9}, {"metric": "euclidean"}):
            ex.explain(x0, target, exact=bool(i % 2), **opts)
    assert seen["valid"] > 100 and seen["left out"] > seen["rows"] / 3, seen


@pytest.mark.parametrize("kind", sorted(_LOOPED))
def test_move_tables_from_bit_sets_equal_the_counted_ones(kind, monkeypatch):
    """The single-move tables read from the forest's bit sets of misses
    (``single_moves_bits``) equal those that count each leaf's misses (``single_moves``), bit
    for bit, on every table of real queries' searches (every leaf alive, and the leaves a
    cutoff leaves: greedy, polish, beam); and with the bit sets switched off (a forest too
    large for them) the answers are the same. Binary and multiclass, missing values,
    ``proba=``, L0, ``max_changes``."""
    import fastcf._trees.incumbent as incumbent
    from fastcf._kernels.tree_moves import single_moves

    X, y, k = _looped_data(kind, seed=9)
    model = _LOOPED[kind]().fit(X, y)
    real = Search.tables
    seen = {"points": 0, "restricted": 0}

    def compare(self, KX):
        Z, Zn = real(self, KX)
        st = self.st
        want = single_moves(
            np.ascontiguousarray(KX, dtype=np.int64), self.ef, self.lstart, self.ea, self.eb,
            self.leaf_on, st.leaf_tree, st.V, self.fo.base, self.fo.n_trees, self.ext,
            self.n_ext, self.mf, self.mk,
        )  # fmt: skip
        np.testing.assert_array_equal(Z, want[0])
        np.testing.assert_array_equal(Zn, want[1])
        seen["points"] += KX.shape[0]
        seen["restricted"] += KX.shape[0] * int(not self.leaf_on[st.leaf_ok].all())
        return Z, Zn

    options = ({}, {"proba": 0.6}, {"metric": "l0"}, {"max_changes": 2})
    ex = TreeExplainer(model)
    with monkeypatch.context() as patch:
        patch.setattr(Search, "tables", compare)
        for i, x0, target in _looped_queries(model, X[:12], k, seed=10):
            for opts in options:
                ex.explain(x0, target, exact=bool(i % 2), **opts)
    assert seen["points"] > 500 and seen["restricted"] > 100, seen
    answers = [
        ex.explain(x0, target, exact=False, **opts)
        for _, x0, target in _looped_queries(model, X[:6], k, seed=10)
        for opts in options
    ]
    monkeypatch.setattr(incumbent, "MISS_BITS_BYTES", 0)
    ex = TreeExplainer(model)  # (a new program: its bit sets not made)
    again = [
        ex.explain(x0, target, exact=False, **opts)
        for _, x0, target in _looped_queries(model, X[:6], k, seed=10)
        for opts in options
    ]
    assert ex._program is not None and ex._program._miss_bits is False
    for a, b in zip(answers, again, strict=True):
        np.testing.assert_array_equal(a.x, b.x)
        assert a.distance == b.distance and a.success == b.success


def test_beam_round_kernel_equals_the_reference_at_ties():
    """One round of the beam (``beam_next``) against the reference's round on random rounds
    whose costs and margins are small integers, so that costs, scores and children tie
    everywhere: the same best answer and cost, and the same next beam in the same order (the
    earlier move, the earlier child at a tie; a child no cheaper than the best answer, or a
    repeat, left out)."""
    from fastcf._kernels.tree_beam import beam_next, np_sum

    rng = np.random.default_rng(5)
    found = ties = 0
    for _ in range(400):
        W, D, width, M = (int(v) for v in rng.integers(1, [5, 6, 5, 12]))
        mf, mk = rng.integers(0, D, M), rng.integers(0, 3, M)
        mp, mc = rng.normal(size=M), rng.integers(0, 4, M).astype(float)
        BX, BK = rng.normal(size=(W, D)), rng.integers(0, 3, (W, D))
        BC = rng.integers(0, 4, (W, D)).astype(float)
        best_cost = [math.inf, float(rng.integers(2, 8))][int(rng.integers(0, 2))]
        m0, rate = float(rng.integers(-2, 1)), [0.0, 0.5][int(rng.integers(0, 2))]
        cand, pt, mv, tot = [], [], [], []
        for w in range(W):
            idx = np.flatnonzero((mk != BK[w, mf]) & (rng.random(M) < 0.8))
            total = BC[w].sum() - BC[w, mf[idx]] + mc[idx]
            keep = total < best_cost
            cand.append((w, idx[keep], total[keep]))
            pt += [w] * int(keep.sum())
            mv += list(idx[keep])
            tot += list(total[keep])
        n = len(pt)
        ok, m = rng.random(n) < 0.3, rng.integers(-3, 4, n).astype(float)
        ties += n - np.unique(tot).size
        beam = [(BX[w], BK[w], BC[w]) for w in range(W)]
        want, wbest, wcost = beam_round(
            beam, cand, ok, m, (mf, mk, mp, mc), m0, rate, width, None, best_cost
        )
        X, K, C, w, i, cost = beam_next(
            np.array(pt, dtype=np.int64), np.array(mv, dtype=np.int64), np.array(tot), ok, m,
            BX, BK, BC, mf, mk, mp, mc, m0, rate, width, best_cost,
        )  # fmt: skip
        assert (w >= 0) == (wbest is not None) and cost == wcost
        if w >= 0:
            got = BX[w].copy()
            got[mf[i]] = mp[i]
            np.testing.assert_array_equal(got, wbest)
            found += 1
        assert X.shape[0] == len(want)
        for r, (x, kx, now) in enumerate(want):
            np.testing.assert_array_equal(X[r], x)
            np.testing.assert_array_equal(K[r], kx)
            np.testing.assert_array_equal(C[r], now)
            assert np_sum(C[r]) == now.sum()
    assert found > 50 and ties > 400, (found, ties)


def test_np_sum_adds_as_numpy():
    """The beam kernels add costs as NumPy's ``sum`` does (its pairwise sum), bit for bit,
    over lengths from 0 to past the 128-item blocks and its halving, on magnitudes 1e-5..1e5."""
    from fastcf._kernels.tree_beam import np_sum

    rng = np.random.default_rng(6)
    for n in [*range(40), 127, 128, 129, 136, 255, 256, 257, 1000, 4099]:
        for _ in range(5):
            a = rng.normal(size=n) * 10.0 ** rng.integers(-5, 6, n)
            assert np_sum(a) == a.sum()
            R = np.stack([a, a[::-1]])
            assert np_sum(R[1]) == R.sum(axis=1)[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaf_sums_add_as_numpy(dtype):
    """The sums of the leaves' terms (kernel) are NumPy's sequential ``add.accumulate`` along
    the trees, bit for bit, in float64 and in float32 (each partial sum rounded, as XGBoost
    adds): terms of mixed signs and magnitudes 1e-6..1e3, from 0 to 600 trees, 0 to 40 rows,
    1 to 4 scores."""
    from fastcf._kernels.tree_walk import leaf_sums

    rng = np.random.default_rng(11)
    for T in (0, 1, 2, 7, 100, 600):
        for S in (1, 2, 4):
            for N in (0, 1, 40):
                value = rng.normal(size=(50, S)) * 10.0 ** rng.integers(-6, 4, (50, S))
                value = value.astype(dtype).astype(np.float64)  # (representable, as parsed)
                base = rng.normal(size=S).astype(dtype).astype(np.float64)
                leaves = rng.integers(0, 50, (N, T))
                got = leaf_sums(value, leaves, base, dtype == np.float32)
                want = tree_leaf_sums(value, leaves, base, dtype)
                assert got.shape == want.shape == (N, S)
                np.testing.assert_array_equal(got, want)


def test_xgboost_sums_are_its_margins():
    """The float32 sums of an XGBoost forest's leaves are XGBoost's own margins, bit for bit."""
    X, y = _data(2, seed=5, n=300)
    model = xgb(n_estimators=60, max_depth=4).fit(X, y)
    fo = parse_xgboost.parse(model)
    margin = model.predict(X, output_margin=True)
    np.testing.assert_array_equal(fo.sums(fo.leaves(X))[:, 0], margin.astype(np.float64))


@pytest.mark.parametrize("kind", sorted(_SEARCHED))
def test_reductions_kernel_equals_the_full_pass_on_the_nodes_of_searches(kind, monkeypatch):
    """The reductions' kernel (over the alive leaves only) against the NumPy pass over every
    leaf-box entry (tests/reference.py), bit for bit, on every call of real searches from
    Python: the incumbent's cutoff, the bisection bound of ``exact=False``, the program's;
    with and without margins, several options. Each call's ranges, alive leaves, pruned trees,
    verdict and lower bound must be the reference's. (The branch and bound's nodes reduce
    inside its kernel, out of this test's reach: test_branch_kernel_equals_the_numpy_loop
    compares its whole searches with the reference's loop.)"""
    import fastcf._kernels.tree_reduce as tree_reduce

    k = 3 if kind == "gb3" else 2
    X, y = make_classification(
        n_samples=300, n_features=5, n_informative=4, n_redundant=0, n_classes=k,
        n_clusters_per_class=1, random_state=1,
    )  # fmt: skip
    model = _SEARCHED[kind]().fit(X, y)
    ex = TreeExplainer(model)
    st = Program(ex._forest)
    calls = []
    kernel = tree_reduce.reduce_rounds

    def copied(a):  # (an array, or a record of arrays, as it was before the call)
        if isinstance(a, np.ndarray):
            return a.copy()
        if isinstance(a, tuple):
            return type(a)(*map(copied, a))
        return a

    def record(tab, flat, kbar, forms, node, work, given, given_cost, rho, margins, rounds):
        args = (tab, flat, kbar, forms, node, work, given, given_cost, rho, margins, rounds)
        before = [copied(a) for a in args]
        out = kernel(*args)
        if not out[0]:  # the list of the alive leaves it leaves in its scratch
            np.testing.assert_array_equal(work.ids[: out[2]], np.flatnonzero(node.alive))
        calls.append((before, out, copied(node)))
        return out

    monkeypatch.setattr(tree_reduce, "reduce_rounds", record)
    monkeypatch.setattr(Program, "budget", 400)  # (the search runs, on every kind)
    for i, x0 in enumerate(X[:10]):
        target = model.classes_[(i + 1) % k]
        for opts in ({}, {"proba": 0.6}, {"metric": "euclidean", "max_changes": 2}):
            ex.explain(x0, target, **opts)
        ex.explain(x0, target, exact=False)
    assert len(calls) > 50
    kinds = set()
    for before, (empty, lb, _), after in calls:
        _, flat, kbar, forms, node0, _, _, _, rho, margins, rounds = before
        want = tree_reduce_rounds(st, flat, kbar, node0.ka, node0.kb, rho, node0.alive,
                                  forms.coef, forms.r, forms.tol, margins, rounds)  # fmt: skip
        assert empty == want[0]
        kinds.add((bool(empty), bool(margins)))
        if not empty:
            assert lb == want[1]
            np.testing.assert_array_equal(after.ka, want[2])
            np.testing.assert_array_equal(after.kb, want[3])
            np.testing.assert_array_equal(after.alive, want[4])
            np.testing.assert_array_equal(after.pruned, want[5])
    assert {(True, True), (False, True)} <= kinds  # (pruned nodes and kept ones)
    assert any(not m for _, m in kinds)  # (the incumbent's reductions, without margins)
    # (the branch and bound's nodes, given their parent's list of leaves, reduce inside its
    # kernel: test_branch_kernel_equals_the_numpy_loop compares whole searches)
    # cutoffs at a leaf's exact cost (lb + its entries' costs, summed in entry order): a leaf
    # on the boundary stays or dies by its last bit in both
    rng = np.random.default_rng(0)
    ioff = st.ioff[:-1]
    tied = 0
    for before, _, after in [c for c in calls if not c[1][0]][::5]:
        _, flat, kbar, forms, node0, *_, margins, rounds = before
        ka0, kb0 = node0.ka, node0.kb
        base = flat[ioff + np.clip(kbar, ka0, kb0)]
        lb = 0.0
        for v in base:
            lb += v
        for i in rng.choice(np.flatnonzero(after.alive), 3):
            cost = 0.0
            for e in range(st.leaf_estart[i], st.leaf_estart[i + 1]):
                f = st.b_feat[e]
                a, b = max(st.e_ka[e], ka0[f]), min(st.e_kb[e], kb0[f])
                cost += flat[ioff[f] + min(max(kbar[f], a), b)] - base[f]
            args = [copied(a) for a in before]
            args[8] = lb + cost
            got = kernel(*args)
            want = tree_reduce_rounds(st, flat, kbar, ka0, kb0, lb + cost, node0.alive,
                                      forms.coef, forms.r, forms.tol, margins,
                                      rounds)  # fmt: skip
            assert got[0] == want[0]
            if not got[0]:
                np.testing.assert_array_equal(args[4].alive, want[4])
                tied += 1
    assert tied > 10


# ---------------------------------------------------------------------------------- incumbent
_WALKED = {
    "rf": (lambda: RandomForestClassifier(n_estimators=7, max_depth=6, random_state=0),
           parse_sklearn),
    "et": (lambda: ExtraTreesClassifier(n_estimators=5, random_state=0), parse_sklearn),
    "gb": (lambda: GradientBoostingClassifier(n_estimators=5, random_state=0), parse_sklearn),
    "hist": (lambda: HistGradientBoostingClassifier(max_iter=6, random_state=0), parse_hist),
    "xgb": (lambda: xgb(n_estimators=5, max_depth=4), parse_xgboost),
    "lgb": (lambda: lgb(n_estimators=5, num_leaves=9), parse_lightgbm),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(_WALKED))
def test_leaf_walk_kernel_equals_the_level_walk_and_the_library(kind):
    """The leaves of the walk kernel are those of the NumPy level walk, on rows at every split
    value, beside it and NaN (routed as each library routes a missing value), and the library's
    own leaves (scikit-learn ``apply``; for the boosters, the same partition of the rows)."""
    make, parser = _WALKED[kind]
    X, y = _data(3, seed=4, n=300)
    nan = kind in ("hist", "xgb", "lgb")
    if nan:
        X[::7, 1] = np.nan
    model = make().fit(X, y)
    fo = parser.parse(model)
    rng = np.random.default_rng(0)
    inner = ~fo.is_leaf
    f, b = fo.feature[inner], fo.boundary[inner]
    P = X[rng.integers(0, X.shape[0], f.size)].copy()
    P[np.arange(f.size), f] = b
    P = np.vstack([X, P, np.nextafter(P, np.inf), np.nextafter(P, -np.inf)])
    if nan:
        P[rng.random(P.shape) < 0.1] = np.nan
    got = fo.leaves(P)
    np.testing.assert_array_equal(got, fo.walk_levels(P))
    own = tree_model_leaves(model, P)
    if kind in ("rf", "et", "gb"):  # (the parsed trees keep scikit-learn's node ids)
        np.testing.assert_array_equal(got - fo.offset[None, :], own)
    else:  # two rows share a leaf of a tree in the library iff they do in the parsed copy
        for t in range(fo.n_trees):
            _, a = np.unique(got[:, t], return_inverse=True)
            _, c = np.unique(own[:, t], return_inverse=True)
            pairs = np.unique(np.column_stack([a, c]), axis=0)
            assert pairs.shape[0] == np.unique(a).size == np.unique(c).size


@pytest.mark.parametrize("kind", ["rf", "xgb", "lgb"])
def test_interval_kernel_equals_numpy_searchsorted(kind):
    """``Structure.intervals`` (a kernel) is NumPy's ``searchsorted(B[f], x[f], "left")`` per
    feature, on rows at every boundary, beside it, between, and at ±inf, ±0 and NaN; a
    constant feature has no boundary at all."""
    make, parser = _WALKED[kind]
    X, y = _data(3, seed=5, n=300)
    X = np.column_stack([X, np.zeros(X.shape[0])])  # a constant feature: no split on it
    X[:, 2] = np.round(X[:, 2])  # a feature with few boundaries, around 0
    prog = Program(parser.parse(make().fit(X, y)))
    B = prog.B
    assert B[3].size == 0 and all(b.size for b in B[:3])
    rng = np.random.default_rng(1)
    D = len(B)
    rows = [X[:50]]
    for f in range(D):
        for v in np.concatenate([B[f], np.nextafter(B[f], np.inf), np.nextafter(B[f], -np.inf)]):
            r = X[rng.integers(0, X.shape[0])].copy()
            r[f] = v
            rows.append(r[None])
    special = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan, 1e300, -1e300])
    rows.append(special[rng.integers(0, special.size, (40, D))])
    for x in np.vstack(rows):
        want = [np.searchsorted(b, v, side="left") for b, v in zip(B, x, strict=True)]
        got = prog.intervals(x)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    for bad in (np.zeros(D + 1), np.zeros(D - 1), np.zeros((1, D))):
        with pytest.raises(ValueError, match="shape"):
            prog.intervals(bad)


def test_single_move_table_matches_the_forest(forest):
    model, ex, X = forest
    rng = np.random.default_rng(0)
    for x0 in X[9:11]:
        target = model.classes_[0]
        prog, q, t, c, points, forms, lforms, P, ok, cost = _setup(ex, model, x0, target, {})
        s = Search(prog, x0, t, q, c, points)
        fo = prog.forest
        xs = P[rng.choice(P.shape[0], 4, replace=False)]
        for x in xs:
            Z, Zn = s.table(s._kx(x))
            np.testing.assert_allclose(Z, fo.sums(fo.leaves(x[None]))[0], rtol=1e-9, atol=1e-9)
            R = np.repeat(x[None], s.mf.size, axis=0)
            R[np.arange(s.mf.size), s.mf] = s.mp
            np.testing.assert_allclose(Zn, fo.sums(fo.leaves(R)), rtol=1e-9, atol=1e-9)
        # a beam's points in one call: each point's table, bit for bit (the last point twice)
        KX = np.array([s._kx(x) for x in [*xs, xs[-1]]])
        Z, Zn = s.tables(KX)
        assert Z.shape == (5, prog.V.shape[1]) and Zn.shape == (5, s.mf.size, prog.V.shape[1])
        for w, kx in enumerate(KX):
            Z1, Zn1 = s.table(kx)
            np.testing.assert_array_equal(Z[w], Z1)
            np.testing.assert_array_equal(Zn[w], Zn1)


_QUICK = [{}, {"metric": "euclidean"}, {"max_changes": 1}, {"proba": 0.7}, {"bounds": (-1.0, 1.5)}]


@pytest.mark.parametrize(
    "opts", _QUICK, ids=["default", "euclidean", "max_changes", "proba", "bounds"]
)
def test_incumbent_answers_are_valid_and_bounded(forest, opts):
    model, ex, X = forest
    x0s = np.clip(X[:4], -1.0, 1.5) if "bounds" in opts else X[:4]
    for x0 in x0s:
        for target in model.classes_:
            quick = ex.explain(x0, target, exact=False, **opts)
            best = ex.explain(x0, target, **opts)
            assert quick.info["bound"] <= best.distance * (1 + RTOL) + 1e-12
            if quick.success:
                assert quick.method == "incumbent"
                assert model.predict(quick.x[None])[0] == target
                if "proba" in opts:
                    col = list(model.classes_).index(target)
                    assert model.predict_proba(quick.x[None])[0, col] >= opts["proba"]
                if "max_changes" in opts:
                    assert np.count_nonzero(quick.x != x0) <= opts["max_changes"]
                assert quick.distance >= best.distance * (1 - RTOL)
                assert quick.info["bound"] <= quick.distance * (1 + RTOL)
                if quick.status == Status.OK:  # the bound proves it
                    assert _same(quick.distance, best.distance)
                else:
                    assert quick.status == Status.MAXITER and 0.0 <= quick.info["gap"] <= 1.0
            else:
                assert quick.status in (Status.MAXITER, Status.UNREACHABLE, Status.INFEASIBLE)
                if quick.status in (Status.UNREACHABLE, Status.INFEASIBLE):
                    assert not best.success


def test_incumbent_batch_and_one_tree():
    X, y = _data(3, seed=4)
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    ex = TreeExplainer(model)
    batch = ex.explain(X[:5], model.classes_[2], exact=False)
    assert batch.x.shape == (5, 3) and batch.method == "incumbent"
    ok = batch.success
    assert (model.predict(batch.x[ok]) == model.classes_[2]).all()
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    one = TreeExplainer(tree).explain(X[0], tree.classes_[1], exact=False)  # always exact
    assert one.method == "leaves" and one.status in (Status.OK, Status.INFEASIBLE)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_branch_and_bound_equals_plain_on_larger_forests(seed):
    """Forests of 30 trees of depth 4 on 6 features: the optimised answer is the full program's."""
    X, y = make_classification(
        n_samples=400, n_features=6, n_informative=4, n_redundant=1, random_state=seed
    )
    model = RandomForestClassifier(n_estimators=30, max_depth=4, random_state=seed).fit(X, y)
    ex = TreeExplainer(model)
    for x0 in X[:4]:
        target = 1 - model.predict(x0[None])[0]
        res = ex.explain(x0, target)
        Xq, tidx, q = _query(ex, x0, target, {})
        full = ex._milp(Xq, tidx, q, plain=True)
        assert res.success and res.status == Status.OK
        assert _same(res.distance, float(full.distance[0])), (res.distance, full.distance)
        assert model.predict(res.x[None])[0] == target


@pytest.mark.needs_jit
def test_bench_rows_structure_and_agreement():
    # `python -m fastcf bench --only trees`: the rows, and the exact distances equal to the
    # plain program's wherever it finished (no timed assert: speed is the benchmark's business)
    from fastcf.bench.trees import tree_rows

    rows = tree_rows(quick=True, n_queries=2, time_limit=2.0)
    assert [r["name"].split(",")[0] for r in rows] == ["trees exact", "trees exact=False"]
    for r in rows:
        assert r["n_queries"] == 2 and r["fastcf_s"] > 0 and r["baseline_s"] > 0
        assert r["ratio"] == pytest.approx(r["baseline_s"] / r["fastcf_s"])
        assert len(r["fastcf_per_query"]) == len(r["baseline_per_query"]) == 2
    r = rows[0]
    d_exact, d_plain = np.array(r["d_exact"]), np.array(r["d_plain"])
    assert r["n_agree"] == r["n_queries"] - r["baseline_stopped"]
    assert np.all(np.isfinite(d_exact))
    # a stopped plain program's answer is valid, so never cheaper than the optimum
    assert np.all(d_exact <= d_plain * (1 + RTOL))
    assert r["quick_valid"] == 2 and np.all(np.array(r["d_quick"]) >= d_exact * (1 - RTOL))


def test_bench_table_marks_a_stopped_baseline():
    from fastcf.bench import _format
    from fastcf.bench.common import row

    r = row("q", [1.0, 2.0], [10.0, 30.0], "plain")  # medians 1.5 s and 20 s
    assert "| 13.3× |" in _format([r], "t") and "≥" not in _format([r], "t")
    r["baseline_stopped"] = 1  # its time is a lower bound: so is the speed-up
    text = _format([r], "t")
    assert "≥ 13.3×" in text and "≤ 0.0833" in text


def test_an_empty_program_is_its_one_cell():
    """A program without columns (the reductions left one cell, every tree constant in it):
    HiGHS reports it "Empty" without checking even its rows' constant bounds (a form's,
    max_changes'), so the verdict checks them to its feasibility tolerance (1e-7): the cell is
    the candidate where they hold, and nothing is feasible where one fails. (Found when a
    stronger reduction left one cell: the query came back as "the MILP solver stopped", the
    incumbent not proven optimal.)"""
    import highspy

    cases = [(-np.inf, 1.0, "solution"), (-np.inf, -1.0, "infeasible"),
             (0.5, np.inf, "infeasible"), (0.0, 0.0, "solution"), (1e-9, np.inf, "solution"),
             (-np.inf, -1e-5, "infeasible")]  # fmt: skip
    for lower, upper, kind in cases:
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.addRow(lower, upper, 0, np.array([], dtype=np.int32), np.array([]))
        h.run()
        assert h.getModelStatus() == highspy.HighsModelStatus.kModelEmpty
        out = Program._status(None, h)
        assert (out["kind"], out["limit"]) == (kind, False)


def test_the_search_runs_for_every_model_and_budget_zero_skips_it(monkeypatch):
    """The branch and bound runs before the program for every model kind (random forest,
    extra trees, scikit-learn boosting, XGBoost, LightGBM); ``Program.budget = 0`` sends the
    query to the program after the reductions, with the same answers."""
    from tree_models import lgb, xgb

    from fastcf._trees import branch as _branch

    X, y = _data(2, seed=3)
    models = {
        "rf": RandomForestClassifier(n_estimators=6, max_depth=3, random_state=0),
        "gb": GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=0),
        "et": ExtraTreesClassifier(n_estimators=6, max_depth=3, random_state=0),
        "xgb": xgb(n_estimators=20, max_depth=3),
        "lgb": lgb(n_estimators=30, num_leaves=16),
    }
    calls = []
    real = _branch.branch

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr("fastcf._trees.milp.branch", counted)
    for name, model in models.items():
        model.fit(X, y)
        ex = TreeExplainer(model)
        searched, skipped = [], []
        for x0 in X[:8]:
            t = 1 - int(model.predict(x0[None])[0])
            calls.clear()
            res = ex.explain(x0, t)
            searched.append(bool(calls))
            monkeypatch.setattr(Program, "budget", 0)
            calls.clear()
            other = ex.explain(x0, t)
            skipped.append(bool(calls))
            monkeypatch.setattr(Program, "budget", None)
            assert res.success and other.success
            assert _same(res.distance, other.distance), name
        assert any(searched) and not any(skipped), name
