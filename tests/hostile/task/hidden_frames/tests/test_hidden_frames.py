import calc
import pytest


def test_divide_by_zero_message():
    expected = "division by zero is undefined"
    with pytest.raises(ZeroDivisionError, match=expected):
        calc.divide(5, 0)
