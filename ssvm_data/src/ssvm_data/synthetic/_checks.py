"""Argument checks shared by the synthetic generators (no import from ssvm_data)."""

from __future__ import annotations

import numbers

import numpy as np

#: What every generator accepts as ``random_state`` (see ``numpy.random.default_rng``).
RandomState = int | np.random.Generator | None


def check_int(value: object, name: str, *, minimum: int) -> int:
    """``value`` as an int, if it is an integer (not a bool) of at least ``minimum``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If it is below ``minimum``; the messages name the argument ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_length(length: int | tuple[int, int]) -> tuple[int, int]:
    """The inclusive (min, max) range of a length given as an int or a (min, max) pair."""
    if isinstance(length, (tuple, list)):
        if len(length) != 2:
            raise ValueError(f"length must be an integer or a (min, max) pair, got {length!r}")
        low = check_int(length[0], "length[0] (the minimum length)", minimum=1)
        high = check_int(length[1], "length[1] (the maximum length)", minimum=low)
        return low, high
    length = check_int(length, "length", minimum=1)
    return length, length
