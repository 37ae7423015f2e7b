"""Models whose scores are not computed as fastcf computes them: a linear-kernel SVM's dual sum.

A binary ``SVC``/``NuSVC(kernel="linear")`` (alone, in a pipeline, or inside a
``OneVsRestClassifier``) decides by libsvm's dual sum ``Σ_i α_i y_i ⟨s_i, x⟩ + b`` over its
support vectors, not by ``coef_ @ x + intercept_``. The two are the same function, but the dual
sum adds terms as large as ``|α_i| ‖s_i‖ ‖x‖`` that cancel, so its rounding can exceed the
rounding bound of fastcf's copy by orders of magnitude (a score of 2.3e-4 against 1e-6 at
features ~7e4: ``docs/scripts/soak_zoo.py``). fastcf's copy is then no judge of the model: the
stage asks the model's own ``predict`` (:meth:`fastcf.LinearExplainer._in_target`, no row
certified by the copy's bound), and a success the model refuses is solved again aimed further
inside by the gap the two arithmetics showed at that answer (:class:`DualGap`, run by
:func:`fastcf._stage.settle`).
"""

from __future__ import annotations

import numpy as np

from .._catalog import dual_scores
from .._confirm import model_input
from .._stage import stack
from .route import solved
from .verify import rows_box

__all__ = ["dual_scores", "DualGap"]  # (dual_scores: the catalog's, fastcf._catalog)


class DualGap:
    """Re-aim of ``region=True`` answers the model's own dual arithmetic refuses.

    Round ``r`` re-solves a refused row with its margin raised past the gap ``g`` between the
    model's ``decision_function`` and fastcf's scores at the refused answer (a score
    difference ``z_t − z_j`` moves by at most ``2 g``): ``margin + 4 g · 2^r``, at least twice
    the margin it had. The gap at the new answer is about the same (the dual sum's rounding
    follows the size of its terms, which a short move barely changes).

    Parameters
    ----------
    ex : LinearExplainer
        Built from a model whose scores are a dual sum (:func:`dual_scores`).
    X, tidx : ndarray
        The query rows and their target indices.
    q : fastcf._linear.route.Query
        The query's record (``form == "region"``).
    """

    def __init__(self, ex, X, tidx, q):
        self.ex, self.X, self.tidx, self.q = ex, X, tidx, q
        self.margins = np.full(X.shape[0], float(q.margin))

    def aim(self, sol, rows, r):
        """Set the refused ``rows``' margins past the gap at their answers; return them."""
        ex = self.ex
        x = sol.x[rows]
        model = np.asarray(ex.model.decision_function(model_input(ex.model, x)), float)
        ours = np.asarray(ex.decision_function(x), dtype=float)
        gap = np.abs(model - ours).reshape(rows.size, -1).max(axis=1)
        m = self.margins[rows]
        raised = np.maximum(m + 4.0 * gap * 2.0**r, 2.0 * m)
        ok = np.isfinite(raised)
        self.margins[rows] = np.where(ok, raised, m)
        return rows[ok]

    def solve(self, rows):
        """Solve ``rows`` at their raised margins (unjudged; no row certified by the copy)."""
        subs = []
        for i in rows:
            qi = self.q._replace(margin=float(self.margins[i]), bnd=rows_box(self.q.bnd, [i]))
            sub = solved(self.ex, self.X[i : i + 1], self.tidx[i : i + 1], qi)
            subs.append(sub._replace(certified=None))
        return stack(subs)
