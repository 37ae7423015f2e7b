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

import math
import os
import sys
import threading
import time

__all__ = ["highs", "run_mip", "STRICT_FEASIBILITY"]

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


#: HiGHS's integrality and row tolerance in :func:`run_mip`'s second look (its default: 1e-6)
STRICT_FEASIBILITY = 1e-9


def run_mip(h, time_limit=None):
    """Run ``h``'s mixed-integer program; look again where it says there is no answer.

    "Infeasible" (or nothing below the cutoff) is a claim to the user, and HiGHS's own
    tolerance can make it falsely on a network's big-M program: with bounds of 10⁴ a
    relaxation point with a binary of 1e-8 (integral within 1e-6) leaked 1e-6 through an "off"
    ReLU; HiGHS took it for an integer solution, rejected it when the linear program with its
    integers fixed had no point, and ended "infeasible" on a program with answers (soak_net,
    seed 38, example 249: the optimum 0.584 found at the tighter tolerance). Such a result is
    solved once more, with its cutoff, by this thread's instance whose integrality and row
    tolerance is :data:`STRICT_FEASIBILITY`, within what is left of ``time_limit``. (A second
    instance, not ``h`` with its option changed and restored: highspy 1.7 forgets a model's
    status when an option is set.) Only a program that ends without an answer pays it.

    Parameters
    ----------
    h : highspy.Highs
        An instance holding the program (its options, cutoff and start set).
    time_limit : float or None
        The seconds both solves may take together (None: no limit).

    Returns
    -------
    highspy.Highs
        The instance holding the result to read: ``h``, or the second look's.
    """
    import highspy

    S = highspy.HighsModelStatus
    t0 = time.perf_counter()
    h.run()
    if h.getModelStatus() not in (S.kInfeasible, S.kObjectiveBound):
        return h
    left = math.inf if time_limit is None else float(time_limit) - (time.perf_counter() - t0)
    if left <= 0:
        return h
    cutoff = h.getOptionValue("objective_bound")
    cutoff = cutoff[1] if isinstance(cutoff, tuple) else cutoff  # (highspy: (status, value))
    s = highs("second-look", (("mip_feasibility_tolerance", STRICT_FEASIBILITY),))
    s.clearSolver()
    s.passModel(h.getLp())
    s.setOptionValue("objective_bound", cutoff)
    s.setOptionValue("time_limit", left)
    s.run()
    return s
