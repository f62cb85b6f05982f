"""A tool call the program makes itself (`agent.run_tool`, `agent.load_skill`), written once as a step sequence.

The call is recorded as one turn, exactly as `think` records a model that answered with that one tool call: a
`model_request` entry and a `model_reply` entry, except that the model named in both is `PROGRAM` (`"program"`),
the reply's usage is `Usage()` (no request, so usage sums and cost do not change) and it has no context size. A
reply whose model is `program` holds a call the program made with run_tool. The assistant message holding the
call joins the context, so the model reads it at its next request, with any adapter.

The State is saved (as after a model's reply), then the call runs through the same runner as the model's calls
(`_runner`): the arguments checked by the tool, the permission phase, the Reporter's events, the worker thread or
Task, interrupts and late results, and the save points of `use_tools`. What differs is only what happens after:

- the result content is returned to the program (whatever the outcome: a denial's reason and an input error's text
  are results too, and the entry's `outcome` says which);
- a tool that raised (or Ctrl+C, or cancellation) leaves no call pending: the call is closed at once, as a run
  closes its calls when an exception leaves it (`(aborted: Type)` or `(interrupted by user)`), and the exception
  propagates with the note `exception raised in tool ...`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from alpineagents._history.json_values import json_copy
from alpineagents._runner import arun_tool_calls, run_tool_calls
from alpineagents._turn.context import context_for
from alpineagents._turn.driver import Steps, save, save_after_error
from alpineagents.errors import fix_message
from alpineagents.tool import FunctionTool, Tool, collect_tools
from alpineagents.types import Message, Reply, ToolCall, Usage

if TYPE_CHECKING:
    from alpineagents._turn.permission_rules import Owner
    from alpineagents._turn.seams import AgentSeam
    from alpineagents.human import Human
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store

__all__ = ["PROGRAM", "PROGRAM_STOP_REASON", "program_call_steps", "program_tool", "new_call", "same_tool"]

PROGRAM = "program"
"""The model name of a call the program made: a reply whose model is `program` holds a call the program made with
`run_tool` (or `load_skill`), and its request names `program` as the model asked."""

PROGRAM_STOP_REASON = "tool_use"
"""The stop reason of that reply: the one a reply that asks for tools has (as `FakeModel` and Anthropic give it)."""

_EXAMPLE = 'agent.run_tool(state, "read_file", path="notes.md")'


class _Unchecked:
    """The settings of a run context without the permission phase (the program's own `load_skill`)."""

    __slots__ = ("reporter", "human", "store", "owners")

    permissions = None

    def __init__(self, reporter: Reporter | None, human: Human | None, store: Store | None) -> None:
        self.reporter = reporter
        self.human = human
        self.store = store
        self.owners: Sequence[Owner] = ()


def _unknown(name: str, tools: Mapping[str, Tool], method: str) -> ValueError:
    names = ", ".join(tools) or "(none)"
    return ValueError(
        fix_message(
            f"{method}() got {name!r}, which is not a tool of this Agent (this Agent's tools: {names})",
            "pass the name of one of the Agent's tools, or the tool itself",
            _EXAMPLE,
        )
    )


def same_tool(mine: Tool, other: Tool) -> bool:
    """Whether `other` is the tool `mine`: the same object, or for function tools the same function bound to the
    same object (every `obj.method` access makes a new bound tool object)."""
    if mine is other:
        return True
    if isinstance(mine, FunctionTool) and isinstance(other, FunctionTool):
        return mine.fn is other.fn and mine.bound_to is other.bound_to
    return False


def program_tool(tools: Mapping[str, Tool], tool: object, method: str) -> Tool:
    """The tool `tool` names: a name of `tools` (the Agent's tool map), or a tool item as `tools=` takes it (the
    Agent's own tool when it is the same one), which must make exactly one tool.

    Raises:
        ValueError: an unknown name.
        TypeError: an item that is not a tool, or one that makes several tools.
    """
    if isinstance(tool, str):
        found = tools.get(tool)
        if found is None:
            raise _unknown(tool, tools, method)
        return found
    made = collect_tools([tool])
    if len(made) != 1:
        raise TypeError(
            fix_message(
                f"{method}() runs one tool, and {tool!r} holds {len(made)} ({', '.join(made)})",
                "pass one tool: a name, a @tool function, a Tool object or one bound method",
                _EXAMPLE,
            )
        )
    name, made_tool = next(iter(made.items()))
    mine = tools.get(name)
    return mine if mine is not None and same_tool(mine, made_tool) else made_tool


def new_call(tool: Tool, args: Mapping[str, Any], method: str) -> ToolCall:
    """The call of `tool` with `args` (checked to be JSON, as a model's arguments are), with a fresh id."""
    copied = json_copy(dict(args), f"the arguments of {method}({tool.name})")
    return ToolCall(tool.name, copied, "call_program_" + os.urandom(8).hex())


def program_call_steps(agent: AgentSeam, state: State, tool: Tool, call: ToolCall, method: str, checked: bool) -> Steps:
    """Record `call` as made by the program, run it like a model's call of `tool` (`checked`: with the
    permission phase), and return its result content. See the module for what happens when the tool raises."""
    if agent._mcp_servers and agent._mcp_users == 0:
        yield (agent._mcp_use, agent._amcp_use, ("acquire",))
    context = context_for(agent, state)
    settings: Any = context if checked else _Unchecked(context.reporter, context.human, context.store)
    store = context.store
    reply = Reply(Message("assistant", (call,)), Usage(), stop_reason=PROGRAM_STOP_REASON, model=PROGRAM)
    state._record_program_call(reply, method)  # checks (finished, pending, waiting, empty), then one turn
    if state._agent is not agent:
        state._attach(agent)  # type: ignore[arg-type]  # the State names the Agent class, which is an AgentSeam
    try:
        if store is not None:
            yield save(store, state)  # the save point after a reply: the call is pending in the saved State
        yield (run_tool_calls, arun_tool_calls, (state, {call.name: tool}, settings))
    except GeneratorExit:  # the driver was abandoned: nothing to record
        raise
    except BaseException as error:
        if state._pending_slot(call) is not None:
            state._close_pending(error)
        yield from save_after_error(store, state, error)
        raise
    if store is not None:
        yield save(store, state)
    entry = state._result_of(call)
    assert entry is not None  # the runner closes every pending call unless an exception left it
    return entry.content
