"""What a store's `write` receives and how it joins what the store has, for every store.

A write carries entry dicts in `seq` order and an info dict. Entries the store already has (a batch sent again after
a failed write) are skipped, but only when they are the very same entries: different ones mean that someone else
continued the State. The rest must continue right after what the store has, with no gap. Also here: the texts of a
write to an id that is already saved, or no longer saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alpineagents.errors import fix_message

__all__ = ["check_write", "entries_to_add", "check_overlap", "new_entries", "already_saved_error", "not_saved_error"]


def check_write(method: str, entries: object, info: object) -> dict[str, Any]:
    """The arguments of a `write`, checked: entry dicts with an integer `seq`, and an info mapping (returned as a
    plain dict)."""
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise TypeError(f"{method} takes the entries as a list of dicts (got: {type(entries).__name__})")
    for index, entry in enumerate(entries):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(entry, Mapping) or type(entry.get("seq")) is not int:  # pyright: ignore
            raise TypeError(f"{method} got an entry without an integer seq (entries[{index}] is {entry!r:.80})")
    if not isinstance(info, Mapping):
        raise TypeError(f"{method} takes the info as a dict (got: {type(info).__name__})")
    return dict(info)  # pyright: ignore[reportUnknownArgumentType]


def entries_to_add(
    state_id: str,
    store: object,
    entries: Sequence[Mapping[str, Any]],
    have: int,
    saved_lines: Callable[[int, int], Mapping[int, bytes | str]],
) -> list[Mapping[str, Any]]:
    """The entries of a write that the store lacks (`seq >= have`), checked: `check_overlap`, then `new_entries`.

    `saved_lines(start, end)` gives the stored JSON lines by `seq` for `start <= seq < end`; it is called only when
    the write carries entries the store has.
    """
    if entries and entries[0]["seq"] < have:
        saved = saved_lines(entries[0]["seq"], have)
        check_overlap(state_id, store, entries, have, lambda seq: json.loads(saved.get(seq, "null")))
    return new_entries(state_id, store, entries, have)


def check_overlap(
    state_id: str, store: object, entries: Sequence[Mapping[str, Any]], have: int, saved: Callable[[int], Any]
) -> None:
    """Carried entries the store already has (`seq < have`) must equal the stored ones (`saved(seq)`, parsed): a
    batch sent again. A different one means another writer continued the State: `ValueError`."""
    for entry in entries:
        seq = entry["seq"]
        if seq < have and saved(seq) != entry:
            raise _conflict_error(state_id, store, seq)


def new_entries(
    state_id: str, store: object, entries: Sequence[Mapping[str, Any]], have: int
) -> list[Mapping[str, Any]]:
    """The entries with `seq >= have`, checked to continue right after what the store has, with no gap."""
    new = [e for e in entries if e["seq"] >= have]
    for offset, entry in enumerate(new):
        if entry["seq"] != have + offset:
            raise ValueError(f"history entries for {state_id!r} start at seq {new[0]['seq']}, but {store!r} has {have}")
    return new


def _conflict_error(state_id: str, store: object, seq: int) -> ValueError:
    return ValueError(
        fix_message(
            f"history entry {seq} of State {state_id!r} differs from the one {store!r} has: another process or "
            "another State object wrote this State after this one was loaded or saved",
            "load it again with store.load(id) and continue from there (one writer at a time per State)",
            f'state = store.load("{state_id}")\nagent.run(state)',
        )
    )


def already_saved_error(state_id: str, store: object) -> ValueError:
    """A first write (`create=True`) of an id the store already has."""
    return ValueError(
        fix_message(
            f"a State with id {state_id!r} is already saved in {store!r}",
            "continue it with store.load(id), or give the new State another id (or none, for a random one)",
            f'state = store.load("{state_id}")\nagent.run(state)',
        )
    )


def not_saved_error(state_id: str, store: object) -> LookupError:
    """A later write (`create=False`) of an id the store does not have."""
    return LookupError(f"no saved State with id {state_id!r} in {store!r} (was it deleted?)")
