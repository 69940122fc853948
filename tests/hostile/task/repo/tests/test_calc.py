import calc
import pytest
from helpers import close


def test_add():
    assert calc.add(2, 3) == 5


def test_divide():
    assert close(calc.divide(1, 4), 0.25)


def test_mean(numbers):
    assert close(calc.mean(numbers), 2.5)


def test_divide_by_zero():
    with pytest.raises(ZeroDivisionError):
        calc.divide(1, 0)
