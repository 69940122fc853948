import unittest

import calc


def test_mean_of_nothing():
    assert calc.mean([]) == 0


class MeanTest(unittest.TestCase):
    def test_mean_of_nothing_is_zero(self):
        self.assertEqual(calc.mean([]), 0)
