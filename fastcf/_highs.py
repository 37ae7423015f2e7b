"""One HiGHS instance per thread and per kind of program, with its options set once.

The mixed-integer programs of the tabular and tree families are solved by HiGHS through
``highspy``. Creating a ``Highs`` object and setting its options costs more than a small solve,
so each thread keeps one instance per kind of program (``key``), reused across queries; an
instance is never shared between threads. Every instance is silent (``output_flag`` off) and
solves to a zero gap.
"""

from __future__ import annotations

import threading

__all__ = ["highs"]

_local = threading.local()
_EXACT = (("output_flag", False), ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0))


def highs(key, options=()):
    """Return this thread's HiGHS instance for programs of kind ``key``.

    Parameters
    ----------
    key : str
        The kind of program (``"tabular"``, ``"trees"``): one instance per kind and thread.
    options : sequence of (name, value)
        HiGHS options set when the instance is created, after the silent, exact defaults.
    """
    store = getattr(_local, "store", None)
    if store is None:
        store = _local.store = {}
    h = store.get(key)
    if h is None:
        import highspy

        h = highspy.Highs()
        for name, value in (*_EXACT, *options):
            h.setOptionValue(name, value)
        store[key] = h
    return h
