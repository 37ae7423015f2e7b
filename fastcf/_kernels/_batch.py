"""N queries row by row: the serial kernel and the chunk kernel of a row kernel, written once.

A batch of N queries is solved by a *row kernel*, ``row(n, *args, out)``: solve query n of the
batch's arguments ``args`` and write row n of the outputs ``out``, a tuple of arrays that the
*allocator* ``alloc(args)`` returns empty (its first array has one row per query). :func:`batch`
makes the kernels that run them, and picks per call:

- ``serial``: ``for n in range(N)``, in the calling thread (a single query, a small batch);
- ``parallel``: ``for n in range(lo, hi)`` into an ``out`` allocated once (by ``alloc``),
  which the batch threads (:mod:`fastcf._threads`) run on chunks of rows at once: the kernels
  release the GIL. It was a ``parallel=True`` kernel (``prange``) until issue 54: that cost
  several times the serial code's compile time (each ``prange`` loop a gufunc that links and
  compiles the code it calls again: 58 of the 203 CPU seconds of ``warmup()``); this one is
  serial code, compiled in about the time of ``serial``, and only by a batch.

Both run the same row code, so an answer has the same bits alone or in a batch, on any number
of threads. They are separate kernels, not one function compiled twice.

How the kernels are made, so that Numba's on-disk cache keeps working:

- Not one kernel taking the row kernel as an argument: Numba compiles that, but the argument's
  type holds the row's dispatcher, which the cache index pickles with an id drawn afresh in
  each process: a warm start never finds the compiled code (it compiles again and adds a file
  to the cache, every process).
- Not a closure over the row kernel either: the cache index hashes a closure's cells, pickled
  with that same id.
- A new function on the code of :func:`_serial`, :func:`_rows` or :func:`_alloc` below, with
  the row kernel and the allocator in globals of its own (which the cache index does not
  hash). Its qualified name is the row kernel's plus ``_serial`` / ``_parallel`` /
  ``_alloc``, and its code takes the row kernel's file name and first line: Numba names a
  function's cache files by file, qualified name and line, so each kernel has cache files of
  its own next to its row kernel's, and an edit of the row kernel's module invalidates them as
  it does the row kernel's own (under this module's name, an edited row kernel would have been
  served from the stale cache; an edit of the templates changes their bytecode, which the
  index key hashes).

The row kernel is compiled on its own (not ``inline="always"``): Numba cannot inline a call with
``*args``. The allocator may be inlined: it takes ``args`` as one tuple. Numba's dispatcher hands
the kernels their ``*args`` folded into one tuple (their compiled signature has one argument
for them); :mod:`._tier` unfolds them for a run as Python.
"""

import builtins
import types

import numpy as np

from .. import _threads as threads
from . import kernel

__all__ = ["batch", "Batch"]

# the names the templates read, bound in each kernel's own globals (see batch)
row = alloc = None

#: rows per thread below which a batch runs in the calling thread
_MIN_THREADED = 16


def _serial(*args):
    out = alloc(args)
    for n in range(out[0].shape[0]):
        row(n, *args, out)
    return out


def _rows(lo, hi, out, *args):
    for n in range(lo, hi):
        row(n, *args, out)
    return lo


def _alloc(*args):
    return alloc(args)


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
    name = f"{py_row.__name__}_{suffix}"
    code = template.__code__.replace(
        co_filename=py_row.__code__.co_filename,
        co_firstlineno=py_row.__code__.co_firstlineno,
        co_name=name,
    )
    glob = {
        "__name__": py_row.__module__,
        "__builtins__": builtins,
        "np": np,
        "row": row_kernel,
        "alloc": alloc_kernel,
    }
    func = types.FunctionType(code, glob, name)
    func.__qualname__ = name
    func.__doc__ = f"The rows of :func:`{py_row.__name__}`, {suffix} (made by :func:`batch`)."
    return kernel(**options)(func)


def batch(row_kernel, alloc_kernel, min_rows=_MIN_THREADED):
    """Return the serial and the parallel kernel of a row kernel, as a :class:`Batch`.

    Parameters
    ----------
    row_kernel : kernel
        ``row(n, *args, out)``: solve query n, write row n of ``out``. Not ``inline="always"``.
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
        _make(_serial, row_kernel, alloc_kernel, "serial"),
        _make(_rows, row_kernel, alloc_kernel, "parallel", nogil=True),  # (threads run it)
        _make(_alloc, row_kernel, alloc_kernel, "alloc"),
        min_rows,
    )
