"""Benchmark: count the primes below LIMIT."""

import sys

sys.path.insert(0, "src")

from primes import count_primes

LIMIT = 400_000

if __name__ == "__main__":
    print(f"primes below {LIMIT}: {count_primes(LIMIT)}")
