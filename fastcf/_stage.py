"""The one stage of every query: read → route → solve → judge → package.

Every explainer's ``explain`` (and each answer of ``enumerate`` and of a batch) passes here::

    explain(x, target, **options)
      read     the rows and targets (``BaseExplainer._queries``), the options into the family's
               query record (``ex._read``), checked once against the table of
               :mod:`fastcf._options`
      route    the family's table of solvers picks the one that answers the record
      solve    ``ex._solve(X, tidx, q)``: a :class:`~fastcf.results.Solution` of N rows
      judge    every success, in the arithmetic of the model the user gave (``ex._in_target``:
               the model's own ``predict``, or fastcf's copy of it where the copy was proven
               equal to the model when the explainer was built)
      re-aim   the rows the judge refuses, solved again further inside by the family's policy
               (an object with ``aim`` and ``solve``: the query record's ``reaim``, or the one
               the family's route hands to :func:`settle`), judged again: one loop, one budget
      package  one result type, :class:`~fastcf.Counterfactual` or
               :class:`~fastcf.CounterfactualBatch` (:func:`package`); ``verify="model"``
               asks the model itself once more (:func:`finish`)

A family supplies its query record (``_read``), its route (``_solve``), its judge
(``_in_target``) and its re-aim policy, and nothing else. (The tabular family reads DataFrame
rows and packages DataFrame answers itself, and runs its judge and policy through
:func:`settle`. The linear family re-aims inside its route, in its own arithmetic — a
certified rounding bound of fastcf's copy of the model, on the solver's arrays with warm
starts: its route finishes whichever solver answered once, then runs the form's re-aim policy
(the fallback entries, the box's retry, the region rounds), and its ``proba=`` solvers their τ
rounds, the rounds through the same loop, :func:`reaim`: ``docs/architecture.md`` says
which.) The row
bookkeeping of a :class:`~fastcf.results.Solution` that a re-aim needs (:func:`replace_rows`,
:func:`take_rows`, :func:`stack`, :func:`fail`) lives here too, written once for every family.

Examples
--------
The loop of :func:`settle` on a toy family: an "answer" is accepted from 1 on, and each re-aim
asks for twice as much (one row is refused at first and accepted after one re-aim):

>>> import numpy as np
>>> from fastcf.results import Solution
>>> def toy(x):
...     n = x.shape[0]
...     return Solution(
...         x=x[:, None], proba=None, distance=x.copy(), success=np.ones(n, bool),
...         status=np.zeros(n, np.int64), nit=np.zeros(n, np.int64), method="toy",
...         message=[""] * n,
...     )
>>> class Aim:  # the re-aim policy: twice the last answer
...     def __init__(self, sol):
...         self.sol = sol
...     def aim(self, sol, rows, r):
...         self.sol = sol
...         return rows
...     def solve(self, rows):
...         return toy(2 * self.sol.x[rows, 0])
>>> sol = toy(np.array([0.75, 3.0]))
>>> def accepted(sol, rows):  # the judge (rows None: every row)
...     return (sol.x[:, 0] if rows is None else sol.x[rows, 0]) >= 1.0
>>> out = settle(sol, accepted, Aim(sol))
>>> out.x[:, 0].tolist(), out.success.tolist()
([1.5, 3.0], [True, True])
"""

from __future__ import annotations

import numpy as np

from . import results
from ._confirm import check_verify, confirm
from ._resolve import ROUNDS
from ._status import BOUNDARY_MESSAGE, Status
from ._threads import limit

__all__ = [
    "ROUNDS",
    "judged",
    "judge",
    "settle",
    "reaim",
    "package",
    "finish",
    "finish_each",
    "run",
    "answer",
    "replace_rows",
    "take_rows",
    "stack",
    "fail",
]

_NUMERIC = int(Status.NUMERIC)


# ---------------------------------------------------------------------- judge
def judged(in_target, sol, tidx, proba=None, rows=None):
    """Return which of ``rows`` (default: all) hold a success the model confirms.

    A row the solver's rounding bound certified already (``sol.certified``) is not asked again;
    the others are asked of ``in_target(X, tidx, proba)`` (the family's judge: the model's own
    arithmetic), one call for all.
    """
    success = sol.success if rows is None else sol.success[rows]
    cert = sol.certified
    ask = success if cert is None else success & ~(cert if rows is None else cert[rows])
    n_ask = np.count_nonzero(ask)
    if n_ask == 0:
        return success.copy()
    if n_ask == ask.shape[0]:  # every row (a single query's usual case: no copies)
        X, t = (sol.x, tidx) if rows is None else (sol.x[rows], tidx[rows])
        return np.asarray(in_target(X, t, proba), dtype=bool)
    good = success.copy()
    j = np.flatnonzero(ask)
    idx = j if rows is None else rows[j]
    good[j] = in_target(sol.x[idx], tidx[idx], proba)
    return good


def judge(in_target, sol, tidx, proba=None):
    """Return ``sol`` with every success the model does not confirm made a failure.

    The judgement without re-aim (:func:`settle` with no policy), by ``in_target`` (the
    family's judge, ``ex._in_target``): a success the model refuses becomes status 4
    (numerical failure: the answer lies within rounding of the decision boundary).
    """
    cert = sol.certified
    if cert is not None and np.count_nonzero(cert) == cert.shape[0]:
        return sol  # every row certified by a rounding bound (a single query's usual case)
    good = judged(in_target, sol, tidx, proba)
    bad = sol.success & ~good
    return _refuse(sol, bad) if bad.any() else sol


def _refuse(sol, bad):
    """Return ``sol`` with the rows ``bad`` made failures: status 4, the boundary message."""
    cert = None if sol.certified is None else sol.certified & ~bad
    return sol._replace(
        success=sol.success & ~bad,
        status=np.where(bad, _NUMERIC, sol.status),
        message=[BOUNDARY_MESSAGE if b else m for b, m in zip(bad, sol.message, strict=True)],
        certified=cert,
    )


def settle(sol, judge_rows, policy, rounds=ROUNDS):
    """Judge every success; re-aim the rows the judge refuses; return the final solution.

    The one re-aim loop of every family. Round ``r`` takes the successes the judge refused,
    asks the family's ``policy`` to aim them further inside (``policy.aim(sol, rows, r)``
    returns the rows it can re-aim, having set their new aim where its ``solve`` reads it;
    empty or None ends the loop), solves them (``policy.solve(rows)``: a Solution of those
    rows) and keeps each new answer that claims success (a row whose re-solve fails keeps its
    old answer, still refused). After the last round, every success still refused becomes
    status 4 with the boundary message.

    Parameters
    ----------
    sol : Solution
    judge_rows : callable
        ``judge_rows(sol, rows) -> bool array``: which of ``rows`` (None: all) hold a success
        the model confirms.
    policy : object or None
        The family's re-aim policy (``aim``, ``solve``), or None to judge only.
    rounds : int, default ROUNDS

    Returns
    -------
    Solution
        With ``certified`` set on every success (each was judged).
    """
    n = sol.success.shape[0]
    if n == 0:
        return sol
    cert = sol.certified
    if cert is not None and np.count_nonzero(cert) == n:
        return sol  # every row certified by a rounding bound (a single query's usual case)
    good = judge_rows(sol, None)
    if not (sol.success & ~good).any():  # (the usual case: every success confirmed)
        return sol._replace(certified=sol.success.copy())
    if policy is not None:

        def pick(state, r):
            s, g = state
            rows = np.flatnonzero(s.success & ~g)
            if rows.size == 0:
                return rows
            rows = policy.aim(s, rows, r)
            return None if rows is None else np.asarray(rows, dtype=np.int64)

        def merge(state, rows, sub):
            s, g = state
            take = np.flatnonzero(sub.success)  # a failed re-solve keeps the old answer
            if take.size:
                idx = rows[take]
                s = replace_rows(s, idx, take_rows(sub, take))
                g[idx] = judge_rows(s, idx)
            return s, g

        sol, good = reaim((sol, good), pick, policy.solve, merge, rounds)
    bad = sol.success & ~good
    if bad.any():
        sol = _refuse(sol, bad)
    return sol._replace(certified=sol.success.copy())


def reaim(state, pick, solve, merge, rounds=ROUNDS):
    """Re-solve the rows a round picks, at most ``rounds`` times; return the final state.

    The one re-aim loop of the library: :func:`settle` runs it with the family's judge and
    policy, and the linear solvers run it inside their own arithmetic (their judge is
    fastcf's copy of the model and its rounding bound, their state the solver's arrays, warm
    starts included). The rules of a round (how far it aims) are the formulas of
    :mod:`fastcf._resolve`.

    Parameters
    ----------
    state : object
        The answers so far (a :class:`~fastcf.results.Solution`, or a family's arrays).
    pick : callable
        ``pick(state, r) -> rows``: the rows round ``r`` solves again (an integer array; empty
        or None ends the loop). It sets the rows' new margin (or τ) where ``solve`` reads it.
    solve : callable
        ``solve(rows) -> sub``: the answers of those rows.
    merge : callable
        ``merge(state, rows, sub) -> state``: the state with the rows' new answers (a family
        may keep a row's old answer where it is already certain and the new one failed).
    rounds : int, default ROUNDS
        The budget: re-solves of a row.

    Returns
    -------
    object
        The state after the last round.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([0.5, 2.0, 3.0])  # "answers": a row is refused while below 1
    >>> def pick(x, r):
    ...     return np.flatnonzero(x < 1.0)
    >>> def merge(x, rows, sub):
    ...     x = x.copy(); x[rows] = sub; return x
    >>> reaim(x, pick, lambda rows: 2 * x[rows] + 0.5, merge)
    array([1.5, 2. , 3. ])
    """
    for r in range(rounds):
        rows = pick(state, r)
        if rows is None or len(rows) == 0:
            break
        state = merge(state, rows, solve(rows))
    return state


# ---------------------------------------------------------------------- package
def package(ex, sol, X, tidx, names, single):
    """Return the public answer of ``sol``: a Counterfactual, or a CounterfactualBatch.

    An explainer whose model has no probabilities (``_has_proba`` false) reports none, even
    where its solvers computed the sigmoid/softmax of the scores on the way.
    """
    if sol.proba is not None and not ex._has_proba:
        sol = sol._replace(proba=None)
    # one query: its label by a slice (a view), not a fancy index
    targets = ex.classes_[tidx[0] : tidx[0] + 1] if single else ex.classes_[tidx]
    return results.package(sol, X, targets, names, single)


def finish(ex, res, verify="fold", proba=None, exact=True):
    """Return the answer ``res`` confirmed by the model itself (``verify="model"``), marked exact.

    ``verify="model"``: each success is asked once more of the model the user gave, its own
    ``predict`` (and ``predict_proba`` for ``proba=``), whatever the family's judge already
    did (:func:`fastcf._confirm.confirm`). ``info["exact"]`` says whether the answer is the
    exact optimum (:func:`fastcf.results.mark_exact`).
    """
    if verify == "model":
        res = confirm(ex._asked, res, ex.classes_, proba)
    return results.mark_exact(res, exact)


def finish_each(ex, answers, verify="fold", proba=None, exact=True):
    """Return :func:`finish` of every answer of an enumeration (a list, nested lists, or lazy).

    A list (of answers, or of one list per query) is finished answer by answer; an iterator
    (``enumerate(..., k=None)``) is finished as it is consumed.
    """
    if isinstance(answers, list):
        return [finish_each(ex, a, verify, proba, exact) for a in answers]
    if hasattr(answers, "success"):  # one answer
        return finish(ex, answers, verify, proba, exact)
    return (finish_each(ex, a, verify, proba, exact) for a in answers)


def run(ex, x, target, options, *, verify="fold", exact=True, n_jobs=None):
    """Answer ``explain(x, target, **options)`` through the stage: the body of ``explain``.

    Read: ``ex._queries(x, target)`` (the rows, whether one was given, the feature names, the
    target indices), then ``ex._read(X, tidx, names, options)``: the family's query options
    into its query record ``q``. Then :func:`answer`: route, solve, judge, re-aim, package,
    the batch's rows on ``n_jobs`` threads (:func:`fastcf._threads.limit`).
    """
    check_verify(verify, getattr(ex, "model", None))
    with limit(n_jobs):
        X, single, names, tidx = ex._queries(x, target)
        q = ex._read(X, tidx, names, options)
        return answer(ex, X, tidx, names, single, q, verify=verify, exact=exact)


def answer(ex, X, tidx, names, single, q, *, verify="fold", exact=True):
    """Answer the read query ``q`` of rows ``X``: route, solve, judge, re-aim, package.

    ``ex._solve(X, tidx, q)`` routes and solves it. The judge: ``q.judge_rows(sol, rows)``
    where the record has one (a family that judges whole answers: the tabular family asks its
    pipeline of a DataFrame), else ``q.in_target`` or ``ex._in_target`` row by row; its
    ``q.proba`` (None without ``proba=``) is the τ that judge asks. The re-aim: ``q.reaim``
    (where it has one) is the policy :func:`settle` runs, for ``q.rounds`` rounds (default
    :data:`ROUNDS`). A family's ``ex._review(sol, X, tidx, q, verify)``, where it has one,
    withdraws the copy's certificates that do not stand (``(sol, policy, judge)``: a linear
    SVM's dual sum, a pipeline's ``proba=`` at huge scores, ``verify="model"`` there): those
    answers are judged by ``judge`` (default its ``_in_target``) and re-aimed by that
    policy. A
    family's ``_finish(sol, X, tidx, q)``, where it has one, completes the judged answers (the
    model's probabilities at them, a message at the data's scale); its record's
    ``q.package(sol)``, where it has one, makes its public answer (DataFrame views), else
    :func:`package`. Last, :func:`finish`.
    """
    sol = ex._solve(X, tidx, q)
    proba = getattr(q, "proba", None)
    policy = getattr(q, "reaim", None)  # (a family whose route does not re-aim itself)
    review = getattr(ex, "_review", None)
    if review is not None:
        # where fastcf's copy does not compute the model's arithmetic (a linear SVM's dual sum,
        # a pipeline's τ at huge scores): those answers lose the copy's certificate, the
        # family's judge asks them, and the family's policy re-aims the refused ones
        sol, own, strict = review(sol, X, tidx, q, verify)
        policy = own if own is not None else policy
    else:
        strict = None
    judge_rows = getattr(q, "judge_rows", None)
    if judge_rows is None:
        in_target = strict or getattr(q, "in_target", None) or ex._in_target
        if policy is None:
            sol = judge(in_target, sol, tidx, proba)
        else:
            sol = settle(sol, lambda s, rows: judged(in_target, s, tidx, proba, rows), policy)
    else:
        sol = settle(sol, judge_rows, policy, getattr(q, "rounds", ROUNDS))
    sol = ex._finish(sol, X, tidx, q) if hasattr(ex, "_finish") else sol
    own = getattr(q, "package", None)
    res = own(sol) if own is not None else package(ex, sol, X, tidx, names, single)
    if own is not None and single:
        res = res[0]
    return finish(ex, res, verify, proba, exact)


# ---------------------------------------------------------------------- rows of a Solution
_ROW_FIELDS = ("x", "proba", "distance", "success", "status", "nit", "lam", "grad_norm")


def _per_row(value, n):
    return isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == n


def replace_rows(sol, idx, sub):
    """Return ``sol`` with rows ``idx`` replaced by the answers ``sub`` (iterations added)."""
    fields = {}
    for key in ("x", "proba", "distance", "success", "status", "lam", "grad_norm"):
        old = getattr(sol, key)
        if old is not None:
            new = old.copy()
            new[idx] = getattr(sub, key)
            fields[key] = new
    if sol.certified is not None or sub.certified is not None:
        # a replaced row keeps no certificate of the answer it no longer has
        cert = np.zeros(sol.success.shape[0], dtype=bool)
        if sol.certified is not None:
            cert |= sol.certified
        cert[idx] = False if sub.certified is None else sub.certified
        fields["certified"] = cert
    nit = np.array(sol.nit, copy=True)
    nit[idx] += sub.nit
    msgs = list(sol.message)
    for j, i in enumerate(idx):
        msgs[i] = sub.message[j]
    if sol.info and sub.info:  # per-row diagnostics follow their rows (gap, n_moved, …)
        info = dict(sol.info)
        n = sol.success.shape[0]
        for key, old in sol.info.items():
            new = sub.info.get(key)
            if (
                _per_row(old, n) and isinstance(new, np.ndarray)
                and new.shape[1:] == old.shape[1:] and new.shape[0] == len(idx)
            ):  # fmt: skip
                info[key] = old.copy()
                info[key][idx] = new
        fields["info"] = info
    return sol._replace(nit=nit, message=msgs, **fields)


def take_rows(sol, idx):
    """Return the rows ``idx`` of ``sol`` (its per-row diagnostics ``info`` with them)."""
    n = sol.success.shape[0]
    fields = {}
    for key in _ROW_FIELDS:
        val = getattr(sol, key)
        fields[key] = None if val is None else val[idx]
    cert = None if sol.certified is None else sol.certified[idx]
    msgs = [sol.message[i] for i in idx]
    info = None
    if sol.info:
        info = {k: v[idx] for k, v in sol.info.items() if _per_row(v, n)} or None
    return sol._replace(message=msgs, certified=cert, info=info, **fields)


def fail(sol, status, text):
    """Return ``sol`` (one row) as a failure with ``status`` and the message ``text``."""
    return sol._replace(
        success=np.zeros(1, dtype=bool),
        status=np.full(1, int(status), dtype=sol.status.dtype),
        message=[text],
        certified=None,
    )


def row_info(info):
    """Return the diagnostics of a one-row solution as a dict of scalars (arrays of length 1)."""
    return {
        k: (v[0] if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == 1 else v)
        for k, v in (info or {}).items()
    }


def stack(sols):
    """Return the :class:`~fastcf.results.Solution` of one-row solutions ``sols``, stacked.

    Per-row diagnostics (``info``) become arrays over the rows; the method is the first row's.
    """
    first = sols[0]
    if len(sols) == 1:
        return first
    fields = {}
    for key in _ROW_FIELDS:
        if getattr(first, key) is None:
            fields[key] = None
        else:
            fields[key] = np.concatenate([np.atleast_1d(getattr(s, key)) for s in sols])
    cert = None
    if all(s.certified is not None for s in sols):
        cert = np.concatenate([s.certified for s in sols])
    infos = [row_info(s.info) for s in sols]
    keys = set().union(*infos)
    info = {k: np.asarray([i.get(k) for i in infos]) for k in sorted(keys)}
    msgs = [m for s in sols for m in s.message]
    return first._replace(message=msgs, certified=cert, info=info or None, **fields)
