"""Closing the last descriptor of a replaced file on a background thread.

When `info.json` is replaced, its old version loses its name. The file system frees the old file's blocks when its
last reference goes, and on a file system mounted with online discard (common on cloud disks) freeing blocks waits
for the device to acknowledge the discard: 0.1-0.5 ms per file on the machine where this was measured, paid at
every save point. So the store opens the old version before it renames the new one over it (the name changes at
once, as before) and hands that descriptor here: the blocks are freed when a background thread closes it, while
the save point returns. Nothing a reader or a crash can see changes: the old version has no name either way.

At most `_MOST_PENDING` descriptors wait; beyond that the caller closes its own, so that a disk slower than the
saves cannot run the process out of descriptors.
"""

from __future__ import annotations

import os
import queue
import threading

__all__ = ["close_later"]

_MOST_PENDING = 256

_pending: queue.SimpleQueue[int] = queue.SimpleQueue()
_started: list[threading.Thread] = []
_start_lock = threading.Lock()


def _close_forever() -> None:
    while True:
        fd = _pending.get()
        try:
            os.close(fd)
        except OSError:  # pragma: no cover - nothing to do about a close that failed
            pass


def close_later(fd: int) -> None:
    """Close `fd` on the background thread (started on first use), or now when too many are waiting."""
    if _pending.qsize() >= _MOST_PENDING:
        os.close(fd)
        return
    if not _started:
        with _start_lock:
            if not _started:
                thread = threading.Thread(target=_close_forever, name="alpineagents-file-closer", daemon=True)
                thread.start()
                _started.append(thread)
    _pending.put(fd)


def _forget_in_child() -> None:
    """In a forked child: the parent's thread is not running here; close the inherited descriptors now."""
    global _pending, _start_lock
    waiting, _pending = _pending, queue.SimpleQueue()
    _start_lock = threading.Lock()
    _started.clear()
    while True:
        try:
            fd = waiting.get_nowait()
        except queue.Empty:
            break
        try:
            os.close(fd)
        except OSError:
            pass


os.register_at_fork(after_in_child=_forget_in_child)
