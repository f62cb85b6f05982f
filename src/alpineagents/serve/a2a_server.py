"""An Agent as an A2A server (the `a2a-sdk` package): its agent card, `SendMessage` and `SendStreamingMessage`.

The A2A context id is the State id: a message in a context the store knows continues that run, any other starts
a new run under that id. A task goes SUBMITTED, WORKING, then its answer arrives as the chunks of one artifact
(`answer`, each chunk appended, the reply's text as it is written), and the task ends COMPLETED with the answer as
its message, or FAILED with the first line of the run's error. Cancelling the task cancels the run (its State is
saved, its pending calls closed).
"""

from __future__ import annotations

import asyncio

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from alpineagents.agent import Agent
from alpineagents.serve.errors import ApiError
from alpineagents.serve.feed import Cursor, End, Entry, Text, items
from alpineagents.serve.runs import Runs
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import Message, ModelReplyEntry

ARTIFACT = "answer"


class AgentExecutorForRuns(AgentExecutor):
    """Runs each A2A message as a run of the Agent, its text streamed as artifact chunks."""

    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        try:
            state = await self._state(task.context_id, context.get_user_input())
            after = len(state.history)
            live = await self.runs.start(state)
        except ApiError as error:
            await updater.failed(updater.new_agent_message([new_text_part(error.message)]))
            return
        await updater.start_work()
        first = True
        async for item in items(live, Cursor(after)):
            text = _text_of(item)
            if text:
                await updater.add_artifact(
                    [new_text_part(text)], artifact_id=ARTIFACT, name=ARTIFACT, append=not first, last_chunk=False
                )
                first = False
            if isinstance(item, End):
                await self._finish(updater, item)

    async def _state(self, context_id: str, prompt: str) -> State:
        if context_id in self.runs.live or await _exists(self.runs, context_id):
            state = await self.runs.load(context_id)
            state.add_message(Message.user(prompt))
            return state
        try:
            return State(id=context_id, messages=[Message.user(prompt)])
        except ValueError as error:
            raise ApiError(400, "bad_request", str(error).splitlines()[0])

    async def _finish(self, updater: TaskUpdater, end: End) -> None:
        if end.failed:
            first = end.error.splitlines()[0] if end.error else "error"
            await updater.failed(updater.new_agent_message([new_text_part(f"the run ended with an error: {first}")]))
            return
        answer = end.answer if isinstance(end.answer, str) else str(end.answer)
        await updater.complete(updater.new_agent_message([new_text_part(answer)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None and task.context_id in self.runs.live:
            self.runs.cancel(task.context_id)
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def _exists(runs: Runs, state_id: str) -> bool:
    return await asyncio.to_thread(runs.store.read, state_id) is not None


def _text_of(item: object) -> str:
    if isinstance(item, Text):
        return item.delta
    if isinstance(item, Entry) and isinstance(item.entry, ModelReplyEntry):
        return item.entry.content.message.text[item.skip :]
    return ""


def agent_card(agent: Agent, url: str) -> AgentCard:
    """The card that describes `agent` at `url` (JSON-RPC, streaming, text in and out)."""
    name = agent.name or "alpineagents agent"
    return AgentCard(
        name=name,
        description=agent.description or "An alpineagents Agent.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="ask", name=name, description=agent.description or "Answers a request.", tags=["agent"])],
    )


def a2a_app(agent: Agent, store: Store, url: str) -> Starlette:
    """A Starlette app serving `agent` over A2A at `url` (the agent card at `/.well-known/agent-card.json`)."""
    runs = Runs(agent, store)
    card = agent_card(agent, url)
    handler = DefaultRequestHandler(
        agent_executor=AgentExecutorForRuns(runs), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
