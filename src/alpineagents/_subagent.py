"""The tool an `Agent` becomes when it is listed in another Agent's `tools=` (08 §3.8)."""

from __future__ import annotations

import asyncio
from typing import Any

from alpineagents._async import ASYNC_RUN
from alpineagents.errors import ToolError, ToolInputError
from alpineagents.loop import default_loop, is_async_callable
from alpineagents.state import State
from alpineagents.tool import Tool, format_result
from alpineagents.types import (
    Message,
    StoppedByLimit,
    StoppedByPermission,
    TextBlock,
    ToolOutcomeKind,
    result_text,
)

__all__ = ["SubagentTool", "PROMPT_SCHEMA"]

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


class SubagentTool(Tool):
    """Runs the `agent` on a new State holding only the model's prompt; a subagent of the call (08 §3.8)."""

    def __init__(self, agent: Any) -> None:
        super().__init__(name=agent.name, description=agent.description, input_schema=_schema(), parallel=True)
        self.agent = agent

    @property
    def is_async(self) -> bool:  # type: ignore[override]
        """With `default_loop`: True inside an async run; otherwise whether the Agent's loop is async."""
        loop = self.agent.loop
        if loop is default_loop:
            return _in_async_run()
        return is_async_callable(loop)

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
        """Run the subagent on the prompt (`run`, or `arun` as a coroutine when `is_async`)."""
        child = State(messages=[Message.user(self._prompt(args))])
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
        """Raise the `ToolError` for an exception that left the child's run after it started (08 §3.8.5).

        An exception from the checks before the child started is left to propagate unchanged.
        """
        if not any(entry.kind == "run_start" for entry in child.history):
            return
        text = str(error)
        shown = f"{type(error).__name__}: {text}" if text else type(error).__name__
        raise ToolError(f"({self.name} failed: {shown})") from error

    def _result(self, child: State, value: Any) -> Any:
        """The result for a child whose run returned `value` (08 §3.8.5, first three rows)."""
        stopped = child.stopped
        if isinstance(stopped, StoppedByPermission):
            reason = None
            for entry in reversed(child.history):
                if (
                    entry.kind == "tool_result"
                    and entry.outcome == ToolOutcomeKind.DENIED
                    and entry.call.id == stopped.call.id
                ):
                    reason = result_text(entry.content)
                    break
            if reason:
                return f"({self.name} was stopped by the user: {reason})"
            return f"({self.name} was stopped by the user)"
        if isinstance(stopped, StoppedByLimit):
            turns = stopped.turns
            note = f"({self.name} stopped after {turns} turn{'' if turns == 1 else 's'} before finishing)"
            if value is None:
                return note
            content = format_result(value)
            if isinstance(content, str):
                return f"{content}\n{note}"
            return [*(b.text if isinstance(b, TextBlock) else b for b in content), note]
        if isinstance(value, str):
            return value
        content = format_result(value)
        if isinstance(content, str):
            return content
        return [b.text if isinstance(b, TextBlock) else b for b in content]
