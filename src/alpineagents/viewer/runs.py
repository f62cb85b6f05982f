"""Reading runs from a store: the listing (past a damaged run) and the subagent tree.

One run's saved entries and State, its short status and its row in a list are read by `alpineagents._stores.
runrows` (a database store computes the same rows for its own search), and named here too for the viewer and the
command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from alpineagents._stores.listing import Unlisted
from alpineagents._stores.runrows import (
    UNFINISHED,
    Run,
    Summary,
    ending_error,
    first_line,
    matches,
    open_run,
    status,
    summarize,
    summary_of,
    unlisted_summary,
    waiting_fork,
)
from alpineagents.store import StateInfo, Store

__all__ = [
    "UNFINISHED",
    "Run",
    "Summary",
    "TreeNode",
    "Surveyed",
    "Listing",
    "ending_error",
    "first_line",
    "matches",
    "open_run",
    "status",
    "stored_runs",
    "subagent_tree",
    "summarize",
    "summary_of",
    "unlisted_summary",
    "waiting_fork",
]

_EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass
class TreeNode:
    """A run and the subagent runs its tool calls started."""

    info: StateInfo
    children: list[TreeNode] = field(default_factory=list)


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
