"""One HiGHS instance per thread and per kind of program, with its options set once.

The mixed-integer programs of the tabular and tree families are solved by HiGHS through
``highspy``. Creating a ``Highs`` object and setting its options costs more than a small solve,
so each thread keeps one instance per kind of program (``key``), reused across queries; an
instance is never shared between threads. Every instance is silent (``output_flag`` off) and
solves to a zero gap.

HiGHS prints its copyright banner to the process's standard output (file descriptor 1, not
Python's ``sys.stdout``) when the first instance of the process is constructed, before any
option can be set. That first construction happens here with descriptor 1 pointed at the null
device (:func:`_construct`): a service's stdout, or a notebook's, carries none of it.
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["highs"]

_local = threading.local()
_EXACT = (("output_flag", False), ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0))
_banner_lock = threading.Lock()
_banner_done = False


def _construct():
    """Return a new ``highspy.Highs``; the process's first with its banner sent to the null device.

    HiGHS prints the banner once per process, from its constructor. Descriptor 1 is redirected
    for the first construction only (under a lock; Python's buffered stdout flushed first, so
    nothing written before is lost); a descriptor that cannot be duplicated (a closed stdout)
    leaves the construction as it is.
    """
    global _banner_done
    import highspy

    if _banner_done:
        return highspy.Highs()
    with _banner_lock:
        if _banner_done:
            return highspy.Highs()
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError, AttributeError):
            _banner_done = True
            return highspy.Highs()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _banner_done = True
        return h


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
        h = _construct()
        for name, value in (*_EXACT, *options):
            h.setOptionValue(name, value)
        store[key] = h
    return h
