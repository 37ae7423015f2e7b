"""The training regions of a class closest to a query (the quick search's LIRE-style start).

:func:`nearest_boxes`: the ``k`` boxes of a set that the query's projection reaches at the
least cost (the projection ``clip(x̄, max(box_lo, lo), min(box_hi, hi))``, its cost summed over
the features under the query's separable metric), each box's sum stopped as soon as it passes
the ``k``-th best so far. The NumPy enumeration of :func:`fastcf._trees.plausible.solve` is its
reference (``tests/test_trees_speed_paths.py``).
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["nearest_boxes", "METRIC_CODES"]

#: the metrics of :mod:`fastcf._trees.query` as the kernel's integer codes
METRIC_CODES = {"manhattan": 0, "euclidean": 1, "l0": 2, "mixed": 3}


@kernel()
def nearest_boxes(blo, bhi, idx, x0, lo, hi, w, metric, k, max_changes):
    """Return (rows, costs): the ``k`` cheapest boxes ``idx`` of ``blo``/``bhi``, cheapest first.

    ``metric``: a code of :data:`METRIC_CODES`; ``max_changes`` < 0: no limit, else a box whose
    projection changes more features is skipped, as is a box that misses the query's box
    ``lo``/``hi``. Ties go to the earlier box of ``idx``; fewer than ``k`` rows when fewer
    boxes qualify.
    """
    D = x0.shape[0]
    best = np.full(k, np.inf)
    rows = np.full(k, -1, dtype=np.int64)
    n = 0
    for r in range(idx.shape[0]):
        i = idx[r]
        cost = 0.0
        changed = 0
        ok = True
        for f in range(D):
            a = max(blo[i, f], lo[f])
            b = min(bhi[i, f], hi[f])
            if a > b:
                ok = False
                break
            p = min(max(x0[f], a), b)
            d = p - x0[f]
            if d != 0.0:
                changed += 1
                if metric == 0:
                    cost += w[f] * abs(d)
                elif metric == 1:
                    cost += (w[f] * d) ** 2
                elif metric == 2:
                    cost += w[f]
                elif w[f] < 0.0:
                    cost += -w[f]
                else:
                    cost += w[f] * abs(d)
            if n == k and cost >= best[k - 1]:
                ok = False
                break
        if not ok or (max_changes >= 0 and changed > max_changes):
            continue
        # insert into the sorted list of the best (the last one drops out when it is full)
        j = n if n < k else k - 1
        while j > 0 and best[j - 1] > cost:
            if j < k:
                best[j] = best[j - 1]
                rows[j] = rows[j - 1]
            j -= 1
        best[j] = cost
        rows[j] = i
        if n < k:
            n += 1
    return rows[:n], best[:n]
