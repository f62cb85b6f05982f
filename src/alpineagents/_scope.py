"""The call scope (08 §3.2): which State and call the running tool belongs to.

The tool runner sets `CALL_SCOPE` around each tool run (in the worker thread's or Task's own context copy), so a
`run`/`arun` started inside the tool finds its parent. The value is a `CallScope`: a `(state, call)` tuple that
also carries `.context`, the run context of the `use_tools`/`ause_tools` that ran the tool (or `None`).
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.types import ToolCall

__all__ = ["CALL_SCOPE", "CallScope"]

_tuple_new = tuple.__new__


class CallScope(tuple[Any, Any]):
    """`(state, call)` of the tool call running in this context, plus `.context` (the run context or `None`)."""

    context: Any

    def __new__(cls, state: State, call: ToolCall, context: Any = None) -> CallScope:
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
