"""What a store's `write` receives and how it joins what the store has, for every store.

A write carries entry dicts in `seq` order and an info dict. They are checked and encoded at once, in the writer's
thread: each entry becomes its `seq` and its JSON line. A write that waits for its flush then holds text, not the
dicts (which would otherwise live through the wait and be walked by the garbage collector again and again). Entries
the store already has (a batch sent again after a failed write) are skipped, but only when they are the very same
entries: different ones mean that someone else continued the State. The rest must continue right after what the
store has, with no gap. Also here: the texts of a write to an id that is already saved, or no longer saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alpineagents._stores.lines import json_line
from alpineagents.errors import fix_message

__all__ = ["Lines", "check_write", "entries_to_add", "check_overlap", "already_saved_error", "not_saved_error"]


class Lines:
    """The entries of one write in their stored form: `seqs[i]` is the `seq` of the entry whose JSON line (without
    its newline) is `lines[i]`."""

    __slots__ = ("seqs", "lines")

    def __init__(self, seqs: tuple[int, ...], lines: tuple[bytes, ...]) -> None:
        self.seqs = seqs
        self.lines = lines


def check_write(method: str, entries: object, info: object) -> tuple[Lines, dict[str, Any]]:
    """The arguments of a `write`, checked and encoded: entry dicts with an integer `seq` (as `Lines`), and an info
    mapping (returned as a plain dict).

    Raises:
        TypeError: The entries are not a list of dicts with an integer `seq`, the info is not a mapping, or a value
            is not JSON.
        ValueError: A value is NaN or infinite.
    """
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise TypeError(f"{method} takes the entries as a list of dicts (got: {type(entries).__name__})")
    for index, entry in enumerate(entries):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(entry, Mapping) or type(entry.get("seq")) is not int:  # pyright: ignore
            raise TypeError(f"{method} got an entry without an integer seq (entries[{index}] is {entry!r:.80})")
    if not isinstance(info, Mapping):
        raise TypeError(f"{method} takes the info as a dict (got: {type(info).__name__})")
    checked: Sequence[Mapping[str, Any]] = entries  # pyright: ignore[reportUnknownVariableType]
    lines = Lines(tuple(entry["seq"] for entry in checked), tuple(json_line(entry) for entry in checked))
    return lines, dict(info)  # pyright: ignore[reportUnknownArgumentType]


def entries_to_add(
    state_id: str,
    store: object,
    entries: Lines,
    have: int,
    saved_lines: Callable[[int, int], Mapping[int, bytes | str]],
) -> tuple[bytes, ...]:
    """The lines of a write that the store lacks (`seq >= have`), in order, checked: the entries the store has must
    be the very same (`check_overlap`), and the rest must continue right after them, with no gap.

    `saved_lines(start, end)` gives the stored JSON lines by `seq` for `start <= seq < end`; it is called only when
    the write carries entries the store has.
    """
    seqs, lines = entries.seqs, entries.lines
    if seqs and seqs[0] < have:
        saved = saved_lines(seqs[0], have)
        check_overlap(state_id, store, entries, have, lambda seq: saved.get(seq, "null"))
    if seqs and min(seqs) < have:  # keep only what the store lacks
        keep = [index for index, seq in enumerate(seqs) if seq >= have]
        seqs, lines = tuple(seqs[index] for index in keep), tuple(lines[index] for index in keep)
    for offset, seq in enumerate(seqs):
        if seq != have + offset:
            raise ValueError(f"history entries for {state_id!r} start at seq {seqs[0]}, but {store!r} has {have}")
    return lines


def check_overlap(state_id: str, store: object, entries: Lines, have: int, saved: Callable[[int], bytes | str]) -> None:
    """Carried entries the store already has (`seq < have`) must equal the stored ones (`saved(seq)`, their line):
    a batch sent again. A different one means another writer continued the State: `ValueError`."""
    for seq, line in zip(entries.seqs, entries.lines, strict=True):
        if seq >= have:
            continue
        stored = saved(seq)
        if stored != line and json.loads(stored) != json.loads(line):
            raise _conflict_error(state_id, store, seq)


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
