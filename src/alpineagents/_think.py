"""The Agent's one-step operations, each written once as a step sequence (03 §4-§7, 00 §4).

`think_steps`, `use_tools_steps`, `compact_steps` and `ask_steps` yield their blocking actions (model call,
tool batch, save) to a driver (`_drive.drive` for the sync method, `_drive.adrive` for its async twin), so both
twins make the same checks, records, notifications and save points.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from alpineagents import _structured
from alpineagents._drive import Steps, save_after_error
from alpineagents._makers import make_request
from alpineagents._runner import arun_tool_calls, run_tool_calls
from alpineagents.errors import CutOffError, OutputError, fix_message
from alpineagents.types import Message, ModelEvent, Reply, Request, Usage

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = [
    "think_start",
    "think_steps",
    "think_now",
    "athink_now",
    "use_tools_start",
    "use_tools_steps",
    "compact_steps",
    "ask_steps",
    "event_recorder",
]


def event_recorder(state: State, reporter: Any) -> Any:
    """The `on_event` callback of a model call: records a `model_event` entry, then tells the reporter."""

    def on_event(event: Any) -> None:
        if not isinstance(event, ModelEvent):
            raise TypeError(
                fix_message(
                    f"on_event takes a ModelEvent (got: {event!r})",
                    "report what happened as a ModelEvent(kind, message, data)",
                    'on_event(ModelEvent("retry", "The stream dropped; starting the reply again"))',
                )
            )
        state._record_model_event(event)
        if reporter is not None:
            reporter.on_model_event(state, event)

    return on_event


def cut_off_error(reply: Reply) -> CutOffError:
    """The `CutOffError` of a reply cut off before it wrote any text or tool call (03 §4 step 11)."""
    who = reply.model or "the model"
    message = fix_message(
        f"the reply of {who} was cut off by its output limit (stop_reason={reply.stop_reason!r}, "
        f"{reply.usage.output_tokens} output tokens) before it wrote any text or tool call, most likely while "
        "thinking. The reply and its usage are recorded",
        "raise the model's max_tokens (or lower its thinking budget), then call think again",
        'agent = agent.copy(model=Anthropic("claude-sonnet-5", max_tokens=32000))',
    )
    return CutOffError(message, reply)


def think_start(agent: Any, state: State) -> tuple[Any, Any]:
    """03 §4 steps 5-6: link the State to `agent` and record `model_request`; return the `(reporter, store)` that
    apply."""
    context = agent._active_context(state)
    if context is None:
        reporter = agent.reporter
        store = agent._store
    else:
        reporter = context.reporter
        store = context.store
    if state._agent is not agent:  # in a run it is linked already: skip the guarded attribute write
        state._attach(agent)
    state._begin_think(agent._model_string)
    return reporter, store


def think_request(agent: Any, state: State, specs: tuple[Any, ...], reporter: Any) -> tuple[Any, ...]:
    """03 §4 steps 7-8: the arguments of the model call `(request, on_text, on_event)`; `on_think_start`."""
    request = agent._model.mark_cache(make_request(agent._system, state.messages, specs, "auto"))
    if reporter is not None:
        reporter.on_think_start(state)
        on_text: Any = partial(reporter.on_text, state)
    else:
        on_text = None
    return (request, on_text, event_recorder(state, reporter))


def think_reply(state: State, reply: Reply, reporter: Any) -> None:
    """03 §4 steps 9-11: record the reply, `on_think_end`, refuse a reply cut off before it wrote anything."""
    state._record_reply(reply)
    if reporter is not None:
        reporter.on_think_end(state, reply)
    if reply.cut_off and not reply.tool_calls and not reply.text.strip():
        raise cut_off_error(reply)


def think_steps(agent: Any, state: State, specs: tuple[Any, ...], reporter: Any, store: Any) -> Steps:
    """One model request on `state` and its recorded reply, after `think_start` (03 §4 steps 7-12).

    `think_now` and `athink_now` are the same sequence for the common case of no store (nothing to save), without
    the step driver.
    """
    model = agent._model
    try:
        if store is not None:
            yield (store.save, store.asave, (state,))
        call = think_request(agent, state, specs, reporter)
        reply = yield (model.respond, model.arespond, call)
        think_reply(state, reply, reporter)
    except GeneratorExit:  # the driver was abandoned: nothing to record
        raise
    except BaseException as error:
        state._record_error(error)
        yield from save_after_error(store, state, error)
        raise
    if store is not None:
        yield (store.save, store.asave, (state,))


def think_now(agent: Any, state: State, specs: tuple[Any, ...], reporter: Any) -> None:
    """`think_steps` without a store, run directly (the sync twin)."""
    try:
        reply = agent._model.respond(*think_request(agent, state, specs, reporter))
        think_reply(state, reply, reporter)
    except BaseException as error:
        state._record_error(error)
        raise


async def athink_now(agent: Any, state: State, specs: tuple[Any, ...], reporter: Any) -> None:
    """`think_steps` without a store, run directly (the async twin)."""
    try:
        reply = await agent._model.arespond(*think_request(agent, state, specs, reporter))
        think_reply(state, reply, reporter)
    except BaseException as error:
        state._record_error(error)
        raise


def use_tools_start(agent: Any, state: State, method: str) -> Any:
    """03 §5 steps 3-4: refuse a finished State, link it to `agent`; return the run context that applies."""
    state._ensure_open(method)
    context = agent._context_for(state)
    if state._agent is not agent:
        state._attach(agent)
    return context


def use_tools_steps(state: State, tools: Any, context: Any) -> Steps:
    """Run every pending call of `state` and record their results, after `use_tools_start` (03 §5 steps 5-7).

    Without a store this is just `run_tool_calls` / `arun_tool_calls` when calls are pending (the Agent calls
    them directly then).
    """
    store = context.store
    if state.pending_calls:
        try:
            yield (run_tool_calls, arun_tool_calls, (state, tools, context))
        except GeneratorExit:  # the driver was abandoned: nothing to record
            raise
        except BaseException as error:
            yield from save_after_error(store, state, error)
            raise
    if store is not None:
        yield (store.save, store.asave, (state,))


def _compact(model: Any, request: Request, instructions: str | None, on_event: Any) -> Any:
    return model.compact(request, instructions, on_event)


async def _acompact(model: Any, request: Request, instructions: str | None, on_event: Any) -> Any:
    return await model.acompact(request, instructions, on_event)


def compact_steps(agent: Any, state: State, instructions: str | None) -> Steps:
    """Replace the messages with the first user message and a model-written summary (03 §6 steps 4-8)."""
    context = agent._active_context(state)
    if context is None:
        reporter = agent.reporter
        store = agent._store
    else:
        reporter = context.reporter
        store = context.store
    state._attach(agent)
    state._begin_compact()
    model = agent._model
    try:
        request = model.mark_cache(Request(agent._system, state.messages, agent._specs, tool_choice="none"))
        reply = yield (_compact, _acompact, (model, request, instructions, event_recorder(state, reporter)))
        summary = reply.text.strip()
        if not summary:
            raise OutputError(
                fix_message(
                    "compact() got an empty summary, so the messages were not changed",
                    "try again, or pass instructions= that say what the summary must keep",
                    'agent.compact(state, instructions="Keep the list of files changed")',
                )
            )
        state._compact_done(summary, reply.usage)
    except GeneratorExit:  # the driver was abandoned: nothing to record
        raise
    except BaseException as error:
        state._end_compact()
        yield from save_after_error(store, state, error)
        raise
    state._end_compact()
    if store is not None:
        yield (store.save, store.asave, (state,))


def ask_steps(agent: Any, state: State, prompt: str, returns: Any, retries: int, method: str) -> Steps:
    """Ask the model a side question about `state` and return the converted answer (03 §7.1, §9)."""
    context = agent._active_context(state)
    reporter = agent.reporter if context is None else context.reporter
    model = agent._model
    messages = [*state._context_for_question(), Message.user(_structured.question_text(prompt, returns))]
    on_event = event_recorder(state, reporter)
    total = Usage()
    replied = False
    found = False
    value: Any = None
    last_error: ValueError | None = None
    try:
        for _ in range(retries + 1):
            request = model.mark_cache(Request(agent._system, tuple(messages), agent._specs, tool_choice="none"))
            if reporter is not None:
                reporter.on_think_start(state)
                on_text: Any = partial(reporter.on_text, state)
            else:
                on_text = None
            reply = yield (model.respond, model.arespond, (request, on_text, on_event))
            replied = True
            total = total + reply.usage
            if reporter is not None:
                reporter.on_think_end(state, reply)
            try:
                value = _structured.parse_reply(reply.text, returns)
            except ValueError as error:
                last_error = error
                messages.append(Message.assistant(reply.text or "(empty reply)"))
                messages.append(Message.user(_structured.retry_text(error)))
                continue
            found = True
            break
    except GeneratorExit:
        raise
    except BaseException:
        if replied:
            state._record_ask(prompt, None, total)
        raise
    if found:
        state._record_ask(prompt, value, total)
        return value
    state._record_ask(prompt, None, total)
    raise OutputError(
        fix_message(
            f"All {retries + 1} answers from {method}() failed to match returns={_structured.type_name(returns)}: "
            f"{last_error}",
            "State the format more clearly in the question, raise retries=, or use a simpler returns format",
            f'plan = agent.{method}(state, "Make a plan as a list of steps", returns=Plan, retries=4)',
        )
    ) from last_error
