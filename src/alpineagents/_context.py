"""The run context (03 §2.8, 08 §3.6, 07 §1.6): which reporter, human, store and permissions apply.

A `RunContext` is built when a run starts (from the Agent's own settings, or inherited from the run above for a
subagent run) and kept on the State (`state._run_context`) until the run ends. The tool runner reads
`reporter`, `store`, `permissions` (and `owners`, the Human that owns each permission) from it.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["RunContext", "RUNS", "current_runs"]


class RunContext:
    """What applies during one run (or one Agent call outside a run).

    Attributes:
        agent: the Agent whose settings (own or inherited) this is.
        reporter: the Reporter that gets events, or None.
        human: the Human that answers, or None.
        human_inherited: True when `human` came from the run above (for the NoHumanError wording).
        store: the Store that saves, or None.
        permissions: the effective permission list (a tuple), or None when no check phase applies.
        owners: the Human owning each permission of `permissions` (same length; 07 §1.6).
        denials: the DenyPermissions of `permissions`, with their owners (what runs below inherit).
        above: the denials of the runs above this one (what another Agent inside this run must respect).
        depth: 0 for a run no tool call started, the parent's depth + 1 for a subagent run.
        parent: `(parent State, ToolCall)` for a subagent run, else None.
    """

    __slots__ = (
        "agent",
        "reporter",
        "human",
        "human_inherited",
        "store",
        "permissions",
        "owners",
        "denials",
        "above",
        "depth",
        "parent",
    )

    def __init__(
        self,
        agent: Any,
        *,
        reporter: Any = None,
        human: Any = None,
        human_inherited: bool = False,
        store: Any = None,
        permissions: tuple[Any, ...] | None = None,
        owners: tuple[Any, ...] = (),
        denials: tuple[tuple[Any, Any], ...] = (),
        above: tuple[tuple[Any, Any], ...] = (),
        depth: int = 0,
        parent: tuple[State, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.reporter = reporter
        self.human = human
        self.human_inherited = human_inherited
        self.store = store
        self.permissions = permissions
        self.owners = owners
        self.denials = denials
        self.above = above
        self.depth = depth
        self.parent = parent

    def __repr__(self) -> str:
        return f"<RunContext agent={self.agent!r} depth={self.depth}>"


# The run contexts of the runs going on in this thread or task, innermost last.
RUNS: contextvars.ContextVar[tuple[RunContext, ...]] = contextvars.ContextVar("alpineagents_runs", default=())


def current_runs() -> tuple[RunContext, ...]:
    """The run contexts of the runs going on in this thread or task, innermost last."""
    return RUNS.get()
