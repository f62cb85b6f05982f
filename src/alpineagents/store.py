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
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from alpineagents._async import blocks_event_loop, run_in_thread
from alpineagents._history.decode import entries_from_dicts
from alpineagents._serial import check_version, entry_to_dict, info_from_dict, info_to_dict
from alpineagents._stores import files
from alpineagents._stores.batch import Lines, check_write, entries_to_add
from alpineagents._stores.damage import damaged_error
from alpineagents._stores.group import GroupCommit, Job
from alpineagents._stores.lines import json_line, log_bytes, log_text
from alpineagents._stores.listing import Unlisted, listing, raise_damage
from alpineagents._stores.locks import SAVING, at_fork_in_child, drop_lock, hold_lock, settle_lock
from alpineagents._stores.locks import StateLockedError as StateLockedError  # alpineagents.store.StateLockedError
from alpineagents._stores.paths import check_path
from alpineagents.errors import fix_message
from alpineagents.state import State, StateSnapshot, check_id
from alpineagents.types import Stopped

if TYPE_CHECKING:  # at run time made on first use, by __getattr__ below
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
        raise ValueError(f"saved State {state_id!r} is damaged: its info is not a dict")
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

    Contract of `write(state_id, entries, info, *, create=False)`: skip every entry whose `seq` is below the number
    of entries the store has, append the rest (they continue with no gap), then replace the info. With
    `create=True`, raise `ValueError` if the id exists, else write everything or nothing. With `create=False`,
    raise `LookupError` if the id does not exist. `read(state_id)` returns `Record(entries, info)` or `None`.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
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

        def bad_seq(index: int, item: Any) -> ValueError | None:
            seq = item.get("seq") if isinstance(item, Mapping) else None
            if type(seq) is not int or seq != index:
                return ValueError(f"saved State {state_id!r} is damaged: history entry {index} has seq {seq!r}")
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
# FileStore


class _FileWrite(Job):
    """One `FileStore.write` waiting for its group commit, and what its flush has done so far."""

    __slots__ = ("state_id", "entries", "info_bytes", "create", "lock", "key", "fd", "known", "new")

    def __init__(self, state_id: str, entries: Lines, info_bytes: bytes, create: bool) -> None:
        super().__init__()
        self.state_id = state_id
        self.entries = entries
        self.info_bytes = info_bytes
        self.create = create
        self.lock: threading.RLock | None = None
        self.key: str | None = None
        self.fd: int | None = None
        self.known: tuple[int, int] = (0, 0)
        self.new: files.NewFolder | None = None  # a new State's folder, until it is renamed into place


class FileStore(Store):
    """The store that ships: each State in a folder of its own under `path` (the root).

    ```
    {root}/{state_id}/log.jsonl   the entries, one compact JSON line each, in seq order (mode 0o600)
    {root}/{state_id}/info.json   the info dict (mode 0o600); the folder is 0o700
    ```

    Construction does no I/O: the root (with missing parents) is created by the first save of a new State. A
    save appends only the new lines and flushes the log before it returns; the info is replaced whole (written
    aside, then renamed) after the log is on disk. Save points of other States that arrive while logs are being
    flushed are written together (group commit): their logs are appended, then made durable by one flush of the
    file system (`syncfs`), where a lone save point flushes its log alone. Creating a State folder and deleting one are all or nothing. A line torn by a crash is ignored by
    reads and cut off by the next write. A log that lacks entries its info was written after is damaged. Two
    `FileStore`s for the same folder are equal.

    Safe to use from many threads; one process at a time writes a given State (see the module docs).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._given = check_path(
            path,
            "FileStore takes the path of a folder",
            "pass the folder that holds the saved States as a str or pathlib.Path",
            'store = FileStore(".agent-runs")',
        )
        self._root = Path(path)
        self._resolved: str | None = None
        self._known: dict[str, tuple[int, int]] = {}  # id -> (lines, log size) after this object's last write
        self._guard = threading.Lock()
        self._id_locks: dict[str, threading.RLock] = {}
        self._group = GroupCommit(self._flush, "alpineagents-file-commit")
        at_fork_in_child(self, FileStore._new_guards)

    def __repr__(self) -> str:
        return f"FileStore({self._given!r})"

    def _real(self) -> str:
        if self._resolved is None:
            self._resolved = os.path.realpath(self._root)
        return self._resolved

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileStore):
            return NotImplemented
        return self._real() == other._real()

    def __hash__(self) -> int:
        return hash(self._real())

    def _new_guards(self) -> None:
        """In a forked child: a thread of the parent may have held a guard at the fork."""
        self._guard = threading.Lock()
        self._id_locks = {}
        self._group.forget_after_fork()

    def _lock(self, state_id: str) -> threading.RLock:
        """The lock that keeps this object's calls for one id apart."""
        with self._guard:
            lock = self._id_locks.get(state_id)
            if lock is None:
                lock = self._id_locks[state_id] = threading.RLock()
            return lock

    def _key(self, state_id: str) -> str:
        """The State's name among the writer locks of this process."""
        return os.path.join(self._real(), state_id)

    def write(self, state_id: str, entries: Entries, info: Info, *, create: bool = False) -> None:
        """Append the entries the log lacks (flushed to disk) and replace `info.json`.

        Raises:
            ValueError: `create=True` and the folder exists; the entries leave a gap or differ from saved ones; the
                log is damaged.
            LookupError: `create=False` and the State's folder does not exist.
            StateLockedError: Another process is writing this State.
            OSError: The disk refused (e.g. full, not writable); what was saved before stays intact.
        """
        self._group.commit(self._job(state_id, entries, info, create))

    async def awrite(self, state_id: str, entries: Entries, info: Info, *, create: bool = False) -> None:
        """`write` for async code: the same checks, then the save point waits for its group commit on this event
        loop (no thread of its own). A subclass that overrides `write` gets it called, on a worker thread."""
        if type(self).write is not FileStore.write:
            await super().awrite(state_id, entries, info, create=create)
            return
        job = self._job(state_id, entries, info, create)
        del entries, info  # the job holds their encoded form (see Store.asave)
        await self._group.acommit(job)

    def _job(self, state_id: str, entries: Entries, info: Info, create: bool) -> _FileWrite:
        check_id(state_id, "FileStore.write()")
        lines, checked = check_write("FileStore.write()", entries, info)
        return _FileWrite(state_id, lines, json_line(checked), create)

    def _flush(self, group: Sequence[Job]) -> None:
        """Write a group commit's jobs: append every log (a new State's folder is built whole under a temporary
        name), flush the appended logs in one pass, then replace each info (after its log is on disk, so an info
        never describes entries its log lacks) and rename each new folder into place, whose names one flush of
        the root makes durable. A job that fails gets its error; the others go on."""
        jobs = [job for job in group if isinstance(job, _FileWrite)]
        try:
            for job in jobs:
                self._begin(job)
            self._flush_logs([job for job in jobs if job.error is None and job.fd is not None])
            for job in jobs:
                if job.error is None:
                    self._end(job)
            self._flush_root([job for job in jobs if job.create and job.error is None])
        finally:
            for job in jobs:
                self._release(job)

    @staticmethod
    def _flush_logs(appended: builtins.list[_FileWrite]) -> None:
        """Flush the logs a group appended: several at once with one flush of their file system, a lone one (or
        where that call is missing) with one `fdatasync` each."""
        try:
            if len(appended) > 1 and files.flush_file_system(appended[0].fd or 0):
                return
        except OSError as error:
            for job in appended:
                job.error = error
            return
        for job in appended:
            try:
                files.flush_descriptor(job.fd or 0)
            except OSError as error:
                job.error = error

    def _begin(self, job: _FileWrite) -> None:
        """Take the job's locks; build a new State's folder, or append the lines the log lacks (not yet
        flushed)."""
        job.lock = self._lock(job.state_id)
        job.lock.acquire()
        try:
            if job.create:
                self._build(job)
            else:
                self._append(job)
        except Exception as error:  # this job's own failure: the group goes on without it
            job.error = error

    def _build(self, job: _FileWrite) -> None:
        new = entries_to_add(job.state_id, self, job.entries, 0, lambda start, end: {})
        data = log_text(new)
        job.new = files.build_folder(self._root, job.state_id, data, job.info_bytes, self)
        job.fd = job.new.log_fd
        job.known = (len(new), len(data))

    def _place(self, job: _FileWrite, new: files.NewFolder) -> None:
        """After the log's flush: rename a new State's folder into place and hold its writer lock."""
        job.new = None  # placed, or abandoned by a failed rename
        release = files.place_folder(self._root, job.state_id, new, self)
        key = job.key = self._key(job.state_id)
        drop_lock(key)  # a lock left from a State of this id that another process deleted
        hold_lock(key, lambda: release)
        self._known[job.state_id] = job.known

    def _flush_root(self, created: builtins.list[_FileWrite]) -> None:
        """Make the names of the folders a group placed durable: one flush of the root for all of them."""
        if not created:
            return
        try:
            files.fsync_dir(self._root)
        except OSError as error:
            for job in created:
                job.error = error

    def _append(self, job: _FileWrite) -> None:
        state_id = job.state_id
        folder = os.path.join(self._root, state_id)  # str paths: pathlib's joins cost more than the file work here
        log = os.path.join(folder, files.LOG)
        key = self._key(state_id)
        hold_lock(key, lambda: files.lock_folder(folder, state_id, self))
        job.key = key
        size = files.log_size(folder, state_id, self)
        known = self._known.get(state_id)
        lines: builtins.list[bytes] | None = None
        if known is not None and known[1] == size:
            have = known[0]
        else:  # never written by this object, or written by another one since
            have, size, lines = files.recount(log, size)

        def saved_lines(start: int, end: int) -> dict[int, bytes]:
            every = files.log_lines(log) if lines is None else lines
            return dict(enumerate(every[start:end], start))

        new = entries_to_add(state_id, self, job.entries, have, saved_lines)
        data = log_text(new)
        if data:
            self._known.pop(state_id, None)
            job.fd = files.append_unflushed(log, data)
            have, size = have + len(new), size + len(data)
        job.known = (have, size)

    def _end(self, job: _FileWrite) -> None:
        """After the log's flush: place a new State's folder, or remember where the log ends and replace the
        info."""
        try:
            if job.new is not None:
                self._place(job, job.new)
                return
            self._known[job.state_id] = job.known
            files.replace_file(os.path.join(self._root, job.state_id), files.INFO, job.info_bytes)
        except Exception as error:
            job.error = error

    def _release(self, job: _FileWrite) -> None:
        if job.fd is not None:
            os.close(job.fd)
            job.fd = None
        if job.new is not None:  # built, never placed (its flush failed)
            files.abandon_folder(job.new)
            job.new = None
        if job.key is not None:
            settle_lock(job.key, job.saving)
        if job.lock is not None:
            job.lock.release()
            job.lock = None

    def read(self, state_id: str) -> Record | None:
        """The entries (every complete line of the log) and the info of `state_id`, or `None` without its folder.

        Raises:
            ValueError: A line or the info is not valid JSON, the folder has no info, or the log lacks entries the
                info was written after.
        """
        check_id(state_id, "FileStore.read()")
        folder = self._root / state_id
        with self._lock(state_id):
            if not folder.is_dir():
                if os.path.lexists(folder):
                    raise files.a_file(state_id, folder)
                self._check_root()
                return None
            entries, info = files.read_folder(folder, state_id)
        return Record(entries, info)

    _fresh_read = read

    def list(self) -> builtins.list[StateInfo]:
        """One `StateInfo` per State folder that holds an `info.json`, newest `updated_at` first, States with no
        history last, ties by id. Only the small info files are read.

        Raises:
            ValueError: An info file is not valid JSON, or is from another format version, or misses a key.
        """
        return raise_damage(self.survey())

    def survey(self) -> builtins.list[StateInfo | Unlisted]:
        """`list()`, with each State whose info cannot be read reported as an `Unlisted` (after the others, by id)
        instead of raising, so one damaged State does not hide the rest."""
        try:
            items = builtins.list(os.scandir(self._root))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise self._not_a_store() from None
        # another program's file, or the store's own (a name starting with "."), is not a State; a State's folder
        # replaced by a file is listed, as damaged
        names = [
            (item.name, None)
            for item in items
            if not item.name.startswith(".") and (item.is_dir() or files.is_state_name(item.name))
        ]
        found = listing(names, lambda state_id, _: self._listed_info(state_id))
        infos = [item for item in found if isinstance(item, StateInfo)]
        return [*files.newest_first(infos), *(item for item in found if isinstance(item, Unlisted))]

    def _listed_info(self, state_id: str) -> StateInfo | None:
        """The `StateInfo` of a State folder from its `info.json` (`None` without one)."""
        info = files.read_info(state_id, self._root / state_id, old=False)
        return None if info is None else StateInfo.from_info(state_id, info)

    def _check_root(self) -> None:
        """Raises:
        ValueError: The root is a file, so this is not a store."""
        if os.path.lexists(self._root) and not os.path.isdir(self._root):
            raise self._not_a_store()

    def _not_a_store(self) -> ValueError:
        return ValueError(
            fix_message(
                f"{self._given} is not a store of alpineagents: it is a file, and a FileStore is a folder",
                "point the store at the folder that holds the saved States, or at a new folder for a new store",
                'store = FileStore(".agent-runs")',
            )
        )

    def delete(self, state_id: str) -> None:
        """Remove the State's folder (renamed aside first, so a half-deleted State is never visible). Nothing
        happens when it does not exist. Subagent States are not deleted.

        Raises:
            StateLockedError: Another process is writing this State.
        """
        check_id(state_id, "FileStore.delete()")
        folder = self._root / state_id
        key = self._key(state_id)
        with self._lock(state_id):
            self._known.pop(state_id, None)
            if not folder.is_dir():
                drop_lock(key)
                return
            try:
                hold_lock(key, lambda: files.lock_folder(folder, state_id, self))
            except LookupError:
                return
            try:
                files.remove_folder(self._root, state_id)
            finally:
                drop_lock(key)


# ---------------------------------------------------------------------------------------------------------------
# Hooks that tests use to build and damage logs by hand

_lines = log_bytes
"""`_lines(entries) -> bytes`: the log bytes of those entry dicts."""
_write_file = files.write_file
"""`_write_file(path, data, *, append)`: write all of `data`, appending or replacing, mode 0o600, flushed."""


def __getattr__(name: str) -> Any:
    if name == "SQLiteStore":  # an extra store, outside __all__, made on first use
        from alpineagents._stores.sqlite import SQLiteStore

        return SQLiteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
