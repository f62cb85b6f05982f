"""Closing the last descriptor of a replaced file on a background thread.

When `info.json` is replaced, its old version loses its name. The file system frees the old file's blocks when its
last reference goes, and on a file system mounted with online discard (common on cloud disks) freeing blocks waits
for the device to acknowledge the discard: 0.1-0.5 ms per file on the machine where this was measured, paid at
every save point. So the store opens the old version before it renames the new one over it (the name changes at
once, as before) and hands that descriptor here: the blocks are freed when a background thread closes it, while
the save point returns. Nothing a reader or a crash can see changes: the old version has no name either way.

The save point only puts the descriptor on a list: it wakes no thread. The closer wakes on its own every
`_PAUSE_SECONDS` and closes what has gathered, and ends when it finds nothing (the next descriptor starts it
again). Waking it once per save point (a queue it waits on) cost a lone writer a thread wake-up and a switch of the
interpreter lock at every save, about a tenth of a lone FileStore save on the machine where this was measured.
At most `_MOST_PENDING` descriptors wait; beyond that the caller closes its own, so that a disk slower than the
saves cannot run the process out of descriptors.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["close_later"]

_MOST_PENDING = 256
_PAUSE_SECONDS = 0.02

_pending: list[int] = []
_lock = threading.Lock()
_running: list[bool] = [False]  # whether the closer thread is alive (it clears this, under the lock, as it ends)


def _close_gathered() -> None:
    while True:
        time.sleep(_PAUSE_SECONDS)
        with _lock:
            if not _pending:
                _running[0] = False
                return
            gathered = _pending[:]
            _pending.clear()
        for fd in gathered:
            try:
                os.close(fd)
            except OSError:  # pragma: no cover - nothing to do about a close that failed
                pass


def close_later(fd: int) -> None:
    """Close `fd` on the background thread (started when it is not running), or now when too many are waiting."""
    with _lock:
        if len(_pending) < _MOST_PENDING:
            _pending.append(fd)
            if _running[0]:
                return
            _running[0] = True
            fd = -1
    if fd >= 0:
        os.close(fd)
        return
    threading.Thread(target=_close_gathered, name="alpineagents-file-closer", daemon=True).start()


def _forget_in_child() -> None:
    """In a forked child: the parent's thread is not running here; close the inherited descriptors now."""
    global _lock
    _lock = threading.Lock()
    _running[0] = False
    waiting = _pending[:]
    _pending.clear()
    for fd in waiting:
        try:
            os.close(fd)
        except OSError:
            pass


os.register_at_fork(after_in_child=_forget_in_child)
