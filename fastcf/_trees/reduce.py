"""Exact reductions of a tree program below a cutoff: the cells an answer cheaper than C can use.

A query's program (:mod:`fastcf._trees.milp`) only has to hold the cells of cost at most a
cutoff ``ρ`` (just below the cost C of a valid answer already found: nothing costlier can beat
it). The metric is separable and every per-feature cost is >= 0, so a cell of cost <= ρ obeys
every consequence below, and each one shrinks the program before it is built; together they
run to a fixed point:

* **interval costs** — per feature f a range of allowed intervals ``ka_f .. kb_f`` (at first the
  query's box). The cheapest interval of the range is the one nearest x̄ (``clip(k̄_f)``: the
  cost of an interval grows with its distance from x̄_f), so every cell costs at least
  ``S = Σ_f base_f`` with ``base_f`` that interval's cost; an interval k with
  ``c_{f,k} + S − base_f > ρ`` leaves the range (the ranges stay contiguous around k̄);
* **leaf costs** — a leaf's box met with the ranges costs at least ``S + Σ_{f on its path}
  (cost of the box's interval nearest x̄ − base_f)``; a leaf over ρ, or whose box misses the
  ranges, is dead (no cell of cost <= ρ reaches it);
* **margins** — every linear form of the target (``a·Z >= r``, the program's own rows) is at
  most ``Σ_t max_{alive l ∈ t} a·V_l``: below r, no cell qualifies; a leaf whose own term plus
  the best of every other tree stays below r is dead (a cell reaching it fails the form);
* **range ends** — the margin bound for the cells whose feature f lies in its range's end
  interval: a tree whose best alive leaf's box misses that interval gives at most its second
  best there, so the bound falls by the gaps (best − second) of those trees; below r, no cell
  of that interval qualifies, nor of the intervals up to the nearest edge of those best
  boxes, and the range moves past them (each end of each feature, each form);
* **hulls** — every cell reaches one alive leaf of each tree, so a feature's range shrinks to
  the hull of the alive leaves of every tree whose alive leaves all split on it.

A tree left without an alive leaf, an empty range or a margin bound below its form proves that
no cell of cost <= ρ is classified as the target (:attr:`Reduced.empty`). The same fixed point
run at a cutoff ρ below the optimum cannot prove it, so bisection on ρ gives a lower bound on
the optimum without any program (:func:`lower_bound`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Reduced", "reduce", "reduce_from", "lower_bound", "Costs", "LeafForms", "leaf_forms"]

_U = 2.0**-53
#: rounds of the fixed point (each round is a few vector passes over the leaf boxes)
ROUNDS = 30


class Costs(NamedTuple):
    """The per-interval costs of one query, flat (interval k of feature f at ``ioff[f] + k``)."""

    flat: np.ndarray  # (n_intervals,) per-coordinate cost of each interval's point closest to x̄
    kbar: np.ndarray  # (D,) x̄'s own interval per feature
    ka: np.ndarray  # (D,) the first interval the query's box allows
    kb: np.ndarray  # (D,) the last one


class LeafForms(NamedTuple):
    """The target's linear forms per leaf: ``Σ_t coef[leaf_t, j] >= r[j]`` (built once a query).

    A record the tree kernels take as it is (:func:`~fastcf._kernels.tree_reduce.reduce_rounds`,
    :func:`~fastcf._kernels.tree_search.search`).

    Attributes
    ----------
    coef : ndarray of float64, shape (n_leaves, F), C-contiguous
        Form j's value ``a_j·V_l`` at each leaf.
    r : ndarray of float64, shape (F,)
        Each form's right-hand side, net of the base scores.
    tol : ndarray of float64, shape (F,)
        Each form's rounding tolerance (sums over the trees).
    """

    coef: np.ndarray
    r: np.ndarray
    tol: np.ndarray


def leaf_forms(V, base, forms, n_trees) -> LeafForms:
    """Return the forms ``[(a, r)]`` per leaf: ``(a·V_l, r − a·base)``, with tolerances."""
    coef = np.zeros((V.shape[0], len(forms)))
    for j, (a, _) in enumerate(forms):
        coef[:, j] = V @ a
    r = np.array([float(v) - float(a @ base) for a, v in forms], dtype=np.float64)
    T = n_trees
    top = np.abs(coef).max(axis=0, initial=0.0)
    tol = 4.0 * (T + 2) * _U * top * T
    return LeafForms(coef, r, tol)


class Reduced(NamedTuple):
    """What a cell of cost <= ρ may use."""

    ka: np.ndarray  # (D,) first allowed interval per feature
    kb: np.ndarray  # (D,) last allowed interval per feature
    alive: np.ndarray  # (n_leaves,) bool: the leaves such a cell may reach
    pruned: np.ndarray  # (n_trees,) bool: some leaf of the tree died by a margin (not a cost)
    lb: float  # a lower bound on the cost of any such cell (Σ_f base_f)
    empty: bool  # no such cell is classified as the target
    ids: np.ndarray | None = None  # the alive leaves in order (None: not listed)


class Scratch(NamedTuple):
    """Work arrays of :func:`reduce`, for a caller that reduces many nodes of one query.

    A record the tree kernels take as it is (:func:`~fastcf._kernels.tree_reduce.reduce_rounds`,
    :func:`~fastcf._kernels.tree_search.search`).

    Attributes
    ----------
    ids : ndarray of int64, shape (n_leaves,)
        The alive leaves in order (the first ``m``, as a reduction leaves them).
    cost : ndarray of float64, shape (n_leaves,)
        Their costs beyond the lower bound, at the ranges ``ref_a .. ref_b``.
    ref_a, ref_b : ndarray of int64, shape (D,)
        The ranges at which ``cost`` was computed.
    point : ndarray of float64, shape (D,)
        A decided node's point, where :func:`~fastcf._kernels.tree_search.search` returns
        ``CANDIDATE`` (the reductions do not use it).
    """

    ids: np.ndarray
    cost: np.ndarray
    ref_a: np.ndarray
    ref_b: np.ndarray
    point: np.ndarray


def scratch(st) -> Scratch:
    """Return work arrays for the reductions of the forest ``st`` (one thread's)."""
    n, D = st.leaf_ids.size, st.forest.n_features
    ids, ref_a, ref_b = np.empty(n, np.int64), np.empty(D, np.int64), np.empty(D, np.int64)
    return Scratch(ids, np.empty(n), ref_a, ref_b, np.empty(D))


_NONE = np.zeros(0, dtype=np.int64)
_NO_COST = np.zeros(0)


def _empty(st, c):
    n = st.leaf_ids.size
    return Reduced(c.ka, c.kb, np.zeros(n, bool), np.zeros(st.forest.n_trees, bool), math.inf, True)


def reduce(st, c: Costs, rho, forms, alive=None, margins=True, ids=None, work=None) -> Reduced:
    """Run the reductions of the module docstring to a fixed point at cutoff ``rho``.

    Parameters
    ----------
    st : Structure
        The forest's program template (:class:`~fastcf._trees.structure.Structure`).
    c : Costs
        The query's interval costs and box.
    rho : float
        The cutoff (``inf``: only the box and the margins reduce).
    forms : LeafForms
        The target's linear forms per leaf (:func:`leaf_forms`).
    alive : ndarray of bool, optional
        Leaves already known dead are False.
    margins : bool, default=True
        ``False``: costs and hulls only, which then hold for every point of cost <= ρ, in the
        target class or not (the incumbent search walks through such points).
    ids : ndarray of int, optional
        The leaves ``alive`` holds, in order (a :attr:`Reduced.ids`), when the caller has them.
    work : Scratch, optional
        Work arrays (:func:`scratch`), not to be shared by two threads; else new ones.
    """
    from .._kernels.tree_reduce import Node, reduce_rounds

    T = st.forest.n_trees
    rho = rho * (1.0 + 1e-12)  # (a cell's cost summed in another order may differ by ulps)
    if alive is None:
        alive = st.leaf_ok.copy()
    elif ids is None:
        alive = alive & st.leaf_ok
    else:  # (a node's alive leaves, as a reduction left them: none is empty)
        alive = alive.copy()
    pruned = np.zeros(T, dtype=bool)
    ka, kb = c.ka.astype(np.int64), c.kb.astype(np.int64)  # (copies)
    work = scratch(st) if work is None else work
    empty, lb, m = reduce_rounds(
        st.leaf_tables, c.flat, np.asarray(c.kbar, dtype=np.int64), forms,
        Node(ka, kb, alive, pruned), work, _NONE if ids is None else ids, _NO_COST, float(rho),
        bool(margins), ROUNDS,
    )  # fmt: skip
    if empty:
        return _empty(st, c)
    return Reduced(ka, kb, alive, pruned, float(lb), False, work.ids[:m].copy())


def reduce_from(st, c: Costs, rho, forms, red: Reduced) -> Reduced:
    """:func:`reduce` at cutoff ``rho`` started from a reduction ``red`` at a cutoff >= ``rho``.

    Every rule removes at a lower cutoff whatever it removes at a higher one, so the fixed
    point at ``rho`` lies within ``red``: starting there (its ranges and alive leaves) keeps
    every cell of cost <= ``rho`` that a cold start keeps, and passes over fewer leaves.
    """
    return reduce(st, c._replace(ka=red.ka, kb=red.kb), rho, forms, alive=red.alive, ids=red.ids)


def lower_bound(st, c: Costs, cost, forms, steps=8):
    """Return a lower bound on the optimum of a query whose best known answer costs ``cost``.

    Bisection on the cutoff: the largest ρ tried at which :func:`reduce` proves that no cell
    of cost <= ρ is in the target class (``cost`` itself when it proves nothing is cheaper
    than ``cost`` less a relative 1e-10; ``inf`` when nothing at all qualifies). In objective
    units (squared for Euclidean). Each cutoff is reduced from the reduction at the lowest
    cutoff tried that proved nothing (:func:`reduce_from`).
    """
    if not math.isfinite(cost):
        red = reduce(st, c, math.inf, forms)
        return math.inf if red.empty else red.lb
    top = reduce(st, c, cost, forms)
    if top.empty or reduce_from(st, c, cost * (1.0 - 1e-10), forms, top).empty:
        return cost
    lo, hi = top.lb, cost
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        red = reduce_from(st, c, mid, forms, top)
        if red.empty:
            lo = mid
        else:
            hi, top = mid, red
    return lo
