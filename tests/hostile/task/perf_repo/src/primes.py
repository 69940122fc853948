"""Prime-number helpers."""


def is_prime(n):
    """Return True if n is a prime number."""
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def primes_below(n):
    """Return the list of primes p with p < n, in increasing order."""
    return [k for k in range(2, n) if is_prime(k)]


def count_primes(n):
    """Return how many primes are strictly less than n."""
    return len(primes_below(n))
