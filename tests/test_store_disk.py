"""A full disk: the error says what happened, where and what to do, and a save point that failed for want of space
is not found by the next load (all or nothing); after freeing space the State resumes.

The disk is a tmpfs of 2 MB that the test mounts itself, which needs root (the CI runs as root); elsewhere these
tests are skipped with that reason.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel
from alpineagents.types import Message


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 2 MB mounted on a folder of `tmp_path`, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill it needs root (run the suite as root, as the CI does)")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"could not mount a tmpfs (a container without CAP_SYS_ADMIN?): {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def fill(disk: Path) -> Path:
    """Fill the disk to its last byte with a file; deleting that file frees the space again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def stores(disk: Path) -> dict[str, tuple[Store, Path]]:
    return {
        "file": (FileStore(disk / "runs"), disk / "runs" / "full"),
        "sqlite": (SQLiteStore(disk / "runs.db"), disk / "runs.db"),
    }


def fresh(store: Store) -> Store:
    return FileStore(store._root) if isinstance(store, FileStore) else SQLiteStore(store._given)  # pyright: ignore


@pytest.mark.parametrize("text_size", [10, 200_000], ids=["small_save_point", "large_save_point"])
@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_a_full_disk_says_where_and_what_to_do_and_the_failed_save_point_is_not_found(
    small_disk: Path, kind: str, text_size: int
) -> None:
    store, where = stores(small_disk)[kind]
    state = State(id="full", messages=[Message.user("Hello")])
    store.save(state)
    saved = list(state.history)
    filler = fill(small_disk)
    state.add_message(Message.user("x" * text_size))
    with pytest.raises(OSError) as raised:
        store.save(state)
    error = raised.value
    assert error.errno == errno.ENOSPC and error.filename == str(where)
    first, fix = str(error).splitlines()[:2]
    assert first.startswith(f"{store!r} could not save") and "the disk is full" in first and str(where) in first
    assert fix.startswith("Fix: free space on that disk, then run again: the State resumes")
    if kind == "file":
        assert "State 'full'" in first
    # All or nothing: what the failed save point wrote is not found by the next load, nor by a listing.
    assert fresh(store).load("full").history == tuple(saved)
    assert fresh(store).list()[0].updated_at == saved[-1].at
    # Space freed: run again, and the State resumes from its last saved point.
    filler.unlink()
    loaded = fresh(store).load("full")
    loaded.add_message(Message.user("x" * text_size))
    agent = Agent(FakeModel(["Done"]), store=fresh(store), reporter=None, human=None)
    assert agent.run(loaded) == "Done"
    again = fresh(store).load("full")
    assert again.history == loaded.history and again.answer == "Done"


def test_a_new_state_on_a_full_disk_leaves_nothing_behind(small_disk: Path) -> None:
    filler = fill(small_disk)
    store = FileStore(small_disk / "runs")
    with pytest.raises(OSError, match="the disk is full") as raised:
        store.save(State(id="new", messages=[Message.user("x" * 100_000)]))
    assert raised.value.errno == errno.ENOSPC
    assert store.list() == []
    root = small_disk / "runs"
    assert not root.exists() or list(root.iterdir()) == []  # no half-built folder left behind
    filler.unlink()
    store.save(State(id="new", messages=[Message.user("x")]))
    assert [info.id for info in store.list()] == ["new"]


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_the_old_infos_handed_to_the_closer_are_all_closed_soon_and_never_pile_up(tmp_path: Path) -> None:
    import time

    from alpineagents._stores import closer

    store = FileStore(tmp_path / "runs")
    state = State(id="lone", messages=[Message.user("go")])
    store.save(state)
    before = _open_descriptors()
    for number in range(300):  # more replaced infos than may wait: the rest are closed by the save point itself
        state.add_message(Message.user(f"more {number}"))
        store.save(state)
        assert len(closer._pending) <= closer._MOST_PENDING  # pyright: ignore[reportPrivateUsage]
    deadline = time.monotonic() + 5
    while _open_descriptors() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _open_descriptors() <= before
    assert store.load("lone").messages[-1].text == "more 299"
