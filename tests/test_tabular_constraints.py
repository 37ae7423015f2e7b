"""TabularExplainer: every constraint the user sets is honoured or refused, on every solver path.

The paths: a binary model (the branch-and-bound of fastcf._tabular.knapsack), the same model with
max_changes= and a multiclass model (both HiGHS), enumerate, and batches of several rows. Every
success is checked against each constraint directly on the answer DataFrame, and against the
pipeline's own predict; a contradiction between constraints (an immutable column whose value the
bounds or allowed categories exclude, a monotone column whose bounds lie behind the row) is an
infeasible row whose message names the column; bounds and values a column's dtype cannot hold
are refused; an ordered pandas Categorical moves along its declared order.
"""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from fastcf._status import Status
from fastcf.tabular import FrameCounterfactualBatch, TabularExplainer

ORDER = ["low", "mid", "high"]  # edu's declared order; a default OrdinalEncoder codes high<low<mid
NUMS = ["income", "age", "children"]
INFEASIBLE = int(Status.INFEASIBLE)

# path -> (model kind, the target of the rows asked about, extra options of explain/enumerate)
PATHS = {
    "branch-and-bound": ("binary", 1, {}),
    "HiGHS (max_changes)": ("binary", 1, {"max_changes": 3}),
    "HiGHS (multiclass)": ("multiclass", 2, {}),
}


def _data(age_dtype="int8", n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "income": rng.normal(50, 15, n).round(1),
            "age": rng.integers(18, 80, n).astype(age_dtype),
            "children": rng.integers(0, 5, n),
            "home": rng.choice(["own", "rent", "parents"], n),
            "edu": pd.Categorical(rng.choice(ORDER, n), categories=ORDER, ordered=True),
            "job": rng.choice(["a", "b", "c"], n),
        }
    )
    s = (
        0.05 * (X.income - 50)
        + 0.03 * (X.age.astype(float) - 50)
        - 0.3 * X.children
        + 0.8 * (X.home == "own")
        + 0.7 * X.edu.cat.codes
        + 0.4 * (X.job == "a")
        + rng.normal(0, 0.5, n)
    )
    binary = (s > np.median(s)).astype(int)
    multiclass = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3]))
    return X, binary, multiclass


@functools.cache
def _model(kind, age_dtype="int8"):
    X, binary, multiclass = _data(age_dtype)
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), NUMS),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["home", "job"]),
            ("ord", OrdinalEncoder(), ["edu"]),  # default: alphabetical codes, not ORDER
        ]
    )
    y = binary if kind == "binary" else multiclass
    return make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X, y), X


def _rows(model, X, target, bad, n=3):
    """Rows not yet in the target: ``n`` where ``bad`` holds, then ``n`` where it does not."""
    todo = X[model.predict(X) != target]
    hit = bad(todo).to_numpy(dtype=bool)
    return pd.concat([todo[hit].iloc[:n], todo[~hit].iloc[:n]])


def _rank(v):
    return ORDER.index(v)


def _honoured(model, r, target, constraints, path):
    """Assert that the success ``r`` honours each constraint, read on its answer DataFrame."""
    assert r.success and r.status == 0, r.message
    assert ("branch-and-bound" if path == "branch-and-bound" else "HiGHS") in r.message
    assert model.predict(r.x)[0] == target  # the pipeline's own check, not the explainer's
    assert list(r.x.dtypes) == list(r.x0.dtypes)
    x, x0 = r.x.iloc[0], r.x0.iloc[0]
    for c in constraints.get("immutable", ()):
        assert x[c] == x0[c], c
    for c, cats in constraints.get("allowed", {}).items():
        assert x[c] in cats, (c, x[c])
    for c, moves in constraints.get("transitions", {}).items():
        assert x[c] == x0[c] or x[c] in moves.get(x0[c], []), (c, x0[c], x[c])
    for c, (lo, hi) in constraints.get("bounds", {}).items():
        v = _rank(x[c]) if c == "edu" else float(x[c])
        if lo is not None:
            assert v >= (_rank(lo) if c == "edu" else lo), (c, x[c])
        if hi is not None:
            assert v <= (_rank(hi) if c == "edu" else hi), (c, x[c])
    for c in constraints.get("increase_only", ()):
        assert (_rank(x[c]) >= _rank(x0[c])) if c == "edu" else x[c] >= x0[c], (c, x0[c], x[c])
    for c in constraints.get("decrease_only", ()):
        assert (_rank(x[c]) <= _rank(x0[c])) if c == "edu" else x[c] <= x0[c], (c, x0[c], x[c])
    m = constraints.get("max_changes")
    if m is not None:
        assert len(r.changed) <= m


# -------------------------------------------- contradictions: infeasible, naming the column

# case -> (explainer options, query options, the rows where they contradict, the message)
CONTRADICTIONS = {
    "immutable category outside allowed": (
        {"immutable": ["home"]},
        {"allowed": {"home": ["own", "rent"]}},
        lambda R: R.home == "parents",
        "column 'home' is immutable, but its category 'parents' is not allowed",
    ),
    "immutable category, allowed and transitions": (
        {"immutable": ["home"]},
        {"allowed": {"home": ["own", "rent"]}, "transitions": {"home": {"parents": ["own"]}}},
        lambda R: R.home == "parents",
        "column 'home' is immutable, but its category 'parents' is not allowed",
    ),
    "immutable ordinal outside its bounds": (
        {"immutable": ["edu"]},
        {"bounds": {"edu": ("mid", None)}},
        lambda R: R.edu == "low",
        "column 'edu' is immutable, but its category 'low' is not allowed",
    ),
    "immutable number outside its bounds": (
        {"immutable": ["income"]},
        {"bounds": {"income": (45.0, None)}},
        lambda R: R.income < 45,
        "column 'income' is immutable, but its value",
    ),
    "increase-only number, bounds below it": (
        {"increase_only": ["income"]},
        {"bounds": {"income": (None, 40.0)}},
        lambda R: R.income > 40,
        "column 'income' is increase-only, but its bounds",
    ),
    "increase-only ordinal, bounds below it": (
        {"increase_only": ["edu"]},
        {"bounds": {"edu": (None, "mid")}},
        lambda R: R.edu == "high",
        "column 'edu' is increase-only, and allowed=, transitions= or bounds= leave no category",
    ),
    "decrease-only ordinal, bounds above it": (
        {"decrease_only": ["edu"]},
        {"bounds": {"edu": ("mid", None)}},
        lambda R: R.edu == "low",
        "column 'edu' is decrease-only, and allowed=, transitions= or bounds= leave no category",
    ),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", list(CONTRADICTIONS))
def test_contradictions_are_infeasible_on_every_path(case, path):
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    opts, query, bad, says = CONTRADICTIONS[case]
    tx = TabularExplainer(model, X, **opts)
    rows = _rows(model, X, target, bad)
    contradicts = bad(rows).to_numpy(dtype=bool)
    assert contradicts.sum() == 3 and (~contradicts).sum() == 3
    constraints = {**opts, **query, **extra}
    res = tx.explain(rows, target, **query, **extra)  # a batch
    assert isinstance(res, FrameCounterfactualBatch) and len(res) == len(rows)
    for i, r in enumerate(res):
        if contradicts[i]:
            assert not r.success and r.status == INFEASIBLE, (r.status, r.message)
            assert says in r.message, r.message
            pd.testing.assert_frame_equal(r.x, r.x0)
            assert np.isinf(r.distance)
        elif r.success:
            _honoured(model, r, target, constraints, path)
    assert res.success[~contradicts].any()  # the others are answered
    one = rows.iloc[[0]]  # a single row, and enumerate, on the same path
    r = tx.explain(one, target, **query, **extra)
    assert not r.success and r.status == INFEASIBLE and says in r.message
    assert tx.enumerate(one, target, k=3, **query, **extra) == []
    fine = rows.iloc[[int(np.flatnonzero(res.success)[0])]]
    alts = tx.enumerate(fine, target, k=3, **query, **extra)
    assert alts
    for a in alts:
        _honoured(model, a, target, constraints, path)


@pytest.mark.parametrize("path", list(PATHS))
def test_enumerate_alternatives_honour_allowed_and_bounds(path):
    """enumerate freezes columns; a frozen column whose value the query excludes must not stay."""
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    tx = TabularExplainer(model, X)
    rows = X[(model.predict(X) != target) & (X.home == "parents") & (X.edu == "low")].iloc[:3]
    query = {"allowed": {"home": ["own", "rent"]}, "bounds": {"edu": ("mid", None)}}
    n = 0
    for i in range(len(rows)):
        for a in tx.enumerate(rows.iloc[[i]], target, k=4, **query, **extra):
            _honoured(model, a, target, {**query, **extra}, path)
            n += 1
    assert n >= 6


@pytest.mark.parametrize("path", list(PATHS))
def test_transitions_keep_an_immutable_column_where_it_is(path):
    """Transitions let a row keep its category, so they never contradict immutability."""
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    tx = TabularExplainer(model, X, immutable=["home"])
    rows = _rows(model, X, target, lambda R: R.home == "parents")
    moves = {"home": {"parents": ["own"], "rent": ["own"]}}
    res = tx.explain(rows, target, transitions=moves, **extra)
    assert res.success.all(), res.message
    for r in res:
        _honoured(model, r, target, {"immutable": ["home"], "transitions": moves, **extra}, path)
    # with allowed= leaving 'parents' out, the contradiction is reported, not papered over
    res = tx.explain(rows, target, transitions=moves, allowed={"home": ["own", "rent"]}, **extra)
    parents = (rows.home == "parents").to_numpy()
    assert not res.success[parents].any() and (res.status[parents] == INFEASIBLE).all()


# -------------------------------------------------------------------- the columns' dtypes


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("dtype, bounds", [("int8", (200, 300)), ("uint8", (-10, -5))])
def test_bounds_outside_the_dtype_are_refused(dtype, bounds, path):
    kind, target, extra = PATHS[path]
    model, X = _model(kind, dtype)
    tx = TabularExplainer(model, X)
    rows = _rows(model, X, target, lambda R: R.age > 0)
    msg = rf"bounds\['age'\] = .* lies outside the values of column 'age', of dtype {dtype}"
    with pytest.raises(ValueError, match=msg):
        tx.explain(rows, target, bounds={"age": bounds}, **extra)
    with pytest.raises(ValueError, match=msg):
        tx.explain(rows.iloc[[0]], target, bounds={"age": bounds}, **extra)
    with pytest.raises(ValueError, match=msg):
        tx.enumerate(rows.iloc[[0]], target, k=2, bounds={"age": bounds}, **extra)


@pytest.mark.parametrize("path", list(PATHS))
def test_answers_stay_within_the_dtype(path):
    """Bounds reaching past int8's 127: the answers stay within 127, or the row is infeasible."""
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    others = ["income", "children", "home", "edu", "job"]
    tx = TabularExplainer(model, X, immutable=others)
    todo = X[model.predict(X) != target]
    score = model.predict_proba(todo)[:, target]
    rows = todo.iloc[np.argsort(score)[[0, 1, 2, -3, -2, -1]]]  # far from the target, and near
    bounds = {"age": (100, 1000)}
    res = tx.explain(rows, target, bounds=bounds, **extra)
    assert set(res.status.tolist()) == {0, INFEASIBLE}, res.message  # never a wrapped answer (4)
    for r in res:
        if r.success:
            _honoured(model, r, target, {"immutable": others, "bounds": {"age": (100, 127)}}, path)
            assert r.x.age.dtype == np.int8
    for r in [tx.explain(rows.iloc[[i]], target, bounds=bounds, **extra) for i in (0, 5)]:
        assert r.status in (0, INFEASIBLE)
        assert not r.success or 100 <= r.x.age.iloc[0] <= 127


def test_query_values_the_dtype_cannot_hold_are_refused():
    model, X = _model("binary")
    tx = TabularExplainer(model, X)
    row = X[model.predict(X) == 0].iloc[0].to_dict()
    row["age"] = 200  # as a dict it would be cast to int8: -56
    with pytest.raises(ValueError, match=r"column 'age' of row 0 holds 200.*int8 \(-128..127\)"):
        tx.explain(row, 1)
    frame = pd.DataFrame([row]).astype({"edu": X.edu.dtype})  # an int64 column holding 200
    with pytest.raises(ValueError, match=r"column 'age' of row 0 holds 200.*int8"):
        tx.explain(frame, 1)
    with pytest.raises(ValueError, match=r"column 'age' of row 0 holds 200.*int8"):
        tx.enumerate(frame, 1)


@pytest.mark.parametrize("path", list(PATHS))
def test_integer_dtypes_stay_integral_whatever_integer_says(path):
    """integer= without an int column: its answers are still integers, costed as written."""
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    others = ["income", "home", "edu", "job"]
    tx = TabularExplainer(model, X, immutable=others, integer=["children"])
    assert tx.kinds_["age"] == "integer"
    rows = _rows(model, X, target, lambda R: R.age > 0)
    res = tx.explain(rows, target, **extra)
    assert res.success.any()
    for r in res:
        if r.success:
            _honoured(model, r, target, {"immutable": others, **extra}, path)
            ch = r.changes.set_index("column")
            for c in ("age", "children"):  # the cost of each is that of the written answer
                if c in ch.index:
                    moved = abs(float(ch.at[c, "after"]) - float(ch.at[c, "before"]))
                    assert ch.at[c, "cost"] == pytest.approx(tx.weights_[c] * moved, rel=1e-12)


def test_categories_the_dtype_cannot_hold_are_refused():
    X, y, _ = _data()
    X["home"] = pd.Categorical(X.home, categories=["own", "rent", "parents"])
    cats = [["own", "rent", "parents", "castle"]]  # the encoder knows one the dtype does not
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), NUMS),
            ("home", OneHotEncoder(categories=cats, handle_unknown="ignore"), ["home"]),
        ]
    )
    model = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X, y)
    tx = TabularExplainer(model, X)
    rows = X[model.predict(X) == 0].iloc[:4]
    msg = "names the category 'castle', which column 'home'"
    with pytest.raises(ValueError, match=msg):
        tx.explain(rows, 1, allowed={"home": ["own", "castle"]})
    with pytest.raises(ValueError, match=msg):
        tx.enumerate(rows.iloc[[0]], 1, transitions={"home": {"rent": ["castle"]}})
    res = tx.explain(rows, 1, allowed={"home": ["own", "rent"]}, max_changes=2)
    assert res.success.all()
    assert set(res.x.home) <= {"own", "rent"} and res.x.home.notna().all()
    assert (model.predict(res.x) == 1).all()


# ---------------------------------------------------------- ordered pandas Categoricals


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize(
    "way, up", [("increase_only", 1), ("increase_only", 0), ("decrease_only", 1)]
)
def test_ordered_categorical_moves_along_its_declared_order(way, up, path):
    """Its default OrdinalEncoder codes high < low < mid; the dtype says low < mid < high."""
    kind, target, extra = PATHS[path]
    if not up:  # ask for the lowest class: the model then prefers a lower edu
        target = 0
    model, X = _model(kind)
    w = 0.05  # a cheap edu: answers move it whenever they may
    tx = TabularExplainer(model, X, weights={"edu": w}, **{way: ["edu"]})
    rows = X[model.predict(X) != target].iloc[:40]
    res = tx.explain(rows, target, **extra)
    assert res.success.all(), res.message
    moved = 0
    for r in res:
        _honoured(model, r, target, {way: ["edu"], **extra}, path)
        before, after = _rank(r.x0.edu.iloc[0]), _rank(r.x.edu.iloc[0])
        cost = r.costs[list(X.columns).index("edu")]
        assert cost == pytest.approx(w * abs(after - before), rel=1e-12)  # ranks of ORDER
        moved += after != before
    if way == "increase_only" and up:  # the model wants more edu, and 'high' is the top
        assert moved and "high" in set(res.x.edu[res.x.edu != rows.edu])
    alts = tx.enumerate(rows.iloc[[0]], target, k=3, **extra)
    assert alts
    for a in alts:
        _honoured(model, a, target, {way: ["edu"], **extra}, path)


@pytest.mark.parametrize("path", list(PATHS))
def test_ordinal_bounds_follow_the_declared_order(path):
    kind, target, extra = PATHS[path]
    model, X = _model(kind)
    tx = TabularExplainer(model, X)
    rows = _rows(model, X, target, lambda R: R.edu == "low")
    bounds = {"edu": ("mid", "high")}
    res = tx.explain(rows, target, bounds=bounds, **extra)
    assert res.success.all(), res.message
    for r in res:
        _honoured(model, r, target, {"bounds": bounds, **extra}, path)


# ---------------------------------------------------------------------- column labels


def test_changes_keep_the_frames_column_labels():
    X, y, _ = _data()
    X.columns = list(range(X.shape[1]))  # integer labels: 0 income ... 5 job
    pre = ColumnTransformer(
        [("num", StandardScaler(), [0, 1, 2]), ("cat", OneHotEncoder(), [3, 4, 5])]
    )
    model = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X, y)
    tx = TabularExplainer(model, X, immutable=[1])
    rows = X[model.predict(X.to_numpy()) == 0].iloc[:8]
    res = tx.explain(rows, 1)
    assert res.success.all() and (model.predict(res.x.to_numpy()) == 1).all()
    assert (res.x[1].to_numpy() == rows[1].to_numpy()).all()
    changed = [c for r in res for c in r.changed]
    assert changed and all(type(c) is int and c in X.columns for c in changed)
    assert all(type(c) is int for r in res for c in r.changes["column"])
    assert res[0].changed == list(res[0].changes["column"])
    assert all(type(c) is int for c in res.summary["changed_share"])


def test_method_names_the_solver_that_answered():
    """method says which solver answered: the branch-and-bound (binary, no max_changes) or HiGHS."""
    rng = np.random.default_rng(3)
    n = 200
    X = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(50.0, 10.0, n),
            "home": rng.choice(["own", "rent", "parents"], n),
        }
    )
    y = ((X.age - 45) / 10 + (X.income - 50) / 10 + rng.normal(0, 0.5, n) > 0).astype(int)
    ct = ColumnTransformer(
        [("num", StandardScaler(), ["age", "income"]), ("cat", OneHotEncoder(), ["home"])]
    )
    model = make_pipeline(ct, LogisticRegression()).fit(X, y)
    tx = TabularExplainer(model, X)
    rows = X[model.predict(X) == 0].iloc[:3]
    knap = tx.explain(rows, 1)
    assert knap.success.all()
    assert knap.method == "milp (branch-and-bound)"
    assert all(i["solver"] == "branch-and-bound" for i in knap.info)
    highs = tx.explain(rows, 1, max_changes=1)
    assert highs.method == "milp (HiGHS)"
    assert all(i["solver"] == "HiGHS" for i in highs.info)


def test_one_vocabulary_margin_zero_and_lazy_enumerate():
    """margin >= 0 and enumerate(k=5 | None) as in LinearExplainer (issue 31's dialects)."""
    rng = np.random.default_rng(4)
    n = 200
    X = pd.DataFrame({"age": rng.integers(20, 70, n), "income": rng.normal(50.0, 10.0, n)})
    y = ((X.age - 45) / 10 + (X.income - 50) / 10 + rng.normal(0, 0.5, n) > 0).astype(int)
    model = make_pipeline(
        ColumnTransformer([("num", StandardScaler(), ["age", "income"])]), LogisticRegression()
    ).fit(X, y)
    tx = TabularExplainer(model, X)
    row = X[model.predict(X) == 0].iloc[[0]]
    res = tx.explain(row, 1, margin=0.0)
    assert res.success and model.predict(res.x)[0] == 1
    with pytest.raises(ValueError, match="margin"):
        tx.explain(row, 1, margin=-1.0)
    lazy = tx.enumerate(row, 1, k=None)
    first = next(lazy)
    listed = tx.enumerate(row, 1)
    assert 1 <= len(listed) <= 5
    assert first.distance == listed[0].distance
    assert list(first.changed) == list(listed[0].changed)


_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64"]


@settings(max_examples=300, deadline=None)
@given(
    dtype=st.sampled_from(_DTYPES + ["bool", "object"]),
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(2**70), 2**70).map(float),
            st.sampled_from([0.0, -0.0, 1.0, 127.0, 128.0, 255.0, 256.0, -129.0, 2.0**63]),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_an_answer_column_is_the_cast_of_its_values(dtype, values):
    """The answer column built from the array (columns._exact_cast) or the object Series cast.

    Where the fast path takes the values, its column equals pandas' cast of the object Series
    (the slow path, which a row with unchanged cells takes) cell for cell, in the same dtype;
    where it declines, the slow path answers.
    """
    from fastcf._tabular.columns import _column, _exact_cast

    dt = np.dtype(dtype)
    v = np.asarray(values, dtype=np.float64)
    if dt.kind == "b":
        v = v != 0
    frame = pd.DataFrame({"c": pd.Series(np.zeros(v.size), dtype=object)})
    cast = _exact_cast(v, dt)
    try:
        with warnings.catch_warnings():  # (float16 overflow warns)
            warnings.simplefilter("ignore", RuntimeWarning)
            slow = pd.Series(v, dtype=object).astype(dt)
    except (TypeError, ValueError, OverflowError):
        slow = None
    if cast is not None:
        assert slow is not None and cast.dtype == slow.dtype
        if dt.kind == "O":
            assert [type(a) for a in cast] == [type(b) for b in slow]
            assert pd.Series(cast).equals(slow)
        else:  # the same bits
            assert cast.tobytes() == slow.to_numpy().tobytes()
        if dt.kind in "iub":  # (exact: the values come back)
            assert np.array_equal(cast, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = _column(frame, 0, v, np.zeros(v.size, dtype=bool), dt)
    want = slow if cast is None and slow is not None else cast
    if want is None:  # neither holds the values: the column keeps them as objects
        assert got.dtype == object
        assert np.array_equal(got.to_numpy(dtype=float), v, equal_nan=True)
    else:
        assert np.asarray(got).dtype == want.dtype


def test_a_bound_left_as_none_is_named_in_the_lo_above_hi_error():
    """A bound the user leaves as None is the training range (widened to hold the row): the
    error says so, instead of a bare "(198, 79)" whose 79 the user never gave (issue 52)."""
    model, X = _model("binary", "int64")
    tx = TabularExplainer(model, X)
    row = X[model.predict(X) == 0].iloc[[0]]
    top = max(X.age.max(), row.age.iloc[0])
    msg = (
        rf"bounds\['age'\] has lo > hi: 198 > {top} \(the upper bound, not given, is the "
        "training range widened to hold the row"
    )
    with pytest.raises(ValueError, match=msg):
        tx.explain(row, 1, bounds={"age": (198, None)})
    with pytest.raises(ValueError, match=r"has lo > hi: 198 > 100$"):
        tx.explain(row, 1, bounds={"age": (198, 100)})
