"""Numba kernels: arrays and scalars in, arrays, scalars and integer status codes out.

Every kernel is created through :func:`kernel`, a single decorator factory that fixes the house
options (on-disk cache, NumPy error model, no fastmath; the GIL released by the kernels that
run for milliseconds: :data:`_RELEASE_GIL`). When Numba cannot cache a
function (for example because the package directory and ``NUMBA_CACHE_DIR`` are not writable), the
kernel is compiled without the on-disk cache and one warning says so: slower cold starts, same
results. A kernel compiles on its first call with new argument types (or loads from the cache),
as Numba's do; :mod:`._tier` routes those misses through tiered execution when it is switched on
(``FASTCF_TIERED=1`` or ``fastcf.set_tiered``; off by default).

Status codes are the members of :class:`fastcf._status.Status`; each kernel module takes the ones
it returns as plain ``int`` constants (``_OK = int(Status.OK)``, …), which Numba freezes as
literals.

Where each algorithm lives:

- :mod:`.softmax` — softmax models (paper 000, §3), one module per algorithm: ``core`` (the
  K-space Newton method), ``region`` (the region dual QP), ``lamsearch`` (the λ-search of
  ``proba=τ``), ``lampath`` (the warm-started λ-path), ``rows`` (the row products and the batch
  solve of N queries).
- :mod:`.logistic` — binary logistic models (paper 000, §4); :mod:`.roots` — the root φ(α, β).
- :mod:`.l1` — the weighted-L1 (Manhattan) cost, one module per algorithm: ``knapsack`` (binary
  models), ``region_lp`` (softmax ``region=True``: a dual simplex), ``entropy``,
  ``entropy_face``, ``entropy_solve`` (softmax ``lam=`` / ``proba=τ``: an active set on the
  entropy dual); :mod:`.l1_enum` — Lawler's enumeration of binary Manhattan answers.
- :mod:`.lvq_qp` — the exact QP of LVQ counterfactuals; :mod:`.lvq_cost` — the GLVQ cost.
- :mod:`.tree_reduce` — the fixed point of the exact reductions of a tree program;
  :mod:`.tree_moves` — the sums of a tree ensemble after every single-feature move;
  :mod:`.tree_beam` — the rounds of the incumbent's beam search over those moves;
  :mod:`.tree_branch` — the per-node steps of the branch and bound over interval ranges;
  :mod:`.tree_search` — its node loop (a stack of boxes, resumable between calls);
  :mod:`.tree_walk` — the leaf each row reaches in each tree, and the sums of their terms.
- :mod:`.smo` — the warm-started SMO of the SVM enumeration (paper 003).
- :mod:`.pattern_lp` — the closest point of a ReLU network's activation pattern (Manhattan): the
  network incumbent's small linear programs, by a dense dual simplex.
- :mod:`.verdict` — the row verdicts of linear models' answers (the rule of a verdict, the
  binary finish and judge, the softmax judge on the model's own logits, the rounding need):
  one loop per batch, so that a single query does not pay a NumPy call per test.
- :mod:`.linalg` — small dense linear algebra: Cholesky, LU, dot products, KKT-inverse
  updates, NNLS and LDP.
- :mod:`._batch` — N queries row by row: the serial kernel and the chunk kernel of a row kernel.
"""

import functools
import threading
import warnings

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from .._progress import notice_compiles
from . import _tier

__all__ = ["kernel", "REASSOC"]

_OPTIONS = {"cache": True, "nogil": False, "error_model": "numpy", "fastmath": False}

#: the modules whose kernels run for milliseconds (a tree ensemble's search and moves, the SVM's
#: SMO, LVQ's QP): they release the GIL (``nogil=True``), so other threads run meanwhile. The
#: others run for microseconds inside a single query and keep it: with two threads, each
#: release and re-acquisition of the GIL was a hand-over between them, and two threads asking
#: single linear queries of one explainer answered 0.49-0.57x of one thread's queries per second
#: (0.69-0.88x holding it; ``docs/service.md``). A batch's chunk kernels release it
#: (:mod:`._batch`: the batch threads run them at once).
_RELEASE_GIL = (
    "fastcf._kernels.tree_", "fastcf._kernels.smo", "fastcf._kernels.lvq_qp",
)  # fmt: skip

#: for reductions only (dot products, sums of squares): lets LLVM reorder the sum into SIMD
#: lanes. No flag that assumes away NaN/inf/signed zeros. The order is fixed by the compiled
#: code, so results stay deterministic; they differ from a sequential sum by rounding only.
REASSOC = {"reassoc"}
_warned_nocache = False
notice_compiles()  # a first call that compiles says so on standard error (FASTCF_PROGRESS=0: not)


def kernel(signature=None, *, callee=False, **overrides):
    """Compile a function with fastcf's Numba options.

    Parameters
    ----------
    signature : str or numba signature, optional
        Explicit signature: the kernel is then compiled (or loaded from the cache) when its
        module is imported, whether or not it is used, and only for that signature. No kernel
        uses one now: compiled on first use, a kernel costs nothing to a process that never
        calls it (the root φ of the logistic family used to be compiled by every import of
        :mod:`fastcf.linear`, softmax models included).
    callee : bool, default=False
        A kernel that only other kernels call: compiled without Numba's CPython and C wrappers
        (the code that unboxes the arguments of a call from Python and boxes its results, which
        Numba emits for every function whether or not Python calls it, as it does not for its
        own ``@overload`` implementations): about 0.04–0.05 s less of a first query per such
        kernel of ~14 arguments (issue 54, ``docs/tables/compile_times.md``). Called from
        Python, it raises ``TypeError`` (:class:`_Callee`; without a wrapper Numba's dispatcher
        would jump to a null address). The Python runs of ``NUMBA_DISABLE_JIT=1`` and of the
        tier call its Python function.
    **overrides
        Changes to the house options (e.g. ``_nrt=False`` for inner loops).

    Notes
    -----
    Compile time is what a process with an empty cache pays on its first call
    (``docs/scripts/compile_times.py`` measures it per kernel). ``parallel=True`` is several
    times costlier to compile than the same loop serial (each ``prange`` loop becomes a gufunc
    that links and compiles the code it calls again): no kernel of fastcf uses it. A batch
    kernel is a serial loop over a chunk of rows, run on Python threads (the GIL released by
    that chunk kernel: :mod:`fastcf._threads`), made from one row kernel by
    :func:`._batch.batch` with a twin for single queries: same row code, same bits.

    ``_nrt=False`` (Numba's switch for its runtime) is for inner loops that allocate nothing
    and only borrow the arrays their caller holds: Numba then emits no reference counting in
    them. Otherwise every array argument of a function that calls another one is counted up on
    entry and down on exit with an atomic instruction, and the mid-sized helpers of a Newton
    step take five to eleven arrays: on the λ-path at (784, 10) this counting was 28–39% of
    the time (measured with ``perf``). Numba compiles such a function's callees with the same
    flag, so they must not allocate either (it then refuses to compile, loudly).
    """

    def decorate(func):
        options = dict(_OPTIONS, nogil=func.__module__.startswith(_RELEASE_GIL))
        options.update(overrides)
        if callee:
            options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
        disp = _compile(func, options)
        if not hasattr(disp, "overloads"):  # NUMBA_DISABLE_JIT=1: the Python function itself
            return _ieee(disp)
        if callee:
            disp.__class__ = _Callee
        return _tier.install(disp)

    def _compile(func, options):
        global _warned_nocache
        try:
            if signature is None:
                return numba.njit(**options)(func)
            return numba.njit(signature, **options)(func)
        except RuntimeError as exc:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(exc):
                raise
            if not _warned_nocache:
                warnings.warn(
                    "fastcf: Numba's on-disk cache is not writable here; kernels are compiled "
                    "in memory at every start (set NUMBA_CACHE_DIR to a writable folder to "
                    f"keep them). Details: {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                _warned_nocache = True
            options["cache"] = False
            if signature is None:
                return numba.njit(**options)(func)
            return numba.njit(signature, **options)(func)

    return decorate


class _Callee(CPUDispatcher):
    """The dispatcher of a kernel that only kernels call (``kernel(callee=True)``).

    Compiled without a CPython wrapper, it has nothing to run a call from Python with: Numba's
    dispatcher would jump to a null address (a crash). So a call from Python raises. Other
    kernels type and link it as any dispatcher (the class is Numba's, one method more).
    """

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is compiled for calls from "
            "other kernels only (kernel(callee=True)): call it from a kernel, or its .py_func"
        )


_outer = threading.local()


def _ieee(func):
    """Run a kernel's Python body (``NUMBA_DISABLE_JIT=1``) with the compiled code's floats.

    Compiled with ``error_model="numpy"``, a kernel overflows to ``inf`` and divides by zero
    to ``inf``/``nan`` silently, and its callers test for them; NumPy's scalars warn instead
    (an error under ``-W error``). The outermost kernel call of a thread sets NumPy's error
    state to ignore, as the tiered Python twin does; nested calls pay one attribute test.
    """

    @functools.wraps(func)
    def run(*args, **kwargs):
        if getattr(_outer, "active", False):
            return func(*args, **kwargs)
        _outer.active = True
        try:
            with np.errstate(all="ignore"):
                return func(*args, **kwargs)
        finally:
            _outer.active = False

    return run
