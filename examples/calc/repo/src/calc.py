"""Basic arithmetic helpers."""


def add(a, b):
    return a + b


def subtract(a, b):
    return a - b


def multiply(a, b):
    return a * b


def divide(a, b):
    """Return a / b."""
    if b == 0:
        return None
    return a / b
