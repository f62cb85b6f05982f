"""Runs that go to the queue of `alpineagents.workers` (DBOS) instead of running in the server: `--workers`.

The server submits the State (`workers.submit`), and a stream follows the run through the store, at save-point
granularity: every `POLL` seconds it asks the queue whether the run is still queued or running, then reads the
store. It asks in that order, so that when the run has ended, the read that follows has every entry it saved.
Replies come whole (no deltas: a worker's text is not in the store until its reply is).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from alpineagents.serve.feed import End, Writing, end_of
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import HistoryEntry

if TYPE_CHECKING:
    from alpineagents.workers import Run

POLL = 0.1
"""How often a stream of a queued run reads the queue and the store (seconds)."""

GOING = ("queued", "running")
"""The statuses of a run that has not ended."""


class Queued:
    """A run on the workers' queue (a stream `Source`)."""

    def __init__(self, store: Store, state: State, run: Run) -> None:
        self.store = store
        self.run = run
        self._state = state
        self._entries: Sequence[HistoryEntry] = state.history
        self._going = True

    async def refresh(self) -> bool:
        """Read the run's status, then the store; True when the store has new entries."""
        self._going = await asyncio.to_thread(self.run.status) in GOING
        record = await self.store.aread(self.run.state_id)
        if record is None or len(record.entries) == len(self._entries):
            return False
        state = await asyncio.to_thread(self.store.load, self.run.state_id)
        self._state, self._entries = state, state.history[: len(record.entries)]
        return True

    def entries(self) -> Sequence[HistoryEntry]:
        return self._entries

    def writing(self) -> Writing | None:
        return None

    def running(self) -> bool:
        return self._going

    async def changed(self, timeout: float) -> bool:
        await asyncio.sleep(min(POLL, timeout))
        return await self.refresh()

    def end(self) -> End:
        return end_of(self._state, len(self._entries))
