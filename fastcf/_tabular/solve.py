"""The tabular family's solve step: every row's program, its decoding, and the model's check.

:class:`Rows` solves each row's mixed-integer program (:mod:`fastcf._tabular.milp`), decodes
the answers to a DataFrame and has the user's own ``predict`` (and ``predict_proba`` for
``proba=``) judge them (:func:`verify`); rows it refuses are solved again with a larger margin,
by the steps of :data:`fastcf._resolve.TABULAR_MARGINS`. :func:`batch` packages the arrays as a
:class:`~fastcf._tabular.results.FrameCounterfactualBatch` (a :class:`fastcf.CounterfactualBatch`),
its ``method`` naming the solvers that answered.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._catalog import dual_scores
from .._progress import Tally
from .._resolve import TABULAR_MARGINS
from .._stage import replace_rows, settle
from .._status import Status
from .._threads import each
from ..results import Solution
from .fold import check_fold
from .imputed import solve_row
from .options import make_query
from .results import FrameCounterfactualBatch, labels, solver_nodes

_EPS = float(np.finfo(np.float64).eps)

__all__ = ["Rows", "answers", "verify", "folded_proba", "batch", "check_fold_on"]


def check_fold_on(ex, X):
    """Check the fold against the model's decision_function on complete training rows."""
    if not ex._program.folded:
        return  # (a tree model's program checks its forest against the model itself)
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


def read_all(s, frame, keep_missing):
    """Return (reads, bad, frozen_rows): every row read, or why not, and its missing cells.

    ``reads[i]`` is (x_num, k0) (zeros for a row that cannot be read), ``bad`` maps such a row
    to its error message (one row alone raises it instead), ``frozen_rows`` is None or, with
    ``keep_missing``, a boolean (n, columns) mask of the missing cells (kept as they are).
    """
    n = frame.shape[0]
    X0 = frame.to_numpy(dtype=object)
    reads, bad = [], {}
    for i in range(n):
        try:
            reads.append(s.read(X0[i], frame.index[i]))
        except ValueError as exc:
            if n == 1:
                raise
            bad[i] = str(exc)
            reads.append((np.zeros(s.fold.numeric.size), np.zeros(len(s.cat_cols), np.int64)))
    miss = np.array([s.missing(X0[i]) for i in range(n)]) if keep_missing else None
    return reads, bad, miss


class Rows:
    """One tabular query's rows through the stage: its first solve, judge and re-aim policy.

    The tabular family's record of a query (:func:`fastcf._stage.answer` reads it):
    :meth:`first` solves every row that can be read (a row that cannot is kept as it is, with
    status INVALID_INPUT and the reason); :meth:`judge_rows` asks the user's own ``predict``
    (and ``predict_proba`` for ``proba=``) of the answers as a DataFrame (:func:`verify`);
    :meth:`aim` and :meth:`solve` are the re-aim policy, the margins of
    :data:`~fastcf._resolve.TABULAR_MARGINS` in turn (``rounds`` of them after the first);
    :meth:`arrays` decodes the judged answers (the answers' frame, costs, probabilities).

    ``allowed`` is the resolved ``(mask, given, moves)`` of :func:`resolve_allowed`.
    ``time_limit``: seconds for each row's tree programs, all its solves together (a re-solve
    at a raised margin gets what the earlier ones left, at least a millisecond); a row it stops
    with an answer has status MAXITER and ``info["stopped"]`` (an answer the model is asked to
    confirm, like a status-0 one).
    """

    #: re-solves of a refused row after its first solve: one per further margin
    rounds = len(TABULAR_MARGINS) - 1
    #: the judge asks τ itself (``proba=``): the stage asks no probability of its own
    proba = None

    def __init__(
        self, ex, frame, tidx, form, bounds, allowed, frozen, max_changes, keep_missing=False,
        time_limit=None, plausible=False,
    ):  # fmt: skip
        self.ex, self.frame, self.tidx = ex, frame, tidx
        self.base, self.margin, self.tau = form
        self.options = (bounds, allowed, frozen, max_changes, time_limit, plausible)
        self.prog = ex._program
        n = frame.shape[0]
        self.reads, self.bad, self.miss = read_all(ex._schema, frame, keep_missing)
        self.X0 = frame.to_numpy(dtype=object)
        self.valid = np.ones(n, dtype=bool)
        self.valid[list(self.bad)] = False
        self.XN0 = np.array([r[0] for r in self.reads]).reshape(n, self.prog.n_num)
        self.KC0 = np.array([r[1] for r in self.reads], dtype=np.int64).reshape(n, self.prog.n_cat)
        self.spent = np.zeros(n)  # each row's seconds in its programs so far (for time_limit)
        self.margins = np.full(n, self.margin)
        self.P = np.full((n, ex.classes_.size), np.nan) if ex.probabilistic_ else None
        self.answers = None  # the answers' frame of the last judgement of every row
        self.reaim = self  # (the re-aim policy: aim, solve)

    def first(self):
        """Return every row's first answer (a row that cannot be read: as it is, and why)."""
        n = self.frame.shape[0]
        status = np.zeros(n, dtype=np.int64)
        messages = [""] * n
        for i, text in self.bad.items():
            status[i] = int(Status.INVALID_INPUT)
            messages[i] = text
        x_start = np.column_stack([self.XN0, self.KC0]).astype(np.float64)
        infos = np.array([{} for _ in range(n)], dtype=object)
        sol = _solution(x_start, status, messages, infos)
        todo = np.flatnonzero(self.valid)
        return replace_rows(sol, todo, self.solve(todo))

    def solve(self, rows):
        """Solve ``rows`` at their margins: a Solution whose x is (numeric values, codes)."""
        s, prog, n_num = self.ex._schema, self.prog, self.prog.n_num
        bounds, allowed, frozen, max_changes, time_limit, plausible = self.options
        x = np.zeros((rows.size, n_num + prog.n_cat))
        st = np.zeros(rows.size, dtype=np.int64)
        msgs, infos = [""] * rows.size, np.empty(rows.size, dtype=object)
        frames = [self.frame.iloc[[i]] for i in rows]  # (pandas reads here, not in threads)

        def one(j):
            i = rows[j]
            x0, k0 = self.reads[i]
            fz = frozen if self.miss is None else frozen | self.miss[i]
            left = None if time_limit is None else max(float(time_limit - self.spent[i]), 1e-3)
            m = self.margins[i]
            q = make_query(
                s, x0, k0, self.tidx[i], self.base + m, bounds, allowed, fz, max_changes,
                self.tau, left, plausible, frames[j],
            )  # fmt: skip
            t0 = time.perf_counter()
            ans = solve_row(prog, x0, k0, q, self.X0[i])
            took = time.perf_counter() - t0
            self.spent[i] += took
            infos[j] = {**ans.info, "margin": m, "time": took}
            x[j, :n_num], x[j, n_num:], st[j] = ans.x, ans.k, ans.status
            msgs[j] = ans.message + ("" if m == self.margin else f"; margin raised to {m:g}")

        # in the calling thread: a row's time is mostly Python holding the GIL (the pipeline's
        # predict on one-row DataFrames, the program's assembly), and on 2 threads 40 credit
        # rows took 0.92x (a forest) and 0.93x (a logistic regression) the time of one
        # (asv_bench/benchmarks/bench_threads.py). The program is safe to share between
        # threads (a service's threads may call one explainer at once).
        each(one, rows.size, rows.size + 1, progress=Tally(rows.size, "TabularExplainer"))
        return _solution(x, st, msgs, infos)

    def judge_rows(self, sol, rows):
        """Return which of ``rows`` (None: all) the user's pipeline confirms (:func:`verify`)."""
        n_num, n = self.prog.n_num, self.frame.shape[0]
        XN, KC = sol.x[:, :n_num], sol.x[:, n_num:].astype(np.int64)
        self.answers = answers = self.ex._schema.frame(self.frame, XN, KC, self.XN0, self.KC0)
        rows = slice(None) if rows is None else rows
        check = np.zeros(n, dtype=bool)
        check[rows] = self.valid[rows]
        ok, proba = verify(self.ex, answers, self.tidx, self.tau, sol.success, XN, KC, check)
        if self.P is not None:
            self.P[rows] = proba[rows]
        ask = np.flatnonzero(ok)
        if not isinstance(rows, slice):
            ask = np.intersect1d(ask, np.asarray(rows))
        if ask.size:  # and clear of the scores' rounding, whatever rows predict is asked with
            ok[ask] &= self._clear(sol, ask)
        return ok[rows]

    def _clear(self, sol, rows):
        """Return which answers of ``rows`` beat their rivals by more than the scores' rounding.

        A linear program's class decision is the sign of a score difference; where that
        difference lies within the rounding of the scores (:func:`_rounding`), the model's own
        ``predict`` can give either class depending on how many rows it is asked with (BLAS
        sums a row alone and in a batch differently: an LDA with scores ~3e12 put an answer in
        the target within a batch of three, and in the other class alone:
        ``docs/scripts/soak_zoo.py``). Such an answer is refused, and re-aimed past the
        rounding. Always true for tree and prototype programs (the model's own check stands).
        """
        fold = self.ex._schema.fold
        if self.prog.folded and dual_scores(self.ex.model):
            return self._alone(rows)
        if not self.prog.folded or fold.terms is None or fold.proto_class is not None:
            return np.ones(rows.size, dtype=bool)
        V = self._variables(sol, rows)
        need = self._rounding(sol, rows, V)
        if need is None:
            return np.ones(rows.size, dtype=bool)
        return self._gap(rows, V) > 2.0 * need

    def _gap(self, rows, V):
        """Return the folded score gap of the answers ``V`` of ``rows``: target minus best rival.

        The quantity a linear program's target rows bound below by ``base + margin`` (binary:
        the score, of the sign of the target). For a linear program only (not a prototype's).
        """
        fold = self.ex._schema.fold
        with np.errstate(over="ignore", invalid="ignore"):
            z = V @ fold.G.T + fold.g
            t = self.tidx[rows]
            if z.shape[1] == 1:  # binary: classes_[1] iff the score > 0
                return np.where(t == 1, z[:, 0], -z[:, 0])
            own = z[np.arange(rows.size), t]
            z[np.arange(rows.size), t] = -np.inf
            return own - z.max(axis=1)

    def _alone(self, rows):
        """Return which answers of ``rows`` the pipeline puts in the target, each asked alone.

        A linear SVM's dual sum has no rounding bound fastcf's copy computes (libsvm's own
        arithmetic decides), and the steps before it round a row differently alone and in a
        batch (a whitening PCA: BLAS): a batch answer ``predict`` confirmed within the batch was
        in the other class alone (``docs/scripts/soak_zoo.py``). Each answer is asked as a
        user checks one; the refused ones are re-aimed.
        """
        ex = self.ex
        want = ex.classes_[self.tidx[rows]]
        if rows.size == 1 and self.frame.shape[0] == 1:
            return np.ones(1, dtype=bool)  # (the batch was this one row: asked already)
        got = [ex.model.predict(ex._model_input(self.answers.iloc[[i]]))[0] for i in rows]
        return np.asarray(got, dtype=object) == np.asarray(want, dtype=object)

    def _variables(self, sol, rows):
        """Return the program variables (values, category indicators) of the answers."""
        n_num = self.prog.n_num
        return np.array([
            variables(self.ex, sol.x[i, :n_num], sol.x[i, n_num:].astype(np.int64)) for i in rows
        ])  # fmt: skip

    def aim(self, sol, rows, r):
        """Aim ``rows`` at the next margin of :data:`TABULAR_MARGINS` (None after the last).

        For a linear or prototype program, at least four times the rounding a score difference
        can carry at the refused answer (:meth:`_rounding`), doubled each round: on a model
        whose scores are ~1e21 the fixed steps (at most 1e-2) stay below an ulp of them.
        """
        if r + 1 >= len(TABULAR_MARGINS):
            return None
        factor, floor = TABULAR_MARGINS[r + 1]
        m = np.full(rows.size, max(self.margin * factor, floor))
        need = self._rounding(sol, rows)
        if need is not None:
            m = np.maximum(m, 4.0 * need * 2.0**r)
        fold = self.ex._schema.fold
        if self.prog.folded and fold.proto_class is None:
            # HiGHS meets a score row to its feasibility tolerance relative to the row, which
            # milp scales by powers of 2 (2^-50 for a diverged SGDClassifier of coefficients
            # ~1e15): its answer then fell short of the asked margin by more than the scores'
            # rounding (~1e2 at scores ~3e14, under a margin of 26; the pipeline zoo, seed 3
            # case 652) and the re-solves landed as short. Past the shortfall by four times
            # as much, as raise_margin does for a solver that met its constraints only so far.
            was = self.base + self.margins[rows]
            short = was - self._gap(rows, self._variables(sol, rows))
            m = np.where(short > 0.0, np.maximum(m, self.margins[rows] + 4.0 * short), m)
        self.margins[rows] = m
        return rows

    def _rounding(self, sol, rows, V=None):
        """Return how far rounding can move a score difference at the answers of ``rows``.

        ``depth · (width + 2) · eps · T``, T the size of the largest score's terms
        (``fold.terms``): each score the model computes lies within ``depth · γ_{width+2} T``
        of its exact value whatever the order of its sums (Higham §3.1, the derivation of
        :func:`fastcf._fold.tolerance`), so a difference of two within twice that. None for a
        tree program. ``V``: the answers' program variables, where the caller has them.
        """
        fold = self.ex._schema.fold
        if not self.prog.folded or fold.terms is None:
            return None
        V = self._variables(sol, rows) if V is None else V
        t = fold.terms
        with np.errstate(over="ignore", invalid="ignore"):
            T = t.scale(fold, V).max(axis=1)
            need = t.depth * (max(t.width, V.shape[1]) + 2) * _EPS * T
        return np.where(np.isfinite(need), need, 0.0)

    def arrays(self, sol):
        """Return the arrays of a batch of the judged answers ``sol``."""
        prog, n = self.prog, self.frame.shape[0]
        XN, KC = sol.x[:, : prog.n_num], sol.x[:, prog.n_num :].astype(np.int64)
        answers = self.answers
        if answers is None:  # no row could be read
            answers = self.frame.copy()
        ok, status, messages = sol.success, sol.status, list(sol.message)
        infos = list(sol.info["row"])
        costs = np.zeros((n, len(self.ex._schema.columns)))
        for i in range(n):
            x0, k0 = self.reads[i]
            cn, cc = prog.distance(x0, k0, XN[i], KC[i])
            costs[i, prog.num_cols] = cn
            costs[i, prog.cat_cols] = cc
        cost = np.where(_answered(status, infos), costs.sum(axis=1), math.inf)
        return answers, ok, cost, self.P, status, messages, costs, infos

    def package(self, sol):
        """Return the judged answers ``sol`` as a :class:`FrameCounterfactualBatch`."""
        return batch(self.ex, self.frame, self.tidx, *self.arrays(sol))


def answers(
    ex, frame, tidx, form, bounds, allowed, frozen, max_changes, keep_missing=False,
    time_limit=None, plausible=False,
):  # fmt: skip
    """Solve, decode and judge every row (the stage's judge and re-aim); return batch arrays.

    :class:`Rows` through :func:`fastcf._stage.settle`, for a caller that wants the arrays
    (``enumerate``'s accepted answers).
    """
    r = Rows(ex, frame, tidx, form, bounds, allowed, frozen, max_changes, keep_missing,
             time_limit, plausible)  # fmt: skip
    return r.arrays(settle(r.first(), r.judge_rows, r, r.rounds))


def _solution(x, status, messages, infos):
    """Return rows of tabular answers as a Solution (x: numeric values, then category codes).

    A row holds an answer (``success``, for the judge) where its status is OK or it is a
    time limit's answer (:func:`_answered`); ``info["row"]``: each row's diagnostics.
    """
    n = status.shape[0]
    return Solution(
        x=x, proba=None, distance=np.zeros(n), success=_answered(status, list(infos)),
        status=status, nit=np.zeros(n, dtype=np.int64), method="milp", message=messages,
        info={"row": infos},
    )  # fmt: skip


def _answered(status, infos):
    """Return the rows that hold an answer: status OK, or a time limit's answer (MAXITER)."""
    stopped = np.array([bool(i.get("stopped")) for i in infos], dtype=bool)
    return (status == int(Status.OK)) | ((status == int(Status.MAXITER)) & stopped)


def verify(ex, answers, tidx, tau, answered, XN, KC, valid=None):
    """Return (ok, proba): the model's own check of every answer, and its probabilities.

    ``answered``: the rows that hold an answer (the others are not ok). ``valid``: the rows to
    check (the others, rows that could not be read, are not passed to the model: they are not
    ok, their probabilities NaN).
    """
    n = tidx.size
    rows = np.arange(n) if valid is None else np.flatnonzero(valid)
    ok = np.zeros(n, dtype=bool)
    proba, seen = None, None
    if rows.size:
        inp = ex._model_input(answers.iloc[rows])
        # a tree program asked the model about this very input already (one row: its answer
        # as the result holds it, the same columns, dtypes and bytes): that verdict, not a
        # second call of the pipeline
        verdicts = getattr(ex._program, "verdicts", None)
        seen = verdicts.seen(inp) if verdicts is not None else None
        pred = np.asarray(ex.model.predict(inp)) if seen is None else np.asarray([seen[0]])
        ok[rows] = (pred == ex.classes_[tidx[rows]]) & answered[rows]
    if ex.probabilistic_:
        if tau is not None or not ex._program.folded:  # (a tree model: its own probabilities)
            proba = np.full((n, ex.classes_.size), np.nan)
            if seen is not None and seen[1] is not None:
                proba[rows] = seen[1]
            elif rows.size:
                proba[rows] = np.asarray(ex.model.predict_proba(inp), dtype=np.float64)
            if tau is not None:
                ok[rows] &= proba[rows, tidx[rows]] >= tau
        else:
            proba = folded_proba(ex, XN, KC)
            if rows.size < n:
                proba[np.setdiff1d(np.arange(n), rows)] = np.nan
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
    """Return the arrays of :func:`answers` as a :class:`FrameCounterfactualBatch`."""
    return FrameCounterfactualBatch(
        x=answers,
        x0=frame,
        target=ex.classes_[tidx],
        proba=proba,
        distance=cost,
        success=ok,
        status=status,
        message=list(messages),
        nit=solver_nodes(infos),
        method=_method(infos),
        feature_names=labels(answers.columns),
        info=infos,
        costs=costs,
    )


def _method(infos):
    """Return the honest ``method`` of a batch: the solvers that answered its rows."""
    used = sorted({i.get("solver") for i in infos if i.get("solver")})
    return f"milp ({', '.join(used)})" if used else "milp"
