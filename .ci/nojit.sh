#!/usr/bin/env bash
# The whole test suite with the JIT off: every kernel runs as plain Python, which proves the
# kernels are exercised (and correct) as Python code, and is the place for a coverage run.
# Tests that are infeasible without the JIT are marked `needs_jit` and skipped (tests/conftest.py).
# np.empty hands out signalling NaNs here (.ci/poison_empty.py), so a kernel that computes with
# memory it has not written fails every run, not one run in many.
# Usage: .ci/nojit.sh [extra pytest arguments, e.g. --cov=fastcf]
set -euo pipefail
cd "$(dirname "$0")/.."
export NUMBA_DISABLE_JIT=1 PYTHONUNBUFFERED=1
echo "== tests with NUMBA_DISABLE_JIT=1 =="
PYTHONPATH=".ci${PYTHONPATH:+:$PYTHONPATH}" python -m pytest -q -p no:cacheprovider -p poison_empty "$@"
