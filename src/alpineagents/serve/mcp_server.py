"""An Agent as an MCP tool (the `mcp` package's `MCPServer`), over stdio or Streamable HTTP.

The tool takes `prompt` and, to continue a conversation, `conversation_id` (the id of the State, returned by every
call). It answers with the Agent's answer and that id, and sends a progress notification at the start of each turn
(when the client asked for progress). Every run is kept in the store, so a later call, from this client or
another, continues it by id; a run that fails is reported as a tool error with the first line of its error.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from alpineagents.agent import Agent
from alpineagents.serve.errors import ApiError
from alpineagents.serve.runs import Live, Runs
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import Message
from alpineagents.viewer.runs import ending_error

DESCRIPTION = (
    "Ask the agent and get its answer. To continue a conversation, pass the conversation_id a previous call returned."
)


class Answer(TypedDict):
    """What the tool returns: the answer as text, and the id that continues the conversation."""

    answer: str
    conversation_id: str


def tool_name(agent: Agent) -> str:
    """The Agent's name when it is a valid MCP tool name, else `ask_agent`."""
    name = agent.name or ""
    return name if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) else "ask_agent"


def mcp_server(agent: Agent, store: Store) -> MCPServer:
    """An `MCPServer` with one tool: `agent`, its runs kept in `store`."""
    runs = Runs(agent, store)
    server = MCPServer(name=agent.name or "alpineagents", instructions=agent.description)

    @server.tool(name=tool_name(agent), description=agent.description or DESCRIPTION)
    async def ask(prompt: str, ctx: Context, conversation_id: str | None = None) -> Answer:
        state = await _state(runs, prompt, conversation_id)
        before = state.turn
        try:
            live = await runs.start(state)
        except ApiError as error:
            raise ToolError(error.message)
        await _progress(live, ctx, before)
        return _answer(live.state)

    return server


async def _state(runs: Runs, prompt: str, conversation_id: str | None) -> State:
    if not prompt.strip():
        raise ToolError("prompt is empty: ask the agent something")
    try:
        if conversation_id is None:
            return State(messages=[Message.user(prompt)])
        state = await runs.load(conversation_id)
        state.add_message(Message.user(prompt))
        return state
    except ApiError as error:
        raise ToolError(error.message)
    except (TypeError, ValueError) as error:
        raise ToolError(str(error).splitlines()[0])


async def _progress(live: Live, ctx: Context, reported: int) -> None:
    """Report the start of each turn after turn `reported`, until the run ends."""
    while True:
        done = live.done
        turn = live.state.turn
        while reported < turn:
            reported += 1
            await ctx.report_progress(reported, None, f"turn {reported}")
        if done:
            break
        await live.changed(1.0)
    if live.task is not None:
        await asyncio.gather(live.task, return_exceptions=True)


def _answer(state: State) -> Answer:
    error = ending_error(state.history)
    if error is not None and not state.finished and state.stopped is None:
        first = error.splitlines()[0] if error else "error"
        raise ToolError(f"the run ended with an error: {first} (conversation_id {state.id})")
    answer: Any = state.answer
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, default=str)
    return {"answer": text, "conversation_id": state.id}
