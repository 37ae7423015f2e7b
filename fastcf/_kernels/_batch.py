"""N queries row by row: the serial and the parallel kernel of a row kernel, written once.

A batch of N queries is solved by a *row kernel*, ``row(n, *args, out)``: solve query n of the
batch's arguments ``args`` and write row n of the outputs ``out``, a tuple of arrays that the
*allocator* ``alloc(args)`` returns empty (its first array has one row per query). :func:`batch`
makes the two kernels that run them, and picks one per call:

- ``serial``: ``for n in range(N)``, in the calling thread, for a single query. A kernel with
  ``parallel=True`` costs several times more to compile (each ``prange`` loop becomes a gufunc
  that links and compiles the code it calls again), and a single query would pay for it on its
  first call.
- ``parallel``: ``for n in prange(N)`` (``parallel=True``), for a batch.

Both run the same row code, so an answer has the same bits alone or in a batch. They are two
kernels, not one function compiled twice: Numba's cache index does not tell a parallel
compilation of a function from a serial one of the same source.

How the two kernels are made, so that Numba's on-disk cache keeps working:

- Not one kernel taking the row kernel as an argument: Numba compiles that (serial and
  parallel), but the argument's type holds the row's dispatcher, which the cache index pickles
  with an id drawn afresh in each process: a warm start never finds the compiled code (it
  compiles again and adds a file to the cache, every process).
- Not a closure over the row kernel either: the cache index hashes a closure's cells, pickled
  with that same id.
- A new function on the code of :func:`_serial` or :func:`_parallel` below, with the row kernel
  and the allocator in globals of its own (which the cache index does not hash). Its qualified
  name is the row kernel's plus ``_serial`` / ``_parallel``, and its code takes the row kernel's
  file name and first line: Numba names a function's cache files by file, qualified name and
  line, so each kernel has cache files of its own next to its row kernel's, and an edit of the
  row kernel's module invalidates them as it does the row kernel's own (under this module's
  name, an edited row kernel would have been served from the stale cache; an edit of the
  templates changes their bytecode, which the index key hashes).

The row kernel is compiled on its own (not ``inline="always"``): Numba cannot inline a call with
``*args``, and the parallel loop must hold nothing but that call. Numba (0.58 to 0.68) drops, as
dead code, the writes of a ``prange`` loop to arrays taken out of a tuple by unpacking
(``X, dist = out`` and ``dist[n] = …`` in the loop: ``dist`` comes back unwritten); a call that
receives the tuple is never dropped. The allocator may be inlined: it takes ``args`` as one tuple.
Numba's dispatcher hands the two kernels their ``*args`` folded into one tuple (their compiled
signature has one argument); :mod:`._tier` unfolds them for a run as Python.
"""

import builtins
import types

import numpy as np
from numba import prange

from . import kernel

__all__ = ["batch", "Batch"]

# the names the two templates read, bound in each kernel's own globals (see batch)
row = alloc = None


def _serial(*args):
    out = alloc(args)
    for n in range(out[0].shape[0]):
        row(n, *args, out)
    return out


def _parallel(*args):
    out = alloc(args)
    for n in prange(out[0].shape[0]):
        # the row index as int64: prange's is uint64, and the row kernel would be compiled
        # twice (once per twin)
        row(np.int64(n), *args, out)
    return out


class Batch:
    """The two kernels of a row kernel; a call ``(parallel, *args)`` runs one of them.

    Attributes
    ----------
    serial, parallel : Numba dispatchers
        ``serial(*args)`` and ``parallel(*args)`` return the outputs ``out``, rows filled.
    """

    __slots__ = ("serial", "parallel")

    def __init__(self, serial, parallel):
        self.serial = serial
        self.parallel = parallel

    def __call__(self, parallel, *args):
        """Solve the N queries of ``args``: on Numba's threads if ``parallel``, else serially."""
        return (self.parallel if parallel else self.serial)(*args)


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
        "prange": prange,
        "row": row_kernel,
        "alloc": alloc_kernel,
    }
    func = types.FunctionType(code, glob, name)
    func.__qualname__ = name
    func.__doc__ = f"The rows of :func:`{py_row.__name__}`, {suffix} (made by :func:`batch`)."
    return kernel(**options)(func)


def batch(row_kernel, alloc_kernel):
    """Return the serial and the parallel kernel of a row kernel, as a :class:`Batch`.

    Parameters
    ----------
    row_kernel : kernel
        ``row(n, *args, out)``: solve query n, write row n of ``out``. Not ``inline="always"``.
    alloc_kernel : kernel
        ``alloc(args)``: the outputs ``out``, a tuple of arrays, the first with N rows.
    """
    if getattr(row_kernel, "targetoptions", {}).get("inline", "never") != "never":
        raise ValueError("a row kernel of batch() cannot be inline='always' (see _batch)")
    return Batch(
        _make(_serial, row_kernel, alloc_kernel, "serial"),
        _make(_parallel, row_kernel, alloc_kernel, "parallel", parallel=True),
    )
