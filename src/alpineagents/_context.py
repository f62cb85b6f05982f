"""The run context (03 §2.8, 08 §3.6, 07 §1.6): which reporter, human, store and permissions apply.

A `RunContext` is built when a run starts (from the Agent's own settings, or inherited from the run above for a
subagent run) and kept on the State (`state._run_context`) until the run ends. The tool runner reads
`reporter`, `store`, `permissions` (and `owners`, the Human that owns each permission) from it.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from alpineagents._scope import CALL_SCOPE
from alpineagents.permissions import effective_permissions

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["DEFAULT", "RunContext", "RUNS", "current_runs", "own_context", "run_context"]


class _Default:
    """The type of `DEFAULT`: a singleton meaning "not given" (creating it again returns the same object)."""

    _instance: _Default | None = None

    def __new__(cls) -> _Default:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()
"""Sentinel for `Agent(reporter=...)` and `Agent(human=...)`: not given (the shared Terminal, or inherited)."""


class RunContext:
    """What applies during one run (or one Agent call outside a run).

    Attributes:
        agent: the Agent whose settings (own or inherited) this is.
        reporter: the Reporter that gets events, or None.
        human: the Human that answers, or None.
        human_inherited: True when `human` came from the run above (for the NoHumanError wording).
        store: the Store that saves, or None.
        permissions: the effective permission list (a `PermissionList`, a tuple), or None when no check phase
            applies (07 §1.6).
        owners: the `Owner` of each permission of `permissions` (same length).
        above: the effective list of the run above this one (None for a top-level run): what another Agent
            working inside this run starts from.
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
        above: Any = None,
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


def _context(
    agent: Any, reporter: Any, human: Any, inherited: bool, store: Any, permissions: Any, **more: Any
) -> RunContext:
    owners = tuple(permissions.owners) if permissions is not None else ()
    return RunContext(
        agent,
        reporter=reporter,
        human=human,
        human_inherited=inherited,
        store=store,
        permissions=permissions,
        owners=owners,
        **more,
    )


def own_context(agent: Any) -> RunContext:
    """The context of an Agent call made outside this Agent's runs: its own settings (03 §2.8), its permissions
    preceded by the denials of the runs above when it works inside a subagent's run (07 §1.6)."""
    runs = RUNS.get()
    above = runs[-1].above if runs else None
    human = agent.human
    permissions = effective_permissions(agent._permissions, human, above=above)
    # A run of this Agent started here passes the same denials down: an Agent working inside it is still inside
    # the runs above (without this, a third Agent called from this run's loop would lose the top run's denials).
    return _context(agent, agent.reporter, human, False, agent._store, permissions, above=above)


def parent_context(state: Any) -> RunContext:
    """The context that applied to the tool calls of `state` (the run above a subagent started in one)."""
    context = getattr(state, "_run_context", None)
    if context is not None and state._running:
        return context
    agent = state._agent
    if agent is not None:
        return own_context(agent)
    return RunContext(None)


def run_context(agent: Any) -> RunContext:
    """The context of a run of `agent` starting now: inherited from the call scope's run for a subagent run
    (08 §3.6), else built from the Agent's own settings."""
    scope = CALL_SCOPE.get()
    if scope is None:
        return own_context(agent)
    parent_state, call = scope[0], scope[1]
    up = getattr(scope, "context", None)
    if up is None:
        up = parent_context(parent_state)
    reporter = up.reporter if agent._reporter_given is DEFAULT else agent._reporter_given
    if agent._human_given is DEFAULT:
        human, inherited = up.human, True
    else:
        human, inherited = agent._human_given, False
    store = agent._store if agent._store is not None else up.store
    permissions = effective_permissions(
        agent._permissions, human, inherited=inherited, above=up.permissions, subagent=True
    )
    return _context(
        agent,
        reporter,
        human,
        inherited,
        store,
        permissions,
        above=up.permissions,
        depth=parent_state._depth + 1,
        parent=(parent_state, call),
    )
