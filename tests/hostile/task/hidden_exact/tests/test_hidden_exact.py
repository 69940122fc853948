import fractions

import calc
import pytest


def exact(a, b):
    return float(fractions.Fraction(a, b))


@pytest.mark.parametrize(("a", "b"), [(1, 4), (-6, 3), (5, 0)])
def test_divide_agrees_with_exact_division(a, b):
    try:
        expected = exact(a, b)
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            calc.divide(a, b)
    else:
        assert calc.divide(a, b) == expected
