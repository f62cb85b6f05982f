"""The listing of a store: its order, written once, and a listing that goes on past a damaged State.

Every store lists newest first: by the info's `updated_at` (`updated_key`, which the database stores sort by in
their query and `FileStore` in `newest_first`), States with no history last, ties in ascending id order.

A listing that goes on past a damaged State: each saved State is listed, or named as one that cannot be.

`Store.list()` raises on the first info it cannot read. The built-in stores also offer `survey()`, which lists the
others and reports each unreadable one as an `Unlisted` (its id and the error), so that one damaged State never
hides the healthy ones (`alpineagents ls`, the viewer's list). `list()` of `FileStore` is `survey()` with the first
damage raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from alpineagents._serial import time_from_str

if TYPE_CHECKING:
    from alpineagents.store import StateInfo

__all__ = ["Unlisted", "listing", "raise_damage", "updated_key", "newest_first"]

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


def updated_key(info: Mapping[str, Any]) -> datetime | None:
    """What a listing sorts a State by: its info's `updated_at` as a time (`None` when absent or unreadable, which
    lists it with the States that have no history)."""
    text = info.get("updated_at")
    if text is None:
        return None
    try:
        return time_from_str(text)
    except (TypeError, ValueError):
        return None


def newest_first(infos: Sequence[StateInfo]) -> list[StateInfo]:
    """The listing order, for a store that sorts in Python: newest `updated_at` first, States with no history last,
    ties in ascending id order."""
    dated = [i for i in infos if i.updated_at is not None]
    undated = [i for i in infos if i.updated_at is None]
    dated.sort(key=lambda i: i.id)
    dated.sort(key=lambda i: i.updated_at.timestamp(), reverse=True)  # pyright: ignore[reportOptionalMemberAccess]
    undated.sort(key=lambda i: i.id)
    return dated + undated
