import os
import random

import pytest
from dice import roll


def test_roll_stays_on_the_die():
    rng = random.Random(1234)
    assert {roll(6, rng) for _ in range(1000)} == {1, 2, 3, 4, 5, 6}


def test_a_die_needs_sides():
    with pytest.raises(ValueError):
        roll(0)


def test_lucky_roll():
    # Flaky on purpose: it reads an unseeded random number. DICE_LUCK (default 0.5) is the pass rate.
    assert random.random() < float(os.environ.get("DICE_LUCK", "0.5"))
