"""The K − 1 rows of a softmax model's target, shared by the Manhattan solvers of softmax models.

The target t against each other class c_j (j < R = K − 1, in increasing class order:
:func:`_classes`): the column M_i of feature i (:func:`_mcol`, the change of the margins
m_j = z_t − z_{c_j} per unit of x_i), the K-space form of a row vector (:func:`_expand`), and the
probabilities from the margins (:func:`_nontarget`, :func:`_log_nontarget`).
"""

import math

import numpy as np

from .. import kernel


@kernel(callee=True)
def _classes(K, t):
    cls = np.empty(K - 1, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    return cls


@kernel(callee=True)
def _expand(vec, t, cls, R, out):
    """Write the K-space form of a row vector: out_t = Σ vec, out_{c_j} = −vec_j."""
    s = 0.0
    for j in range(R):
        out[cls[j]] = -vec[j]
        s += vec[j]
    out[t] = s


@kernel(callee=True)
def _mcol(AT, i, t, cls, R, out):
    """Write M_i into ``out``: the change of the margins per unit of feature i."""
    for j in range(R):
        out[j] = AT[i, t] - AT[i, cls[j]]


@kernel(callee=True)
def _nontarget(m, R, q):
    """Fill q_j = p_{c_j} from the margins m; return log p_t."""
    umax = 0.0
    for j in range(R):
        if -m[j] > umax:
            umax = -m[j]
    s = math.exp(-umax)
    for j in range(R):
        q[j] = math.exp(-m[j] - umax)
        s += q[j]
    for j in range(R):
        q[j] /= s
    return -umax - math.log(s)


@kernel(callee=True)
def _log_nontarget(m, R, lq):
    """lq_0 = log p_t, lq_{j+1} = log p_{c_j} from the margins m."""
    umax = 0.0
    for j in range(R):
        if -m[j] > umax:
            umax = -m[j]
    s = math.exp(-umax)
    for j in range(R):
        s += math.exp(-m[j] - umax)
    ls = umax + math.log(s)
    lq[0] = -ls
    for j in range(R):
        lq[j + 1] = -m[j] - ls
