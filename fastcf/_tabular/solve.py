"""The tabular family's solve step: every row's program, its decoding, and the model's check.

:func:`answers` solves each row's mixed-integer program (:mod:`fastcf._tabular.milp`), decodes
the answers to a DataFrame and has the user's own ``predict`` (and ``predict_proba`` for
``proba=``) judge them (:func:`verify`); rows it refuses are solved again with a larger margin,
by the steps of :data:`MARGIN_STEPS`. :func:`batch` packages the arrays as a
:class:`~fastcf._tabular.results.TabularBatch`, its ``method`` naming the solvers that answered.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._status import BOUNDARY_MESSAGE, Status
from .fold import check_fold
from .options import make_query
from .results import TabularBatch

__all__ = ["MARGIN_STEPS", "answers", "verify", "folded_proba", "batch", "check_fold_on"]

#: the re-solve margins of rows the model refuses: (factor of the margin asked, floor)
MARGIN_STEPS = ((1.0, 0.0), (1e2, 1e-6), (1e4, 1e-4))


def check_fold_on(ex, X):
    """Check the fold against the model's decision_function on complete training rows."""
    sample = X.iloc[:: max(1, X.shape[0] // 200)]
    V, rows = [], []
    for i in range(sample.shape[0]):
        row = sample.iloc[i].to_numpy(dtype=object)
        try:
            x0, k0 = ex._schema.read(row, i)
        except ValueError:
            continue  # a row with missing values or an unseen category
        V.append(variables(ex, x0, k0))
        rows.append(i)
    if rows:
        check_fold(ex._schema.fold, ex.model, ex._model_input(sample.iloc[rows]), np.asarray(V))


def variables(ex, x0, k0):
    s = ex._schema
    ind = np.zeros(int(s.cat_start[-1]))
    ind[s.cat_start[:-1] + k0] = 1.0
    return np.concatenate([x0, ind])


def answers(ex, frame, tidx, form, bounds, allowed, frozen, max_changes):
    """Solve, decode and verify every row; return the arrays of a batch.

    ``allowed`` is the resolved ``(mask, given, moves)`` of :func:`resolve_allowed`.
    """
    s = ex._schema
    prog = ex._program
    base, margin, tau = form
    n = frame.shape[0]
    X0 = frame.to_numpy(dtype=object)
    reads = [s.read(X0[i], i) for i in range(n)]
    XN0 = np.array([r[0] for r in reads]).reshape(n, prog.n_num)
    KC0 = np.array([r[1] for r in reads], dtype=np.int64).reshape(n, prog.n_cat)
    XN = XN0.copy()
    KC = KC0.copy()
    status = np.zeros(n, dtype=np.int64)
    messages = [""] * n
    infos = [{} for _ in range(n)]
    todo = np.arange(n)
    ok = np.zeros(n, dtype=bool)
    proba = None
    for factor, floor in MARGIN_STEPS:
        m = max(margin * factor, floor)
        for i in todo:
            x0, k0 = reads[i]
            q = make_query(s, x0, k0, tidx[i], base + m, bounds, allowed, frozen, max_changes)
            t0 = time.perf_counter()
            ans = prog.solve(x0, k0, q)
            infos[i] = {**ans.info, "margin": m, "time": time.perf_counter() - t0}
            XN[i], KC[i], status[i] = ans.x, ans.k, ans.status
            raised = "" if m == margin else f"; margin raised to {m:g}"
            messages[i] = ans.message + raised
        answers = s.frame(frame, XN, KC, XN0, KC0)
        ok, proba = verify(ex, answers, tidx, tau, status, XN, KC)
        todo = np.flatnonzero((status == int(Status.OK)) & ~ok)
        if todo.size == 0:
            break
    for i in todo:  # failed the model's check at every margin
        status[i] = int(Status.NUMERIC)
        messages[i] = BOUNDARY_MESSAGE
    costs = np.zeros((n, len(s.columns)))
    for i in range(n):
        x0, k0 = reads[i]
        cn, cc = prog.distance(x0, k0, XN[i], KC[i])
        costs[i, prog.num_cols] = cn
        costs[i, prog.cat_cols] = cc
    cost = np.where(status == int(Status.OK), costs.sum(axis=1), math.inf)
    return answers, ok, cost, proba, status, messages, costs, infos


def verify(ex, answers, tidx, tau, status, XN, KC):
    """Return (ok, proba): the model's own check of every answer, and its probabilities."""
    inp = ex._model_input(answers)
    pred = np.asarray(ex.model.predict(inp))
    ok = (pred == ex.classes_[tidx]) & (status == int(Status.OK))
    proba = None
    if ex.probabilistic_:
        if tau is not None:
            proba = np.asarray(ex.model.predict_proba(inp), dtype=np.float64)
            ok &= proba[np.arange(tidx.size), tidx] >= tau
        else:
            proba = folded_proba(ex, XN, KC)
    return ok, proba


def folded_proba(ex, XN, KC):
    """Return the sigmoid/softmax of the folded scores at the answers."""
    s = ex._schema
    fold = s.fold
    n_num = fold.numeric.size
    z = XN @ fold.G[:, :n_num].T + fold.g
    if KC.shape[1]:
        z = z + fold.G[:, n_num:][:, (s.cat_start[:-1] + KC)].sum(axis=2).T
    if z.shape[1] == 1:
        p1 = 1.0 / (1.0 + np.exp(-z[:, 0]))
        return np.column_stack([1.0 - p1, p1])
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def batch(ex, frame, tidx, answers, ok, cost, proba, status, messages, costs, infos):
    return TabularBatch(
        x=answers,
        x0=frame,
        target=ex.classes_[tidx],
        success=ok,
        distance=cost,
        proba=proba,
        status=status,
        message=list(messages),
        costs=costs,
        method=_method(infos),
        info=infos,
    )


def _method(infos):
    """Return the honest ``method`` of a batch: the solvers that answered its rows."""
    used = sorted({i.get("solver") for i in infos if i.get("solver")})
    return f"milp ({', '.join(used)})" if used else "milp"
