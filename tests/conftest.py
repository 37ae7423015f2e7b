import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# The suite runs fastcf's default configuration: a kernel compiles (or loads from Numba's cache)
# before its first call. Tiered execution (FASTCF_TIERED=1: Python while the kernel compiles in
# the background) is switched on explicitly by tests/test_tier.py, and .ci/run runs a few test
# files with it on, on an empty kernel cache.

# JIT compilation makes the first example slow: no deadline. "ci" is the default, fixed-seed
# profile; "long" is for the soak runs (HYPOTHESIS_PROFILE=long).
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=100,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    deadline=None,
    max_examples=10_000,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT", "0") == "1"


def pytest_collection_modifyitems(config, items):
    if not NO_JIT:
        return
    skip = pytest.mark.skip(reason="infeasible as pure Python (NUMBA_DISABLE_JIT=1)")
    for item in items:
        if "needs_jit" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
