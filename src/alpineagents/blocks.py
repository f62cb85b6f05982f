"""Ready-made blocks: `CompactIfFull`, `compact_if_full` and `acompact_if_full`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alpineagents.agent import Agent  # the facade above: only its type is named here
    from alpineagents.state import State

__all__ = ["CompactIfFull", "compact_if_full", "acompact_if_full"]


class CompactIfFull:
    """A block that compacts the context when it is fuller than `at` (a fraction of the model's window).

    Call it at the start of a turn, before `think`: `compact_if_full(agent, state)`, or in an async loop
    `await acompact_if_full(agent, state)`.
    """

    def __init__(self, at: float = 0.6, instructions: str | None = None) -> None:
        self.at = at
        self.instructions = instructions

    def __call__(self, agent: Agent, state: State) -> None:
        """Compact with `agent.compact(state, instructions=...)` when `agent.context_used(state) > at`."""
        if agent.context_used(state) > self.at:
            agent.compact(state, instructions=self.instructions)

    async def acall(self, agent: Agent, state: State) -> None:
        """The async twin of `__call__`, using `await agent.acompact(...)`."""
        if agent.context_used(state) > self.at:
            await agent.acompact(state, instructions=self.instructions)

    def __repr__(self) -> str:
        return f"CompactIfFull(at={self.at!r}, instructions={self.instructions!r})"


compact_if_full = CompactIfFull()
acompact_if_full = compact_if_full.acall
