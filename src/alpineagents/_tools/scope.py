"""The call scope: which State and call the running tool belongs to.

The tool runner sets `CALL_SCOPE` around each tool run (in the worker thread's or Task's own context copy), so a
`run`/`arun` started inside the tool finds its parent. The value is a `CallScope`: a `(state, call)` tuple that
also carries `.context`, the settings of the `use_tools`/`ause_tools` that ran the tool (or `None`).

`current_call()` is the public reading of it: the running call, its State's id and its idempotency key.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents import _observe as observe
from alpineagents._values.construct import value
from alpineagents.errors import fix_message
from alpineagents.types import ToolCall

if TYPE_CHECKING:
    from alpineagents._turn.permission_rules import Owner, PermissionList
    from alpineagents._turn.seams import Feed
    from alpineagents.human import Human
    from alpineagents.permissions import Permission
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store

__all__ = ["CALL_SCOPE", "CallScope", "RunSettings", "enter_call", "CurrentCall", "current_call", "call_of"]


class RunSettings(Protocol):
    """What applies while one turn's calls run: who is told (`reporter`), who answers (`human`), where the State is
    saved (`store`), and which permissions are asked (`permissions`, `None` for no check phase) with the owner of
    each (`owners`). The run context of the turn machinery is one."""

    @property
    def reporter(self) -> Reporter | None: ...

    @property
    def human(self) -> Human | None: ...

    @property
    def store(self) -> Store | None: ...

    @property
    def permissions(self) -> PermissionList | tuple[Permission, ...] | None: ...

    @property
    def owners(self) -> Sequence[Owner]: ...

    @property
    def feed(self) -> Feed | None:
        """The stream that follows the run, if any (inherited by a subagent run started by the call)."""
        ...


_tuple_new = tuple.__new__


class CallScope(tuple[Any, Any]):
    """`(state, call)` of the tool call running in this context, plus `.context` (its settings, or `None`)."""

    context: RunSettings | None

    def __new__(cls, state: State, call: ToolCall, context: RunSettings | None = None) -> CallScope:
        self = _tuple_new(cls, (state, call))  # not super(): one is made per tool call
        self.context = context
        return self

    @property
    def state(self) -> State:
        """The State whose call is running."""
        return self[0]

    @property
    def call(self) -> ToolCall:
        """The `ToolCall` being run."""
        return self[1]


CALL_SCOPE: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar("alpineagents_call_scope", default=None)


def enter_call(state: State, call: ToolCall, context: RunSettings | None) -> None:
    """Set the call scope of a tool call about to run here (in the worker's or Task's own contextvars copy); with
    tracing on, the call's span becomes the current span here too, so spans the tool makes are its children."""
    CALL_SCOPE.set(CallScope(state, call, context))
    if (observer := observe.OBSERVER) is not None:
        observer.tool_running(state, call)


@value
class CurrentCall:
    """The tool call being run (or reconciled): what a tool passes to a service that takes idempotency keys."""

    state_id: str
    """The id of the State whose call it is."""
    call: ToolCall
    """The call: its id, the tool's name, the model's arguments."""

    @property
    def idempotency_key(self) -> str:
        """``"<state id>:<call id>"``: the same for every attempt of this call, in any process, and different for
        every other call. A service that accepts idempotency keys does the effect once per key."""
        return f"{self.state_id}:{self.call.id}"


def call_of(state: State, call: ToolCall) -> CurrentCall:
    """The ``CurrentCall`` of ``call`` of ``state``."""
    return CurrentCall(state.id, call)


def current_call() -> CurrentCall:
    """The tool call running in this context (inside a tool's function or ``run``, or its ``reconcile``).

    Raises:
        LookupError: no tool call runs here (the tool was called directly, not by a run).
    """
    scope = CALL_SCOPE.get()
    if scope is None:
        raise LookupError(
            fix_message(
                "current_call() was called outside a tool call",
                "call it inside a tool that a run calls (agent.run, agent.use_tools, agent.run_tool)",
                "@tool\ndef pay(amount: int) -> str:\n    key = current_call().idempotency_key\n    ...",
            )
        )
    return CurrentCall(scope[0].id, scope[1])
