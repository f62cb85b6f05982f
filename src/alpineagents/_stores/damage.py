"""Saved data that is damaged: the one text that says so, and the checks that a record read back is whole.

Every store reports damaged data (a line that is not JSON, entries lost, a file where a folder should be, a table of
another program) as `ValueError` starting `saved State {id!r} is damaged: ...` (`damaged_error`), or, for damage of
the whole database, `the database of {store!r} is damaged: ...` (`damaged_store_error`), never as an `OSError`,
which would mean a failure to reach the storage that a retry might cure. Each text has its `Fix:` line, and every
one is made here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from alpineagents._serial import MIN_VERSION, VERSION
from alpineagents.errors import fix_message

__all__ = ["damaged_error", "damaged_store_error", "not_json_error", "check_count", "check_reaches_info"]

_RESTORE = "restore the store's data from a backup, or start a new State"


def damaged_error(state_id: str, what: str, *, fix: bool = True) -> ValueError:
    """`saved State {state_id!r} is damaged: {what}`, with the fix to restore a backup. (`fix=False`: the two
    texts whose exact form the saved format's contract fixes, which `Store.load` raises before it reads an entry:
    an info that is not a dict, and an entry whose `seq` is not its position.)"""
    problem = f"saved State {state_id!r} is damaged: {what}"
    return ValueError(fix_message(problem, _RESTORE) if fix else problem)


def damaged_store_error(store: object, what: str, fix: str, example: str) -> ValueError:
    """`the database of {store!r} is damaged: {what}`: damage of a whole store, not of one State."""
    return ValueError(fix_message(f"the database of {store!r} is damaged: {what}", fix, example))


def not_json_error(state_id: str, what: object, error: ValueError) -> ValueError:
    """A stored text of the State (`what`: `line 2 of .../log.jsonl`, `entry 3 in SQLiteStore(...)`) that does not
    parse as JSON."""
    return damaged_error(state_id, f"{what} is not valid JSON ({error})")


def check_count(state_id: str, where: object, got: int, expected: int) -> None:
    """A store that counts a State's entries must read back that many: fewer (or more) means lost rows."""
    if got != expected:
        raise damaged_error(state_id, f"{where} has {got} of its {expected} entries")


def check_reaches_info(state_id: str, entries: Sequence[object], info: object, log: object, info_file: object) -> None:
    """The info is written after the entries, so the entries hold the one the info was written after: the one whose
    time is the info's `updated_at`. Entries that lack it (a log deleted, emptied, zeroed or cut by a loss of data)
    are damaged; entries ahead of their info (a write that stopped between the two) are not."""
    if not isinstance(info, Mapping):
        return
    updated: Any = info.get("updated_at")  # pyright: ignore[reportUnknownMemberType]
    version: Any = info.get("v")  # pyright: ignore[reportUnknownMemberType]
    if updated is None or type(version) is not int or not MIN_VERSION <= version <= VERSION:
        return  # no entries recorded, or another format (which load reports)
    for entry in reversed(entries):
        if isinstance(entry, Mapping) and entry.get("at") == updated:  # pyright: ignore[reportUnknownMemberType]
            return
    turn: Any = info.get("turn")  # pyright: ignore[reportUnknownMemberType]
    raise damaged_error(
        state_id,
        f"{log} holds {len(entries)} entries, none of them the entry of {updated} (turn {turn!r}) that {info_file} "
        "was written after",
    )
