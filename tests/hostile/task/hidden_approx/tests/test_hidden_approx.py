import calc
import pytest


def test_mean_of_nothing():
    assert calc.mean([]) == pytest.approx(0)


def test_mean_of_halves():
    assert calc.mean([1, 2]) == pytest.approx(1.5)
