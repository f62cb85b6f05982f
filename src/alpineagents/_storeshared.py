"""What the two built-in stores share: the one-writer-per-State locks and the checks of a `write` batch.

Internal to `alpineagents.store` and `alpineagents._sqlite` (06 §4.4, §9.8; the lock rule is described in the
docstring of `alpineagents.store`).
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alpineagents.errors import AlpineAgentsError, fix_message
from alpineagents.state import State

__all__ = [
    "SAVING",
    "StateLockedError",
    "locked_error",
    "hold_lock",
    "settle_lock",
    "drop_lock",
    "dump_json",
    "DICT_ONLY",
    "FRESH_READS",
    "check_write",
    "check_batch",
    "check_overlap",
]


class StateLockedError(AlpineAgentsError):
    """Another process is writing this State (it holds the State's lock), so this process may not write it."""

    __module__ = "alpineagents.store"  # where users import it from


SAVING: contextvars.ContextVar[State | None] = contextvars.ContextVar("alpineagents_saving", default=None)
"""The State whose `save`/`asave` is calling `write` now (stores tie their writer lock to it)."""


# Writer locks shared by the stores of one process


class _Hold:
    __slots__ = ("release", "claims")

    def __init__(self, release: Callable[[], None]) -> None:
        self.release = release
        self.claims = 0


_HOLDS: dict[str, _Hold] = {}
_HOLDS_LOCK = threading.RLock()  # reentrant: a finalizer (_unclaim) may run inside a locked block
_CLAIMED: weakref.WeakKeyDictionary[State, dict[str, _Hold]] = weakref.WeakKeyDictionary()
_MAX_HOLDS = 512
"""At most this many locks held at once (each FileStore lock is an open descriptor): past it, the least recently
written State's lock goes (its later writes take it again; the overlap check still guards its entries)."""


def _forget_in_child() -> None:
    """In a child made by `os.fork()`: this is another process, and the locks its parent holds are not its own.

    The bookkeeping is emptied without releasing anything (releasing would touch the parent's locks; a `flock`
    descriptor inherited this way still holds the parent's lock and is only left open), so the child's first write
    of a State takes its lock anew, and gets `StateLockedError` while the parent holds it.
    """
    global _HOLDS_LOCK
    _HOLDS_LOCK = threading.RLock()  # another thread of the parent may have held it at the fork
    _HOLDS.clear()
    _CLAIMED.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def locked_error(state_id: str, store: object) -> StateLockedError:
    return StateLockedError(
        fix_message(
            f"State {state_id!r} in {store!r} is being written by another process, and one process at a time "
            "writes a State",
            "let that process finish with it (its lock goes when it exits or drops the State), then load it "
            "again with store.load(id) and continue; or give this run a new State",
            f'state = store.load("{state_id}")\nagent.run(state)',
        )
    )


def hold_lock(key: str, acquire: Callable[[], Callable[[], None]]) -> None:
    """Take the process's writer lock for `key` (a no-op when this process holds it already)."""
    with _HOLDS_LOCK:
        hold = _HOLDS.pop(key, None)
        if hold is None:
            hold = _Hold(acquire())
        _HOLDS[key] = hold  # the most recently written last
        while len(_HOLDS) > _MAX_HOLDS:
            oldest = next(iter(_HOLDS))
            _HOLDS.pop(oldest).release()


def settle_lock(key: str) -> None:
    """After a write: tie the lock to the State being saved, or let it go when no State is being saved."""
    state = SAVING.get()
    with _HOLDS_LOCK:
        hold = _HOLDS.get(key)
        if hold is None:
            return
        if state is not None:
            try:
                claimed = _CLAIMED.setdefault(state, {})
            except TypeError:  # a State that cannot be weakly referenced: hold only during the write
                claimed = None
            if claimed is not None:
                if claimed.get(key) is not hold:
                    claimed[key] = hold
                    hold.claims += 1
                    weakref.finalize(state, _unclaim, key, hold)
                return
        if hold.claims == 0:
            del _HOLDS[key]
            hold.release()


def _unclaim(key: str, hold: _Hold) -> None:
    with _HOLDS_LOCK:
        if _HOLDS.get(key) is not hold:
            return
        hold.claims -= 1
        if hold.claims <= 0:
            del _HOLDS[key]
            hold.release()


def drop_lock(key: str) -> None:
    """Forget the lock of a deleted State (whatever claims it)."""
    with _HOLDS_LOCK:
        hold = _HOLDS.pop(key, None)
    if hold is not None:
        hold.release()


# Writing entries


def dump_json(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes read back as the same string
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode()


DICT_ONLY = {dict}

FRESH_READS: set[Any] = set()
"""The `read` methods of this library's stores: each call builds a new `Record` that only its caller holds."""


def check_write(method: str, entries: Any, info: Any) -> dict[str, Any]:
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


def check_batch(
    state_id: str, store: object, entries: Sequence[Mapping[str, Any]], have: int
) -> list[Mapping[str, Any]]:
    """The entries with `seq >= have`, checked to continue right after what the store has, with no gap."""
    new = [e for e in entries if e["seq"] >= have]
    for offset, entry in enumerate(new):
        if entry["seq"] != have + offset:
            raise ValueError(f"history entries for {state_id!r} start at seq {new[0]['seq']}, but {store!r} has {have}")
    return new


def conflict_error(state_id: str, store: object, seq: int) -> ValueError:
    return ValueError(
        fix_message(
            f"history entry {seq} of State {state_id!r} differs from the one {store!r} has: another process or "
            "another State object wrote this State after this one was loaded or saved",
            "load it again with store.load(id) and continue from there (one writer at a time per State)",
            f'state = store.load("{state_id}")\nagent.run(state)',
        )
    )


def check_overlap(
    state_id: str, store: object, entries: Sequence[Mapping[str, Any]], have: int, saved: Callable[[int], Any]
) -> None:
    """Entries the store already has must be the very same (a batch sent again); else another writer was here."""
    for entry in entries:
        seq = entry["seq"]
        if seq < have and saved(seq) != entry:
            raise conflict_error(state_id, store, seq)
