"""What counts as a number where a setting or a saved field takes one.

Python's ``True`` and ``False`` are ints (``isinstance(True, int)`` holds), but a flag is never a count, a limit or a
price: ``limit=True`` is a mistake to report, not a limit of 1. Every check of a setting that takes a number reads
these two rules instead of writing ``isinstance(x, bool) or not isinstance(x, int)`` again.
"""

from __future__ import annotations

from typing import TypeGuard

__all__ = ["is_whole", "is_number"]


def is_whole(value: object) -> TypeGuard[int]:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """True for an int or a float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
