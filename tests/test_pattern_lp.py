"""The incumbent's small dual simplex (``fastcf._kernels.pattern_lp``) against HiGHS.

Random programs ``min c·v, M v ≥ r, 0 ≤ v ≤ u`` in the form of an activation pattern's
Manhattan program (v = (p, n), M = [−A, A]), feasible and infeasible, with fixed columns: the
same optimum as HiGHS (``fastcf._net.program._lp``), or infeasible where HiGHS finds no point.
"""

import numpy as np
import pytest

from fastcf._kernels.pattern_lp import pattern_lp
from fastcf._net.program import _lp
from fastcf._status import Status


@pytest.mark.parametrize("seed", range(4))
def test_pattern_lp_equals_highs(seed):
    rng = np.random.default_rng(seed)
    seen = {int(Status.OK): 0, int(Status.INFEASIBLE): 0}
    for trial in range(150):
        m, D = int(rng.integers(1, 30)), int(rng.integers(1, 8))
        A = rng.normal(size=(m, D)) * (rng.random((m, D)) < 0.8)
        x0 = rng.normal(size=D)
        lo, hi = x0 - 2 * rng.random(D), x0 + 2 * rng.random(D)
        if trial % 5 == 0:
            lo[0] = hi[0] = x0[0]  # a frozen feature
        b = A @ rng.uniform(lo, hi) + 0.5 * rng.random(m) - (0.4 if trial % 4 == 0 else 0.0)
        w = rng.uniform(0.1, 3.0, size=D)
        M, r = np.hstack([-A, A]), A @ x0 - b
        c, u = np.concatenate([w, w]), np.concatenate([hi - x0, x0 - lo])
        v = np.empty(2 * D)
        status, _ = pattern_lp(M, r, c, u, v)
        ref = _lp(c, np.hstack([A, -A]), b - A @ x0, u)
        assert status in seen
        seen[status] += 1
        if ref is None:
            assert status == int(Status.INFEASIBLE)
            continue
        assert status == int(Status.OK)
        assert np.all(v >= 0) and np.all(v <= u)
        assert np.max(r - M @ v) <= 1e-9 * (1 + np.abs(r).max())
        assert c @ v == pytest.approx(c @ ref, rel=1e-9, abs=1e-12)
    assert seen[int(Status.OK)] > 0 and seen[int(Status.INFEASIBLE)] > 0
