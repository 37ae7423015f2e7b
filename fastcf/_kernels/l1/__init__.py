"""Weighted-L1 ("Manhattan") counterfactuals: one module per algorithm.

``knapsack``
    binary models: the fractional knapsack of the target logit, for ``proba=`` / ``region=True``
    (:func:`constrained_batch`) and problem (2) (:func:`lam_batch`).
``region_lp``
    softmax models, ``region=True``: the LP with K − 1 rows by a dense dual simplex
    (:func:`region_lp_one`, :func:`region_lp_batch`).
``entropy``, ``entropy_face``, ``entropy_solve``
    softmax models, ``lam=`` and ``proba=τ``: the active set on the entropy dual of problem (2)
    (:func:`lam_dual`), its Newton steps on a face, and the queries: the answer with its
    certificates, the λ-search of ``proba=τ`` (:func:`softmax_lam_one`,
    :func:`softmax_proba_one`) and their batches (:func:`softmax_lam_batch`,
    :func:`softmax_proba_batch`).
``kspace``
    what the softmax solvers share: the classes other than the target, the columns M_i, the
    K-space form of a row vector, the probabilities from the margins.

The small LU factorisation of the dual simplex and of the face systems is in
:mod:`fastcf._kernels.linalg`. The names below are those the Python layer
(:mod:`fastcf._linear.manhattan`) calls.
"""

from .entropy import lam_dual
from .entropy_solve import (
    softmax_lam_batch,
    softmax_lam_one,
    softmax_proba_batch,
    softmax_proba_one,
)
from .knapsack import constrained_batch, lam_batch
from .region_lp import _LP_PRIMAL, region_lp_batch, region_lp_one

__all__ = [
    "constrained_batch",
    "lam_batch",
    "region_lp_one",
    "region_lp_batch",
    "lam_dual",
    "softmax_lam_one",
    "softmax_lam_batch",
    "softmax_proba_one",
    "softmax_proba_batch",
    "_LP_PRIMAL",
]
