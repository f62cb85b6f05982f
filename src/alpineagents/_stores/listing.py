"""A listing that goes on past a damaged State: each saved State is listed, or named as one that cannot be.

`Store.list()` raises on the first info it cannot read. The built-in stores also offer `survey()`, which lists the
others and reports each unreadable one as an `Unlisted` (its id and the error), so that one damaged State never
hides the healthy ones (`alpineagents ls`, the viewer's list). `list()` of `FileStore` is `survey()` with the first
damage raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Unlisted", "listing", "raise_damage"]

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True)
class Unlisted:
    """A saved State whose info cannot be read: its id and why (a `ValueError` saying it is damaged)."""

    id: str
    error: ValueError


def raise_damage(items: Sequence[T | Unlisted]) -> list[T]:
    """The items, when none is `Unlisted`; else the error of the first one is raised."""
    for item in items:
        if isinstance(item, Unlisted):
            raise item.error
    return list(items)  # pyright: ignore[reportReturnType] - no item is Unlisted here


def listing(rows: Iterable[tuple[str, S]], make: Callable[[str, S], T]) -> list[T | Unlisted]:
    """`make(state_id, info)` for each row, in their order, then as `Unlisted` (by id) each row where `make`
    raised `ValueError`."""
    made: list[T | Unlisted] = []
    unlisted: list[Unlisted] = []
    for state_id, info in rows:
        try:
            made.append(make(state_id, info))
        except ValueError as error:
            unlisted.append(Unlisted(state_id, error))
    unlisted.sort(key=lambda gone: gone.id)
    return [*made, *unlisted]
