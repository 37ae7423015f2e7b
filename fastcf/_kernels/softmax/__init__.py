"""Softmax inverse classification in the K-dimensional space (paper 000, §3), batched.

Problem (2) with a diagonal metric W (V = W⁻¹, 0 on frozen features):

    min_x  E(x) = λ/2 ‖x − x̄‖²_W − log p_k(x),   z(x) = A x + b.

Stationarity, λ W (x − x̄) + Aᵀ(p − e_k) = 0, puts x* − x̄ in the range of V Aᵀ. Writing
x = x̄ + V Aᵀ y (y ∈ R^K) and G = A V Aᵀ (K×K, computed once per explainer and metric):

    z(y) = z̄ + G y,    ‖x − x̄‖²_W = yᵀ G y,
    E(y) = λ/2 yᵀ G y + lse(z(y)) − z_k(y),
    ∇_x E = Aᵀ r (on free features)  with  r = λ y + p − e_k.

The D-dimensional Newton step restricted to this subspace is x ← x + V Aᵀ Δ with
(λ I + S G) Δ = −r, S = diag(p) − p pᵀ. We never form that non-symmetric system and never divide
by p_j (which underflows for far classes): with T = Π diag(√p), Π = I − √p √pᵀ, one has S = Tᵀ T and

    Δ = −(r − Tᵀ m) / λ,   (λ I + T G Tᵀ) m = T G r,

where λI + T G Tᵀ is symmetric positive definite with eigenvalues ≥ λ (Cholesky, status code).
Each iteration costs O(K³), independent of D; rank-deficient G (D < K − 1, duplicated weight rows)
is fine because nothing inverts G. ‖∇_x E‖² = rᵀ G_F r with G_F = A F Aᵀ (F = free-feature mask),
equal to G when W = I.

The kernels, one module per algorithm:

``core``
    the K-space Newton method above: the stable softmax (:func:`softmax_into`), ``G v``, the
    factorisation of λI + T G Tᵀ and the Newton direction, E(y), :func:`reduced_newton` (its
    allocation-free core ``_newton_core``) and its cold start :func:`initial_y`.
``region``
    :func:`region_dual`, the closest point of the target's region (``region=True``): a
    (K−1)-variable dual QP solved exactly by an active set, and its batch :func:`region_batch`.
``lamsearch``
    :func:`proba_search`, the search over λ for ``proba=τ`` (safeguarded Newton in log λ on the
    target's log-odds φ(x*(λ)) − logit τ, dφ/d log λ from the path tangent, the final solve
    polished to rounding), its batch :func:`proba_batch` and the fused row kernel
    :func:`proba_rows` (z̄, the search, the answer, its logits and verdict in one call).
``lampath``
    :func:`lam_path`, problem (2) along a grid of λ, each solve started from the Hermite
    extrapolation of the previous solutions and their tangents dy/d(log λ).
``rows``
    the two O(DK) products of a query (:func:`logits_rows`, :func:`expand_rows`, bit-identical in
    any batch or partition), :func:`reduced_rows`, problem (2) for N queries in one call, and
    :func:`region_rows`, ``region=True`` for N queries in one call (z̄, the dual and the answer;
    the verdict is the caller's, in the model's own arithmetic); for a large A (:func:`row_mode`
    3) the products by BLAS (:func:`blas_logits`, :func:`blas_expand`) and the rest of each row
    by :func:`kspace_reduced`, :func:`kspace_finish` and :func:`verdict_rows`.
"""

from .core import _apply_inverse, _factor, _objective, _objective_gy, reduced_newton
from .lampath import _tangent, lam_path
from .lamsearch import aim_ulps, proba_batch, proba_rows
from .region import region_batch
from .rows import (
    BLAS,
    _certain_row,
    blas_expand,
    blas_logits,
    expand_rows,
    kspace_finish,
    kspace_reduced,
    logits_rows,
    reduced_rows,
    region_rows,
    row_mode,
    verdict_rows,
)

# the names used outside this package (fastcf.linear, fastcf._linear, tests/test_softmax.py)
__all__ = [
    "_apply_inverse",
    "_certain_row",
    "_factor",
    "_objective",
    "_objective_gy",
    "_tangent",
    "aim_ulps",
    "BLAS",
    "blas_expand",
    "blas_logits",
    "expand_rows",
    "kspace_finish",
    "kspace_reduced",
    "lam_path",
    "logits_rows",
    "proba_batch",
    "proba_rows",
    "reduced_newton",
    "reduced_rows",
    "region_batch",
    "region_rows",
    "row_mode",
    "verdict_rows",
]
