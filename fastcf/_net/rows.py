"""A network's rows in a mixed-integer program: the big-M neurons and the target.

One copy of the rows, for every program that holds a network after its own columns: the
network's program (:class:`fastcf._net.program.Program`, whose input is the program's x) and
the tabular one (:mod:`fastcf._tabular.netprog`, whose input is the moves and the category
indicators). The network reads ``h₀ = P v + p``, an affine map of the program's columns v;
each hidden layer's pre-activations are ``z = W h + b``, bounded by ``l ≤ z ≤ u`` over the
query's box (:mod:`.bounds`), and each neuron has an output column y:

* *stable off* (u ≤ 0): y = 0 (its column's bounds), no row;
* *stable on* (l ≥ 0), or any neuron of an identity layer: ``y = z``, one row;
* *unstable* (l < 0 < u): ``y ≥ z``, ``y ≤ z − l (1 − a)``, ``y ≤ u a`` (three rows) and
  ``0 ≤ y ≤ u`` with a binary column a — the big-M form of y = max(z, 0), exact at
  a ∈ {0, 1} (Tjeng et al., ICLR 2019).

The target's rows ``G h ≥ g`` on the last hidden layer's output come last.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["NetRows", "unstable", "network_rows"]


class NetRows(NamedTuple):
    """The rows of :func:`network_rows`: ``low ≤ A v ≤ high`` as triplets, and y's bounds."""

    rows: np.ndarray  # (nnz,) int64: the row of each entry, from 0
    cols: np.ndarray  # (nnz,) int64: its column of the program
    vals: np.ndarray  # (nnz,) float64
    low: np.ndarray  # (k,) the rows' lower bounds
    high: np.ndarray  # (k,) their upper bounds
    y_lb: np.ndarray  # (H,) the bounds of the neurons' output columns, layer by layer
    y_ub: np.ndarray


def unstable(net, ls, us):
    """Return, per hidden layer, the mask of its unstable neurons (``l < 0 < u``; ReLU only)."""
    return [
        (zl < 0) & (zu > 0) if net.relu else np.zeros(zl.shape, dtype=bool)
        for zl, zu in zip(ls, us, strict=True)
    ]


def network_rows(net, ls, us, P, iy, ia, G, g, p=None):
    """Return the :class:`NetRows` of ``net``'s neurons and its target over a program's columns.

    Parameters
    ----------
    net : Net
        The network (:class:`~fastcf._net.model.Net`); its last layer (the logits) is the
        target's business (``G``, ``g``).
    ls, us : lists of ndarray
        Each hidden layer's pre-activation bounds (:mod:`.bounds`).
    P : (rows, cols, vals) arrays
        The network's input as a linear map of the program's columns: the triplets (input
        entry, column, factor) of its sparse matrix (D × the program's columns).
    iy, ia : int
        The program's first column of the neurons' outputs y (every hidden neuron, layer by
        layer) and of the unstable neurons' binaries a (layer by layer).
    G, g : ndarray
        The target's rows ``G h ≥ g`` on the last hidden layer (the input, without one).
    p : ndarray of shape (D,), optional
        The input map's constant part (None: zero).

    Returns
    -------
    NetRows
        Per hidden layer, neuron by neuron, its rows (none, one or three: the module
        docstring); then the target's, one per row of ``G``.
    """
    R, C, V, LO, HI, ylb, yub = [], [], [], [], [], [], []
    r = 0
    prev = P  # the layer's input h as a linear map of the columns: triplets, or y's columns
    shift = p  # and its constant part (None: zero)
    ya, aa = iy, ia
    for W, b, lw, up, un in zip(net.W[:-1], net.b[:-1], ls, us, unstable(net, ls, us),
                                strict=True):  # fmt: skip
        m = W.shape[0]
        y = ya + np.arange(m)
        bias = b if shift is None else W @ shift + b
        off = (up <= 0) if net.relu else np.zeros(m, dtype=bool)  # stable off: y = 0
        eq = ~off & ~un  # y = z = W h + b
        if net.relu:
            ylb.append(np.where(eq, np.maximum(lw, 0.0), 0.0))
        else:
            ylb.append(lw)
        yub.append(np.where(off, 0.0, up))
        # unstable: y ≥ z, y ≤ z − l (1 − a), y ≤ u a (three rows); eq: one row
        nrow = np.where(un, 3, np.where(eq, 1, 0))
        s = np.concatenate([[0], np.cumsum(nrow)[:-1]])  # each neuron's first row in the layer
        start = r + s
        a_of = np.full(m, -1)
        a_of[un] = aa + np.arange(int(un.sum()))
        jj, kk, wv = _compose(W, prev)
        keep = nrow[jj] > 0
        jj, kk, wv = jj[keep], kk[keep], wv[keep]
        ju, je = np.flatnonzero(un), np.flatnonzero(eq)
        bu = un[jj]
        R += [start[jj], start[je], start[ju], start[jj[bu]] + 1, start[ju] + 1, start[ju] + 1,
              start[ju] + 2, start[ju] + 2]  # fmt: skip
        C += [kk, y[je], y[ju], kk[bu], y[ju], a_of[ju], y[ju], a_of[ju]]
        V += [wv, -np.ones(je.size), -np.ones(ju.size), -wv[bu], np.ones(ju.size), -lw[ju],
              np.ones(ju.size), -up[ju]]  # fmt: skip
        k = int(nrow.sum())
        lows, highs = np.full(k, -np.inf), np.empty(k)
        lows[s[je]], highs[s[je]] = -bias[je], -bias[je]
        highs[s[ju]] = -bias[ju]
        highs[s[ju] + 1] = bias[ju] - lw[ju]
        highs[s[ju] + 2] = 0.0
        LO.append(lows)
        HI.append(highs)
        r += k
        aa += ju.size
        prev = y
        shift, ya = None, ya + m
    # the target: G h ≥ g
    jj, kk, gv = _compose(G, prev)
    R.append(r + jj)
    C.append(kk)
    V.append(gv)
    LO.append(g if shift is None else g - G @ shift)
    HI.append(np.full(G.shape[0], np.inf))

    def cat(parts, dtype):
        return np.concatenate([np.asarray(q, dtype=dtype) for q in parts] or [np.zeros(0, dtype)])

    return NetRows(cat(R, np.int64), cat(C, np.int64), cat(V, np.float64), cat(LO, np.float64),
                   cat(HI, np.float64), cat(ylb, np.float64), cat(yub, np.float64))  # fmt: skip


def _compose(W, prev):
    """Return the triplets (row, column, value) of ``W h`` over the program's columns.

    ``prev``: h as a linear map of the columns, either the columns of h's entries (a layer's
    outputs y: ``h_k`` is one column) or the triplets (entry of h, column, factor). One triplet
    per pair of a nonzero of W and a column of its h (a column reached twice is summed by the
    matrix they make).
    """
    jj, kk = np.nonzero(W)
    if not isinstance(prev, tuple):
        return jj, prev[kk], W[jj, kk]
    hr, hc, hv = (np.asarray(a) for a in prev)
    order = np.argsort(hr, kind="stable")
    hc, hv = hc[order], hv[order]
    count = np.bincount(hr, minlength=W.shape[1])
    ptr = np.concatenate([[0], np.cumsum(count)])
    rep = count[kk]
    first = np.repeat(ptr[kk] - (np.cumsum(rep) - rep), rep) + np.arange(int(rep.sum()))
    return np.repeat(jj, rep), hc[first], np.repeat(W[jj, kk], rep) * hv[first]
