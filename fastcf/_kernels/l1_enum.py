"""Alternatives of one binary Manhattan ``proba=`` / ``region=True`` query in one kernel.

:func:`lawler_l1` runs Lawler's scheme of :func:`fastcf._lawler.lawler` (read its
docstring first) with the node solve of the fractional knapsack
(:func:`fastcf._kernels.l1.knapsack._constrained_one`, the kernel of ``explain``), so that a node
costs the knapsack walk and no Python: the k alternatives of a breast-cancer query took ~500 µs
through the Python scheme, ~15 node solves and 5 answers each paying its Python overhead.

It is the Python scheme step for step, so its answers are that scheme's, in the same order:

* a node is a set Z of frozen features, its value the knapsack optimum with Z frozen (∞ when
  the kernel says UNREACHABLE or INFEASIBLE, or the answer is not finite);
* the heap orders (value, insertion count), the count breaking ties as Python's ``heapq`` on
  ``(value, next(tie), ...)`` does; a child is pushed with its parent's value and solved when
  first popped; a set Z is pushed once (a hash table of the sets: Zobrist hashing, each set's
  hash the XOR of one random key per frozen feature, collisions resolved by comparing the sets);
* a popped, solved node whose changed set S contains the set of no answer taken before is a
  candidate; its children are Z ∪ {s} for s ∈ S in increasing index.

The one difference: Python accepts a candidate after solving it in full and asking the model
(``accept``); the kernel takes every candidate whose knapsack status is OK, and hands the query
back (``fallback``) at the first candidate with another status. The caller then judges the k
candidates in full and takes the Python scheme whenever one of them is not confirmed, so the
answers are always those of the Python scheme (tests/test_sparse_diverse.py compares the two).
"""

from __future__ import annotations

import math

import numpy as np

from fastcf._status import Status

from . import kernel
from .l1.knapsack import _constrained_one, _distance

__all__ = ["lawler_l1"]

_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
_INFEASIBLE = int(Status.INFEASIBLE)


@kernel(callee=True)
def _node(x0, w, sign, c0, cost, frozen, theta, lo, hi, bounded, out):
    """Solve the node ``frozen``: (value, status, ζ, distance, n_moved) and ``out``."""
    free = ~frozen
    moved, nm, st, z = _constrained_one(x0, w, sign, c0, cost, free, theta, lo, hi, bounded, out)
    d = _distance(x0, out, cost, moved, nm)
    val = d
    if st == _UNREACHABLE or st == _INFEASIBLE:
        val = np.inf
    else:
        for i in range(x0.shape[0]):
            if not math.isfinite(out[i]):
                val = np.inf
                break
    return val, st, z, d, nm


@kernel(callee=True)
def _before(hv, ht, a, b):
    """Heap order: (value, tie) of entry a below that of entry b."""
    return hv[a] < hv[b] or (hv[a] == hv[b] and ht[a] < ht[b])


@kernel(callee=True)
def _swap(hv, ht, hn, hs, a, b):
    hv[a], hv[b] = hv[b], hv[a]
    ht[a], ht[b] = ht[b], ht[a]
    hn[a], hn[b] = hn[b], hn[a]
    hs[a], hs[b] = hs[b], hs[a]


@kernel(callee=True)
def _sift_up(hv, ht, hn, hs, i):
    while i > 0:
        p = (i - 1) // 2
        if not _before(hv, ht, i, p):
            break
        _swap(hv, ht, hn, hs, i, p)
        i = p


@kernel(callee=True)
def _sift_down(hv, ht, hn, hs, size):
    # np.int64, not the literal 0: while typing the loop Numba would see i as Literal[int](0)
    # and compile _before and _swap a second time for it
    i = np.int64(0)
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _before(hv, ht, left + 1, left):
            c = left + 1
        if not _before(hv, ht, c, i):
            break
        _swap(hv, ht, hn, hs, i, c)
        i = c


@kernel(callee=True)
def _lookup(table, hashes, masks, h, row):
    """Return (slot, node): the node holding set ``row`` (hash ``h``), or -1 and a free slot."""
    cap = table.shape[0]
    j = h & (cap - 1)
    while table[j] >= 0:
        nid = table[j]
        if hashes[nid] == h:
            same = True
            for i in range(row.shape[0]):
                if masks[nid, i] != row[i]:
                    same = False
                    break
            if same:
                return j, nid
        j = (j + 1) & (cap - 1)
    return j, -1


@kernel()
def lawler_l1(x0, w, sign, c0, cost, frozen0, theta, lo, hi, bounded, keys, k, max_nodes):
    """Return the first ``k`` candidates of Lawler's scheme (binary Manhattan, one query).

    Parameters
    ----------
    x0, w, sign, c0, cost, theta, lo, hi, bounded
        As :func:`fastcf._kernels.l1.knapsack._constrained_one` (``lo``, ``hi``: one row's box).
    frozen0 : ndarray of bool, shape (D,)
        The user's frozen features.
    keys : ndarray of int64, shape (D,)
        One random key per feature (the sets' hashes).
    k, max_nodes : int
        Candidates wanted; nodes solved before the scheme stops (as Python's ``max_nodes``).

    Returns
    -------
    n : int
        Candidates found (≤ k).
    Z : (k, D) bool
        Their frozen sets (rows ``:n``).
    X, zeta, status, dist, n_moved : (k, D), (k,), (k,), (k,), (k,)
        Their knapsack answers, as the kernel of ``explain`` returns them.
    fallback : bool
        A candidate with a status other than OK: the caller takes the Python scheme.
    limited : bool
        The scheme stopped at ``max_nodes`` with nodes left (as :func:`fastcf._lawler.lawler`
        then calls its ``stop("max_nodes")``).
    """
    D = x0.shape[0]
    Zs = np.zeros((k, D), dtype=np.bool_)
    Xs = np.empty((k, D))
    zetas = np.empty(k)
    stats = np.empty(k, dtype=np.int64)
    dists = np.empty(k)
    nmvs = np.empty(k, dtype=np.int64)
    taken = np.zeros((k, D), dtype=np.bool_)  # changed sets of the candidates
    out = np.empty(D)
    # nodes: their frozen sets and hashes
    ncap = 64
    masks = np.zeros((ncap, D), dtype=np.bool_)
    hashes = np.empty(ncap, dtype=np.int64)
    h0 = np.int64(0)
    for i in range(D):
        masks[0, i] = frozen0[i]
        if frozen0[i]:
            h0 ^= keys[i]
    hashes[0] = h0
    n_nodes = 1
    table = np.full(128, -1, dtype=np.int64)
    table[_lookup(table, hashes, masks, h0, masks[0])[0]] = 0
    # the heap: value, tie, node, solved
    hcap = 64
    hv = np.empty(hcap)
    ht = np.empty(hcap, dtype=np.int64)
    hn = np.empty(hcap, dtype=np.int64)
    hs = np.empty(hcap, dtype=np.bool_)
    val, _st, _z, _d, _nm = _node(x0, w, sign, c0, cost, masks[0], theta, lo, hi, bounded, out)
    hv[0], ht[0], hn[0], hs[0] = val, 0, 0, True
    size = 1
    tie = 1
    solved = 1
    limited = False
    found = 0
    S = np.empty(D, dtype=np.bool_)
    while size > 0:
        val, node, done = hv[0], hn[0], hs[0]
        size -= 1
        if size > 0:
            _swap(hv, ht, hn, hs, np.int64(0), size)  # (not a literal: see _sift_down)
            _sift_down(hv, ht, hn, hs, size)
        Z = masks[node]
        if not done:  # a child pushed with its parent's value: solve it now
            if solved >= max_nodes:
                limited = True
                break
            val, _st, _z, _d, _nm = _node(x0, w, sign, c0, cost, Z, theta, lo, hi, bounded, out)
            solved += 1
            if math.isfinite(val):
                hv[size], ht[size], hn[size], hs[size] = val, tie, node, True
                tie += 1
                _sift_up(hv, ht, hn, hs, size)
                size += 1
            continue
        if not math.isfinite(val):
            continue
        val, st, z, d, nm = _node(x0, w, sign, c0, cost, Z, theta, lo, hi, bounded, out)
        for i in range(D):
            S[i] = out[i] != x0[i]
        contains = False
        for t in range(found):
            inside = True
            for i in range(D):
                if taken[t, i] and not S[i]:
                    inside = False
                    break
            if inside:
                contains = True
                break
        if not contains:
            if st != _OK:
                return found, Zs, Xs, zetas, stats, dists, nmvs, True, False
            Zs[found] = Z
            Xs[found] = out
            zetas[found], stats[found], dists[found], nmvs[found] = z, st, d, nm
            taken[found] = S
            found += 1
            if found == k:
                break
        for s in range(D):
            if not S[s] or Z[s]:
                continue
            h = hashes[node] ^ keys[s]
            row = Z.copy()
            row[s] = True
            slot, nid = _lookup(table, hashes, masks, h, row)
            if nid >= 0:
                continue
            if n_nodes == ncap:  # grow the node store
                ncap *= 2
                m2 = np.zeros((ncap, D), dtype=np.bool_)
                m2[:n_nodes] = masks[:n_nodes]
                masks = m2
                h2 = np.empty(ncap, dtype=np.int64)
                h2[:n_nodes] = hashes[:n_nodes]
                hashes = h2
                Z = masks[node]
            masks[n_nodes] = row
            hashes[n_nodes] = h
            table[slot] = n_nodes
            n_nodes += 1
            if 2 * n_nodes > table.shape[0]:  # grow and rebuild the table (load ≤ 1/2)
                table = np.full(2 * table.shape[0], -1, dtype=np.int64)
                for j in range(n_nodes):
                    table[_lookup(table, hashes, masks, hashes[j], masks[j])[0]] = j
            if size == hcap:  # grow the heap
                hcap *= 2
                v2 = np.empty(hcap)
                v2[:size] = hv[:size]
                hv = v2
                t2 = np.empty(hcap, dtype=np.int64)
                t2[:size] = ht[:size]
                ht = t2
                n2 = np.empty(hcap, dtype=np.int64)
                n2[:size] = hn[:size]
                hn = n2
                s2 = np.empty(hcap, dtype=np.bool_)
                s2[:size] = hs[:size]
                hs = s2
            hv[size], ht[size], hn[size], hs[size] = val, tie, n_nodes - 1, False
            tie += 1
            _sift_up(hv, ht, hn, hs, size)
            size += 1
    return found, Zs, Xs, zetas, stats, dists, nmvs, False, limited
