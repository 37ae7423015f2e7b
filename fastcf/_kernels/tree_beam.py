"""The rounds of the incumbent's beam search of single-feature moves (trees' incumbent).

A round of :meth:`fastcf._trees.incumbent.Search.beam` expands every point of the beam by every
single-feature move, in two kernels around the one step that stays in Python, the library's
own verdict on the candidates' sums:

* :func:`beam_moves` lists each point's moves that cost less than the best answer so far, with
  their sums (gathered from the single-move tables of :mod:`.tree_moves`);
* :func:`beam_next`, given the verdicts and margins of those sums, keeps the cheapest valid move
  as the best answer (point by point, so that a point's answer lowers the cost the points after
  it must beat) and ranks the others into the next beam.

Costs are added as NumPy's ``sum`` adds them (:func:`np_sum`: its pairwise sum), so that the
rounds decide every comparison as the loop of NumPy steps they replace did.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["beam_moves", "beam_next", "np_sum"]


@kernel(callee=True)
def _block(a, lo, n):
    """NumPy's sum of ``a[lo : lo + n]``, n ≤ 128 (``numpy/_core/src/umath/loops_utils.h``)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r = np.empty(8)
    for j in range(8):
        r[j] = a[lo + j]
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += a[lo + i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@kernel()
def np_sum(a):
    """Return ``a.sum()`` of a 1-D float64 array as NumPy adds it: its pairwise sum.

    Blocks of at most 128 items are added by :func:`_block`; a longer range is split at half
    its length (rounded down to a multiple of 8) and its halves added (NumPy's recursion,
    unrolled here on a stack: ranges to add, and the sums of the left halves waiting). The
    same bits as ``ndarray.sum`` on NumPy 1.24 and 2.4 (``tests/test_trees_speed_paths.py``).
    """
    n = a.shape[0]
    if n <= 128:  # (lo an int64, not the literal 0: one specialisation of _block)
        return _block(a, np.int64(0), n)
    # ranges (lo, n, state): state 0 not begun, 1 its left half being added, 2 its right half
    los = np.empty(128, dtype=np.int64)
    ns = np.empty(128, dtype=np.int64)
    state = np.empty(128, dtype=np.int64)
    left = np.empty(128)  # the left half's sum of a range in state 2
    top = 0
    los[0], ns[0], state[0] = 0, n, 0
    val = 0.0  # the sum of the range last finished
    while top >= 0:
        lo, m = los[top], ns[top]
        if state[top] == 0 and m <= 128:
            val = _block(a, lo, m)
            top -= 1
            continue
        h = m // 2
        h -= h % 8
        if state[top] == 0:  # add the left half first
            state[top] = 1
            top += 1
            los[top], ns[top], state[top] = lo, h, 0
        elif state[top] == 1:  # the left half's sum is val: add the right half
            state[top] = 2
            left[top] = val
            top += 1
            los[top], ns[top], state[top] = lo + h, m - h, 0
        else:
            val = left[top] + val
            top -= 1
    return val


@kernel()
def beam_moves(ZN, BX, BK, BC, x0, mf, mk, mc, best_cost, max_changes):
    """Return (pt, mv, total, Zi): every beam point's moves that cost less than ``best_cost``.

    ``ZN`` (W, M, S): the sums after each move of each point (``single_moves``); ``BX``, ``BK``,
    ``BC`` (W, D): the points, their intervals and per-coordinate costs; move i puts feature
    ``mf[i]`` in interval ``mk[i]`` at cost ``mc[i]``. A move that keeps its feature's interval
    is none; with ``max_changes`` ≥ 0 reached, only features already changed move. Out: for
    each listed move, its point, its index, the point's cost with it, and its sums (rows of
    ``Zi``), the points in order.
    """
    W, M, S = ZN.shape
    pt = np.empty(W * M, dtype=np.int64)
    mv = np.empty(W * M, dtype=np.int64)
    tot = np.empty(W * M)
    n = 0
    for w in range(W):
        now = np_sum(BC[w])
        full = False
        if max_changes >= 0:
            cnt = 0
            for f in range(x0.shape[0]):
                if BX[w, f] != x0[f]:
                    cnt += 1
            full = cnt >= max_changes
        for i in range(M):
            f = mf[i]
            if mk[i] == BK[w, f] or (full and BX[w, f] == x0[f]):
                continue
            t = now - BC[w, f] + mc[i]
            if t < best_cost:
                pt[n] = w
                mv[n] = i
                tot[n] = t
                n += 1
    Zi = np.empty((n, S))
    for r in range(n):
        for s in range(S):
            Zi[r, s] = ZN[pt[r], mv[r], s]
    return pt[:n], mv[:n], tot[:n], Zi


@kernel()
def beam_next(pt, mv, tot, ok, m, BX, BK, BC, mf, mk, mp, mc, m0, rate, width, best_cost):
    """Return (X, K, C, best_w, best_i, best_cost): the next beam and the best answer found.

    ``pt``, ``mv``, ``tot``: :func:`beam_moves`' list; ``ok``, ``m``: the library's verdict and
    the target's margin of each listed move. Point by point, the moves that cost less than the
    best answer so far are kept; the cheapest valid one (the first at equal cost) becomes the
    best answer (``best_w``, ``best_i``: its point and move, −1 if none). The point's other kept
    moves that gain margin (``m > m0``) are scored by their gain beyond the best answer's pace
    (``rate`` > 0: gain − rate · cost) or per unit of cost, and its ``width`` best (the earlier
    move at equal score) become children. The children, best score first (the earlier child at
    equal score), form the next beam: at most ``width`` distinct interval vectors that cost less
    than the best answer.
    """
    W, D = BX.shape
    n = pt.shape[0]
    best_w = -1
    best_i = -1
    cw = np.empty(W * width, dtype=np.int64)  # a child's point and move
    ci = np.empty(W * width, dtype=np.int64)
    cs = np.empty(W * width)  # its score
    nc = 0
    sel = np.empty(width, dtype=np.int64)  # a point's best moves so far, and their scores
    sv = np.empty(width)
    a = 0
    for w in range(W):
        b = a
        while b < n and pt[b] == w:
            b += 1
        # the cheapest valid move of those cheaper than the best so far
        j = -1
        for r in range(a, b):
            if tot[r] < best_cost and ok[r] and (j < 0 or tot[r] < tot[j]):
                j = r
        bound = best_cost  # the filter of this point's moves (before its own answer)
        if j >= 0:
            best_w, best_i, best_cost = w, mv[j], tot[j]
        # the width best scores of the kept moves that are not valid and gain margin
        ns = 0
        for r in range(a, b):
            if not tot[r] < bound or ok[r] or not m[r] > m0:
                continue
            if rate > 0:
                s = (m[r] - m0) - rate * tot[r]
            else:
                s = (m[r] - m0) / max(tot[r], 1e-300)
            if not np.isfinite(s) or (ns == width and not s > sv[ns - 1]):
                continue
            # insert r among the kept (best score first, the earlier move first at a tie)
            p = min(ns, width - 1)
            while p > 0 and sv[p - 1] < s:
                sel[p] = sel[p - 1]
                sv[p] = sv[p - 1]
                p -= 1
            sel[p] = r
            sv[p] = s
            ns = min(ns + 1, width)
        for u in range(ns):
            cw[nc] = w
            ci[nc] = mv[sel[u]]
            cs[nc] = sv[u]
            nc += 1
        a = b
    # the children, best score first (stable), distinct, cheaper than the best answer
    order = np.empty(nc, dtype=np.int64)
    for u in range(nc):
        p = u
        while p > 0 and cs[order[p - 1]] < cs[u]:
            order[p] = order[p - 1]
            p -= 1
        order[p] = u
    X = np.empty((width, D))
    K = np.empty((width, D), dtype=np.int64)
    C = np.empty((width, D))
    nb = 0
    for u in range(nc):
        c = order[u]
        w, i = cw[c], ci[c]
        f = mf[i]
        for g in range(D):
            X[nb, g] = BX[w, g]
            K[nb, g] = BK[w, g]
            C[nb, g] = BC[w, g]
        X[nb, f] = mp[i]
        K[nb, f] = mk[i]
        C[nb, f] = mc[i]
        if np_sum(C[nb]) >= best_cost:
            continue
        dup = False
        for v in range(nb):
            same = True
            for g in range(D):
                if K[v, g] != K[nb, g]:
                    same = False
                    break
            if same:
                dup = True
                break
        if dup:
            continue
        nb += 1
        if nb == width:
            break
    return X[:nb], K[:nb], C[:nb], best_w, best_i, best_cost
