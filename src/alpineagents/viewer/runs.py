"""Reading runs from a store: one run's saved entries and State, a short status, and the subagent tree.

Only the entries the store holds are shown. When a saved run ends in the middle of a turn (it is still going, or
its process stopped), `store.load` adds closing entries that are not saved; they are left out here and the status
says the turn is unfinished instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from alpineagents._replay.fork import FORK_EVENT, fork_origin
from alpineagents._stores.listing import Unlisted
from alpineagents.state import State
from alpineagents.store import StateInfo, Store
from alpineagents.types import ErrorEntry, HistoryEntry, ModelEventEntry, ModelRequestEntry, RunStartEntry

_EARLIEST = datetime.min.replace(tzinfo=UTC)

UNFINISHED = "unfinished turn (still running, or its process stopped)"
"""The status of a run whose saved history ends in the middle of a turn."""


@dataclass(frozen=True)
class Run:
    """One stored run: its listing info, the State `load` rebuilt, the saved entries and their JSON."""

    info: StateInfo
    state: State
    raw: Sequence[dict[str, Any]]

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def history(self) -> tuple[HistoryEntry, ...]:
        """The saved entries (without the closing entries `load` adds to an unfinished turn)."""
        return self.state.history[: len(self.raw)]

    @property
    def unfinished(self) -> bool:
        """True when the saved history ends in the middle of a turn."""
        return len(self.state.history) > len(self.raw)


@dataclass(frozen=True)
class Summary:
    """One row of a listing."""

    id: str
    first_message: str | None
    turns: int
    created_at: datetime | None
    updated_at: datetime | None
    status: str
    finished: bool
    cost: float | None
    tokens: int
    entries: int
    parent_id: str | None
    agent: str | None = None
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON values (times as ISO strings)."""
        return {
            "id": self.id,
            "first_message": self.first_message,
            "turns": self.turns,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "status": self.status,
            "finished": self.finished,
            "cost": self.cost,
            "tokens": self.tokens,
            "entries": self.entries,
            "parent_id": self.parent_id,
            "agent": self.agent,
            "model": self.model,
        }


@dataclass
class TreeNode:
    """A run and the subagent runs its tool calls started."""

    info: StateInfo
    children: list[TreeNode] = field(default_factory=list)


def first_line(error: BaseException) -> str:
    """The first line of an exception's text (the library's errors put the problem there and the fix below)."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def open_run(store: Store, state_id: str, info: StateInfo | None = None) -> Run:
    """The run `state_id` read from `store` (`LookupError` when it is not there, `ValueError` when damaged)."""
    record = store.read(state_id)
    if record is None:
        raise LookupError(f"no saved State with id {state_id!r} in {store!r}")
    state = store.load(state_id)
    if info is None:
        info = StateInfo.from_info(state_id, record.info)
    return Run(info, state, record.entries)


def ending_error(entries: Iterable[HistoryEntry]) -> str | None:
    """The text of the error that ended the latest run in `entries`, or None.

    An error counts when no model request and no new run came after it (a loop that went on after a failed
    request did not end with that error).
    """
    last: str | None = None
    for entry in entries:
        if isinstance(entry, ErrorEntry):
            last = entry.content
        elif isinstance(entry, (ModelRequestEntry, RunStartEntry)):
            last = None
    return last


def waiting_fork(history: Sequence[HistoryEntry]) -> tuple[str, int] | None:
    """The origin of a fork that has not run since it was made (no run started after its fork event), or None."""
    for entry in reversed(history):
        if isinstance(entry, RunStartEntry):
            return None
        if isinstance(entry, ModelEventEntry) and entry.content.kind == FORK_EVENT:
            return fork_origin([entry])
    return None


def status(run: Run) -> str:
    """A few words on how the run stands: finished, why it stopped, a fork not run yet, an unfinished turn, or the
    error it ended with."""
    if run.info.finished:
        return "finished"
    if run.info.stopped is not None:
        return str(run.info.stopped)
    fork = waiting_fork(run.history)
    if fork is not None:
        return f"forked from {fork[0]} at entry {fork[1]}, not run since (resume it to go on)"
    if run.unfinished:
        return UNFINISHED
    error = ending_error(run.history)
    if error is not None:
        return "error: " + error.splitlines()[0] if error else "error"
    if not run.raw:
        return "empty"
    if not any(isinstance(entry, RunStartEntry) for entry in run.history):
        return "not run yet"
    return "no stop recorded"


@runtime_checkable
class Surveyed(Protocol):
    """A store that lists past a damaged State (the built-in stores): `survey()` is `list()` with each State
    whose info cannot be read reported as an `Unlisted` instead of raising."""

    def survey(self) -> list[StateInfo | Unlisted]: ...


@dataclass(frozen=True)
class Listing:
    """The runs of a store: those whose info reads, newest first, and those whose info is damaged."""

    infos: list[StateInfo]
    unlisted: list[Unlisted]

    def __len__(self) -> int:
        return len(self.infos) + len(self.unlisted)


def stored_runs(store: Store) -> Listing:
    """The store's runs; with a built-in store, a damaged info does not hide the others (it is in `unlisted`). A
    store of another kind lists through `list()`, which raises `ValueError` on damage."""
    if not isinstance(store, Surveyed):
        return Listing(store.list(), [])
    items = store.survey()
    return Listing(
        [item for item in items if not isinstance(item, Unlisted)],
        [item for item in items if isinstance(item, Unlisted)],
    )


def unlisted_summary(gone: Unlisted) -> Summary:
    """The listing row of a run whose info cannot be read: its id and the reason, as its status."""
    return Summary(gone.id, None, 0, None, None, "cannot load: " + first_line(gone.error), False, None, 0, 0, None)


def summarize(store: Store, info: StateInfo) -> Summary:
    """The listing row of one run; a run that cannot be read is listed with the reason as its status."""
    try:
        run = open_run(store, info.id, info)
    except (LookupError, ValueError, OSError) as error:
        return Summary(
            info.id, info.first_message, info.turn, info.created_at, info.updated_at,
            "cannot load: " + first_line(error), info.finished, None, 0, 0, info.parent_id,
        )  # fmt: skip
    return summary_of(run)


def summary_of(run: Run) -> Summary:
    """The listing row of a run already read."""
    info = run.info
    usage = run.state.usage
    starts = [entry.content for entry in run.history if isinstance(entry, RunStartEntry)]
    return Summary(
        info.id,
        info.first_message,
        info.turn,
        info.created_at,
        info.updated_at,
        status(run),
        info.finished,
        usage.cost,
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens,
        len(run.raw),
        info.parent_id,
        starts[-1].name if starts else None,
        starts[-1].model if starts else None,
    )


def matches(info: StateInfo, text: str) -> bool:
    """True when `text` (any case) is part of the run's id or first message."""
    needle = text.casefold()
    return needle in info.id.casefold() or needle in (info.first_message or "").casefold()


def subagent_tree(infos: Sequence[StateInfo], state_id: str) -> TreeNode | None:
    """The whole tree `state_id` belongs to, from its top-level run down; None when it has no parent or child."""
    by_id = {info.id: info for info in infos}
    children: dict[str, list[StateInfo]] = {}
    for info in infos:
        if info.parent_id is not None:
            children.setdefault(info.parent_id, []).append(info)
    top = state_id
    seen = {top}
    while top in by_id and by_id[top].parent_id in by_id and by_id[top].parent_id not in seen:
        top = by_id[top].parent_id or top
        seen.add(top)
    if top not in by_id or (top == state_id and state_id not in children):
        return None

    def grow(info: StateInfo, path: frozenset[str]) -> TreeNode:
        kids = sorted(children.get(info.id, []), key=lambda kid: kid.created_at or _EARLIEST)
        return TreeNode(info, [grow(kid, path | {kid.id}) for kid in kids if kid.id not in path])

    return grow(by_id[top], frozenset({top}))
