"""The batch threads: chunks of a batch's rows run at once on Python threads.

fastcf's batch chunk kernels release the GIL (``nogil=True``), so Python threads that each call
one on their own rows run in parallel. A batch kernel (:func:`fastcf._kernels._batch.batch`)
is split into chunks of consecutive rows, each written by the same compiled row code into its
rows of one shared output: an answer has the same bits whatever the number of threads or
chunks. This replaces Numba's ``parallel=True`` kernels, whose compilation cost several times
that of the serial code (each ``prange`` loop a gufunc compiled again: 58 of the 203 CPU
seconds of ``warmup()``).

How many threads: ``n_jobs`` where a caller set it (:func:`limit`), else Numba's thread count
(``numba.get_num_threads()``: every core by default, ``NUMBA_NUM_THREADS`` or
``numba.set_num_threads`` to change it), and never more than one per ``min_rows`` rows.
"""

from __future__ import annotations

import contextvars
import os
import threading

__all__ = ["jobs", "run", "each", "limit", "check_n_jobs", "Shared"]

_N_JOBS = contextvars.ContextVar("fastcf_n_jobs", default=None)
_POOL = None
_POOL_SIZE = 0
_LOCK = threading.Lock()
#: chunks per thread: one (each chunk costs a dispatch of the chunk kernel, ~10–20 µs with its
#: arguments; 2 per thread made a 1 000-row softmax batch 1.67 instead of 1.30 ms)
_CHUNKS_PER_JOB = 1


def check_n_jobs(n_jobs):
    """Return ``n_jobs`` checked: None, or an int ≥ 1, or −1 (every core); else raise."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise TypeError(f"n_jobs must be None or an int; got {n_jobs!r}")
    if n_jobs == -1:
        return os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be -1 or at least 1; got {n_jobs}")
    return n_jobs


class limit:  # noqa: N801 - used as a function: ``with limit(n_jobs):``
    """Run the batches inside the block on ``n_jobs`` threads (None: as outside the block).

    Checks ``n_jobs`` at once (:func:`check_n_jobs`); with None it costs nothing (a single
    query's path takes it).

    Examples
    --------
    >>> from fastcf import _threads
    >>> with _threads.limit(1):
    ...     _threads.jobs(10_000, 16)
    1
    """

    __slots__ = ("n_jobs", "token")

    def __init__(self, n_jobs):
        self.n_jobs = check_n_jobs(n_jobs)
        self.token = None

    def __enter__(self):
        if self.n_jobs is not None:
            self.token = _N_JOBS.set(self.n_jobs)
        return self

    def __exit__(self, *exc):
        if self.token is not None:
            _N_JOBS.reset(self.token)
            self.token = None
        return False


def jobs(n, min_rows):
    """Return the threads a batch of ``n`` rows runs on (1: the calling thread alone)."""
    want = _N_JOBS.get()
    if want is None:
        import numba

        want = numba.get_num_threads()
    return max(1, min(int(want), n // max(int(min_rows), 1)))


_FORK_HOOK = False


def _pool(size):
    """Return the batch threads' pool, of at least ``size`` threads (made on first use)."""
    global _POOL, _POOL_SIZE, _FORK_HOOK
    from concurrent.futures import ThreadPoolExecutor  # (imported by the first batch only)

    with _LOCK:
        if _POOL is None or _POOL_SIZE < size:
            old = _POOL
            _POOL = ThreadPoolExecutor(max_workers=size, thread_name_prefix="fastcf-batch")
            _POOL_SIZE = size
            if old is not None:
                old.shutdown(wait=False)
            if not _FORK_HOOK:  # (installed with the first pool: none in a process without)
                os.register_at_fork(after_in_child=_forget_pool)
                _FORK_HOOK = True
        return _POOL


def _forget_pool():  # a forked child has none of its parent's threads
    global _POOL, _POOL_SIZE, _LOCK
    _POOL, _POOL_SIZE, _LOCK = None, 0, threading.Lock()


def run(fn, n, n_threads, chunks=None):
    """Call ``fn(lo, hi)`` on consecutive chunks of ``range(n)``, on ``n_threads`` threads.

    The calling thread is one of them: each thread takes the next chunk not taken until none
    is left. ``chunks``: how many (default :data:`_CHUNKS_PER_JOB` per thread). Returns when
    every chunk is done; raises the first exception a chunk raised (or a ``KeyboardInterrupt``
    in the calling thread), once the chunks already started have finished: no chunk starts
    after it (a tree batch of minutes stopped by Ctrl-C does not run its other rows first).
    """
    chunks = min(n, n_threads * _CHUNKS_PER_JOB if chunks is None else chunks)
    bounds = [n * i // chunks for i in range(chunks + 1)]
    todo = iter(range(chunks))  # (a range iterator's next is atomic: one thread takes a chunk)
    failed = threading.Event()

    def work():
        for i in todo:
            if failed.is_set():
                return
            try:
                fn(bounds[i], bounds[i + 1])
            except BaseException:
                failed.set()
                raise

    pool = _pool(n_threads - 1)
    futures = [pool.submit(work) for _ in range(n_threads - 1)]
    error = None
    try:
        work()
    except BaseException as exc:  # (wait for the others first: they write into the output)
        failed.set()
        error = exc
    for f in futures:
        try:
            f.result()
        except BaseException as exc:
            error = error if error is not None else exc
    if error is not None:
        raise error


def each(fn, n, min_rows=1, progress=None):
    """Return ``[fn(i) for i in range(n)]``, the rows answered on the batch threads.

    For batches whose rows are Python calls of milliseconds (the tree family's programs):
    each row is a chunk of its own, taken by the next free thread (rows of very different
    costs keep both cores busy), each answer written to its own place, so the answers are the
    serial ones whatever the number of threads. ``fn`` must be safe to call from several
    threads at once. ``progress``: ticked after each row, closed at the end (the batch's line
    on a terminal: :class:`fastcf._progress.Tally`).

    Examples
    --------
    >>> each(lambda i: i * i, 5)
    [0, 1, 4, 9, 16]
    """
    out = [None] * n

    def chunk(lo, hi):
        for i in range(lo, hi):
            out[i] = fn(i)
            if progress is not None:
                progress.tick()

    n_threads = jobs(n, min_rows)
    try:
        if n_threads == 1:
            chunk(0, n)
        else:
            run(chunk, n, n_threads, chunks=n)
    finally:
        if progress is not None:
            progress.close()
    return out


class Shared:
    """A base for objects the threads share: a lock and per-thread state, remade by a pickle.

    :meth:`_init_shared` makes ``_lock`` (reentrant) and ``_local`` (``threading.local``);
    neither pickles, so a pickle (the Dask path ships explainers) drops them and an unpickled
    copy makes its own.
    """

    def _init_shared(self):
        self._lock, self._local = threading.RLock(), threading.local()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state.pop("_local", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_shared()
