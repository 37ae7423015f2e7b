"""N queries row by row: the serial kernel and the chunk kernel of a row kernel, written once.

A batch of N queries is solved by a *row kernel*, ``row(n, a, b, ..., out)``: solve query n of
the batch's arguments ``args = (a, b, ...)`` and write row n of the outputs ``out``, a tuple of
arrays that the *allocator* ``alloc(args)`` returns empty (its first array has one row per
query). :func:`batch` makes the kernels that run them, and picks per call:

- ``serial``: ``for n in range(N)``, in the calling thread (a single query, a small batch);
- ``parallel``: ``for n in range(lo, hi)`` into an ``out`` allocated once (by ``alloc``),
  which the batch threads (:mod:`fastcf._threads`) run on chunks of rows at once: the kernels
  release the GIL. It was a ``parallel=True`` kernel (``prange``) until issue 54: that cost
  several times the serial code's compile time (each ``prange`` loop a gufunc that links and
  compiles the code it calls again: 58 of the 203 CPU seconds of ``warmup()``); this one is
  serial code, compiled in about the time of ``serial``, and only by a batch.

Both run the same row code, so an answer has the same bits alone or in a batch, on any number
of threads. They are separate kernels, not one function compiled twice.

The row's code is inlined into each of them (Numba's ``inline="always"``, on a twin of the row
kernel: the row kernel itself is never compiled). Until issue 54 the row kernel was compiled on
its own and called: Numba links a callee's compiled module into its caller's and LLVM optimises
and emits the whole of it once more, so a single query paid for the row's code (and everything
it calls) twice, once in the row kernel and once in the serial kernel (``_row_full`` 2.3 s and
``_row_full_serial`` 2.2 s of own compile time for a softmax ``proba=`` query). The templates
name the row's arguments (Numba cannot inline a call with ``*args``), so a row kernel takes
named parameters only, none ending with ``_`` (the templates' own names).

How the kernels are made, so that Numba's on-disk cache keeps working:

- Not one kernel taking the row kernel as an argument: Numba compiles that, but the argument's
  type holds the row's dispatcher, which the cache index pickles with an id drawn afresh in
  each process: a warm start never finds the compiled code (it compiles again and adds a file
  to the cache, every process).
- Not a closure over the row kernel either: the cache index hashes a closure's cells, pickled
  with that same id.
- A new function compiled from :data:`_SERIAL`, :data:`_ROWS` or :data:`_ALLOC` for the row's
  parameters, with the row and the allocator in globals of its own (which the cache index does
  not hash). Its qualified name is the row kernel's plus ``_serial`` / ``_parallel`` /
  ``_alloc``, and its code takes the row kernel's file name and first line: Numba names a
  function's cache files by file, qualified name and line, so each kernel has cache files of
  its own next to its row kernel's, and an edit of the row kernel's module invalidates them as
  it does the row kernel's own (under this module's name, an edited row kernel would have been
  served from the stale cache; an edit of the templates changes their bytecode, which the
  index key hashes).

The allocator may be inlined: it takes ``args`` as one tuple.
"""

import builtins
import inspect

import numpy as np

from .. import _threads as threads
from . import kernel

__all__ = ["batch", "Batch", "inlined"]

#: rows per thread below which a batch runs in the calling thread
_MIN_THREADED = 16

# The templates of the three kernels, over the row kernel's arguments ``{args}`` (its
# parameters between ``n`` and ``out``): the row and the allocator are globals of each kernel.
_SERIAL = """
def {name}({args}):
    out_ = alloc_(({args},))
    for n_ in range(out_[0].shape[0]):
        row_(n_, {args}, out_)
    return out_
"""

_ROWS = """
def {name}(lo_, hi_, out_, {args}):
    for n_ in range(lo_, hi_):
        row_(n_, {args}, out_)
    return lo_
"""

_ALLOC = """
def {name}({args}):
    return alloc_(({args},))
"""


class Batch:
    """The kernels of a row kernel; a call ``(parallel, *args)`` runs the rows.

    Attributes
    ----------
    serial : Numba dispatcher
        ``serial(*args)`` returns the outputs ``out``, every row filled, in the calling thread.
    parallel : Numba dispatcher
        ``parallel(lo, hi, out, *args)`` fills rows ``lo:hi`` of ``out`` (the name is the
        role: it is compiled serially, and Python threads run it on chunks of rows at once,
        each with the GIL released).
    alloc : Numba dispatcher
        ``alloc(*args)``: the outputs, empty.
    """

    __slots__ = ("serial", "parallel", "alloc", "min_rows")

    def __init__(self, serial, parallel, alloc, min_rows=16):
        self.serial = serial
        self.parallel = parallel
        self.alloc = alloc
        self.min_rows = min_rows

    def __call__(self, parallel, *args):
        """Solve the N queries of ``args``: on the batch threads if ``parallel``, else serially.

        Each row is the same row code either way (the same bits, whatever the threads and the
        chunks: no row reads another's). A batch of fewer than ``min_rows`` rows per thread
        runs in the calling thread: handing chunks to threads costs ~25 µs and a dispatch of
        the chunk kernel per chunk, more than cheap rows save.
        """
        if not parallel:
            return self.serial(*args)
        out = self.alloc(*args)
        n = out[0].shape[0]
        jobs = threads.jobs(n, self.min_rows)
        if jobs <= 1:
            self.parallel(0, n, out, *args)
            return out
        threads.run(lambda lo, hi: self.parallel(lo, hi, out, *args), n, jobs)
        return out


def _make(template, row_kernel, alloc_kernel, suffix, **options):
    """Compile ``template`` over ``row_kernel`` and ``alloc_kernel`` as a kernel of its own."""
    # a dispatcher's Python function; without the JIT, the function under its IEEE wrapper
    py_row = getattr(row_kernel, "py_func", getattr(row_kernel, "__wrapped__", row_kernel))
    params = list(inspect.signature(py_row).parameters)
    if any(p.endswith("_") for p in params):
        raise ValueError(f"{py_row.__name__}: the templates' names end with _ (see _batch)")
    name = f"{py_row.__name__}_{suffix}"
    glob = {
        "__name__": py_row.__module__,
        "__builtins__": builtins,
        "np": np,
        # the row's code inlined into the kernel (Numba's inline="always": its IR, typed and
        # optimised as part of this kernel's); without the JIT, the row kernel as it is
        "row_": _inline(row_kernel, py_row),
        "alloc_": alloc_kernel,
    }
    source = template.format(name=name, args=", ".join(params[1:-1]))
    exec(compile(source, py_row.__code__.co_filename, "exec"), glob)  # noqa: S102
    func = glob[name]
    func.__code__ = func.__code__.replace(co_firstlineno=py_row.__code__.co_firstlineno)
    func.__qualname__ = name
    func.__doc__ = f"The rows of :func:`{py_row.__name__}`, {suffix} (made by :func:`batch`)."
    return kernel(**options)(func)


def _inline(row_kernel, py_row):
    """Return the row kernel as a kernel inlined into its callers (itself without the JIT)."""
    if not hasattr(row_kernel, "py_func"):  # NUMBA_DISABLE_JIT=1
        return row_kernel
    return kernel(inline="always")(py_row)


def inlined(one_kernel):
    """Return a twin of ``one_kernel`` that Numba inlines into its callers (``inline="always"``).

    For the solver of one query that a row kernel calls: called as a kernel of its own, its
    code (and all it links) is optimised and emitted by LLVM once in itself and once more in
    each batch kernel that links it, and a single query, which runs the serial batch kernel,
    pays for both. Inlined, it is typed and lowered as part of the batch kernel and optimised
    once there (issue 54). The kernel itself stays as it is (compiled only if called).

    Not a rule to apply everywhere: inlined, the solver is optimised as one function with its
    row, and LLVM's time grows faster than the function's size. Measured on 2026-11-30 (first
    query, empty cache, CPU s, old and new alternated): the Manhattan softmax solvers
    (``l1.entropy_solve``) gained 1.7–3.5 s; LVQ's solver of one prototype (12.3 → 13.0; now
    part of the kernel of one query, ``lvq_qp._solve_query``), softmax ``proba_search`` (13.0,
    14.0 → 12.9, 15.2) and the Manhattan region LP (7.5 → 10.4, twice) did not, and stay
    kernels of their own.

    Parameters
    ----------
    one_kernel : kernel
        A kernel (a Numba dispatcher; without the JIT, the function itself).

    Returns
    -------
    kernel
        The inlined twin (without the JIT, ``one_kernel`` itself).
    """
    py = getattr(one_kernel, "py_func", getattr(one_kernel, "__wrapped__", one_kernel))
    return _inline(one_kernel, py)


def batch(row_kernel, alloc_kernel, min_rows=_MIN_THREADED):
    """Return the serial and the parallel kernel of a row kernel, as a :class:`Batch`.

    Parameters
    ----------
    row_kernel : kernel
        ``row(n, a, b, ..., out)``: solve query n, write row n of ``out``; named parameters
        only (no ``*args``, no defaults). Its code is inlined into the two kernels (it is not
        compiled on its own); it may not be ``inline="always"`` itself.
    alloc_kernel : kernel
        ``alloc(args)``: the outputs ``out``, a tuple of arrays, the first with N rows.
    min_rows : int
        Rows per thread below which a batch runs in the calling thread: higher for rows of
        a fraction of a microsecond (a binary model's closed forms), where threads pay only
        for thousands of rows.
    """
    if getattr(row_kernel, "targetoptions", {}).get("inline", "never") != "never":
        raise ValueError("a row kernel of batch() cannot be inline='always' (see _batch)")
    return Batch(
        _make(_SERIAL, row_kernel, alloc_kernel, "serial"),
        _make(_ROWS, row_kernel, alloc_kernel, "parallel", nogil=True),  # (threads run it)
        _make(_ALLOC, row_kernel, alloc_kernel, "alloc"),
        min_rows,
    )
