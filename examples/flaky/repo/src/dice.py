"""Dice for board games."""

import random


def roll(sides=6, rng=random):
    """A fair roll of a die with ``sides`` faces."""
    if sides < 1:
        raise ValueError("a die has at least one side")
    return int(rng.random() * sides)
