"""What the turn machinery needs from an Agent: the `AgentSeam` Protocol, and the `DEFAULT` marker.

The run, the step sequences and the run context are written against `AgentSeam`, not against the `Agent` class
(which sits above them and imports them). An Agent's settings never change after creation, except the tool map,
specs and overhead, which the MCP servers replace while they are connected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

    from alpineagents.human import Human
    from alpineagents.models.base import Model
    from alpineagents.permissions import Permission
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store
    from alpineagents.tool import ToolMap
    from alpineagents.types import AgentInfo, Budget, HistoryEntry, ToolSpec

__all__ = ["DEFAULT", "Default", "AgentSeam", "AnswerFormat", "Feed", "MCPUse"]


class Default:
    """The type of `DEFAULT`: a singleton meaning "not given" (creating it again returns the same object)."""

    _instance: Default | None = None

    def __new__(cls) -> Default:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT = Default()
"""Marker for `Agent(reporter=...)` and `Agent(human=...)`: not given (the shared Terminal, or inherited)."""


MCPUse = Literal["acquire", "release"]
"""What an Agent does with one use of its MCP servers: take it (and wait until they are connected), or give it
back."""


class AgentSeam(Protocol):
    """The settings and hooks of an Agent that its runs and one-step operations read.

    `reporter` and `human` are the Agent's own settings with `DEFAULT` resolved to the shared Terminal;
    `_reporter_given` and `_human_given` keep `DEFAULT`, which a subagent run replaces with the run above's.
    `_permissions` is `None` for "no checks" and a tuple (maybe empty: "refuse all") otherwise.
    """

    _model: Model
    _model_string: str
    _system: str | None
    _specs: tuple[ToolSpec, ...]
    _tool_map: ToolMap
    _store: Store | None
    _permissions: tuple[Permission, ...] | None
    _reporter_given: Reporter | Default | None
    _human_given: Human | Default | None
    _mcp_servers: tuple[Any, ...]
    _mcp_users: int
    _budget: Budget | None

    @property
    def reporter(self) -> Reporter | None: ...

    @property
    def human(self) -> Human | None: ...

    def _agent_info_now(self) -> AgentInfo: ...

    def _choose_specs(self, tools: Iterable[Any]) -> tuple[ToolSpec, ...]: ...

    def _mcp_use(self, use: MCPUse) -> None: ...

    async def _amcp_use(self, use: MCPUse) -> None: ...


class AnswerFormat(Protocol):
    """How `ask` turns replies into the answer the caller asked for (`returns=`), handed in by the Agent."""

    name: str
    """The name of the answer type, for the message when no reply fits."""

    def question(self, prompt: str) -> str:
        """The text of the question sent to the model."""
        ...

    def parse(self, text: str) -> Any:
        """The answer in the reply `text`, or `ValueError` saying why it does not fit."""
        ...

    def retry(self, error: ValueError) -> str:
        """The message sent after a reply that did not fit."""
        ...


class Feed(Protocol):
    """Where a streamed run's events go (``agent.stream``): what the State, the think step and the run tell it.

    A run started by a stream carries its feed in its run context, and so does every subagent run below it; each
    State of those runs holds it while it is run (``state._tap``). Each method is called on the thread that
    records, possibly several at once, and must return at once: a reader never slows the run.
    """

    def entry(self, state: State, position: int, entry: HistoryEntry) -> None:
        """``entry`` was recorded at ``position`` of ``state``'s history (called under the State's lock)."""
        ...

    def text(self, state: State, chunk: str) -> None:
        """The model streamed a piece of text for ``state``."""
        ...

    def thinking(self, state: State, chunk: str) -> None:
        """The model streamed a piece of its thinking for ``state`` (where its adapter gives it)."""
        ...

    def tool_args(self, state: State, call_id: str, name: str, delta: str) -> None:
        """The model streamed a piece of the arguments of its call ``call_id`` of the tool ``name`` for ``state``
        (the first piece of a call, maybe empty, when its name is known)."""
        ...

    def ended(self, state: State, error: BaseException | None) -> None:
        """A run of ``state`` ended (after ``on_run_end``)."""
        ...
