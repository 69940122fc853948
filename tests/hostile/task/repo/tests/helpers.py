def close(a, b, tolerance=1e-9):
    return a is not None and abs(a - b) <= tolerance
