"""Public names on their way out, each a thin wrapper that says so (one release, then gone).

Tiered execution (``FASTCF_TIERED=1``, :func:`set_tiered`, :func:`compile_first`,
:func:`wait_for_kernels`): issue 54 asked it to give every family a first answer within 1.5 s on
an empty kernel cache, or go. It does not: a tree ensemble's first query took 34 s as Python
(the compiled default: 18 s), so it goes. What replaces it: ``python -m fastcf warmup`` where
the cache can be filled ahead of time (86 s on 2 cores for every kernel), and the progress lines
on standard error while a first query compiles. The implementation stays in
:mod:`fastcf._kernels._tier` for this release.
"""

from __future__ import annotations

import warnings

from ._kernels import _tier
from ._kernels._tier import TIERED_MESSAGE

__all__ = ["set_tiered", "compile_first", "wait_for_kernels", "TIERED_MESSAGE"]


def _warn():
    warnings.warn(TIERED_MESSAGE, FutureWarning, stacklevel=3)


def set_tiered(on: bool | None = True) -> bool | None:
    """Switch tiered execution on or off (deprecated: :func:`fastcf._kernels._tier.set_tiered`).

    Examples
    --------
    >>> import warnings, fastcf
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     previous = fastcf.set_tiered(None)
    >>> w[0].category.__name__
    'FutureWarning'
    """
    _warn()
    return _tier.set_tiered(on)


def compile_first():
    """Run compiled code only within a block (deprecated: ``_tier.compile_first``)."""
    _warn()
    return _tier.compile_first()


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Wait for the background compilations (deprecated: ``_tier.wait_for_kernels``)."""
    _warn()
    return _tier.wait_for_kernels(timeout)
