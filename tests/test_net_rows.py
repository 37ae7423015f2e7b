"""The rows of a network in a program (``fastcf._net.rows``) over an affine input map.

At a point of the network — the input ``h₀ = P v + p`` of program columns v, each neuron's
output y and each unstable neuron's side a — every neuron's row holds, y lies within its
column bounds, and the target's rows are ``G h`` on the last hidden layer (``h₀`` without one).
"""

import numpy as np
import pytest
from scipy import sparse

from fastcf._net.bounds import box_bounds, interval
from fastcf._net.model import Net
from fastcf._net.rows import network_rows, unstable


def _case(hidden, relu, seed):
    rng = np.random.default_rng(seed)
    D, n_v, K = 4, 6, 3
    sizes = (D, *hidden, K)
    W = tuple(rng.normal(size=(sizes[j + 1], sizes[j])) for j in range(len(sizes) - 1))
    b = tuple(rng.normal(size=s) for s in sizes[1:])
    net = Net(W, b, relu, False)
    P = rng.normal(size=(D, n_v)) * (rng.random((D, n_v)) < 0.6)
    P[:, 0] = P[:, 1] = 0.0
    P[0, 0] = P[1, 0] = 1.0  # (one column in two inputs)
    p = rng.normal(size=D)
    h_lo, h_hi = box_bounds(P, p, np.zeros(n_v), np.ones(n_v))  # v in [0, 1]
    ls, us = interval(net.W, net.b, h_lo, h_hi, relu)
    return rng, net, P, p, ls, us, n_v


@pytest.mark.parametrize("relu", [True, False], ids=["relu", "identity"])
@pytest.mark.parametrize("hidden", [(), (5,), (5, 4)], ids=str)
def test_a_point_of_the_network_meets_its_rows(hidden, relu):
    rng, net, P, p, ls, us, n_v = _case(hidden, relu, 7)
    masks = unstable(net, ls, us)
    H, n_a = sum(hidden), int(sum(m.sum() for m in masks))
    iy, ia = n_v, n_v + H
    G = rng.normal(size=(2, net.W[-1].shape[1]))
    g = rng.normal(size=2)
    Pc = sparse.coo_array(P)
    nr = network_rows(net, ls, us, (Pc.row, Pc.col, Pc.data), iy, ia, G, g, p)
    n = ia + n_a
    A = sparse.csr_array((nr.vals, (nr.rows, nr.cols)), shape=(nr.low.shape[0], n))
    for v in rng.random((20, n_v)):
        h0 = P @ v + p
        zs = net.hidden(h0[None])
        col = np.concatenate(
            [v]
            + [np.maximum(z[0], 0.0) if relu else z[0] for z in zs]
            + [(z[0][m] > 0).astype(np.float64) for z, m in zip(zs, masks, strict=True)]
        )
        Av = A @ col
        k = G.shape[0]
        tol = 1e-9 * (1.0 + np.abs(Av[:-k]))
        assert np.all(Av[:-k] >= nr.low[:-k] - tol) and np.all(Av[:-k] <= nr.high[:-k] + tol)
        y = col[iy:ia]
        assert np.all(y >= nr.y_lb - 1e-12) and np.all(y <= nr.y_ub + 1e-12)
        # the target: G h − g as its rows read it
        h = col[iy + H - hidden[-1] : ia] if hidden else h0
        np.testing.assert_allclose(Av[-k:] - nr.low[-k:], G @ h - g, rtol=1e-12, atol=1e-12)
        assert np.all(nr.high[-k:] == np.inf)
