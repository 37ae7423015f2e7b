import numpy as np
import pytest

from fastcf import check_gradient


def test_detects_right_and_wrong_gradients(rng):
    A = rng.standard_normal((6, 6))
    Q = A @ A.T + np.eye(6)

    def f(x):
        return float(0.5 * x @ Q @ x + np.sum(np.cos(x))), Q @ x - np.sin(x)

    x = rng.standard_normal(6)
    good = check_gradient(f, x)
    assert good.passed and abs(good.order2 - 2) < 0.2 and abs(good.order1 - 1) < 0.2
    assert "observed orders" in good.table()
    for bad in (lambda x: (f(x)[0], f(x)[1] * 1.0001), lambda x: (f(x)[0], f(x)[1][::-1])):
        assert not check_gradient(bad, x).passed


def test_direction_validation():
    f = lambda x: (float(x @ x), 2 * x)  # noqa: E731
    with pytest.raises(ValueError, match="direction"):
        check_gradient(f, np.ones(3), direction=np.ones(2))
    with pytest.raises(ValueError, match="non-zero"):
        check_gradient(f, np.ones(3), direction=np.zeros(3))
    assert check_gradient(f, np.ones(3), direction=np.array([1.0, 0, 0])).passed
