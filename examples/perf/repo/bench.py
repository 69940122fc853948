"""Benchmark: count the primes below a limit drawn from the seed (python bench.py SEED).

The grader passes a fresh seed for each pair of base and candidate runs, so the input is one the
candidate cannot know in advance; without a seed the limit is 400,000.
"""

import random
import sys

sys.path.insert(0, "src")

from primes import count_primes

if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else None
    limit = 400_000 if seed is None else random.Random(seed).randrange(380_000, 420_000)
    print(f"primes below {limit}: {count_primes(limit)}")
