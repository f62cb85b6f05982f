"""Stores: keeping a State outside the process and rebuilding it later.

A store keeps two things per State id: the entries (one JSON object per history entry, only ever appended) and a
small info dict (what a listing shows, plus the format version). `Store.save` writes what the store lacks;
`Store.load` replays the saved entries through the State's fold. `FileStore` keeps each State in a folder of its
own; `SQLiteStore` (an extra, not in `__all__`, loaded on first use) keeps many States in one SQLite file. The
built-in stores' internals live in `alpineagents._stores`.

One writer per State: a process that writes a State holds an advisory lock on it (`FileStore`: `fcntl.flock` on
the State's folder; `SQLiteStore`: an `fcntl` byte-range lock in the file `{path}-lock`) from its first write
until the State objects it saved are gone (garbage collected), the State is deleted, or the process ends (a
killed process releases it at once). Another process (a forked child included) that tries to write the State
meanwhile gets `StateLockedError` before anything is written. Threads and store objects of one process share the
lock. A write whose entries overlap what the store already has must carry the very same entries (a batch sent
again after a failed write); different ones mean that someone else continued the State, and the write raises
`ValueError`.
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import gc
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

from alpineagents._async import blocks_event_loop, run_in_thread
from alpineagents._follow import afollow, follow
from alpineagents._history.decode import entries_from_dicts
from alpineagents._serial import check_version, entry_to_dict, info_from_dict, info_to_dict
from alpineagents._stores import files
from alpineagents._stores.damage import damaged_error
from alpineagents._stores.lines import log_bytes
from alpineagents._stores.locks import SAVING
from alpineagents._stores.locks import StateLockedError as StateLockedError  # alpineagents.store.StateLockedError
from alpineagents._stores.registry import builtin_store
from alpineagents.errors import fix_message
from alpineagents.events import StreamEvent
from alpineagents.state import State, StateSnapshot, check_id
from alpineagents.types import Stopped

if TYPE_CHECKING:  # at run time made on first use, by __getattr__ below
    from alpineagents._stores.filestore import FileStore as FileStore
    from alpineagents._stores.sqlite import SQLiteStore as SQLiteStore

__all__ = ["Store", "FileStore", "Record", "StateInfo"]
# Importable from here too, outside __all__ (whose four names are fixed): SQLiteStore and StateLockedError.

Entries = Sequence[dict[str, Any]]
"""The entry dicts a `write` carries, in `seq` order."""
Info = Mapping[str, Any]
"""The info dict a `write` carries."""


# ---------------------------------------------------------------------------------------------------------------
# Record and StateInfo


def _info_mapping(state_id: str, info: object) -> Mapping[str, Any]:
    if not isinstance(info, Mapping):
        raise damaged_error(state_id, "its info is not a dict", fix=False)
    return info  # pyright: ignore[reportUnknownVariableType]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Loading makes thousands of new objects, none of them garbage: the collector's passes over them are skipped."""
    collect = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collect:
            gc.enable()


@dataclass(frozen=True)
class Record:
    """What `Store.read` returns for one id: the saved entry dicts in `seq` order from 0, and the latest info dict
    exactly as `write` received it (with `"v"`)."""

    entries: list[dict[str, Any]]
    info: dict[str, Any]


@dataclass(frozen=True)
class StateInfo:
    """One saved State as a listing shows it, read from its info dict without loading the State.

    Each field is its value at the last successful write: `first_message` is the full text of the first user
    message (`None` when there is none or it is `""`), `created_at`/`updated_at` the times of the first and the
    latest saved entry (`None` with no history), `turn`, `stopped` and `finished` as on the State, and `parent_id`
    the id of the State whose tool call started this one as a subagent (`None` for a top-level State).
    """

    id: str
    first_message: str | None
    created_at: datetime | None
    updated_at: datetime | None
    turn: int
    stopped: Stopped | None
    finished: bool
    parent_id: str | None = None

    @classmethod
    def from_info(cls, state_id: str, info: Mapping[str, Any]) -> StateInfo:
        """`StateInfo(id=state_id, **info_from_dict(state_id, info))`, for Store implementations that build their
        listing.

        Raises:
            ValueError: The info has no, an older or a newer format version, or misses a key.
        """
        return cls(id=state_id, **info_from_dict(state_id, _info_mapping(state_id, info)))


# ---------------------------------------------------------------------------------------------------------------
# The Store role


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name, None) is not getattr(Store, name)


def _async_only(store: Store, async_name: str, sync_name: str) -> TypeError:
    return TypeError(
        fix_message(
            f"{type(store).__name__} works only asynchronously (it implements {async_name}, not {sync_name})",
            "run the agent with await agent.arun(...), and use the a* methods of the store",
            "state = await store.aload(state_id)\nawait agent.arun(state)",
        )
    )


_STORE_EXAMPLE = (
    "class RedisStore(Store):\n"
    "    async def awrite(self, state_id, entries, info, *, create=False): ...\n"
    "    async def aread(self, state_id): ..."
)


class _Writing:
    """`Store._writing`: a plain class, where a generator-based context manager would make two objects that live
    through each save point's wait."""

    __slots__ = ("_store", "_state", "_end", "_token")

    def __init__(self, store: Store, state: State, end: int) -> None:
        self._store = store
        self._state = state
        self._end = end

    def __enter__(self) -> None:
        self._token = SAVING.set(self._state)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        SAVING.reset(self._token)
        if kind is None:
            self._state._mark_saved(self._store, self._end)  # pyright: ignore[reportPrivateUsage]


def _info_of(snap: StateSnapshot) -> dict[str, Any]:
    first = snap._first_user_message  # pyright: ignore[reportPrivateUsage]
    return dict(
        info_to_dict(
            first_message=None if first is None else first.text,
            created_at=snap.created_at,
            updated_at=snap.updated_at,
            turn=snap.turn,
            stopped=snap.stopped,
            finished=snap.finished,
            parent_id=snap._parent_id,  # pyright: ignore[reportPrivateUsage]
        )
    )


class Store(abc.ABC):  # noqa: B024 - instantiation checks that write/awrite and read/aread exist instead
    """The role of a place that keeps States: it appends entries and replaces a small info dict per State id.

    A subclass implements `write` and `read` (a store used synchronously), or `awrite` and `aread` (a store
    reached only asynchronously), or both; `list`/`alist` and `delete`/`adelete` are optional. The library builds
    `save`/`asave` and `load`/`aload` on them; those are not meant to be overridden.

    What an implementation provides:

    - `write(state_id, entries, info, *, create=False)`: skip every entry whose `seq` is below the number of
      entries the store has, append the rest (they continue with no gap), then replace the info. With `create=True`,
      raise `ValueError` if the id exists, else write everything or nothing. With `create=False`, raise
      `LookupError` if the id does not exist. Calls for different ids may come from many threads at once.
    - `read(state_id)`: `Record(entries, info)` with the entries in `seq` order from 0, or `None`. Data that does
      not add up raises `ValueError` saying the saved State is damaged; it is never returned in part.
    - `list()`: one `StateInfo` per State (`StateInfo.from_info`), newest first; `delete(state_id)`: remove it,
      nothing when it does not exist. Both optional.
    - Equality ties a State to its store: a saved State is saved only where `==` says it was. A store whose several
      objects stand for the same storage (the same folder, file or database) defines `__eq__` and `__hash__` so;
      the default is identity.
    - Fresh reads (optional, a speed-up): a store whose `read` builds a new `Record` on every call, held only by its
      caller, says so with `_fresh_read = read` in its class body; `load` then drops each entry dict as soon as it
      is decoded. A subclass that overrides `read` is not covered by its parent's opt-in.
    - Fork safety: a child made by `os.fork()` is another process. A store that keeps connections, threads or
      guards drops the parent's in the child (`alpineagents._stores.locks.at_fork_in_child`) and never uses them
      there; one process at a time writes a State, so a store with locks between processes makes the child take
      its own (`StateLockedError` while the parent holds it).

    - A search of its runs (optional, beside the role): a store that can answer the viewer's list itself defines
      `find_runs(query: RunQuery) -> RunPage` (the `FindsRuns` protocol of `alpineagents._stores.runrows`, which
      says what a query asks and a page holds); `SQLiteStore` and `PostgresStore` do. Without it the viewer reads
      the runs and searches in Python.

    The conformance suite of the tests (`tests/store_kinds.py`) checks a store against all of this; the built-in
    stores are in `alpineagents._stores`, listed in `_stores/registry.py`.
    """

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        for sync, async_ in (("write", "awrite"), ("read", "aread")):  # a store implements one of each pair
            if not (_overrides(cls, sync) or _overrides(cls, async_)):
                raise TypeError(
                    fix_message(
                        f"{cls.__name__} implements neither {sync} nor {async_}",
                        f"implement {sync}(...), or async {async_}(...) for a store reached asynchronously",
                        _STORE_EXAMPLE,
                    )
                )
        return super().__new__(cls)

    _fresh_read: ClassVar[object] = None
    """The `read` of this library's store classes: each call builds a new `Record` that only its caller holds, so
    `load` may drop each entry dict once decoded (it is freed while still in the CPU cache). A subclass that
    overrides `read` is not covered."""

    # -- role methods -------------------------------------------------------------------------------------------

    def write(self, state_id: str, entries: Entries, info: Info, *, create: bool = False) -> None:
        """Add `entries` (skipping those the store has) and replace the info of one State.

        Raises:
            ValueError: `create=True` and the store already has `state_id`.
            LookupError: `create=False` and the store does not have `state_id`.
        """
        raise _async_only(self, "awrite", "write")

    async def awrite(self, state_id: str, entries: Entries, info: Info, *, create: bool = False) -> None:
        """`write` for async code; by default it runs `write` on a worker thread."""
        await run_in_thread(self.write, state_id, entries, info, create=create)

    def read(self, state_id: str) -> Record | None:
        """The saved entries and info of `state_id`, or `None` when the store does not have it."""
        raise _async_only(self, "aread", "read")

    async def aread(self, state_id: str) -> Record | None:
        """`read` for async code; by default it runs `read` on a worker thread."""
        return await run_in_thread(self.read, state_id)

    def follow(
        self, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
    ) -> Iterator[StreamEvent]:
        """The events (`alpineagents.events`) of a State that runs elsewhere, as its save points land: first those
        of the saved history after position `after` (all of it when `None`), then those of each entry saved later,
        read every `poll` seconds. Subagents' runs come inline, tagged, read from this store, where
        `events.events_of_state` places them (a run comes whole once the entry that ends its call's part is saved).
        Ends after `idle` seconds without a new entry (`None`: never).

        Raises:
            ValueError: `after` below -1, `poll` not positive, `idle` negative.
        """
        return follow(self, state_id, after=after, poll=poll, idle=idle)

    def afollow(
        self, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        """The async twin of `follow` (an async iterator that reads with `aread`)."""
        return afollow(self, state_id, after=after, poll=poll, idle=idle)

    def list(self) -> builtins.list[StateInfo]:
        """One `StateInfo` per saved State, most recently updated first.

        Raises:
            NotImplementedError: The store cannot list.
        """
        if _overrides(type(self), "alist"):
            raise _async_only(self, "alist", "list")
        raise NotImplementedError(f"{type(self).__name__} does not implement list")

    async def alist(self) -> builtins.list[StateInfo]:
        """`list` for async code; by default it runs `list` on a worker thread."""
        if not _overrides(type(self), "list"):
            raise NotImplementedError(f"{type(self).__name__} does not implement list")
        return await run_in_thread(self.list)

    def delete(self, state_id: str) -> None:
        """Remove a saved State (nothing happens when the id does not exist).

        Raises:
            NotImplementedError: The store cannot delete.
        """
        if _overrides(type(self), "adelete"):
            raise _async_only(self, "adelete", "delete")
        raise NotImplementedError(f"{type(self).__name__} does not implement delete")

    async def adelete(self, state_id: str) -> None:
        """`delete` for async code; by default it runs `delete` on a worker thread."""
        if not _overrides(type(self), "delete"):
            raise NotImplementedError(f"{type(self).__name__} does not implement delete")
        await run_in_thread(self.delete, state_id)

    # -- built on them ------------------------------------------------------------------------------------------

    def _batch(
        self, state: object, method: str
    ) -> tuple[bool, builtins.list[dict[str, Any]], dict[str, Any], int] | None:
        if not isinstance(state, State):
            raise TypeError(
                fix_message(
                    f"{method}() takes a State (got: {state!r})", "pass the State to save", f"store.{method}(state)"
                )
            )
        create, start, end, snap = state._save_batch(self)  # pyright: ignore[reportPrivateUsage]
        if not create and start >= end:
            return None
        # Only the new entries: reading `snap.history` would build a tuple of the whole history at every save.
        new = State._history_slice(snap, start, end)  # pyright: ignore[reportPrivateUsage]
        entries = [entry_to_dict(entry, index) for index, entry in enumerate(new, start)]
        return create, entries, _info_of(snap), end

    def _writing(self, state: State, end: int) -> _Writing:
        """Around the `write` of a batch: the stores tie their writer lock to `state` meanwhile; only when the
        write returned is the State marked saved (bound to this store, its entries up to `end` saved)."""
        return _Writing(self, state, end)

    def save(self, state: State) -> None:
        """Write what this store does not have yet of `state`: its new history entries and its info.

        Only the entries after the ones already saved are converted and sent; with nothing new, `write` is not
        called. After the write the State is bound to this store.

        Raises:
            TypeError: Called on the event-loop thread of an async run; `state` is not a State; a value in an entry
                cannot be saved as JSON; the store works only asynchronously.
            ValueError: The State is saved in another store; the store already has a new State's id.
            LookupError: The State was deleted from the store.
            OSError: The store could not write (e.g. a full disk); nothing is marked saved.
        """
        if blocks_event_loop():
            raise TypeError(
                fix_message(
                    "store.save() was called inside an async run, where it would block the event loop",
                    "Use the async version, await store.asave(...)",
                    "await store.asave(state)",
                )
            )
        batch = self._batch(state, "save")
        if batch is not None:
            create, entries, info, end = batch
            with self._writing(state, end):
                self.write(state.id, entries, info, create=create)

    async def asave(self, state: State) -> None:
        """`save` for async code: the same steps, awaiting `awrite`."""
        batch = self._batch(state, "asave")
        if batch is not None:
            create, entries, info, end = batch
            with self._writing(state, end):
                write = self.awrite(state.id, entries, info, create=create)
                # The stores encode the dicts before they wait: let them go now (fewer objects through the wait).
                del batch, entries, info
                await write

    def load(self, state_id: str) -> State:
        """Rebuild a saved State, ready to continue with `agent.run(state)`.

        A State saved in the middle of a turn is closed on loading (not saved): a request that was waiting gets an
        error entry, and every pending call the unknown-result text, so no tool runs twice.

        Raises:
            LookupError: The store has no State with this id.
            ValueError: A bad id; the saved State is from another format version or is damaged.
            TypeError: The store works only asynchronously.
        """
        check_id(state_id, "load()")
        with _collector_paused():
            return self._rebuild(state_id, self.read(state_id), type(self).read is type(self)._fresh_read)

    async def aload(self, state_id: str) -> State:
        """`load` for async code: the same steps, awaiting `aread`."""
        check_id(state_id, "aload()")
        cls = type(self)
        fresh = cls.aread is Store.aread and cls.read is cls._fresh_read
        return self._rebuild(state_id, await self.aread(state_id), fresh)

    def _rebuild(self, state_id: str, record: Record | None, fresh: bool = False) -> State:
        """The State of a record read for `state_id`: none is a LookupError; the info must be a dict of a format
        this library reads (checked before any entry); each entry's `seq` must be its position; then the entries are
        decoded and replayed, and the State is bound to this store. `fresh`: the record was made by `_fresh_read`."""
        if record is None:
            raise LookupError(f"no saved State with id {state_id!r} in {self!r}")
        info = _info_mapping(state_id, record.info)
        check_version(state_id, info)

        def bad_seq(index: int, item: object) -> ValueError | None:
            seq = item.get("seq") if isinstance(item, Mapping) else None
            if type(seq) is not int or seq != index:
                return damaged_error(state_id, f"history entry {index} has seq {seq!r}", fix=False)
            return None

        with _collector_paused():
            try:
                entries = entries_from_dicts(record.entries, bad_seq, consume=fresh)  # seqs are checked first
            except ValueError as error:
                if str(error).startswith(f"saved State {state_id!r} "):
                    raise
                # An entry the decoder cannot read (an unknown kind, a missing key): the saved State is damaged.
                raise damaged_error(state_id, str(error)) from error
            return State._from_saved(state_id, entries, self)  # pyright: ignore[reportPrivateUsage]


# ---------------------------------------------------------------------------------------------------------------
# Hooks that tests use to build and damage logs by hand

_lines = log_bytes
"""`_lines(entries) -> bytes`: the log bytes of those entry dicts."""
_write_file = files.write_file
"""`_write_file(path, data, *, append)`: write all of `data`, appending or replacing, mode 0o600, flushed."""


def __getattr__(name: str) -> Any:
    """The built-in stores that need no extra (`FileStore`, `SQLiteStore`), made on first use from the modules that
    hold them, as `_stores/registry.py` lists them (`PostgresStore` needs an extra: `alpineagents.postgres`)."""
    found = builtin_store(name)
    if found is None or found.extra is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = globals()[name] = found.load()
    return cls
