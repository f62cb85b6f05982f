"""The run context: which reporter, human, store and permissions apply to a run or to one Agent call.

A `RunContext` is built when a run starts, from the Agent's own settings, or for a subagent run (a run started
inside a tool call) inherited from the run above. It is kept on the State (`state._run_context`) until the run
ends, and on the `RUNS` context variable of the thread or task. The tool runner reads `reporter`, `store`,
`permissions` and `owners` (the Human that owns each permission) from it.

The permission rule: the denials of every run above come first in every list that applies below it, whichever
Agent's `use_tools` checks the call; a subagent without a list of its own inherits the list of the run above whole.
"""

from __future__ import annotations

import contextvars
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

from alpineagents import _observe as observe
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents._turn.permission_rules import PermissionList, effective_permissions
from alpineagents._turn.seams import AgentSeam, Default, Feed

if TYPE_CHECKING:
    from alpineagents._turn.budget import BudgetGuard
    from alpineagents._turn.permission_rules import Owner
    from alpineagents.human import Human
    from alpineagents.permissions import Permission
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store
    from alpineagents.types import ToolCall

__all__ = [
    "RunContext",
    "RUNS",
    "current_runs",
    "own_context",
    "run_context",
    "parent_context",
    "active_context",
    "context_for",
]


@dataclass(slots=True, repr=False, eq=False)
class RunContext:
    """What applies during one run (or one Agent call outside a run).

    Attributes:
        agent: the Agent whose settings (own or inherited) this is.
        reporter: the Reporter that gets events, or None.
        human: the Human that answers, or None.
        human_inherited: True when `human` came from the run above (for the NoHumanError wording).
        store: the Store that saves, or None.
        permissions: the effective permission list, or None when no check phase applies.
        owners: the `Owner` of each permission of `permissions` (same length).
        above: the list whose denials an Agent working inside this run starts from (None at the top): the
            effective list of the run above a subagent run, and the same list again for the runs and calls of
            other Agents inside it.
        depth: 0 for a run no tool call started, the parent's depth + 1 for a subagent run.
        parent: `(parent State, ToolCall)` for a subagent run, else None.
        feed: where a streamed run's events go (`agent.stream`), inherited by its subagent runs; else None.
        budgets: the budget guards of this run and of the runs above it (see `_turn/budget.py`).
    """

    agent: AgentSeam | None
    _: KW_ONLY
    reporter: Reporter | None = None
    human: Human | None = None
    human_inherited: bool = False
    store: Store | None = None
    permissions: PermissionList | tuple[Permission, ...] | None = None
    above: PermissionList | tuple[Permission, ...] | None = None
    depth: int = 0
    parent: tuple[State, ToolCall] | None = None
    feed: Feed | None = None
    budgets: tuple[BudgetGuard, ...] = ()
    owners: tuple[Owner, ...] = field(init=False)

    def __post_init__(self) -> None:
        # A plain tuple (the runner's own tests) has no owners: each permission then asks the default Human.
        self.owners = getattr(self.permissions, "owners", ())

    def __repr__(self) -> str:
        return f"<RunContext agent={self.agent!r} depth={self.depth}>"


# The run contexts of the runs going on in this thread or task, innermost last.
RUNS: contextvars.ContextVar[tuple[RunContext, ...]] = contextvars.ContextVar("alpineagents_runs", default=())


def current_runs() -> tuple[RunContext, ...]:
    """The run contexts of the runs going on in this thread or task, innermost last."""
    return RUNS.get()


def own_context(agent: AgentSeam) -> RunContext:
    """The context of an Agent call made outside this Agent's runs: its own reporter, human and store, and its
    permissions preceded by the denials of the runs above when it works inside a subagent's run."""
    runs = RUNS.get()
    above = runs[-1].above if runs else None
    human = agent.human
    permissions = effective_permissions(agent._permissions, human, above=above)
    reporter = agent.reporter
    if (observer := observe.OBSERVER) is not None:  # tracing: its reporter passes every event on to the Agent's
        reporter = observer.reporter(agent, reporter, runs[-1].reporter if runs else None)
    # A run of this Agent started here passes the same denials down: an Agent working inside it is still inside
    # the runs above (without this, a third Agent called from this run's loop would lose the top run's denials).
    return RunContext(agent, reporter=reporter, human=human, store=agent._store, permissions=permissions, above=above)


def parent_context(state: State) -> RunContext:
    """The context that applied to the tool calls of `state` (the run above a subagent started in one)."""
    context = getattr(state, "_run_context", None)
    if context is not None and state._running:
        return context
    agent = state._agent
    if agent is not None:
        return own_context(agent)
    return RunContext(None)


def run_context(agent: AgentSeam) -> RunContext:
    """The context of a run of `agent` starting now: for a subagent run (one started inside a tool call), the
    settings the Agent left at their default come from the run above; otherwise the Agent's own settings."""
    scope = CALL_SCOPE.get()
    if scope is None:
        return own_context(agent)
    parent_state, call = scope[0], scope[1]
    up = scope.context
    if up is None:
        up = parent_context(parent_state)
    given = agent._reporter_given
    reporter = up.reporter if isinstance(given, Default) else given
    if (observer := observe.OBSERVER) is not None:  # tracing is on (see own_context)
        reporter = observer.reporter(agent, reporter, up.reporter)
    given_human = agent._human_given
    if isinstance(given_human, Default):
        human, inherited = up.human, True
    else:
        human, inherited = given_human, False
    store = agent._store if agent._store is not None else up.store
    permissions = effective_permissions(
        agent._permissions, human, inherited=inherited, above=up.permissions, subagent=True
    )
    return RunContext(
        agent,
        reporter=reporter,
        human=human,
        human_inherited=inherited,
        store=store,
        permissions=permissions,
        above=up.permissions,
        depth=parent_state._depth + 1,
        parent=(parent_state, call),
        feed=up.feed,
        budgets=up.budgets if isinstance(up, RunContext) else (),
    )


def active_context(agent: AgentSeam, state: State) -> RunContext | None:
    """The run context of `agent`'s run that `state` belongs to: the one kept on the State while this Agent runs
    it, else the one of this Agent's run going on in this thread or task (a State made inside the run, such as a
    fork); None when neither applies."""
    context = getattr(state, "_run_context", None)
    if context is not None and context.agent is agent:
        return context
    for context in reversed(RUNS.get()):
        if context.agent is agent:
            return context
    return None


def context_for(agent: AgentSeam, state: State) -> RunContext:
    """The run context that applies to `agent`'s call on `state`: its run's, or its own settings."""
    context = active_context(agent, state)
    return context if context is not None else own_context(agent)
