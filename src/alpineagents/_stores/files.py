"""The disk work of `FileStore`: one folder per State, holding `log.jsonl` and `info.json`.

Durability: an append is flushed (one `fdatasync` of the log) before the write returns; the info is replaced whole
(written aside, its blocks allocated, then renamed over the old one) and not flushed on its own, so it may be one
save behind after a crash but is never empty and never describes entries the log lacks. A State folder appears
complete (built under a temporary name starting with `.`, then renamed) and disappears in one step (renamed aside,
then removed). A last line torn by a crash is ignored by reads and cut off (flushed) by the next write. The writer
lock of a State is `flock` on its folder.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alpineagents._stores.batch import already_saved_error, not_saved_error
from alpineagents._stores.closer import close_later
from alpineagents._stores.damage import check_reaches_info, damaged_error, not_json_error
from alpineagents._stores.lines import parse_all, parse_each
from alpineagents._stores.locks import Release, locked_error

if TYPE_CHECKING:
    pass

__all__ = [
    "LOG",
    "INFO",
    "write_file",
    "append_unflushed",
    "take_back",
    "flush_descriptor",
    "flush_file_system",
    "write_aside",
    "put_in_place",
    "remove_aside",
    "remove_left_aside",
    "fsync_dir",
    "lock_folder",
    "NewFolder",
    "build_folder",
    "place_folder",
    "abandon_folder",
    "log_size",
    "recount",
    "log_lines",
    "read_folder",
    "read_info",
    "a_file",
    "is_state_name",
    "remove_folder",
]

LOG = "log.jsonl"
INFO = "info.json"
_ASIDE_INFO = f".{INFO}."  # the start of the name of an info written aside


# ---------------------------------------------------------------------------------------------------------------
# Writing files


def flush_descriptor(fd: int) -> None:
    """Flush the file's data to disk (`fdatasync` where there is one, else `fsync`)."""
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: str | os.PathLike[str], data: bytes, *, append: bool) -> None:
    """Write all of `data` to `path`, appending or replacing, creating the file with mode 0o600, and flush it to
    disk (one `fdatasync`) before returning."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        _write_all(fd, data)
        flush_descriptor(fd)
    finally:
        os.close(fd)


def append_unflushed(path: str | os.PathLike[str], data: bytes, size: int) -> int:
    """Append all of `data` to `path` (created with mode 0o600 when missing), whose size is `size`, and return the
    open descriptor, not yet flushed: the caller flushes it (`flush_descriptor`), with other files' in one pass, then
    closes it. When the append fails (a full disk), what it wrote is cut off again."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_APPEND, 0o600)
    try:
        _write_all(fd, data)
    except BaseException:
        take_back(fd, size)
        os.close(fd)
        raise
    return fd


def take_back(fd: int, size: int) -> None:
    """Cut the file back to `size` bytes and flush that, so that a failed save point is not found by the next
    load. (Cutting needs no space; when even that fails, the lines stay, as after a crash in the middle of a save
    point: complete lines of entries the info was not yet written after, which load reads.)"""
    try:
        os.ftruncate(fd, size)
        flush_descriptor(fd)
    except OSError:
        pass


_SYNCFS: list[Any] = []  # [syncfs] once looked up; [None] where it is missing


def flush_file_system(fd: int) -> bool:
    """Flush every file of the file system that `fd` is on in one call (Linux `syncfs`, which reports write-back
    errors since Linux 5.8); False where there is no such call (then flush each file).

    One flush for the logs of many States that a group commit appended: the file system writes them out and
    commits its journal once, where one `fdatasync` per log would commit it once per log.
    """
    if not _SYNCFS:
        try:
            import ctypes  # only here: most programs never flush a group

            function = ctypes.CDLL(None, use_errno=True).syncfs
            function.argtypes = [ctypes.c_int]
            function.restype = ctypes.c_int
            _SYNCFS.append(function)
        except (AttributeError, OSError):
            _SYNCFS.append(None)
    function = _SYNCFS[0]
    if function is None:
        return False
    if function(fd) != 0:
        import ctypes

        code = ctypes.get_errno()
        raise OSError(code, f"flushing the file system failed: {os.strerror(code)}")
    return True


def write_aside(folder: str | os.PathLike[str], name: str, data: bytes) -> str:
    """Write `data` to a new temporary file beside `name` in `folder` and start its write-out; return its path,
    for `put_in_place` (or `remove_aside` when the save point fails first). The two replace a file whole: a reader
    sees the old or the new one, never a mix; neither flushes.

    The new file's blocks are allocated before it gets its name (its write-out is started at once), so that a crash
    of the machine cannot leave the name on an empty file: on ext4 in its default (ordered) mode the journal then
    commits the rename only after the data, and a later flush of the log or of the file system carries it too.
    Without that, a file system that delays allocation could commit the new name first. (ext4 does this by itself
    when a file is renamed over an existing one, its `auto_da_alloc`, but not for a new State's first info.)

    Only the rename waits for the log's flush (an info never names entries its log lacks): writing aside may come
    before it.
    """
    temp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}")  # for info.json: starts with _ASIDE_INFO
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        _write_all(fd, data)
        _start_write_out(fd)
    except BaseException:
        os.close(fd)
        remove_aside(temp)
        raise
    os.close(fd)
    return temp


def put_in_place(temp: str, folder: str | os.PathLike[str], name: str) -> None:
    """Rename `temp` (from `write_aside`) over `name` in `folder` in one atomic step; `temp` is removed when that
    fails. The old version is opened before the rename, so that its blocks are freed when a background thread
    closes it, not during the rename (see _stores/closer.py)."""
    target = os.path.join(folder, name)
    old = -1
    try:
        try:
            old = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # no old file yet (a new State's folder)
            pass
        os.replace(temp, target)
    except BaseException:
        if old >= 0:
            os.close(old)
        remove_aside(temp)
        raise
    if old >= 0:
        close_later(old)  # its blocks are freed off the save's path


def remove_aside(temp: str) -> None:
    """Remove a file written aside that will not be put in place (nothing when it is gone)."""
    try:
        os.unlink(temp)
    except OSError:
        pass


def _start_write_out(fd: int) -> None:
    """Start writing the file's data to disk without waiting for it (Linux: `POSIX_FADV_DONTNEED` starts the
    write-out of dirty pages, which allocates their blocks); nothing where the call is missing."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------------------------
# Locking, creating, appending


def _flock(fd: int) -> None:
    import fcntl  # POSIX only: imported here so that the package imports everywhere

    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def lock_folder(folder: str | os.PathLike[str], state_id: str, store: object) -> Release:
    """Take the writer lock of an existing State folder; what it returns releases it.

    Raises:
        LookupError: The folder does not exist (the State was deleted).
        ValueError: A file is where the folder should be (damaged).
        StateLockedError: Another process holds the lock.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise not_saved_error(state_id, store) from None
    except NotADirectoryError:
        raise a_file(state_id, folder) from None
    try:
        _flock(fd)
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise locked_error(state_id, store) from None
        raise
    return lambda: os.close(fd)


def remove_left_aside(folder: str | os.PathLike[str]) -> None:
    """Remove the infos a writer that died wrote aside and never renamed (see `write_aside`). The caller holds the
    State's writer lock, so nobody is writing one meanwhile."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(_ASIDE_INFO):
            remove_aside(os.path.join(folder, name))


def make_root(root: Path) -> None:
    """Create the store's root (and its parents), marked as the top of separate folder trees where the file
    system takes that hint (ext4's `chattr +T`).

    The mark makes ext4 spread the State folders made in the root over the disk, as it does for home folders,
    where it would otherwise pack them together. Files are then made near their own folder, so the inodes that
    replaced infos free and the next ones reuse are spread too. On ext4 without a journal, making a file skips,
    one by one, the free inodes of its block group that were deleted in the last seconds (or minutes): with the
    States packed into a few groups, each save point's new info paid for every info that the fleet replaced lately
    (0.3-0.5 ms a file at 2,000 saves a second on the machine where this was measured). Elsewhere the call fails
    and nothing changes. A root that exists already (made meanwhile by another thread or process, too) is left as
    it is.
    """
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(root)
    except FileExistsError:
        if not os.path.isdir(root):  # a file where the root should be
            raise
        return
    try:
        import array
        import fcntl

        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (ImportError, OSError):
        return
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, _GET_FLAGS, flags, True)
        flags[0] |= _TOPDIR_FLAG
        fcntl.ioctl(fd, _SET_FLAGS, flags, True)
    except OSError:  # not ext4, or not allowed: the hint is only a hint
        pass
    finally:
        os.close(fd)


_GET_FLAGS = 0x80086601  # FS_IOC_GETFLAGS
_SET_FLAGS = 0x40086602  # FS_IOC_SETFLAGS
_TOPDIR_FLAG = 0x00020000  # FS_TOPDIR_FL, what `chattr +T` sets


class NewFolder:
    """A new State's folder, built under a temporary name and locked, waiting for its log's flush before it is
    renamed into place. `log_fd` is its log, appended but not flushed (the caller flushes and closes it)."""

    __slots__ = ("temp", "lock_fd", "log_fd")

    def __init__(self, temp: Path) -> None:
        self.temp = temp
        self.lock_fd = -1
        self.log_fd = -1


def build_folder(root: Path, state_id: str, log: bytes, info: bytes, store: object) -> NewFolder:
    """Make the complete folder of a new State (both files) under a temporary name, locked; its log is not yet
    flushed. `place_folder` renames it into place once it is; `abandon_folder` removes it.

    Raises:
        ValueError: The State's folder exists.
    """
    if not os.path.isdir(root):
        make_root(root)
    if os.path.lexists(root / state_id):
        raise already_saved_error(state_id, store)
    new = NewFolder(root / f".new-{state_id}-{os.urandom(6).hex()}")
    os.mkdir(new.temp, 0o700)
    try:
        new.lock_fd = os.open(new.temp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        _flock(new.lock_fd)
        new.log_fd = append_unflushed(new.temp / LOG, log, 0)
        put_in_place(write_aside(new.temp, INFO, info), new.temp, INFO)
    except BaseException:
        if new.log_fd >= 0:
            os.close(new.log_fd)
        abandon_folder(new)
        raise
    return new


def place_folder(root: Path, state_id: str, new: NewFolder, store: object) -> Release:
    """Rename a built folder, its log flushed, to the State's name: all or nothing, never replacing another
    State (the folder is abandoned when the rename fails). What it returns releases the lock. The caller makes
    the new name durable (`fsync_dir` of the root, once for all the folders a group placed).

    Raises:
        ValueError: The State's folder appeared meanwhile.
    """
    final = root / state_id
    try:
        os.rename(new.temp, final)
    except OSError as error:
        abandon_folder(new)
        if os.path.lexists(final):
            raise already_saved_error(state_id, store) from error
        raise
    fd, new.lock_fd = new.lock_fd, -1
    return lambda: os.close(fd)


def abandon_folder(new: NewFolder) -> None:
    """Remove a built folder that was not placed (its log descriptor is the caller's to close)."""
    if new.lock_fd >= 0:
        os.close(new.lock_fd)
        new.lock_fd = -1
    shutil.rmtree(new.temp, ignore_errors=True)


def log_size(folder: str, state_id: str, store: object) -> int:
    """The size of the State's log (0 when it has none).

    Raises:
        LookupError: The State's folder does not exist.
        ValueError: The log is a folder.
    """
    log = os.path.join(folder, LOG)
    try:
        found = os.stat(log)
    except FileNotFoundError:
        if not os.path.isdir(folder):
            raise not_saved_error(state_id, store) from None
        return 0
    if stat.S_ISDIR(found.st_mode):
        raise _a_folder(state_id, log)
    return found.st_size


def recount(log: str, size: int) -> tuple[int, int, list[bytes] | None]:
    """`(count, size, lines)` of the complete lines of the log, cutting off (and flushing) a torn last line."""
    if size == 0:
        return 0, 0, None
    data = Path(log).read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        fd = os.open(log, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, end)
            flush_descriptor(fd)
        finally:
            os.close(fd)
    lines = data[:end].split(b"\n")[:-1]
    return len(lines), end, lines


def log_lines(log: str) -> list[bytes]:
    """The complete lines of the log, without their `"\\n"`."""
    data = Path(log).read_bytes()
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


# ---------------------------------------------------------------------------------------------------------------
# Reading, listing, deleting


def _a_folder(state_id: str, path: str | os.PathLike[str]) -> ValueError:
    return damaged_error(state_id, f"{path} is a folder, not a file")


def _read_bytes(path: Path, state_id: str) -> bytes | None:
    """The bytes of a file of a State's folder, `None` when it is missing.

    Raises:
        ValueError: The file is a folder, or the State's folder is a file (damaged).
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise _a_folder(state_id, path) from None
    except NotADirectoryError:
        raise a_file(state_id, path.parent) from None


def a_file(state_id: str, folder: str | os.PathLike[str]) -> ValueError:
    """The damaged error of a State whose folder was replaced by a file."""
    return damaged_error(state_id, f"{folder} is a file, not the State's folder")


def is_state_name(name: str) -> bool:
    """Whether a name in a store's root is a State's (a valid id), not a file of the store's own (`.`-names) or of
    someone else's (`notes.txt`)."""
    return _STATE_NAME.fullmatch(name) is not None


_STATE_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _parse_log(data: bytes, state_id: str, log: Path) -> list[Any]:
    """The JSON values of the complete lines of `data` (a torn last segment is ignored), in one parse."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return []
    count = data.count(b"\n", 0, end)
    values = parse_all(b"".join((b"[", data[: end - 1].replace(b"\n", b","), b"]")), count)
    if values is not None:
        return values
    return parse_each(
        enumerate(data[: end - 1].split(b"\n"), 1),
        lambda number, error: not_json_error(state_id, f"line {number} of {log}", error),
    )


def read_info(state_id: str, folder: Path, *, old: bool = True) -> Any:
    """The parsed `info.json` of a State folder; with `old`, a 0.4 folder's `snapshot.json` in its place; `None`
    when there is neither.

    Raises:
        ValueError: The file is not valid JSON, or is a folder.
    """
    path = folder / INFO
    data = _read_bytes(path, state_id)
    if data is None:
        if not old:
            return None
        path = folder / "snapshot.json"
        data = _read_bytes(path, state_id)
        if data is None:
            return None
    return parse_each(
        [(0, data)],
        lambda _, error: not_json_error(state_id, path, error),
    )[0]


def read_folder(folder: Path, state_id: str) -> tuple[list[Any], Any]:
    """The entries (every complete line of the log) and the info of an existing State folder, checked to be whole.

    Raises:
        ValueError: A line or the info is not valid JSON, the folder has no info, a file is a folder, or the log
            lacks entries the info was written after.
    """
    log = folder / LOG
    data = _read_bytes(log, state_id)
    entries = [] if data is None else _parse_log(data, state_id, log)
    info = read_info(state_id, folder)
    if info is None:
        raise damaged_error(state_id, f"{folder} has no info.json")
    check_reaches_info(state_id, entries, info, log, folder / INFO)
    return entries, info


def remove_folder(root: Path, state_id: str) -> None:
    """Rename the State's folder aside (one atomic step: it is then neither listed nor loadable), then remove it;
    errors while removing are ignored."""
    temp = root / f".deleted-{state_id}-{os.urandom(6).hex()}"
    os.rename(root / state_id, temp)
    shutil.rmtree(temp, ignore_errors=True)
