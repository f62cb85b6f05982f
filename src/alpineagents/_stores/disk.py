"""What a store says when its disk is full: what happened, where, and what to do.

A save point that fails for want of space leaves the State as its last saved point (a `FileStore` takes back the
lines it appended, a `SQLiteStore` rolls its transaction back), so the error says to free space and run again: the
State resumes from there. The error stays an `OSError` with `errno.ENOSPC` (or `EDQUOT`, a quota) and the path in
`filename`, for code that tells a full disk from other failures.
"""

from __future__ import annotations

import errno
import os

from alpineagents.errors import fix_message

__all__ = ["is_disk_full", "disk_full_error", "DiskFullError"]

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` says that the disk (or the user's quota on it) is full."""
    return isinstance(error, OSError) and error.errno in _FULL


def disk_full_error(store: object, path: str | os.PathLike[str], state_id: str | None, code: int) -> OSError:
    """The `OSError` of a save point refused for want of space on the disk that holds `path`."""
    what = "the disk is full" if code != errno.EDQUOT else "the disk quota is used up"
    saving = f"could not save State {state_id!r}" if state_id is not None else "could not save"
    state = f'"{state_id}"' if state_id is not None else "state_id"
    text = fix_message(
        f"{store!r} {saving}: {what} (no space left on the device that holds {os.fspath(path)})",
        "free space on that disk, then run again: the State resumes from its last saved point, and nothing saved "
        "before is lost",
        f"state = store.load({state})\nagent.run(state)",
    )
    return DiskFullError(code, text, os.fspath(path))


class DiskFullError(OSError):
    """A store's save point refused for want of space: an `OSError` (`errno`, `filename`) whose text is the whole
    message, without the `[Errno 28]` prefix."""

    def __str__(self) -> str:
        return str(self.strerror)
