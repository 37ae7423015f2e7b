"""Reading an LVQ model: prototypes, labels, classes and the metric, and the constraints of eq. 9.

A prototype classifier puts x in the class of its nearest prototype (eq. 5), with the squared
distance d(x, p_k) = ‖Ω_k (x − p_k)‖² = (x − p_k)ᵀ Λ_k (x − p_k), Λ_k = Ω_kᵀ Ω_k: Ω_k = I for
GLVQ, one shared Ω for GMLVQ, one Ω_k per prototype for LGMLVQ. The counterfactual of x̄ for a
target class y (Algorithm 1) is, over the prototypes p_i of class y,

    min_x θ(x, x̄)  s.t.  d(x, p_i) + ε ≤ d(x, p_j)  for every prototype p_j of another class  (9)

With a metric shared by all prototypes the quadratic terms cancel and each constraint is linear:

    2 (Λ(p_j − p_i))ᵀ x ≤ p_jᵀΛp_j − p_iᵀΛp_i − ε

(the paper's eq. 12–13 write the same half-scaled, q_ij = Λ(p_j − p_i),
r_ij = ½(p_iᵀΛp_i − p_jᵀΛp_j), but then add ε to the *halved* inequality, i.e. a margin of 2ε in
d; we keep eq. 9b's margin ε on d). :func:`linear_constraints` returns these rows for every pair.

Typos in the paper, for the record: eq. 9b reads d(x', p_i) + ε ≤ d(x', p_i) (the right-hand
side must be p_j); eq. 29/32 print p_i − p_i for p_j − p_i; eq. 28 writes x for x'.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastcf._kernels.lvq_qp import Tables
from fastcf._validation import as_float_array

from .._catalog import signpost

__all__ = ["Geometry", "geometry", "omega_from_relevance", "read_model"]


class Geometry(NamedTuple):
    """An LVQ model as arrays (see the module docstring)."""

    prototypes: np.ndarray  # (M, D)
    labels: np.ndarray  # (M,) class labels of the prototypes
    classes: np.ndarray  # (K,)
    cls: np.ndarray  # (M,) int64 index of each prototype's class in ``classes``
    kind: str  # "euclidean", "global" or "local"
    omegas: np.ndarray  # (1, d, D) shared, or (M, d, D) one per prototype (zero-padded rows)
    lams: np.ndarray  # Λ_k = Ω_kᵀΩ_k, (1, D, D) or (M, D, D)
    A: np.ndarray  # (M, M, D): A[i, j]·x ≤ b[i, j]  ⇔  d(x, p_i) ≤ d(x, p_j) (shared metric)
    b: np.ndarray  # (M, M)
    valid: np.ndarray  # (M, M) bool: p_j belongs to another class than p_i
    tables: Tables  # (A, b, valid, cls) as the exact QP's kernels take them, made once here


def check_omega(om, name, D):
    """Return Ω as a float array of shape (d, D), d ≥ 1, not all zeros."""
    om = as_float_array(om, name, ndim=2)
    if om.shape[1] != D or om.shape[0] < 1:
        raise ValueError(
            f"{name} must have shape (d, {D}) with d >= 1 (distance ‖Ω(x − p)‖²); got {om.shape}"
        )
    if not np.any(om):
        raise ValueError(f"{name} is all zeros: every distance would be 0")
    return om


def omega_from_relevance(lam, name, D):
    """Return Ω with ΩᵀΩ = Λ for a symmetric positive semi-definite relevance matrix Λ."""
    lam = as_float_array(lam, name, ndim=2)
    if lam.shape != (D, D):
        raise ValueError(f"{name} must be a ({D}, {D}) relevance matrix Λ; got {lam.shape}")
    if not np.allclose(lam, lam.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(lam).max())):
        raise ValueError(f"{name} must be symmetric (Λ = ΩᵀΩ); it is not")
    ev, V = np.linalg.eigh(lam)
    if ev.min() < -1e-10 * max(1.0, ev.max()):
        raise ValueError(
            f"{name} must be positive semi-definite (Λ = ΩᵀΩ); its smallest eigenvalue is "
            f"{ev.min():.3g}"
        )
    ev = np.clip(ev, 0.0, None)
    return np.ascontiguousarray(np.sqrt(ev)[:, None] * V.T)


def _key(label):
    return label.item() if hasattr(label, "item") else label


def read_model(model):
    """Return (prototypes (M, D), labels (M,), classes, omegas None | (1|M, d, D)) of a model.

    Reads fitted models of fastcf (``prototypes_``, ``prototype_labels_``), sklvq
    (``prototypes_``, ``prototypes_labels_`` = indices into ``classes_``) and sklearn-lvq
    (``w_``, ``c_w_``) by their attributes.
    """
    if hasattr(model, "prototypes_") and hasattr(model, "prototype_labels_"):  # fastcf
        om = getattr(model, "omegas_", None)
        if om is None and getattr(model, "omega_", None) is not None:
            om = model.omega_
        return (
            model.prototypes_,
            np.asarray(model.prototype_labels_),
            np.asarray(model.classes_),
            om,
        )
    if hasattr(model, "prototypes_") and hasattr(model, "prototypes_labels_"):  # sklvq
        P = model.prototypes_
        classes = np.asarray(model.classes_)
        idx = np.asarray(model.prototypes_labels_)
        if idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= classes.size:
            raise ValueError(
                f"prototypes_labels_ of an sklvq model must be indices into classes_; got {idx!r}"
            )
        om = getattr(model, "omega_", None)
        if om is not None:
            om = np.asarray(om)
            if om.ndim == 3:
                loc = getattr(model, "localization", None)
                if loc == "class" or (loc is None and om.shape[0] == classes.size != P.shape[0]):
                    om = [om[i] for i in idx]
        return P, classes[idx], classes, om
    if hasattr(model, "w_") and hasattr(model, "c_w_"):  # sklearn-lvq
        labels = np.asarray(model.c_w_)
        classes = np.asarray(getattr(model, "classes_", np.unique(labels)))
        om = None
        if hasattr(model, "omegas_"):
            oms = list(model.omegas_)
            if getattr(model, "classwise", False):
                if len(oms) != classes.size:
                    raise ValueError(
                        f"a classwise LgmlvqModel must have one omega per class ({classes.size}); "
                        f"got {len(oms)}"
                    )
                pos = {_key(c): k for k, c in enumerate(classes)}
                oms = [oms[pos[_key(lab)]] for lab in labels]
            om = oms
        elif hasattr(model, "omega_"):
            om = model.omega_
        return model.w_, labels, classes, om
    raise TypeError(
        "LVQExplainer needs a fitted fastcf.lvq model (prototypes_, prototype_labels_), an "
        "sklearn-lvq model (w_, c_w_) or an sklvq model (prototypes_, prototypes_labels_) "
        f"(or LVQExplainer.from_arrays); got {type(model).__name__}: {signpost(model)}"
    )


def _class_indices(labels, classes, M):
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != M:
        raise ValueError(f"labels must have shape ({M},), one per prototype; got {labels.shape}")
    classes = np.asarray(classes)
    pos = {_key(c): k for k, c in enumerate(classes)}
    if classes.ndim != 1 or len(pos) != classes.shape[0]:
        raise ValueError(f"classes must be a 1-D array of distinct labels; got {classes!r}")
    try:
        cls = np.array([pos[_key(lab)] for lab in labels], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(
            f"labels holds {exc.args[0]!r}, which is not in classes {classes.tolist()}"
        ) from None
    if np.unique(cls).size < 2:
        raise ValueError("labels must hold at least 2 different classes")
    return labels, classes, cls


def _metric(om, M, D):
    """Return (kind, omegas (1|M, d, D)) of ``om``: None, one Ω, or one Ω_k per prototype."""
    if isinstance(om, (list, tuple)):
        try:  # a nested list may be one (d, D) matrix
            arr = np.asarray(om, dtype=np.float64)
        except (ValueError, TypeError):  # ragged: one Ω_k per prototype with different d_k
            arr = None
        if arr is not None and arr.ndim == 2:
            om = arr
    if om is None:
        return "euclidean", np.eye(D)[None]
    if isinstance(om, (list, tuple)) or (isinstance(om, np.ndarray) and om.ndim == 3):
        oms = list(om)
        if len(oms) != M:
            raise ValueError(
                f"omega must be one (d, D) matrix or one per prototype ({M}); got {len(oms)}"
            )
        oms = [check_omega(o, f"omega[{k}]", D) for k, o in enumerate(oms)]
        lams = [o.T @ o for o in oms]
        if all(np.array_equal(lams[0], L) for L in lams[1:]):
            return "global", oms[0][None]
        omegas = np.zeros((M, max(o.shape[0] for o in oms), D))
        for k, o in enumerate(oms):
            omegas[k, : o.shape[0]] = o
        return "local", omegas
    return "global", check_omega(om, "omega", D)[None]


def linear_constraints(P, Lam, cls):
    """Return (A, b, valid): A[i, j]·x ≤ b[i, j] ⇔ d(x, p_i) ≤ d(x, p_j) for the metric Λ."""
    # (prototypes beyond ~1e154: the squared norms overflow, inf − inf is NaN, silently; the
    # solvers then fail numerically, said so)
    with np.errstate(over="ignore", invalid="ignore"):
        LP = P @ Lam
        A = np.ascontiguousarray(2.0 * (LP[None, :, :] - LP[:, None, :]))
        # b_ij = p_jΛp_j − p_iΛp_i, formed as (p_j − p_i)ᵀ Λ (p_j + p_i) (Λ symmetric): the
        # difference of the two squared norms cancelled, and with Ω = (1e-9, 1, 1e-9) the cell
        # of a prototype 1e-9 from two others (norms ~1, the cell's 1e-18 below their rounding)
        # was lost: every margin "infeasible" (soak round T). One row of pairs at a time (A
        # already holds (M, M, D))
        M = P.shape[0]
        b = np.empty((M, M))
        for i in range(M):
            b[i] = np.einsum("jd,jd->j", P - P[i], LP + LP[i])
    valid = np.ascontiguousarray(cls[None, :] != cls[:, None])
    return A, b, valid


def geometry(P, labels, classes, om) -> Geometry:
    """Check a model given as arrays and return its :class:`Geometry`."""
    P = as_float_array(P, "prototypes", ndim=2)
    M, D = P.shape
    if M < 2:
        raise ValueError(f"prototypes must hold at least 2 prototypes; got {M}")
    if D < 1:
        raise ValueError(f"prototypes must have at least one feature; got shape {P.shape}")
    labels, classes, cls = _class_indices(labels, classes, M)
    kind, omegas = _metric(om, M, D)
    omegas = np.ascontiguousarray(omegas)
    lams = np.einsum("kri,krj->kij", omegas, omegas)
    A, b, valid = linear_constraints(P, lams[0], cls)
    return Geometry(
        np.ascontiguousarray(P),
        labels,
        classes,
        cls,
        kind,
        omegas,
        lams,
        A,
        b,
        valid,
        Tables(A, b, valid, cls),
    )


def check_read(model, ex, rows=None, seed=0):
    """Check the prototypes read from ``model`` against its own ``predict``, once.

    On probe rows (``rows``, e.g. those given to ``fit_mad``, or points scattered around the
    prototypes at their spread) the explainer's nearest-prototype rule must predict what the
    model predicts, except on rows where the two nearest prototypes of different classes are
    within rounding of a tie (either side is right there).

    Raises
    ------
    TypeError
        If they disagree: the model is not the nearest-prototype classifier its attributes say.
    """
    if not callable(getattr(model, "predict", None)):
        return
    from .._confirm import model_input

    P = ex.prototypes_
    if rows is None:
        rng = np.random.default_rng(seed)
        spread = P.std(axis=0) if P.shape[0] > 1 else np.abs(P[0])
        spread = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        pick = rng.integers(0, P.shape[0], 64)
        rows = P[pick] + 0.5 * spread * rng.standard_normal((64, P.shape[1]))
    R = np.asarray(rows, dtype=np.float64)
    R = R[np.all(np.isfinite(R), axis=1)][:64]
    if R.shape[0] == 0:
        return
    with np.errstate(all="ignore"):
        d = ex.distances(R)
    order = np.argsort(d, axis=1)
    best = d[np.arange(R.shape[0]), order[:, 0]]
    lab = np.asarray(ex.prototype_labels_)
    other = np.array(
        [np.min(np.where(lab != lab[order[i, 0]], d[i], np.inf)) for i in range(R.shape[0])]
    )
    clear = (other - best) > 1e-9 * (np.abs(best) + np.abs(other) + 1e-300)
    if not clear.any():
        return
    ours = np.asarray(lab[order[:, 0]], dtype=object)
    theirs = np.asarray(model.predict(model_input(model, R)), dtype=object)
    bad = clear & (ours != theirs)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TypeError(
            f"the prototypes read from this {type(model).__name__} do not reproduce its predict "
            f"(class {theirs[i]!r} against {ours[i]!r} on a probe row): it is not the "
            "nearest-prototype classifier its attributes describe; build the explainer with "
            "LVQExplainer.from_arrays from the prototypes and metric the model really uses"
        )
