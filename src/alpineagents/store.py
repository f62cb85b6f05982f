"""Stores: keeping a State outside the process and rebuilding it later (06).

A store keeps two things per State id: the entries (one JSON object per history entry, only ever appended) and a
small info dict (what a listing shows, plus the format version). `Store.save` writes what the store lacks;
`Store.load` replays the saved entries through the State's fold. `FileStore` keeps each State in a folder of its
own; `SQLiteStore` (an extra, not in `__all__`) keeps many States in one SQLite file.

One writer per State: a process that writes a State holds an advisory lock on it (`FileStore`: `fcntl.flock` on
the State's folder; `SQLiteStore`: an `fcntl` byte-range lock in the file `{path}-lock`) from its first write
until the State objects it saved are gone (garbage collected), the State is deleted, or the process ends (a
killed process releases it at once). Another process that tries to write the State meanwhile gets
`StateLockedError` before anything is written. Threads and store objects of one process share the lock. A write
whose entries overlap what the store already has must carry the very same entries (a batch sent again after a
failed write); different ones mean that someone else continued the State, and the write raises `ValueError`.
"""

from __future__ import annotations

import abc
import builtins
import errno
import gc
import json
import os
import shutil
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from alpineagents._async import blocks_event_loop, run_in_thread
from alpineagents._readlog import entries_from_dicts
from alpineagents._serial import MIN_VERSION, VERSION, check_version, entry_to_dict, info_from_dict, info_to_dict
from alpineagents._state_parts import check_id
from alpineagents._storeshared import (
    DICT_ONLY,
    FRESH_READS,
    SAVING,
    check_batch,
    check_overlap,
    check_write,
    drop_lock,
    dump_json,
    hold_lock,
    locked_error,
    settle_lock,
)
from alpineagents._storeshared import (
    StateLockedError as StateLockedError,  # re-exported: alpineagents.store.StateLockedError
)
from alpineagents.errors import fix_message
from alpineagents.state import State, StateSnapshot
from alpineagents.types import Stopped

__all__ = ["Store", "FileStore", "Record", "StateInfo"]

# Extra names, not in __all__ (06 Check 1 fixes it): SQLiteStore (loaded on first use) and StateLockedError.


# ---------------------------------------------------------------------------------------------------------------
# Record and StateInfo


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
        if not isinstance(info, Mapping):
            raise ValueError(f"saved State {state_id!r} is damaged: its info is not a dict")
        return cls(id=state_id, **info_from_dict(state_id, info))


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


class Store(abc.ABC):  # noqa: B024 - the instantiation check of 06 §4.2 replaces abstract methods
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
        if not (_overrides(cls, "write") or _overrides(cls, "awrite")):
            raise TypeError(
                fix_message(
                    f"{cls.__name__} implements neither write nor awrite",
                    "implement write(...), or async awrite(...) for a store reached asynchronously",
                    _STORE_EXAMPLE,
                )
            )
        if not (_overrides(cls, "read") or _overrides(cls, "aread")):
            raise TypeError(
                fix_message(
                    f"{cls.__name__} implements neither read nor aread",
                    "implement read(...), or async aread(...) for a store reached asynchronously",
                    _STORE_EXAMPLE,
                )
            )
        return super().__new__(cls)

    # -- role methods -------------------------------------------------------------------------------------------

    def write(
        self,
        state_id: str,
        entries: Sequence[dict[str, Any]],
        info: Mapping[str, Any],
        *,
        create: bool = False,
    ) -> None:
        """Add `entries` (skipping those the store has) and replace the info of one State.

        Raises:
            ValueError: `create=True` and the store already has `state_id`.
            LookupError: `create=False` and the store does not have `state_id`.
        """
        raise _async_only(self, "awrite", "write")

    async def awrite(
        self,
        state_id: str,
        entries: Sequence[dict[str, Any]],
        info: Mapping[str, Any],
        *,
        create: bool = False,
    ) -> None:
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

    def _batch(self, state: Any, method: str) -> tuple[bool, builtins.list[dict[str, Any]], dict[str, Any], int] | None:
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
        if batch is None:
            return
        create, entries, info, end = batch
        token = SAVING.set(state)
        try:
            self.write(state.id, entries, info, create=create)
        finally:
            SAVING.reset(token)
        state._mark_saved(self, end)  # pyright: ignore[reportPrivateUsage]

    async def asave(self, state: State) -> None:
        """`save` for async code: the same steps, awaiting `awrite`."""
        batch = self._batch(state, "asave")
        if batch is None:
            return
        create, entries, info, end = batch
        token = SAVING.set(state)
        try:
            await self.awrite(state.id, entries, info, create=create)
        finally:
            SAVING.reset(token)
        state._mark_saved(self, end)  # pyright: ignore[reportPrivateUsage]

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
        collect = gc.isenabled()
        gc.disable()  # thousands of new objects, none of them garbage: skip the collector's passes over them
        try:
            return self._rebuild(state_id, self.read(state_id), type(self).read in FRESH_READS)
        finally:
            if collect:
                gc.enable()

    async def aload(self, state_id: str) -> State:
        """`load` for async code: the same steps, awaiting `aread`."""
        check_id(state_id, "aload()")
        cls = type(self)
        fresh = cls.aread is Store.aread and cls.read in FRESH_READS
        return self._rebuild(state_id, await self.aread(state_id), fresh)

    def _rebuild(self, state_id: str, record: Record | None, fresh: bool = False) -> State:
        """Steps 3 to 9 of 06 §6.1. `fresh`: the record was just made by this library's own `read` and nobody else
        holds it, so each entry dict is dropped from it once read (freed while it is still in the CPU cache)."""
        if record is None:
            raise LookupError(f"no saved State with id {state_id!r} in {self!r}")
        info = record.info
        if not isinstance(info, Mapping):
            raise ValueError(f"saved State {state_id!r} is damaged: its info is not a dict")
        check_version(state_id, info)

        def bad_seq(index: int, item: Any) -> ValueError | None:
            seq = item.get("seq") if isinstance(item, Mapping) else None
            if type(seq) is not int or seq != index:
                return ValueError(f"saved State {state_id!r} is damaged: history entry {index} has seq {seq!r}")
            return None

        collect = gc.isenabled()
        gc.disable()
        try:
            entries = entries_from_dicts(record.entries, bad_seq, consume=fresh)  # seqs are checked first
            return State._from_saved(state_id, entries, self)  # pyright: ignore[reportPrivateUsage]
        finally:
            if collect:
                gc.enable()


# ---------------------------------------------------------------------------------------------------------------
# File helpers (fixed hooks of 06 §11)


def _lines(entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The log bytes of these entry dicts: one compact JSON line each, `"\\n"`-terminated, UTF-8 (a line that
    UTF-8 cannot hold is written with ASCII escapes).

    Raises:
        ValueError: A value is NaN or infinite.
        TypeError: A value is not JSON.
    """
    if not entries:
        return b""
    try:
        text = "\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":"), allow_nan=False) for e in entries)
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return b"".join(dump_json(e) + b"\n" for e in entries)


def _sync(fd: int) -> None:
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


def _write_file(path: str | os.PathLike[str], data: bytes, *, append: bool) -> None:
    """Write all of `data` to `path`, appending or replacing, creating the file with mode 0o600, and flush it to
    disk (one `fdatasync`) before returning."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        _sync(fd)
    finally:
        os.close(fd)


_EXCHANGE: list[Any] = []  # [renameat2] once looked up; [None] where it is missing


def _exchange(temp: str, target: str) -> bool:
    """Swap `temp` and `target` in one atomic step (Linux `renameat2(RENAME_EXCHANGE)`); False where unsupported.

    Replacing a file by renaming over it makes ext4 start writing the new file out at once (its `auto_da_alloc`
    heuristic), which costs more than the flush of the log; an exchange does not.
    """
    if not _EXCHANGE:
        try:
            import ctypes

            function = ctypes.CDLL(None, use_errno=True).renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            function.restype = ctypes.c_int
            _EXCHANGE.append(function)
        except (AttributeError, OSError):
            _EXCHANGE.append(None)
    function = _EXCHANGE[0]
    if function is None:
        return False
    at_cwd, rename_exchange = -100, 2
    return function(at_cwd, os.fsencode(temp), at_cwd, os.fsencode(target), rename_exchange) == 0


def _replace_file(folder: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Write `data` to a temporary file in `folder`, then put it in place of `name` in one atomic step (a reader
    sees the old or the new file, never a mix); not flushed."""
    temp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}")
    target = os.path.join(folder, name)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if not _exchange(temp, target):  # no old file, or no exchange here
            os.replace(temp, target)
            return
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    try:
        os.unlink(temp)  # now the old content
    except OSError:
        pass


def _fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _parse_log(data: bytes, state_id: str, where: object) -> builtins.list[Any]:
    """The JSON values of the complete lines of `data` (a torn last segment is ignored), in one parse."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return []
    count = data.count(b"\n", 0, end)
    try:  # one text "[line,line,...,0]": the 0 stands after the last comma (two copies of the log fewer)
        values = json.loads(b"".join((b"[", (data if end == len(data) else data[:end]).replace(b"\n", b","), b"0]")))
        if len(values) == count + 1 and values.pop() == 0 and set(map(type, values)) == DICT_ONLY:
            return values
    except (ValueError, UnicodeDecodeError):
        pass
    values = []
    for number, line in enumerate(data[: end - 1].split(b"\n"), 1):
        try:
            values.append(json.loads(line.decode()))
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(
                f"saved State {state_id!r} is damaged: line {number} of {where} is not valid JSON ({error})"
            ) from error
    return values


def _read_bytes(path: Path, state_id: str) -> bytes | None:
    """The bytes of a file of a State's folder, `None` when it is missing; a folder in its place is damage."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ValueError(f"saved State {state_id!r} is damaged: {path} is a folder, not a file") from None


def _check_log_reaches_info(state_id: str, folder: Path, entries: builtins.list[Any], info: Any) -> None:
    """The info is written after the log, so the log holds every entry the info was written after: the one whose
    time is the info's `updated_at`. A log that lacks it (deleted, emptied, zeroed or cut by a loss of data) is
    damaged; a log ahead of its info (a write that stopped between the two) is not."""
    if not isinstance(info, Mapping):
        return
    updated = info.get("updated_at")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    version = info.get("v")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if updated is None or type(version) is not int or not MIN_VERSION <= version <= VERSION:
        return  # no entries recorded, or another format (whose error load gives)
    for entry in reversed(entries):
        if isinstance(entry, Mapping) and entry.get("at") == updated:  # pyright: ignore[reportUnknownMemberType]
            return
    raise ValueError(
        fix_message(
            f"saved State {state_id!r} is damaged: {folder / _LOG} holds {len(entries)} entries, none of them the "
            f"entry of {updated} (turn {info.get('turn')!r}) that {folder / _INFO} was written after",  # pyright: ignore
            "restore the store's data from a backup, or start a new State",
        )
    )


# ---------------------------------------------------------------------------------------------------------------
# FileStore

_LOG = "log.jsonl"
_INFO = "info.json"


def _flock_dir(folder: str, state_id: str, store: Store) -> Callable[[], None]:
    try:
        import fcntl  # POSIX only: imported here so that the package imports everywhere

        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise LookupError(f"no saved State with id {state_id!r} in {store!r} (was it deleted?)") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise locked_error(state_id, store) from None
        raise
    return lambda: os.close(fd)


class FileStore(Store):
    """The store that ships: each State in a folder of its own under `path` (the root).

    ```
    {root}/{state_id}/log.jsonl   the entries, one compact JSON line each, in seq order (mode 0o600)
    {root}/{state_id}/info.json   the info dict (mode 0o600); the folder is 0o700
    ```

    Construction does no I/O: the root (with missing parents) is created by the first save of a new State. A
    save appends only the new lines and flushes the log once; the info is replaced whole (written aside, then
    renamed). Creating a State folder and deleting one are all or nothing. A line torn by a crash is ignored by
    reads and cut off by the next write. Two `FileStore`s for the same folder are equal.

    Safe to use from many threads; one process at a time writes a given State (see the module docs).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                fix_message(
                    f"FileStore takes the path of a folder (got: {type(path).__name__})",
                    "pass the folder that holds the saved States as a str or pathlib.Path",
                    'store = FileStore(".agent-runs")',
                )
            )
        self._given = str(path)
        self._root = Path(path)
        self._resolved: str | None = None
        self._known: dict[str, tuple[int, int]] = {}  # id -> (lines, log size) after this object's last write
        self._guard = threading.Lock()
        self._id_locks: dict[str, threading.RLock] = {}

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

    def _lock(self, state_id: str) -> threading.RLock:
        with self._guard:
            lock = self._id_locks.get(state_id)
            if lock is None:
                lock = self._id_locks[state_id] = threading.RLock()
            return lock

    def _key(self, state_id: str) -> str:
        return os.path.join(self._real(), state_id)

    # -- write --------------------------------------------------------------------------------------------------

    def write(
        self,
        state_id: str,
        entries: Sequence[dict[str, Any]],
        info: Mapping[str, Any],
        *,
        create: bool = False,
    ) -> None:
        """Append the entries the log lacks (flushed to disk) and replace `info.json`.

        Raises:
            ValueError: `create=True` and the folder exists; the entries leave a gap or differ from saved ones.
            LookupError: `create=False` and the State's folder does not exist.
            StateLockedError: Another process is writing this State.
            OSError: The disk refused (e.g. full, not writable); what was saved before stays intact.
        """
        check_id(state_id, "FileStore.write()")
        info_bytes = dump_json(check_write("FileStore.write()", entries, info))
        with self._lock(state_id):
            if create:
                self._create(state_id, entries, info_bytes)
            else:
                self._append(state_id, entries, info_bytes)

    def _already(self, state_id: str) -> ValueError:
        return ValueError(
            fix_message(
                f"a State with id {state_id!r} is already saved in {self!r}",
                "continue it with store.load(id), or give the new State another id (or none, for a random one)",
                f'state = store.load("{state_id}")\nagent.run(state)',
            )
        )

    def _create(self, state_id: str, entries: Sequence[dict[str, Any]], info_bytes: bytes) -> None:
        new = check_batch(state_id, self, entries, 0)
        data = _lines(new)
        self._root.mkdir(parents=True, exist_ok=True)
        final = self._root / state_id
        if os.path.lexists(final):
            raise self._already(state_id)
        temp = self._root / f".new-{state_id}-{os.urandom(6).hex()}"
        os.mkdir(temp, 0o700)
        fd = -1
        try:
            import fcntl

            fd = os.open(temp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_file(temp / _LOG, data, append=False)
            _replace_file(temp, _INFO, info_bytes)
            try:
                os.rename(temp, final)
            except OSError as error:
                if os.path.lexists(final):
                    raise self._already(state_id) from error
                raise
        except BaseException:
            if fd >= 0:
                os.close(fd)
            shutil.rmtree(temp, ignore_errors=True)
            raise
        key = self._key(state_id)
        drop_lock(key)  # a lock left from a State of this id that another process deleted
        hold_lock(key, lambda: lambda: os.close(fd))
        self._known[state_id] = (len(new), len(data))
        try:
            _fsync_dir(self._root)  # the new folder's name is durable too
        finally:
            settle_lock(key)

    def _append(self, state_id: str, entries: Sequence[dict[str, Any]], info_bytes: bytes) -> None:
        folder = self._root / state_id
        log = folder / _LOG
        key = self._key(state_id)
        hold_lock(key, lambda: _flock_dir(str(folder), state_id, self))
        try:
            try:
                found = os.stat(log)
            except FileNotFoundError:
                if not folder.is_dir():
                    raise LookupError(f"no saved State with id {state_id!r} in {self!r} (was it deleted?)") from None
                size = 0
            else:
                if stat.S_ISDIR(found.st_mode):
                    raise ValueError(f"saved State {state_id!r} is damaged: {log} is a folder, not a file")
                size = found.st_size
            known = self._known.get(state_id)
            if known is not None and known[1] == size:
                have = known[0]
                lines: builtins.list[bytes] | None = None
            else:
                have, size, lines = self._recount(log, size)
            if entries and entries[0]["seq"] < have:
                if lines is None:
                    lines = self._log_lines(log)
                check_overlap(state_id, self, entries, have, lambda seq: json.loads(lines[seq]))
            new = check_batch(state_id, self, entries, have)
            data = _lines(new)
            if data:
                self._known.pop(state_id, None)
                _write_file(log, data, append=True)
                have, size = have + len(new), size + len(data)
            self._known[state_id] = (have, size)
            _replace_file(folder, _INFO, info_bytes)
        finally:
            settle_lock(key)

    @staticmethod
    def _log_lines(log: Path) -> builtins.list[bytes]:
        data = log.read_bytes()
        return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]

    def _recount(self, log: Path, size: int) -> tuple[int, int, builtins.list[bytes] | None]:
        """Count the complete lines of the log, cutting off (and flushing) a torn last line."""
        if size == 0:
            return 0, 0, None
        data = log.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            fd = os.open(log, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, end)
                _sync(fd)
            finally:
                os.close(fd)
        lines = data[:end].split(b"\n")[:-1]
        return len(lines), end, lines

    # -- read, list, delete -------------------------------------------------------------------------------------

    def read(self, state_id: str) -> Record | None:
        """The entries (every complete line of the log) and the info of `state_id`, or `None` without its folder.

        Raises:
            ValueError: A line or the info is not valid JSON, or the folder has no info.
        """
        check_id(state_id, "FileStore.read()")
        folder = self._root / state_id
        with self._lock(state_id):
            if not folder.is_dir():
                return None
            data = _read_bytes(folder / _LOG, state_id)
            entries = _parse_log(b"" if data is None else data, state_id, folder / _LOG)
            info = self._read_info(state_id, folder)
        if info is None:
            raise ValueError(f"saved State {state_id!r} is damaged: {folder} has no info.json")
        _check_log_reaches_info(state_id, folder, entries, info)
        return Record(entries, info)

    @staticmethod
    def _read_info(state_id: str, folder: Path, *, old: bool = True) -> Any:
        path = folder / _INFO
        data = _read_bytes(path, state_id)
        if data is None:
            if not old:
                return None
            path = folder / "snapshot.json"
            data = _read_bytes(path, state_id)
            if data is None:
                return None
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(f"saved State {state_id!r} is damaged: {path} is not valid JSON ({error})") from error

    def list(self) -> builtins.list[StateInfo]:
        """One `StateInfo` per State folder that holds an `info.json`, newest `updated_at` first, States with no
        history last, ties by id. Only the small info files are read.

        Raises:
            ValueError: An info file is not valid JSON, or is from another format version, or misses a key.
        """
        try:
            items = builtins.list(os.scandir(self._root))
        except (FileNotFoundError, NotADirectoryError):
            return []
        infos: builtins.list[StateInfo] = []
        for item in items:
            if item.name.startswith(".") or not item.is_dir():
                continue
            info = self._read_info(item.name, Path(item.path), old=False)
            if info is not None:
                infos.append(StateInfo.from_info(item.name, info))
        return _sorted(infos)

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
                hold_lock(key, lambda: _flock_dir(str(folder), state_id, self))
            except LookupError:
                return
            temp = self._root / f".deleted-{state_id}-{os.urandom(6).hex()}"
            try:
                os.rename(folder, temp)
            finally:
                drop_lock(key)
            shutil.rmtree(temp, ignore_errors=True)


FRESH_READS.add(FileStore.read)


def _sorted(infos: builtins.list[StateInfo]) -> builtins.list[StateInfo]:
    dated = [i for i in infos if i.updated_at is not None]
    undated = [i for i in infos if i.updated_at is None]
    dated.sort(key=lambda i: i.id)
    dated.sort(key=lambda i: i.updated_at.timestamp(), reverse=True)  # pyright: ignore[reportOptionalMemberAccess]
    undated.sort(key=lambda i: i.id)
    return dated + undated


def __getattr__(name: str) -> Any:
    if name == "SQLiteStore":  # an extra store, outside __all__ (imported on first use: it loads sqlite3)
        from alpineagents._sqlite import SQLiteStore

        return SQLiteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
