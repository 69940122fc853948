import unittest

import calc


class CalcTest(unittest.TestCase):
    def test_divide_by_zero(self):
        with self.assertRaises(ZeroDivisionError):
            calc.divide(1, 0)

    def test_mean_of_nothing(self):
        self.assertEqual(calc.mean([]), 0)

    def test_divide(self):
        self.assertEqual(calc.divide(1, 4), 0.25)
