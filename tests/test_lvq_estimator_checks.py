"""scikit-learn's estimator checks for the LVQ models."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastcf.lvq import GLVQ, GMLVQ, LGMLVQ

# hundreds of small fits: minutes as pure Python (NUMBA_DISABLE_JIT=1)
pytestmark = pytest.mark.needs_jit


@parametrize_with_checks(
    [GLVQ(random_state=0), GMLVQ(random_state=0), LGMLVQ(random_state=0)],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
