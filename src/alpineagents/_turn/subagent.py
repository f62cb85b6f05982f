"""The tool an `Agent` becomes when it is listed in another Agent's `tools=`: a subagent of the call."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from alpineagents._async import ASYNC_RUN
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents._turn.approvals import WaitingSubagent, resumed_child
from alpineagents._values.budget import WAITING_STOPS
from alpineagents.errors import ToolError, ToolInputError, fix_message
from alpineagents.state import State
from alpineagents.tool import Tool, format_result
from alpineagents.types import (
    Image,
    Message,
    StoppedByLimit,
    StoppedByPermission,
    TextBlock,
    ToolOutcomeKind,
    result_text,
)

if TYPE_CHECKING:
    from alpineagents.agent import Agent  # the facade above: only its type is named here

__all__ = ["SubagentTool", "PROMPT_SCHEMA", "checked_subagent_tool"]

PROMPT_DESCRIPTION = (
    "The task for the subagent. It sees only this prompt, not your conversation, so include all the context it needs"
)


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": PROMPT_DESCRIPTION}},
        "required": ["prompt"],
    }


PROMPT_SCHEMA = _schema()


def _in_async_run() -> bool:
    mark = ASYNC_RUN.get()
    if mark is None:
        return False
    try:
        return asyncio.get_running_loop() is mark
    except RuntimeError:
        return False


def _parts(content: str | tuple[Any, ...]) -> list[str | Image]:
    """Converted blocks as the parts a tool may return (text blocks as their text)."""
    return [b.text if isinstance(b, TextBlock) else b for b in content]


class SubagentTool(Tool):
    """Runs `agent` on a new State holding only the model's prompt, as `agent.run` or `agent.arun` would: the run
    is a subagent of the call, so it is linked to it, counted in its usage, and inherits from the run above.

    `async_loop` is None when the Agent's loop is the default one (the call then follows the run around it:
    `arun` inside an async run, `run` elsewhere), else whether its loop is async.
    """

    def __init__(self, agent: Agent, async_loop: bool | None) -> None:
        # the Agent's constructor checked both before making this tool
        name, description = agent.name or "", agent.description or ""
        super().__init__(name=name, description=description, input_schema=_schema(), parallel=True)
        self.agent = agent
        self._async_loop = async_loop

    @property
    def is_async(self) -> bool:  # type: ignore[override]
        """With the default loop: True inside an async run; otherwise whether the Agent's loop is async."""
        if self._async_loop is None:
            return _in_async_run()
        return self._async_loop

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r})"

    @staticmethod
    def _prompt(args: dict[str, Any]) -> str:
        extra = sorted(key for key in args if key != "prompt")
        if extra:
            raise ToolInputError(f"unexpected argument: {', '.join(extra)}")
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolInputError("prompt: must be a non-empty string")
        return prompt

    def run(self, args: dict[str, Any], state: State) -> Any:
        """Run the subagent on the prompt (`run`, or `arun` as a coroutine when `is_async`). A call whose subagent
        waited for approval runs that subagent's State again; a run that stops for approval makes the call wait."""
        scope = CALL_SCOPE.get()
        child = resumed_child(state, scope[1]) if scope is not None and scope[0] is state else None
        if child is None:
            child = State(messages=[Message.user(self._prompt(args))])
        else:  # none of its usage is counted in a result yet (this State counts it from the start)
            state._add_child(scope[1].id, child, call=scope[1], from_start=True)  # pyright: ignore[reportOptionalSubscript]
        if self.is_async:
            return self._arun(child)
        try:
            value = self.agent.run(child)
        except Exception as error:
            self._raise_failure(child, error)
            raise
        return self._result(child, value)

    async def _arun(self, child: State) -> Any:
        try:
            value = await self.agent.arun(child)
        except Exception as error:
            self._raise_failure(child, error)
            raise
        return self._result(child, value)

    def _raise_failure(self, child: State, error: Exception) -> None:
        """Raise `ToolError("(name failed: Type: message)")` for an exception that left the child's run after it
        started. An exception from the checks before the child started is left to propagate unchanged."""
        if not any(entry.kind == "run_start" for entry in child.history):
            return
        text = str(error)
        shown = f"{type(error).__name__}: {text}" if text else type(error).__name__
        raise ToolError(f"({self.name} failed: {shown})") from error

    def _stopped_text(self, child: State, stopped: StoppedByPermission) -> str:
        """The result of a child a permission stopped: the reason of its latest refusal of the stopping call."""
        for entry in reversed(child.history):
            if (
                entry.kind == "tool_result"
                and entry.outcome == ToolOutcomeKind.DENIED
                and entry.call.id == stopped.call.id
            ):
                reason = result_text(entry.content)
                if reason:
                    return f"({self.name} was stopped by the user: {reason})"
                break
        return f"({self.name} was stopped by the user)"

    def _result(self, child: State, value: object) -> str | list[str | Image]:
        """The result for a child whose run returned `value`: a permission stop gives its reason (the value is
        ignored); a limit stop adds the note `(name stopped after N turns before finishing)`; otherwise the
        value converted like any tool's return value."""
        stopped = child.stopped
        if isinstance(stopped, WAITING_STOPS):  # a decision or a bigger budget: the call waits with it
            raise WaitingSubagent(child)
        if isinstance(stopped, StoppedByPermission):
            return self._stopped_text(child, stopped)
        if isinstance(stopped, StoppedByLimit):
            turns = stopped.turns
            note = f"({self.name} stopped after {turns} turn{'' if turns == 1 else 's'} before finishing)"
            if value is None:
                return note
            content = format_result(value)
            if isinstance(content, str):
                return f"{content}\n{note}"
            return [*_parts(content), note]
        if isinstance(value, str):
            return value
        content = format_result(value)
        return content if isinstance(content, str) else _parts(content)


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def checked_subagent_tool(helper: Agent, async_loop: bool | None) -> SubagentTool:
    """Check an Agent passed in `tools=` (it needs a name that is a valid tool name, and a description) and make
    its subagent tool; `async_loop` as `SubagentTool` takes it."""
    missing = [attr for attr in ("name", "description") if not getattr(helper, attr)]
    if missing:
        raise ValueError(
            fix_message(
                f"{helper!r} passed in tools= has no {', '.join(missing)}. A subagent's name becomes the tool name "
                "and its description the tool description",
                "Give an Agent used as a subagent both name and description",
                'researcher = Agent(model, name="researcher", description="Looks things up on the web")',
            )
        )
    name = helper.name
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise TypeError(
            fix_message(
                f"name={name!r} of {helper!r} passed in tools= cannot be used as a tool name. It must be 1-64 "
                "characters of letters, digits, _ and -",
                "Give the Agent a valid name",
                'Agent(model, name="web_researcher", description="...")',
            )
        )
    return SubagentTool(helper, async_loop)
