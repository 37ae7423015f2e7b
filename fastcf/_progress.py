"""Progress while fastcf's command line waits: which kernels compile, and for how long.

A first call on an empty kernel cache compiles its kernels, seconds each; without a word, the
first ``python -m fastcf demo`` sat silent for most of a minute. :func:`compile_progress` listens
to Numba's compile events (``numba.core.event``, "numba:compile": one per kernel and signature
actually compiled, none for a kernel loaded from the cache) and, while a compilation runs, says
every few seconds how many kernels have compiled and which one is compiling now. It is used by
the command line (``demo``, ``warmup``, ``bench``), on standard output.

A library call says so too, on standard error (:func:`notice_compiles`, installed when the
kernels are first imported): once fastcf's kernels have compiled for :data:`NOTICE_AFTER`
seconds, one line, then one every :data:`NOTICE_EVERY` seconds while they compile — how many
have compiled, which one is compiling, for how long — so that a first query on a fresh install
is never a silent wait of many seconds. A call whose kernels load from the on-disk cache
compiles nothing and prints nothing; ``FASTCF_PROGRESS=0`` silences it; inside
:func:`compile_progress` (the command line's own lines) it stays silent.

:func:`rows` draws a progress line for a batch of slow rows (the tabular and tree families'
programs), on a terminal only, once the batch has run a few seconds.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time

__all__ = ["compile_progress", "notice_compiles", "rows", "Tally", "NOTICE_AFTER", "NOTICE_EVERY"]

#: seconds of compiling before a library call says so on standard error (short compiles, a
#: kernel or two of a warm family, pass without a word)
NOTICE_AFTER = 2.0
#: seconds between two of its lines
NOTICE_EVERY = 5.0


class _Compiles:
    """Count the kernels compiled, and name the one compiling (Numba's event listener)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0  # nested compilations: a kernel compiles the kernels it calls
        self.done = 0
        self.current = None
        self.since = None  # when the outermost compilation in progress began

    def notify(self, event):  # (numba.core.event.Listener's interface)
        with self.lock:
            if event.is_start:
                if self.depth == 0:
                    self.since = time.monotonic()
                self.depth += 1
                disp = (event.data or {}).get("dispatcher")
                func = getattr(disp, "py_func", None)
                # fastcf's kernels by name (Numba's own overloads compile inside them)
                if func is not None and func.__module__.startswith("fastcf"):
                    self.current = f"{func.__module__}.{func.__qualname__}"
            elif event.is_end:
                self.depth = max(self.depth - 1, 0)
                self.done += 1
                if self.depth == 0:
                    self.since = None


@contextlib.contextmanager
def compile_progress(out=None, every=4.0, why="the kernel cache is empty", idle=None):
    """Say every ``every`` seconds what compiles while the block runs (nothing if nothing does).

    Parameters
    ----------
    out : callable, optional
        Prints one line (default: ``print`` to stdout, flushed).
    every : float, default=4.0
        Seconds between two lines (the first comes ``every`` seconds into a compilation).
    why : str
        Said once, with the first line.
    idle : float, optional
        A heartbeat (the demo's): whenever standard output and standard error have been silent
        for ``idle`` seconds, say so in one line, what compiles if something does, else how
        long the block has been silent (a model training, a long solve). No wait is then
        silent for much longer than ``idle`` seconds (as long as the waiting thread lets
        Python's others run, as NumPy, scikit-learn, Numba's compiler and HiGHS do).

    Examples
    --------
    >>> with compile_progress(every=60.0):
    ...     pass
    """
    if out is None:

        def out(text):
            print(text, file=sys.stdout, flush=True)

    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - every supported Numba has it
        yield
        return
    state = _Compiles()
    listener = type("_Listener", (event.Listener,), {
        "on_start": lambda self, e: state.notify(e),
        "on_end": lambda self, e: state.notify(e),
    })()  # fmt: skip
    stop = threading.Event()
    said = [False]
    stamp = _Stamp()

    def compiling(since, done, current):
        head = "" if said[0] else f"({why}; later runs load the kernels from it) "
        said[0] = True
        now = "" if current is None else f", now {current}"
        return (
            f"  … compiling fastcf's kernels {head}{done} compiled so far{now} "
            f"({time.monotonic() - since:.0f} s into it)"
        )

    def watch():
        tick = every if idle is None else min(every, 0.25 * idle)
        while not stop.wait(tick):
            with state.lock:
                since, done, current = state.since, state.done, state.current
            if idle is None:
                if since is not None:
                    out(compiling(since, done, current))
                continue
            quiet = time.monotonic() - stamp.last
            if quiet < idle:
                continue
            if since is not None:
                out(compiling(since, done, current))
            else:
                out(f"  … still working ({quiet:.0f} s since the last line)")
            stamp.last = time.monotonic()

    thread = threading.Thread(target=watch, name="fastcf-progress", daemon=True)
    streams = (sys.stdout, sys.stderr)
    global _MUTED
    _MUTED += 1  # (its own lines instead of the library's: also a notice made inside the block)
    if idle is not None:
        sys.stdout, sys.stderr = (_Stamped(s, stamp) for s in streams)
    try:
        with event.install_listener("numba:compile", listener):
            thread.start()
            try:
                yield state
            finally:
                stop.set()
                thread.join()
    finally:
        _MUTED -= 1
        if idle is not None:
            sys.stdout, sys.stderr = streams


class _Notice:
    """The library's lines on standard error while fastcf's kernels compile.

    One process-wide listener of Numba's compile events; a watcher thread, started by the first
    compilation and ended once nothing has compiled for a second, prints the lines.
    """

    def __init__(self, stream=None):
        self.state = _Compiles()
        self.stream = stream  # (None: sys.stderr at the time of writing)
        self.thread = None
        self.said = False
        self.lock = threading.Lock()

    def on_event(self, event):
        disp = (event.data or {}).get("dispatcher")
        func = getattr(disp, "py_func", None)
        if func is None or not getattr(func, "__module__", "").startswith("fastcf"):
            return  # (the user's own Numba functions, and Numba's overloads: not fastcf's)
        self.state.notify(event)
        if event.is_start:
            with self.lock:
                if self.thread is None or not self.thread.is_alive():
                    self.thread = threading.Thread(
                        target=self.watch, name="fastcf-compile-notice", daemon=True
                    )
                    self.thread.start()

    def line(self, began, done, current):
        head = "" if self.said else (
            " for their first use (the on-disk cache keeps them for later runs; "
            "`python -m fastcf warmup` compiles them all ahead of time)"
        )  # fmt: skip
        self.said = True
        now = "" if current is None else f", now {current}"
        return (
            f"fastcf: compiling kernels{head}: {done} compiled{now} "
            f"({time.monotonic() - began:.0f} s so far)"
        )

    def watch(self):
        began = time.monotonic()  # this burst of compilations (the thread's life)
        last = -math.inf  # when the last line was written
        idle_since = None
        while True:
            time.sleep(0.1)
            with self.state.lock:
                since, done, current = self.state.since, self.state.done, self.state.current
            now = time.monotonic()
            if since is None:
                idle_since = now if idle_since is None else idle_since
                if now - idle_since > 1.0:
                    with self.lock:  # (a compilation starting now starts a new watcher)
                        if self.state.since is None:
                            self.thread = None
                            return
                continue
            idle_since = None
            if _MUTED or now - since < NOTICE_AFTER or now - last < NOTICE_EVERY:
                continue
            stream = sys.stderr if self.stream is None else self.stream
            try:
                stream.write(self.line(began, done, current) + "\n")
                stream.flush()
            except (OSError, ValueError):  # a closed stream: say nothing
                pass
            last = now


_NOTICE = None
#: compile_progress blocks open (the command line speaks): the library's notice is silent. A
#: count of the module, not of the notice: the demo opens its block before any kernel is
#: imported, when there is no notice yet, and the notice made later printed beside its lines
_MUTED = 0


def notice_compiles():
    """Have library calls say on standard error when fastcf's kernels compile (once a process).

    Installed when the kernels are first imported (:mod:`fastcf._kernels`); does nothing with
    ``FASTCF_PROGRESS=0`` or where Numba has no compile events. Returns the process's notice
    (None when off).
    """
    global _NOTICE
    import os

    if _NOTICE is not None or os.environ.get("FASTCF_PROGRESS", "1").strip() == "0":
        return _NOTICE
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - every supported Numba has it
        return None
    notice = _Notice()
    listener = type("_NoticeListener", (event.Listener,), {
        "on_start": lambda self, e: notice.on_event(e),
        "on_end": lambda self, e: notice.on_event(e),
    })()  # fmt: skip
    event.register("numba:compile", listener)
    _NOTICE = notice
    return notice


class _Stamp:
    """When a stamped stream was last written (``time.monotonic``)."""

    def __init__(self):
        self.last = time.monotonic()


class _Stamped:
    """A text stream that stamps the time of each write (the heartbeat of compile_progress)."""

    def __init__(self, stream, stamp):
        self._stream = stream
        self._stamp = stamp

    def write(self, text):
        if text:
            self._stamp.last = time.monotonic()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Tally:
    """A batch's progress line, ticked by whichever thread finished a row.

    The line (``desc: 120/500 rows, 38.0/s, ~10 s left``) appears on ``stream`` (standard
    error) once the batch has run ``delay`` seconds, is redrawn at most every ``every`` seconds
    and erased by :meth:`close`: a batch of a few milliseconds shows nothing, and nothing is
    written where standard error is not a terminal (a log, a notebook's captured stream, a
    service) or with ``FASTCF_PROGRESS=0``. The batch threads (:func:`fastcf._threads.each`)
    tick it from several threads at once.

    Examples
    --------
    >>> t = Tally(3, "doctest")
    >>> for _ in range(3):
    ...     t.tick()
    >>> t.done
    3
    >>> t.close()
    """

    def __init__(self, n, desc, *, delay=2.0, every=0.5, stream=None):
        import os

        self.n, self.desc, self.delay, self.every = n, desc, delay, every
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        on = os.environ.get("FASTCF_PROGRESS", "1").strip() != "0"
        self.on = bool(on and isatty is not None and isatty())
        self.done = 0
        self.t0 = time.monotonic()
        self.last = -math.inf
        self.width = 0
        self._lock = threading.Lock()

    def tick(self):
        """Count one row done (from any thread), and redraw the line when it is due."""
        with self._lock:
            self.done += 1
            if not self.on:
                return
            now = time.monotonic()
            if now - self.t0 < self.delay or now - self.last < self.every:
                return
            rate = self.done / (now - self.t0)
            text = (
                f"{self.desc}: {self.done}/{self.n} rows, {rate:.1f}/s, "
                f"~{(self.n - self.done) / rate:.0f} s left"
            )
            self.stream.write("\r" + text.ljust(self.width))
            self.stream.flush()
            self.width = max(self.width, len(text))
            self.last = now

    def close(self):
        """Erase the line, if one was drawn."""
        with self._lock:
            if self.width:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
                self.width = 0


def rows(seq, desc, *, delay=2.0, every=0.5, stream=None):
    """Yield the items of ``seq`` (a sized sequence), with a progress line on a terminal.

    The line of a :class:`Tally`, ticked after each item.

    Examples
    --------
    >>> [i for i in rows(range(3), "doctest")]
    [0, 1, 2]
    """
    tally = Tally(len(seq), desc, delay=delay, every=every, stream=stream)
    try:
        for item in seq:
            yield item
            tally.tick()
    finally:
        tally.close()
