"""Progress while waiting: compile notices on the command line, a line for slow batches."""

import io
import os
import subprocess
import sys
import time

import numba
import pytest

from fastcf._progress import compile_progress, rows


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_rows_draws_a_line_on_a_terminal_only_once_slow_and_erases_it():
    term = _Terminal()
    out = []
    for i in rows(range(5), "demo", delay=0.0, every=0.0, stream=term):
        out.append(i)
    assert out == list(range(5))
    text = term.getvalue()
    assert "demo: 5/5 rows" in text and text.endswith("\r")
    # not yet slow: nothing
    quiet = _Terminal()
    assert list(rows(range(5), "demo", delay=60.0, stream=quiet)) == list(range(5))
    assert quiet.getvalue() == ""
    # not a terminal: nothing
    log = io.StringIO()
    assert list(rows(range(5), "demo", delay=0.0, every=0.0, stream=log)) == list(range(5))
    assert log.getvalue() == ""


def test_rows_is_off_with_fastcf_progress_0(monkeypatch):
    monkeypatch.setenv("FASTCF_PROGRESS", "0")
    term = _Terminal()
    assert list(rows(range(3), "x", delay=0.0, every=0.0, stream=term)) == [0, 1, 2]
    assert term.getvalue() == ""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_compile_progress_names_the_kernel_compiling():
    lines = []

    def slow_to_compile(x):  # a fresh function: Numba compiles it in the block
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        return s

    import numpy as np

    with compile_progress(out=lines.append, every=0.01, why="a test"):
        f = numba.njit(slow_to_compile)
        f(np.arange(3.0))
        time.sleep(0.05)
    # (the test function is not fastcf's: the line counts it and names no fastcf kernel)
    assert lines and "(a test; later runs load the kernels from it)" in lines[0]
    assert all("compiling fastcf's kernels" in line and "now" not in line for line in lines)
    # after the block the listener is gone: a compilation says nothing
    n = len(lines)
    numba.njit(lambda x: x + 1)(1.0)
    time.sleep(0.05)
    assert len(lines) == n


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_a_cold_warmup_says_what_it_compiles(tmp_path):
    # a fresh cache: `python -m fastcf warmup logistic` compiles, and says so as it goes
    proc = subprocess.run(
        [sys.executable, "-m", "fastcf", "warmup", "logistic"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)),
    )
    assert "compiling fastcf's kernels" in proc.stdout
    assert "fastcf._kernels." in proc.stdout


def test_the_demo_heartbeat_says_something_whenever_output_is_silent():
    # idle=: a line whenever stdout and stderr have been silent that long; a print resets it
    lines = []
    saved = sys.stdout, sys.stderr
    with compile_progress(out=lines.append, every=60.0, idle=0.3):
        time.sleep(1.0)
        n = len(lines)
        for _ in range(50):
            print("working", flush=True)
            time.sleep(0.01)
        quiet = len(lines) - n
    assert n >= 2 and all("still working" in line for line in lines)
    assert quiet == 0  # prints 10 ms apart for half a second: never silent for 0.3 s
    assert (sys.stdout, sys.stderr) == saved  # the streams are given back
