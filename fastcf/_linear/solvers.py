"""The linear family's routes: each query form's solver, one finish, then the form's re-aim policy.

A form — problem (2) at given λ (:func:`lam`), ``proba=τ``/``region=True`` (:func:`constrained`),
the λ-path (:func:`path`) — is answered by its family's solver: the closed forms of a binary
model (:mod:`.binary`), the K-space Newton solvers of a softmax model (:mod:`.softmax`), the
projected Newton method or the region QP where a softmax query has ``bounds=`` (:mod:`.boxed`,
:mod:`.boxed_region`, on the model scaled by a power of 2: :func:`~fastcf._linear.fallbacks.boxed`),
the reference methods in R^D (:mod:`.reference`). The solvers that do not judge their own
answers return them raw (:class:`~fastcf._linear.verify.Raw`), and the route finishes them once,
whichever answered (:func:`~fastcf._linear.verify.finish`); the row-by-row ones take each row's
box from the route (:func:`~fastcf._linear.boxed.row_boxes`). The softmax answers then pass the
form's re-aim policy (:mod:`.fallbacks`): the *fallback entries* (:data:`LAM_FALLBACKS`,
:data:`CONSTRAINED_FALLBACKS`, :data:`PATH_FALLBACKS`), in order, each re-solving the rows the
solvers before it failed or left open and keeping its own answer only where the model's
arithmetic judges it better; with a box, its numerical failures solved without it
(:class:`~fastcf._linear.fallbacks.InsideBox`, one round of the stage's loop
:func:`fastcf._stage.reaim`, the rows re-solved by this route). The routes branch on the family
here, once per form; the model objects (:mod:`.model`) hold arrays and arithmetic only, and the
explainer calls these routes (:mod:`.route`, :mod:`.paths`).
"""

from __future__ import annotations

import numpy as np

from .._stage import reaim
from . import binary as _binary
from . import boxed as _boxed
from . import fallbacks as _fb
from . import softmax as _softmax
from .metric import distances
from .verify import Raw, finish, path_result

__all__ = ["lam", "constrained", "path", "LAM_FALLBACKS", "CONSTRAINED_FALLBACKS", "PATH_FALLBACKS"]

#: ``lam=``: on the model less the target's row where its rows are close
LAM_FALLBACKS = (_fb.lam_shifted,)
#: ``proba=``/``region=True``: the failed rows shifted, then in input space (:func:`~.retry`);
#: then, where the rows are close, each success against the shifted model's
CONSTRAINED_FALLBACKS = (_fb.retry, _fb.closer_shifted)
#: the λ-path: the λ whose answers are not stationary in input space, shifted
PATH_FALLBACKS = (_fb.path_shifted,)


def lam(model, X, tidx, m, bnd, lams, tol, max_iter, reference=None, W=None, fmask=None):
    """Solve problem (2) at one λ per row: closed form, reduced or projected Newton method.

    ``reference``: a reference method of R^D (``"woodbury"``, ``"lbfgs"``, ``"cg"``, ``"gd"``,
    with the query's diagonal metric ``W`` and frozen mask ``fmask``) instead of the exact
    solvers. The solvers that do not judge their own answers (the closed form, the reference
    methods, projected Newton in the box) return raw answers, finished here once
    (:func:`~fastcf._linear.verify.finish`).
    """
    boxes = _boxed.row_boxes(bnd, X.shape[0])  # (the row-by-row solvers': each row's own box)
    if reference is not None:
        # scipy.optimize is imported there, not at start-up (most of the import time)
        from .reference import lam_reference

        raw = lam_reference(model, X, tidx, m, W, fmask, boxes, lams, reference, tol, max_iter)
    elif model.binary:
        raw = _binary.lam_closed_form(model, X, tidx, m, bnd, lams)
    elif bnd is not None:
        raw = _boxed.lam_boxed(model, X, tidx, m, boxes, lams, tol, max_iter)
    else:
        sol = _softmax.reduced_lam(model, X, tidx, lams, m, tol, max_iter)
        for entry in LAM_FALLBACKS:
            sol = entry(model, sol, X, tidx, m, lams, tol, max_iter)
        return sol
    return finish(model, X, tidx, m, bnd, raw)


def constrained(model, X, tidx, m, bnd, proba, margins, tol, max_iter):
    """Solve ``proba=`` (``margins`` None) or ``region=True`` (``margins``: one per row)."""
    if model.binary:
        raw = _binary.project(model, X, tidx, m, bnd, proba, margins)
        return finish(model, X, tidx, m, bnd, raw, proba)
    if bnd is not None:
        sol = _fb.boxed(model, X, tidx, m, bnd, proba, margins)
        box = _fb.InsideBox(bnd)  # the box's re-aim policy, one round of the stage's loop

        def unboxed(rows):  # the rows' route without the box
            mr = None if margins is None else margins[rows]
            return constrained(model, X[rows], tidx[rows], m, None, proba, mr, tol, max_iter)

        return reaim(sol, box.pick, unboxed, box.merge, rounds=1)
    sol = _softmax.constrained(model, X, tidx, m, proba, margins, tol, max_iter)
    for entry in CONSTRAINED_FALLBACKS:
        sol = entry(model, sol, X, tidx, m, proba, margins, tol, max_iter)
    return sol


def path(model, x0, k, target, lams, m, warm, tol, max_iter, names, w=None, bnd=None, xx=None):
    """Solve the λ-path: the closed form at each λ, one kernel call, or projected Newton by λ.

    The closed form and the projected Newton method return their raw answers, made a path
    here (their distances in the metric ``w``, their verdicts: :func:`~.verify.path_result`);
    the K-space path's kernel judges its own (:func:`~.softmax.reduced_path`).
    """
    if model.binary or bnd is not None:
        if model.binary:
            L = lams.shape[0]
            sol = finish(
                model, None, np.full(L, k), m, bnd, _binary.path(model, x0, k, lams, m, bnd)
            )
            XL, nit, status, gn = sol.x, sol.nit, sol.status, sol.grad_norm
            method = "closed form"
        else:
            XL, nit, status, gn = _boxed.path_boxed(model, x0, k, lams, m, bnd, warm, tol, max_iter)
            method = "reduced (active set)"
        dist = distances(XL - x0, np.ones_like(x0) if w is None else w)
        raw = Raw(XL, nit, status, lams, method, distance=dist, grad_norm=gn)
        return path_result(model, x0, k, target, raw, names)
    pth = _softmax.reduced_path(model, x0, k, target, lams, m, warm, tol, max_iter, names, xx=xx)
    for entry in PATH_FALLBACKS:
        pth = entry(model, pth, x0, k, target, lams, m, warm, tol, max_iter, names)
    return pth
