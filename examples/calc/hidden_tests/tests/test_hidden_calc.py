import pytest
from calc import divide


def test_divide_by_zero_message():
    with pytest.raises(ZeroDivisionError, match="division by zero is undefined"):
        divide(10, 0)


def test_divide_negative():
    assert divide(-9, 3) == -3
