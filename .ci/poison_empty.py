"""Make ``np.empty`` and ``np.empty_like`` return float64 arrays full of signalling NaNs.

A pytest plugin for the NUMBA_DISABLE_JIT stage (``-p poison_empty``, with ``.ci`` on the path).

Memory fresh from ``np.empty`` is whatever the allocator had, and a kernel that reads an entry
before writing it gives an answer that depends on that garbage. Run as Python, arithmetic on a
signalling NaN raises 'invalid value' (an error under the suite's filterwarnings), so this makes
every such read that is computed with fail deterministically (a plain copy of one does not
raise, but the NaN it carries fails the answer), where plain garbage failed one run in many
(stop 30: ``_log_odds`` divided q_k before setting it). Compiled kernels are not affected (Numba's
``np.empty`` is its own), and arithmetic on garbage there never warns.
"""

import numpy as np

_SNAN = np.uint64(0x7FF0000000000001)
_empty, _empty_like = np.empty, np.empty_like


def _poison(a):
    if isinstance(a, np.ndarray) and a.dtype == np.float64 and a.size:
        a.view(np.uint64)[...] = _SNAN
    return a


def _poisoned_empty(*args, **kwargs):
    return _poison(_empty(*args, **kwargs))


def _poisoned_empty_like(*args, **kwargs):
    return _poison(_empty_like(*args, **kwargs))


def pytest_configure(config):
    """Poison ``np.empty`` and ``np.empty_like`` for the session."""
    np.empty = _poisoned_empty
    np.empty_like = _poisoned_empty_like


def pytest_unconfigure(config):
    """Restore them."""
    np.empty, np.empty_like = _empty, _empty_like
