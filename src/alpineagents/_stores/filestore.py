"""`FileStore`: the store that ships, each State in a folder of its own (the public name is
`alpineagents.store.FileStore`).

The class here holds the store's rules: its checks, its group commit, its locks and its listing; the disk work
itself (appending, replacing, flushing, building and removing folders) is in `_stores/files.py`.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from alpineagents._stores import files
from alpineagents._stores.batch import Lines, check_write, entries_to_add
from alpineagents._stores.damage import not_a_store_error
from alpineagents._stores.disk import disk_full_error, is_disk_full
from alpineagents._stores.group import GroupCommit, GroupCommitting, Job
from alpineagents._stores.lines import json_line, log_text
from alpineagents._stores.listing import Unlisted, listing, newest_first, raise_damage
from alpineagents._stores.locks import at_fork_in_child, drop_lock, hold_lock, settle_lock
from alpineagents._stores.paths import AtPath, check_path
from alpineagents.state import check_id
from alpineagents.store import Entries, Info, Record, StateInfo, Store

__all__ = ["FileStore"]


class _FileWrite(Job):
    """One `FileStore.write` waiting for its group commit, and what its flush has done so far."""

    __slots__ = ("state_id", "entries", "info_bytes", "create", "lock", "key", "fd", "undo", "known", "new", "info")

    def __init__(self, state_id: str, entries: Lines, info_bytes: bytes, create: bool) -> None:
        super().__init__()
        self.state_id = state_id
        self.entries = entries
        self.info_bytes = info_bytes
        self.create = create
        self.lock: threading.RLock | None = None
        self.key: str | None = None
        self.fd: int | None = None
        self.undo = -1  # the log's size before this job appended to it (-1: nothing appended)
        self.known: tuple[int, int] = (0, 0)
        self.new: files.NewFolder | None = None  # a new State's folder, until it is renamed into place
        self.info: str | None = None  # the new info written aside, until it is renamed into place


class FileStore(AtPath, GroupCommitting, Store):
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
        self._known: dict[str, tuple[int, int]] = {}  # id -> (lines, log size) after this object's last write
        self._guard = threading.Lock()
        self._id_locks: dict[str, threading.RLock] = {}
        self._group = GroupCommit(self._flush, "alpineagents-file-commit")
        at_fork_in_child(self, FileStore._new_guards)

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

    def _job(self, state_id: str, entries: Entries, info: Info, create: bool) -> _FileWrite:
        check_id(state_id, "FileStore.write()")
        lines, checked = check_write("FileStore.write()", entries, info)
        return _FileWrite(state_id, lines, json_line(checked), create)

    def _flush(self, group: Sequence[Job]) -> None:
        """Write a group commit's jobs: append every log (a new State's folder is built whole under a temporary
        name), flush the appended logs in one pass, then replace each info (after its log is on disk, so an info
        never describes entries its log lacks) and rename each new folder into place, whose names one flush of
        the root makes durable. A job that fails gets its error; the others go on.

        A save point flushed alone writes its new info aside before its log's flush (only the rename waits): the
        info's write-out then goes to the disk while the flush waits anyway (measured with benchmarks/lone_turn.py:
        about 10 % less CPU time a lone turn). A group does not: there its `syncfs` would wait for every info's
        write too (measured with benchmarks/fleet.py: a fleet of 1,000 runs 10 % slower)."""
        jobs = [job for job in group if isinstance(job, _FileWrite)]
        try:
            alone = len(jobs) == 1
            for job in jobs:
                self._begin(job, alone)
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

    def _begin(self, job: _FileWrite, alone: bool) -> None:
        """Take the job's locks; build a new State's folder, or append the lines the log lacks (not yet flushed)
        and, for a save point flushed `alone`, write its info aside already."""
        job.lock = self._lock(job.state_id)
        job.lock.acquire()
        try:
            if job.create:
                self._build(job)
            else:
                self._append(job)
                if alone:  # its info's write-out goes to the disk while the log's flush waits for it anyway
                    job.info = files.write_aside(os.path.join(self._root, job.state_id), files.INFO, job.info_bytes)
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
        else:  # never written by this object, or written by another one since (a writer that died, perhaps)
            have, size, lines = files.recount(log, size)
            files.remove_left_aside(folder)

        def saved_lines(start: int, end: int) -> dict[int, bytes]:
            every = files.log_lines(log) if lines is None else lines
            return dict(enumerate(every[start:end], start))

        new = entries_to_add(state_id, self, job.entries, have, saved_lines)
        data = log_text(new)
        if data:
            self._known.pop(state_id, None)
            job.fd = files.append_unflushed(log, data, size)
            job.undo = size
            have, size = have + len(new), size + len(data)
        job.known = (have, size)

    def _end(self, job: _FileWrite) -> None:
        """After the log's flush: place a new State's folder, or remember where the log ends and replace the info
        (a lone save point's was written aside already)."""
        try:
            if job.new is not None:
                self._place(job, job.new)
                return
            self._known[job.state_id] = job.known
            folder = os.path.join(self._root, job.state_id)
            info, job.info = job.info or files.write_aside(folder, files.INFO, job.info_bytes), None
            files.put_in_place(info, folder, files.INFO)
        except Exception as error:
            job.error = error

    def _release(self, job: _FileWrite) -> None:
        if job.info is not None:  # written aside, never put in place (the save point failed)
            files.remove_aside(job.info)
            job.info = None
        if job.fd is not None:
            if job.error is not None and job.undo >= 0:  # all or nothing: the next load does not find its lines
                files.take_back(job.fd, job.undo)
            os.close(job.fd)
            job.fd = None
        if job.error is not None and is_disk_full(job.error):
            folder = os.path.join(self._root, job.state_id)
            full = disk_full_error(self, folder, job.state_id, job.error.errno)  # pyright: ignore[reportAttributeAccessIssue]
            full.__cause__ = job.error
            job.error = full
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
        return [*newest_first(infos), *(item for item in found if isinstance(item, Unlisted))]

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
        return not_a_store_error(
            self._given,
            "it is a file, and a FileStore is a folder",
            "point the store at the folder that holds the saved States, or at a new folder for a new store",
            'store = FileStore(".agent-runs")',
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
