"""The exact path for GLVQ/GMLVQ under the (weighted) Euclidean distance: a dual active-set QP.

With a shared metric every constraint of eq. 9 is linear (:mod:`.model`), so for one target
prototype p_i the program is the QP of eq. 11,

    min_x ½ ‖W^{1/2}(x − x̄)‖²  s.t.  A_ij·x ≤ b_ij − ε (p_j of another class),  C x ≤ c,
                                      lo ≤ x ≤ hi,  x_F = x̄_F,

a least-distance program in u = W^{1/2}(x − x̄) on the free features. It is solved exactly by
Lawson & Hanson's LDP → NNLS reduction (an active-set method on the dual, one variable per
constraint row) in the Numba kernel :func:`fastcf._kernels.lvq_qp.lvq_fast_batch`, which also runs
Algorithm 1 (best target prototype) over the whole batch of queries.
"""

from __future__ import annotations

import numpy as np

from fastcf._kernels.lvq_qp import Metric, Settings, UserRows, lvq_fast_batch
from fastcf._status import Status, message
from fastcf.results import Solution

__all__ = ["METHOD", "solve_ldp"]

METHOD = "ldp (dual active set)"
#: queries from which a batch may run on the batch threads (which take ≥ 16 rows per thread:
#: fastcf._kernels._batch). 4096 under Numba's prange, whose start-up cost more; on the
#: threads a batch of 1 000 GLVQ queries takes 2.2 ms against 3.4 ms serially (2 cores)
_PARALLEL_MIN_BATCH = 2


def solve_ldp(geo, X, tgt, opts, max_iter) -> Solution:
    """Solve Algorithm 1 for every query with the exact dual QP; return a :class:`Solution`.

    Parameters
    ----------
    geo : fastcf._lvq.model.Geometry
        A model with a shared metric (``kind`` "euclidean" or "global").
    X : ndarray of shape (N, D)
    tgt : ndarray of shape (N,)
        Target class indices.
    opts : fastcf._lvq.options.Options
        Its box lo/hi is shared, shape (D,), or one per query, shape (N, D).
    max_iter : int
        NNLS steps per target prototype.
    """
    # the kernel takes the box as (R, D): R = 1 for a shared box, R = N for one per query
    lo, hi = (opts.lo, opts.hi) if opts.lo.ndim == 2 else (opts.lo[None], opts.hi[None])
    # a read-only array (e.g. a broadcast view) is another Numba type: one more compilation
    lo, hi = (v if v.flags.writeable else v.copy() for v in (lo, hi))
    Xcf, dist, best, nit, status = lvq_fast_batch(
        X,
        tgt,
        geo.tables,
        Metric(np.sqrt(opts.w), opts.free, lo, hi),
        UserRows(np.ascontiguousarray(opts.C), np.ascontiguousarray(opts.c)),
        Settings(opts.margin, int(max_iter)),
        X.shape[0] >= _PARALLEL_MIN_BATCH,
    )
    return Solution(
        x=Xcf,
        proba=None,
        distance=dist,
        success=(status == Status.OK) | (status == Status.MAXITER),
        status=status,
        nit=nit,
        method=METHOD,
        message=[message(s) for s in status],
        info={"prototype": best},
    )
