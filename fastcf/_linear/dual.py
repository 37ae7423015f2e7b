"""Models whose scores are not computed as fastcf computes them: an SVM's dual sum, a pipeline.

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

A pipeline's steps compute its scores through intermediate terms the fold cancels (a scaler of
data far from 0, a whitening PCA): its scores may lie from the copy's by the fold check's
tolerance (:func:`fastcf._fold.tolerance`), which at scores ~10¹² is ~10⁻³ — far above the
copy's own rounding. The class is certified against it (a margin); ``proba=τ`` is judged by it
too: an answer whose copy's ``p`` clears τ by less than the tolerance's reach in ``p`` (beyond
the floor any evaluation may round, :data:`TAU_FLOOR`) is asked of the pipeline itself, one row
at a time, and solved again at a τ raised past the gap it showed (:class:`FoldGap`).
"""

from __future__ import annotations

import numpy as np

from .._catalog import dual_scores
from .._confirm import model_input
from .._stage import stack
from .metric import row_box
from .route import solved

__all__ = ["dual_scores", "DualGap", "FoldGap", "TAU_FLOOR"]

#: how far below τ another evaluation of a pipeline's ``predict_proba`` may round an answer's
#: ``p`` (``docs/reliability.md``): where the fold's tolerance reaches further, the judge asks
#: the pipeline. (The tolerance is a worst case, ~100× the differences seen: at 1e-12 the
#: pipeline would be asked about every answer of an ordinary scaled pipeline, 10× its cost.)
TAU_FLOOR = 1e-9  # (dual_scores: the catalog's, fastcf._catalog)


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
        return _each(self, rows, "margin", self.margins)


class FoldGap:
    """Re-aim of ``proba=`` answers whose ``p`` clears τ by less than the fold's tolerance.

    Round ``r`` re-solves a refused row at ``τ + 2^(r+1) g``, ``g`` the gap between the copy's
    ``p`` and the pipeline's own (one row alone) at the refused answer, plus its shortfall; a row
    whose raised τ is not below 1 is not re-aimed (it stays refused, status 4).

    Parameters
    ----------
    ex : LinearExplainer
        Built from a pipeline.
    X, tidx : ndarray
        The query rows and their target indices.
    q : fastcf._linear.route.Query
        The query's record (``form == "proba"``).
    strict : bool, default=False
        ``verify="model"``: the gap to the model's ``p`` of the batch too
        (:meth:`fastcf.LinearExplainer._own_proba`).
    """

    def __init__(self, ex, X, tidx, q, strict=False):
        self.ex, self.X, self.tidx, self.q, self.strict = ex, X, tidx, q, strict
        self.taus = np.full(X.shape[0], float(q.proba))

    def aim(self, sol, rows, r):
        """Raise the refused ``rows``' τ past the gap at their answers; return them."""
        x = np.asarray(sol.x[rows], dtype=np.float64)
        own = self.ex._own_proba(x, self.tidx[rows], self.strict)
        m = self.ex._model
        ours = m.proba_from_logits(m.check_logits(x))[np.arange(rows.size), self.tidx[rows]]
        gap = np.abs(ours - own) + np.maximum(float(self.q.proba) - own, 0.0)
        # at least a few ulps of τ: a gap of 1e-16 raised τ by less than the solvers' own
        # rounding, and the row stayed refused (verify="model", the zoo: 6e-14 short alone)
        gap = np.maximum(gap, 64 * np.finfo(float).eps)
        raised = np.maximum(self.taus[rows], float(self.q.proba) + gap * 2.0 ** (r + 1))
        ok = np.isfinite(raised) & (raised < 1.0) & (raised > self.taus[rows])
        self.taus[rows] = np.where(ok, raised, self.taus[rows])
        return rows[ok]

    def solve(self, rows):
        """Solve ``rows`` at their raised τ (unjudged: judged again at the original τ)."""
        return _each(self, rows, "proba", self.taus)


def _each(policy, rows, field, values):
    """Solve each of ``rows`` alone with the query's ``field`` set to its own value (unjudged).

    The two policies' re-solve: the query record with that row's aim and box, no certificate
    of the copy kept (the stage's judge asks each again).
    """
    q, subs = policy.q, []
    for i in rows:
        qi = q._replace(**{field: float(values[i])}, bnd=row_box(q.bnd, [i]))
        sub = solved(policy.ex, policy.X[i : i + 1], policy.tidx[i : i + 1], qi)
        subs.append(sub._replace(certified=None))
    return stack(subs)
