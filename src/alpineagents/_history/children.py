"""The subagents a tool call started: which child States each call of a State started, and the usage they added
since it was last counted (a call's result carries its children's ids and their new usage)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpineagents.types import ToolCall, Usage

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["Joined", "usage_since"]


def usage_since(now: Usage, then: Usage) -> Usage:
    """What a child used since ``then``: the count differences, and a cost only when both sides know theirs."""
    requests = max(now.requests - then.requests, 0)
    if requests == 0:
        cost = None
    elif then.requests == 0:
        cost = now.cost
    elif now.cost is None or then.cost is None:
        cost = None
    else:
        cost = now.cost - then.cost
    return Usage(
        input_tokens=now.input_tokens - then.input_tokens,
        output_tokens=now.output_tokens - then.output_tokens,
        cache_read_tokens=now.cache_read_tokens - then.cache_read_tokens,
        cache_write_tokens=now.cache_write_tokens - then.cache_write_tokens,
        requests=requests,
        cost=cost,
    )


class Joined:
    """The children of one call: each child State with its usage when this State last counted it."""

    __slots__ = ("call", "children")

    def __init__(self, call: ToolCall | None) -> None:
        self.call = call
        self.children: list[tuple[State, Usage]] = []

    def add(self, child: State, from_start: bool = False) -> None:
        """Count ``child`` from its usage now, or (``from_start``) from nothing: a subagent run again after it
        waited has usage no result of this State counted yet."""
        if all(known.id != child.id for known, _ in self.children):
            self.children.append((child, Usage() if from_start else child.usage))

    def measure(self) -> tuple[tuple[str, ...], Usage | None, list[tuple[State, Usage]]]:
        """The child ids, the usage not counted yet, and the new join points (for ``settle``)."""
        if not self.children:
            return (), None, []
        total = Usage()
        moved: list[tuple[State, Usage]] = []
        for child, then in self.children:
            now = child.usage
            total = total + usage_since(now, then)
            moved.append((child, now))
        return tuple(child.id for child, _ in moved), total, moved

    def settle(self, moved: list[tuple[State, Usage]]) -> None:
        """After the usage was recorded: count from the measured points on (children added since stay as they are)."""
        self.children[: len(moved)] = moved
