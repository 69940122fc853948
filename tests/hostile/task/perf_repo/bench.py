"""Benchmark: count the primes below a limit drawn from the seed the grader passes (``{seed}``)."""

import random
import sys

sys.path.insert(0, "src")

from primes import count_primes

SEED = sys.argv[1] if len(sys.argv) > 1 else ""
LIMIT = 300_001 + (random.Random(int(SEED)).randrange(50_000) if SEED.isdigit() else 0)

if __name__ == "__main__":
    print(f"primes below {LIMIT}: {count_primes(LIMIT)}")
