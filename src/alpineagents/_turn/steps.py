"""The Agent's one-step operations, each written once as a step sequence: think, use_tools, compact and ask.

Each sequence yields its blocking actions (model call, tool batch, save, MCP connect) to the driver
(`driver.drive` for the sync method, `driver.adrive` for its async twin), so both twins make the same checks,
records, notifications and save points.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from alpineagents import _observe as observe
from alpineagents._runner import arun_tool_calls, run_tool_calls
from alpineagents._turn.budget import budget_guards, release, reserve_request, reserve_tool_calls, tool_calls_done
from alpineagents._turn.context import active_context, context_for
from alpineagents._turn.driver import Action, Steps, save, save_after_error
from alpineagents._turn.sent import request_input
from alpineagents._values.construct import maker
from alpineagents.errors import CutOffError, OutputError, fix_message
from alpineagents.models.base import Model, OnStream
from alpineagents.types import Message, ModelEvent, Reply, Request, Usage

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from alpineagents._turn.budget import BudgetGuard
    from alpineagents._turn.seams import AgentSeam, AnswerFormat, Feed
    from alpineagents._values.budget import Spend
    from alpineagents.models.base import OnEvent
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store

make_request = maker(Request)

__all__ = ["think_steps", "use_tools_steps", "compact_steps", "ask_steps", "event_recorder"]


def _connect(agent: AgentSeam) -> Action | None:
    """The action that connects the Agent's MCP servers when no one holds them (a method called outside a run
    connects them, and they stay connected), or None."""
    if agent._mcp_servers and agent._mcp_users == 0:
        return (agent._mcp_use, agent._amcp_use, ("acquire",))
    return None


class _EventRecorder:
    """The `on_event` callback of a model call: records a `model_event` entry, then tells the reporter.

    An object with two slots rather than a closure: one object kept for the model call instead of four (the
    function, its closure and two cells), with thousands of runs waiting on their model at once.
    """

    __slots__ = ("state", "reporter")

    def __init__(self, state: State, reporter: Reporter | None) -> None:
        self.state = state
        self.reporter = reporter

    def __call__(self, event: ModelEvent) -> None:
        if not isinstance(event, ModelEvent):
            raise TypeError(
                fix_message(
                    f"on_event takes a ModelEvent (got: {event!r})",
                    "report what happened as a ModelEvent(kind, message, data)",
                    'on_event(ModelEvent("retry", "The stream dropped; starting the reply again"))',
                )
            )
        state = self.state
        state._record_model_event(event)
        reporter = self.reporter
        if reporter is not None:
            reporter.on_model_event(state, event)


def event_recorder(state: State, reporter: Reporter | None) -> Callable[[ModelEvent], None]:
    """The `on_event` callback of a model call: records a `model_event` entry, then tells the reporter."""
    return _EventRecorder(state, reporter)


def _respond(
    model: Model, request: Request, on_text: Callable[[str], None] | None, on_event: Callable[[ModelEvent], None]
) -> Reply:
    return model.respond(request, on_text, on_event)


def _arespond(
    model: Model, request: Request, on_text: Callable[[str], None] | None, on_event: Callable[[ModelEvent], None]
) -> Awaitable[Reply]:
    return model.arespond(request, on_text, on_event)  # the model's own coroutine: no frame of ours around it


def _ask_model(
    model: Model, request: Request, on_text: Callable[[str], None] | None, on_event: OnEvent | None
) -> Action:
    """The action of one model request. The model is an argument, not the owner of two bound methods: two objects
    fewer kept while the request waits."""
    return (_respond, _arespond, (model, request, on_text, on_event))


def _reporter_and_store(agent: AgentSeam, state: State) -> tuple[Reporter | None, Store | None]:
    """The reporter and store that apply to `agent`'s call on `state`: its run's, or its own."""
    context = active_context(agent, state)
    if context is None:
        return observe.observed(agent, agent.reporter), agent._store
    return context.reporter, context.store


def _link(state: State, agent: AgentSeam) -> None:
    """Link the State to the Agent that thinks, uses tools or compacts on it (its notifications then go to that
    Agent's reporter). In a run it is linked already: the guarded attribute write is skipped."""
    if state._agent is not agent:
        state._attach(agent)  # type: ignore[arg-type]  # the State names the Agent class, which is an AgentSeam


def _text_callback(reporter: Reporter | None, state: State) -> Callable[[str], None] | None:
    """The `on_text` callback of a model call: each chunk goes to the reporter (None without a reporter), and to
    the stream that follows the run, if any. With a stream it is an `OnStream`, so that an adapter that streams
    thinking or tool-call arguments hands those to the stream too."""
    feed = state._tap
    if feed is not None:
        return _StreamPieces(feed, reporter, state)
    return None if reporter is None else partial(reporter.on_text, state)


class _StreamPieces(OnStream):
    """The `on_text` of a model call that a stream follows: text to the stream and the reporter; thinking and
    tool-call arguments to the stream (a `Reporter` has no hooks for them)."""

    __slots__ = ("feed", "reporter", "state")

    def __init__(self, feed: Feed, reporter: Reporter | None, state: State) -> None:
        self.feed = feed
        self.reporter = reporter
        self.state = state

    def __call__(self, chunk: str) -> None:
        self.feed.text(self.state, chunk)
        if self.reporter is not None:
            self.reporter.on_text(self.state, chunk)

    def thinking(self, chunk: str) -> None:
        self.feed.thinking(self.state, chunk)

    def tool_args(self, call_id: str, name: str, delta: str) -> None:
        self.feed.tool_args(self.state, call_id, name, delta)


def cut_off_error(reply: Reply) -> CutOffError:
    """The `CutOffError` of a reply cut off by its output limit before it wrote any text or tool call."""
    who = reply.model or "the model"
    message = fix_message(
        f"the reply of {who} was cut off by its output limit (stop_reason={reply.stop_reason!r}, "
        f"{reply.usage.output_tokens} output tokens) before it wrote any text or tool call, most likely while "
        "thinking. The reply and its usage are recorded",
        "raise the model's max_tokens (or lower its thinking budget), then call think again",
        'agent = agent.copy(model=Anthropic("claude-sonnet-5", max_tokens=32000))',
    )
    return CutOffError(message, reply)


def _record_reply(state: State, reply: Reply, reporter: Reporter | None) -> None:
    """Record the reply, then `on_think_end`; refuse a reply cut off before it wrote anything."""
    state._record_reply(reply)
    if reporter is not None:
        reporter.on_think_end(state, reply)
    if reply.cut_off and not reply.tool_calls and not reply.text.strip():
        raise cut_off_error(reply)


def think_steps(agent: AgentSeam, state: State, tools: Iterable[Any] | None) -> Steps:
    """One model request on `state` showing `tools` (None: all the Agent's tools), and its recorded reply.

    Connects the MCP servers if needed, chooses the specs to show, links the State to `agent` and records
    `model_request` (which refuses a finished State, pending calls, another waiting think and an empty context);
    saves; sends the request with `on_think_start` before it; records the reply and `on_think_end`; saves. Any
    exception after the request was recorded is recorded as an `error` entry (taking the request back when no
    reply came), saved, and re-raised unchanged. In a run with a budget, the request's estimate is reserved
    first; a request that would pass the budget is not recorded nor sent: the wait for a raise is (and saved).
    """
    connect = _connect(agent)
    if connect is not None:
        yield connect
    specs = agent._specs if tools is None else agent._choose_specs(tools)
    reporter, store = _reporter_and_store(agent, state)
    _link(state, agent)
    reserved = None
    guards = budget_guards(agent, state)
    if guards:  # the request's estimate is reserved on the run's budgets, and given back once it is answered
        reserved = reserve_request(agent, state, Request(agent._system, state.messages, specs), guards)
        if reserved is None:  # it would pass a budget: the run waits for a raise (recorded), nothing is sent
            if store is not None:
                yield save(store, state)
            return
    try:
        state._begin_think(agent._model_string, request_input(agent, state, specs))
    except BaseException:
        if reserved is not None:
            release(reserved)
        raise
    model = agent._model
    try:
        if store is not None:
            yield save(store, state)
        request = model.mark_cache(make_request(agent._system, state.messages, specs, "auto"))
        if reporter is not None:
            reporter.on_think_start(state)
        on_event = event_recorder(state, reporter)
        reply = yield _ask_model(model, request, _text_callback(reporter, state), on_event)
        _record_reply(state, reply, reporter)
    except GeneratorExit:  # the driver was abandoned: nothing to record
        raise
    except BaseException as error:
        state._record_error(error)
        if (observer := observe.OBSERVER) is not None:
            observer.think_failed(state, error)
        yield from save_after_error(store, state, error)
        raise
    finally:
        if reserved is not None:
            release(reserved)
    if store is not None:
        yield save(store, state)


def use_tools_steps(agent: AgentSeam, state: State, method: str) -> Steps:
    """Run every pending call of `state` and record one result per call, with the reporter, permissions and
    store that apply; save after, also after an exception (which is re-raised unchanged)."""
    connect = _connect(agent)
    if connect is not None:
        yield connect
    state._ensure_open(method)
    context = context_for(agent, state)
    _link(state, agent)
    store = context.store
    reserved = None
    if state.pending_calls and context.budgets:  # one tool call each is reserved on the run's budgets first
        reserved = reserve_tool_calls(state, context.budgets)
        if reserved is None:  # they would pass a budget: none of them runs, they wait for a raise (recorded)
            if store is not None:
                yield save(store, state)
            return
    if state.pending_calls:
        start = state._acc.history_len
        try:
            yield (run_tool_calls, arun_tool_calls, (state, agent._tool_map, context))
        except GeneratorExit:  # the driver was abandoned: nothing to record
            raise
        except BaseException as error:
            yield from save_after_error(store, state, error)
            raise
        finally:
            if reserved is not None:
                tool_calls_done(state, reserved, start)
    if store is not None:
        yield save(store, state)


def _compact(model: Model, request: Request, instructions: str | None, on_event: Callable[[ModelEvent], None]) -> Reply:
    return model.compact(request, instructions, on_event)


def _acompact(
    model: Model, request: Request, instructions: str | None, on_event: Callable[[ModelEvent], None]
) -> Awaitable[Reply]:
    return model.acompact(request, instructions, on_event)  # the model's own coroutine: no frame of ours around it


def _empty_summary() -> OutputError:
    return OutputError(
        fix_message(
            "compact() got an empty summary, so the messages were not changed",
            "try again, or pass instructions= that say what the summary must keep",
            'agent.compact(state, instructions="Keep the list of files changed")',
        )
    )


def compact_steps(agent: AgentSeam, state: State, instructions: str | None) -> Steps:
    """Replace the messages with the first user message and a model-written summary; save at the end (also
    after a failure). An empty summary is an `OutputError` and leaves the messages unchanged. In a run with a
    budget, the summary request's estimate is reserved first; one that would pass the budget is not sent: the
    run waits for a raise before compacting (the wait is recorded and saved, the messages are unchanged)."""
    connect = _connect(agent)
    if connect is not None:
        yield connect
    reporter, store = _reporter_and_store(agent, state)
    _link(state, agent)
    state._begin_compact()
    model = agent._model
    reserved = None
    try:
        request = Request(agent._system, state.messages, agent._specs, tool_choice="none")
        guards = budget_guards(agent, state)
        if guards:  # the summary request is reserved on the run's budgets, and given back once it is answered
            reserved = reserve_request(agent, state, Model._summary_request(request, instructions), guards)
            if reserved is None:  # it would pass a budget: the run waits for a raise (recorded), nothing is sent
                state._end_compact()
                if store is not None:
                    yield save(store, state)
                return
        on_event = event_recorder(state, reporter)
        reply = yield (_compact, _acompact, (model, model.mark_cache(request), instructions, on_event))
        summary = reply.text.strip()
        if not summary:
            raise _empty_summary()
        state._compact_done(summary, reply.usage)
    except GeneratorExit:  # the driver was abandoned: nothing to record
        raise
    except BaseException as error:
        state._end_compact()
        yield from save_after_error(store, state, error)
        raise
    finally:
        if reserved is not None:
            release(reserved)
    state._end_compact()
    if store is not None:
        yield save(store, state)


def _no_fit(method: str, attempts: int, answers: AnswerFormat, error: ValueError | None) -> OutputError:
    return OutputError(
        fix_message(
            f"All {attempts} answers from {method}() failed to match returns={answers.name}: {error}",
            "State the format more clearly in the question, raise retries=, or use a simpler returns format",
            f'plan = agent.{method}(state, "Make a plan as a list of steps", returns=Plan, retries=4)',
        )
    )


def ask_steps(agent: AgentSeam, state: State, prompt: str, answers: AnswerFormat, retries: int, method: str) -> Steps:
    """Ask the model a side question about `state` and return the answer `answers` reads from the reply.

    Up to `retries + 1` requests: a reply that does not fit goes back to the model with the reason. One `ask`
    entry records the question, the answer (None when none fitted) and the usage of every request; nothing is
    recorded when no reply came. The context does not change.
    """
    connect = _connect(agent)
    if connect is not None:
        yield connect
    reporter = _reporter_and_store(agent, state)[0]
    model = agent._model
    messages = [*state._context_for_question(), Message.user(answers.question(prompt))]
    on_event = event_recorder(state, reporter)
    total = Usage()
    replied = False
    found = False
    value: Any = None
    last_error: ValueError | None = None
    guards = budget_guards(agent, state)
    reserved: list[tuple[list[BudgetGuard], Spend]] = []  # given back once the ask (and its usage) is recorded
    try:
        for _ in range(retries + 1):
            request = Request(agent._system, tuple(messages), agent._specs, tool_choice="none")
            if guards:  # in a run with a budget: reserved first, and one that would pass it is not sent
                taken = reserve_request(agent, state, request, guards, wait=False)
                assert taken is not None  # wait=False: it raises instead
                reserved.append(taken)
            if reporter is not None:
                reporter.on_think_start(state)
            reply = yield _ask_model(model, model.mark_cache(request), _text_callback(reporter, state), on_event)
            replied = True
            total = total + reply.usage
            if reporter is not None:
                reporter.on_think_end(state, reply)
            try:
                value = answers.parse(reply.text)
            except ValueError as error:
                last_error = error
                messages.append(Message.assistant(reply.text or "(empty reply)"))
                messages.append(Message.user(answers.retry(error)))
                continue
            found = True
            break
    except GeneratorExit:
        raise
    except BaseException as error:
        if (observer := observe.OBSERVER) is not None:
            observer.think_failed(state, error)
        if replied:
            state._record_ask(prompt, None, total)
        raise
    else:
        state._record_ask(prompt, value if found else None, total)
    finally:
        for taken in reserved:
            release(taken)
    if found:
        return value
    raise _no_fit(method, retries + 1, answers, last_error) from last_error
