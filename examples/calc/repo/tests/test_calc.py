import unittest

import pytest
from calc import add, divide, multiply, subtract


@pytest.mark.parametrize("a, b, expected", [(1, 2, 3), (-1, 1, 0), (2.5, 0.5, 3.0)])
def test_add(a, b, expected):
    assert add(a, b) == expected


def test_subtract():
    assert subtract(5, 3) == 2


def test_divide():
    assert divide(7, 2) == 3.5


def test_divide_by_zero():
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)


class TestMultiply(unittest.TestCase):
    def test_multiply(self):
        self.assertEqual(multiply(3, 4), 12)

    def test_multiply_by_zero(self):
        self.assertEqual(multiply(3, 0), 0)
