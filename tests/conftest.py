import os

# Kernels compile before their first call in the tests, as Numba does by default: the answers
# are then the compiled code's, whichever test runs first. The Python tier that answers while a
# kernel compiles in the background (the default for users) has its own tests, in fresh
# processes (tests/test_tier.py).
os.environ.setdefault("FASTCF_TIERED", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

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
