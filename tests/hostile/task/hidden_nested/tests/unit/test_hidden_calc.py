import calc
import pytest


def test_divide_by_zero_message():
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        calc.divide(5, 0)


def test_divide_negative():
    assert calc.divide(-6, 3) == -2
