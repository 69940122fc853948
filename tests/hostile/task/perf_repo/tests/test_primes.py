import pytest
from primes import count_primes, is_prime, primes_below


@pytest.mark.parametrize("n, expected", [(0, False), (1, False), (2, True), (9, False), (97, True)])
def test_is_prime(n, expected):
    assert is_prime(n) is expected


def test_primes_below_small():
    assert primes_below(50) == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]


def test_primes_below_edge_cases():
    assert primes_below(0) == []
    assert primes_below(2) == []
    assert primes_below(3) == [2]


def test_count_primes_known_values():
    assert count_primes(10) == 4
    assert count_primes(1000) == 168
    assert count_primes(10_000) == 1229
    assert count_primes(122) == 30  # 121 = 11**2 must not be counted
