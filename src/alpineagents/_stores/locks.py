"""One writer per State: the bookkeeping of the writer locks this process holds, shared by every store.

A process that writes a State holds a lock on it from its first write until the State objects it saved are gone
(garbage collected), the State is deleted, or the process ends. Each store takes and releases its own kind of lock
(`FileStore`: `flock` on the State's folder; `SQLiteStore`: a byte-range lock in the file `{path}-lock`); this module
decides when: `hold_lock` before a write, `settle_lock` after it (the lock is then tied to the State being saved),
`drop_lock` when the State is deleted. Threads and store objects of one process share one lock per State.

A child made by `os.fork()` is another process: it starts with no locks of its own, so it cannot write a State its
parent holds.
"""

from __future__ import annotations

import builtins
import collections
import contextvars
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from alpineagents.errors import AlpineAgentsError, fix_message
from alpineagents.state import State

__all__ = [
    "SAVING",
    "StateLockedError",
    "locked_error",
    "holds_lock",
    "hold_lock",
    "hold_after_asking",
    "settle_lock",
    "drop_lock",
    "let_go_of",
    "at_fork_in_child",
]

Release = Callable[[], None]
_T = TypeVar("_T")


class StateLockedError(AlpineAgentsError):
    """Another process is writing this State (it holds the State's lock), so this process may not write it."""

    __module__ = "alpineagents.store"  # where users import it from


SAVING: contextvars.ContextVar[State | None] = contextvars.ContextVar("alpineagents_saving", default=None)
"""The State whose `save`/`asave` is calling `write` now (stores tie their writer lock to it)."""


class _Hold:
    __slots__ = ("release", "claims")

    def __init__(self, release: Release) -> None:
        self.release = release
        self.claims = 0


_HOLDS: dict[str, _Hold] = {}
_HOLDS_LOCK = threading.RLock()  # reentrant: a finalizer (_unclaim) may run inside a locked block
_CLAIMED: weakref.WeakKeyDictionary[State, dict[str, _Hold]] = weakref.WeakKeyDictionary()


def _max_holds() -> int:
    """How many writer locks this process keeps at once: a quarter of its open-file limit, at least 512 (each
    `FileStore` lock is an open descriptor). Past it, the least recently written State's lock goes (its later writes
    take it again; the overlap check still guards its entries). A fleet of more States at once than this would take
    and drop a lock at every save point."""
    try:
        import resource  # POSIX only

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 512
    if soft == resource.RLIM_INFINITY:
        return 65536
    return min(max(512, soft // 4), 65536)


_MAX_HOLDS = _max_holds()


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


def holds_lock(key: str) -> bool:
    """Whether this process holds the writer lock for `key` now (a store that must ask its database for the lock
    asks before `hold_lock`, so that no other thread waits for the database while the table of locks is held)."""
    return key in _HOLDS


def hold_after_asking(key: str, ask: Callable[[], Release]) -> None:
    """Take the process's writer lock for `key` from a store that must ask its database for it (a round trip):
    `ask` runs before the table of held locks is entered, never while it is held, because a State's lock may be
    given back by the garbage collector on any thread, and that needs the table. `ask` raises `StateLockedError`
    when another process has the lock, else returns what releases it. When another thread of this process took the
    lock meanwhile, the database counted it twice: this one is released again at once."""
    if holds_lock(key):
        return
    release = ask()
    used: builtins.list[bool] = []

    def acquire() -> Release:
        used.append(True)
        return release

    hold_lock(key, acquire)
    if not used:
        release()


def hold_lock(key: str, acquire: Callable[[], Release]) -> None:
    """Take the process's writer lock for `key` (a no-op when this process holds it already). `acquire` takes the
    store's own lock (raising `StateLockedError` when another process has it) and returns what releases it."""
    with _HOLDS_LOCK:
        _let_go_unclaimed()
        hold = _HOLDS.pop(key, None)
        if hold is None:
            hold = _Hold(acquire())
        _HOLDS[key] = hold  # the most recently written last
        while len(_HOLDS) > _MAX_HOLDS:
            oldest = next(iter(_HOLDS))
            _HOLDS.pop(oldest).release()


def settle_lock(key: str, state: State | None) -> None:
    """After a write: tie the lock to `state`, the State being saved (`SAVING` when the write was made), or let it
    go when no State was being saved."""
    with _HOLDS_LOCK:
        _let_go_unclaimed()
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
                    weakref.finalize(state, _unclaim, key, hold, claimed)
                return
        if hold.claims == 0:
            del _HOLDS[key]
            hold.release()


_UNCLAIMED: collections.deque[tuple[str, _Hold, dict[str, _Hold]]] = collections.deque()
"""Claims of States collected while another thread held the table: let go at the table's next use."""


def _unclaim(key: str, hold: _Hold, claimed: dict[str, _Hold]) -> None:
    """A State that claimed `hold` is gone (a finalizer: it runs in whichever thread collected the State).

    It never waits for the table: another thread may hold it while it waits for this one (it started this thread
    and waits for it to start, say), so a finalizer that waited could deadlock both. It leaves the claim for the
    table's next use instead."""
    if not _HOLDS_LOCK.acquire(blocking=False):
        _UNCLAIMED.append((key, hold, claimed))
        return
    try:
        _let_go(key, hold, claimed)
        _let_go_unclaimed()
    finally:
        _HOLDS_LOCK.release()


def _let_go(key: str, hold: _Hold, claimed: dict[str, _Hold]) -> None:
    """With the table held: a State's claim of `hold` ends (once: `claimed` is that State's table of claims)."""
    if claimed.get(key) is not hold:
        return  # already let go (`let_go_of`), or replaced by a later claim
    del claimed[key]
    if _HOLDS.get(key) is not hold:
        return
    hold.claims -= 1
    if hold.claims <= 0:
        del _HOLDS[key]
        hold.release()


def _let_go_unclaimed() -> None:
    """With the table held: the claims of States collected while another thread held it."""
    while _UNCLAIMED:
        _let_go(*_UNCLAIMED.popleft())


def let_go_of(state: State) -> None:
    """`state` no longer claims the writer locks it took: each goes when no other State of this process claims it.
    A later write of `state` takes its lock again (`StateLockedError` if another process has it by then)."""
    with _HOLDS_LOCK:
        _let_go_unclaimed()
        try:
            claimed = _CLAIMED.get(state)
        except TypeError:  # a State that cannot be weakly referenced claims nothing
            return
        for key, hold in builtins.list((claimed or {}).items()):
            _let_go(key, hold, claimed or {})


def drop_lock(key: str) -> None:
    """Forget the lock of a deleted State (whatever claims it)."""
    with _HOLDS_LOCK:
        hold = _HOLDS.pop(key, None)
    if hold is not None:
        hold.release()


_AT_FORK: dict[int, tuple[weakref.ref[Any], Callable[[Any], None]]] = {}


def at_fork_in_child(owner: _T, reset: Callable[[_T], None]) -> None:
    """Have `reset(owner)` called in every child made by `os.fork()` while `owner` lives: a store drops there what is
    its parent's (connections, guards a thread of the parent may have held at the fork)."""
    key = id(owner)
    _AT_FORK[key] = (weakref.ref(owner, lambda _: _AT_FORK.pop(key, None)), reset)


def _forget_in_child() -> None:
    """In a child made by `os.fork()`: the locks its parent holds are not its own.

    The bookkeeping is emptied without releasing anything (releasing would touch the parent's locks; a `flock`
    descriptor inherited this way still holds the parent's lock and is only left open), so the child's first write
    of a State takes its lock anew, and gets `StateLockedError` while the parent holds it.
    """
    global _HOLDS_LOCK
    _HOLDS_LOCK = threading.RLock()  # another thread of the parent may have held it at the fork
    _HOLDS.clear()
    _CLAIMED.clear()
    _UNCLAIMED.clear()
    for owner, reset in builtins.list(_AT_FORK.values()):
        alive = owner()
        if alive is not None:
            reset(alive)


os.register_at_fork(after_in_child=_forget_in_child)
