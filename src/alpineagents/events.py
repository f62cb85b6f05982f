"""The events of a run, as ``agent.stream(...)``, ``agent.astream(...)`` and a store's ``follow`` give them.

Every event is a frozen value that says where it belongs:

- ``state_id``: the State it happened in (a subagent's State for a subagent's event);
- ``path``: the State ids from the top State of the stream down to ``state_id`` (``(state_id,)`` for the top
  State itself; a subagent's events have the ids of every State above it first);
- ``position``: the index in that State's history of the entry the event comes from. Events that come before
  their entry exists (a ``TextDelta`` while the model writes, a ``ThinkingDelta``, a ``ToolCallArgsDelta``) and
  ``RunEnded`` carry the position of the latest entry recorded before them.

Most events are computed from one history entry, by ``events_from_history``, the same function for a live run and
for a history read back later: the events a stream yields, with its deltas merged, are exactly the events of the
history it produced, in order. That is what makes a stream resumable: ``agent.stream(state, after=N)`` (or
``store.follow(state_id, after=N)``) first yields the events of the entries after position ``N`` (there, a reply's
text comes whole, as one ``TextDelta``), then the live ones. A page that reconnects passes the ``position`` of the
last event of the top State it showed, and drops the text of a reply it had not seen end (no ``ReplyEnded`` yet):
that text comes again whole. A stream's replay, and a follower, also give its subagents' runs inline, where the
live stream gave them (``events_of_state``, one rule in ``replay_events``), so the page likewise drops the
subagent events it showed after that last top-level event: they come again.

Which entry gives which events (one entry gives its events in the order listed):

==================  =============================================================================================
entry               events
==================  =============================================================================================
``run_start``       ``RunStarted``
``user``/``notice`` ``MessageAdded``
``model_request``   ``RequestSent``
``model_reply``     ``TextDelta`` (its whole text, when it has text and the text did not stream),
                    ``ToolCallStarted`` for each call, ``ReplyEnded`` (usage, model, stop reason)
``model_event``     ``ModelEventReported``
``tool_result``     ``ToolCallEnded``
``ask``/``human``   ``Exchanged``; an approval record gives ``ApprovalNeeded`` or ``ApprovalDecided`` instead,
                    a budget record ``BudgetNeeded`` or ``BudgetRaised`` (the limits a run starts with:
                    ``Exchanged``)
``context_change``  ``ContextChanged``
``stop``            ``StopRecorded``
``extra_data``      ``ExtraDataChanged``
``error``           ``ErrorRecorded``
==================  =============================================================================================

Only a live run gives ``RunEnded`` (the end of a run is not an entry) and the deltas.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from alpineagents._values.approval import (
    ApprovalDecision,
    StoppedForApproval,
    WaitingCall,
    children_named,
    read_decision,
    read_waiting,
    waiting_call_id,
)
from alpineagents._values.budget import FOR_BUDGET, BudgetRaise, BudgetWait, read_raise, read_wait
from alpineagents._values.construct import as_tuples, value
from alpineagents._values.numbers import is_whole
from alpineagents.errors import fix_message
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ExchangeEntry,
    HistoryEntry,
    Message,
    ModelEvent,
    ModelReplyEntry,
    Stopped,
    ToolCall,
    ToolOutcomeKind,
    ToolResultContent,
    Usage,
)

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = [
    "Event",
    "StreamEvent",
    "RunStarted",
    "MessageAdded",
    "RequestSent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallStarted",
    "ToolCallArgsDelta",
    "ReplyEnded",
    "ToolCallEnded",
    "ContextChanged",
    "ModelEventReported",
    "Exchanged",
    "ApprovalNeeded",
    "ApprovalDecided",
    "BudgetNeeded",
    "BudgetRaised",
    "StopRecorded",
    "ExtraDataChanged",
    "ErrorRecorded",
    "RunEnded",
    "LIVE_ONLY",
    "events_from_history",
    "events_of_state",
]


@value(kw_only=True)
class Event:
    """What every event carries: where it belongs. Subclasses add what happened."""

    state_id: str
    """The id of the State the event happened in."""
    path: tuple[str, ...]
    """The State ids from the top State of the stream down to ``state_id`` (``(state_id,)`` at the top)."""
    position: int
    """The history index of the entry the event comes from (for a delta or ``RunEnded``: of the latest entry
    recorded before it; ``-1`` before any)."""

    if TYPE_CHECKING:  # the generated __init__ also takes a list for path

        def __init__(self, *, state_id: str, path: Iterable[str], position: int) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "path")

    @property
    def depth(self) -> int:
        """0 for the top State's events, 1 for a subagent's, and so on."""
        return len(self.path) - 1


@value(kw_only=True)
class RunStarted(Event):
    """A run started on the State (a ``run_start`` entry)."""

    agent: AgentInfo
    """The Agent that runs it."""
    parent_call_id: str | None = None
    """For a subagent run: the id of the tool call of the State above that started it."""


@value(kw_only=True)
class MessageAdded(Event):
    """A user message or a notice joined the conversation (a ``user``/``notice`` entry)."""

    message: Message
    """The message."""


@value(kw_only=True)
class RequestSent(Event):
    """A model request of ``think`` started (a ``model_request`` entry)."""

    turn: int
    """The turn this request starts."""
    model: str
    """The model asked, ``provider/name``."""


@value(kw_only=True)
class TextDelta(Event):
    """Model text: a piece as it streams in a live run; the whole text of a reply when read from history (or when
    the model did not stream it). Consecutive deltas a reader has not read yet may come merged into one."""

    text: str
    """The text."""


@value(kw_only=True)
class ThinkingDelta(Event):
    """A piece of the model's thinking as it streams, where the model adapter reports it (live only): the
    reasoning text or summary the provider streams, which the reply keeps in its provider's own blocks."""

    text: str
    """The text."""


@value(kw_only=True)
class ToolCallStarted(Event):
    """The model asked for a tool call (one per call of a ``model_reply``, in request order). The tool runs later,
    unless a permission refuses it or holds it for approval; ``ToolCallEnded`` closes it."""

    call: ToolCall
    """The call, with its parsed arguments."""


@value(kw_only=True)
class ToolCallArgsDelta(Event):
    """A piece of a tool call's arguments as the model writes them, where the adapter reports it (live only).

    The first one of a call comes as soon as the model named its tool (its ``delta`` may be empty): a page can
    show the call begin there. The deltas of one call, joined, are the JSON text of its arguments;
    ``ToolCallStarted`` follows with them parsed, when the reply is recorded."""

    call_id: str
    """The id of the call being written (the id its ``ToolCall`` has in the reply)."""
    name: str
    """The name of the tool it calls."""
    delta: str
    """The next piece of the JSON text of its arguments."""


@value(kw_only=True)
class ReplyEnded(Event):
    """A reply was recorded: its usage, the model that answered and why it ended (after its text and calls)."""

    turn: int
    """The turn of the reply."""
    usage: Usage
    """The usage of this one request."""
    model: str | None = None
    """The model that answered, as the provider reported it."""
    stop_reason: str | None = None
    """The provider's stop reason, e.g. ``"end_turn"`` or ``"tool_use"``."""


@value(kw_only=True)
class ToolCallEnded(Event):
    """A tool call was closed (a ``tool_result`` entry), however it ended."""

    call: ToolCall
    """The call."""
    result: ToolResultContent
    """The result the model reads."""
    outcome: ToolOutcomeKind
    """How it ended (``done``, ``error``, ``denied``, ...)."""
    late: bool = False
    """True for a result that arrived after its call was already closed."""
    child_ids: tuple[str, ...] = ()
    """The ids of the subagent States the call started."""


@value(kw_only=True)
class ContextChanged(Event):
    """The context was imported, compacted, had tool results cleared, or was restored."""

    change: ContextChange
    """What changed."""


@value(kw_only=True)
class ModelEventReported(Event):
    """The model went through something while answering (a retry, a fallback): a ``model_event`` entry."""

    event: ModelEvent
    """The event."""


@value(kw_only=True)
class Exchanged(Event):
    """A question and its answer: ``agent.ask`` (``"ask"``) or a person (``"human"``)."""

    kind: Literal["ask", "human"]
    """``"ask"`` or ``"human"``."""
    question: str
    """The question."""
    answer: Any
    """The answer (JSON), or ``None`` when none came."""


@value(kw_only=True)
class ApprovalNeeded(Event):
    """A tool call waits for a person's decision; the run stops before any tool of its turn runs."""

    waiting: WaitingCall
    """The call, its tool, the permission that asked, the question, its place and its expiry."""


@value(kw_only=True)
class ApprovalDecided(Event):
    """A person approved or denied a waiting call (``state.approve``/``state.deny``)."""

    decision: ApprovalDecision
    """The decision: which call, approved or not, by whom, when, the note and the reason."""


@value(kw_only=True)
class BudgetNeeded(Event):
    """The next step (a model request, or a turn's tool calls) would pass the budget: the run stops and waits
    for ``state.raise_budget(...)``."""

    wait: BudgetWait
    """Which limit, what the step needs, what is left, the question for a person and its place."""


@value(kw_only=True)
class BudgetRaised(Event):
    """A person raised the budget (``state.raise_budget``)."""

    raised: BudgetRaise
    """The amounts, whose budget, by whom, when and the note."""


@value(kw_only=True)
class StopRecorded(Event):
    """The run was set to stop, and why (a ``stop`` entry); ``stopped`` is ``None`` for a stop being cleared."""

    stopped: Stopped | StoppedForApproval | None
    """Why it stops, or ``None``."""


@value(kw_only=True)
class ExtraDataChanged(Event):
    """``state.extra_data`` changed."""

    changed: Mapping[str, Any]
    """The keys set, with their new JSON values."""
    removed: tuple[str, ...] = ()
    """The keys deleted."""


@value(kw_only=True)
class ErrorRecorded(Event):
    """An exception was recorded (an ``error`` entry; right after ``RequestSent``: the request failed)."""

    text: str
    """Its type and message, e.g. ``"TimeoutError: timed out"``."""
    call: ToolCall | None = None
    """The call whose tool or permission raised it, or ``None``."""


@value(kw_only=True)
class RunEnded(Event):
    """A run ended (live only): the last event of a stream's run."""

    stopped: Stopped | StoppedForApproval | None = None
    """``state.stopped`` at the end (``StoppedForApproval`` when calls wait for a decision)."""
    error: str | None = None
    """The exception that ended the run, as ``"Type: message"``, or ``None``."""
    waiting: tuple[WaitingCall, ...] = ()
    """The calls waiting for a decision at the end (with their places), as ``state.awaiting_approval``."""


StreamEvent = (
    RunStarted
    | MessageAdded
    | RequestSent
    | TextDelta
    | ThinkingDelta
    | ToolCallStarted
    | ToolCallArgsDelta
    | ReplyEnded
    | ToolCallEnded
    | ContextChanged
    | ModelEventReported
    | Exchanged
    | ApprovalNeeded
    | ApprovalDecided
    | BudgetNeeded
    | BudgetRaised
    | StopRecorded
    | ExtraDataChanged
    | ErrorRecorded
    | RunEnded
)
"""Any event of a stream: branch on its class (``match event: case TextDelta(text=text): ...``)."""

LIVE_ONLY: tuple[type[Event], ...] = (ThinkingDelta, ToolCallArgsDelta, RunEnded)
"""The events only a live run gives (besides the pieces of ``TextDelta`` a streaming model gives)."""


def _pending_calls(history: list[HistoryEntry], end: int) -> dict[str, ToolCall]:
    """The calls of the latest reply before ``end``, by id (a wait record names its call by id)."""
    for index in range(end - 1, -1, -1):
        entry = history[index]
        if entry.kind == "model_reply":
            return {call.id: call for call in entry.content.message.tool_calls}
    return {}


def _exchange_events(entry: ExchangeEntry, where: dict[str, Any], calls: dict[str, ToolCall]) -> Iterator[Event]:
    wait = read_wait(entry, where["path"])
    if wait is not None:
        yield BudgetNeeded(wait=wait, **where)
        return
    raised = read_raise(entry)
    if raised is not None:
        yield BudgetRaised(raised=raised, **where)
        return
    decision = read_decision(entry)
    if decision is not None:
        yield ApprovalDecided(decision=decision, **where)
        return
    call_id = waiting_call_id(entry)
    if call_id is not None and call_id in calls and not entry.content.answer.get(FOR_BUDGET):
        waiting = read_waiting(entry, calls[call_id], where["path"])
        if waiting is not None:
            yield ApprovalNeeded(waiting=waiting, **where)
            return
    yield Exchanged(kind=entry.kind, question=entry.content.question, answer=entry.content.answer, **where)


def _reply_events(entry: ModelReplyEntry, where: dict[str, Any], streamed: bool) -> Iterator[Event]:
    reply = entry.content
    if not streamed:
        text = reply.message.text
        if text:
            yield TextDelta(text=text, **where)
    for call in reply.message.tool_calls:
        yield ToolCallStarted(call=call, **where)
    yield ReplyEnded(turn=entry.turn, usage=reply.usage, model=reply.model, stop_reason=reply.stop_reason, **where)


def entry_events(
    entry: HistoryEntry,
    where: dict[str, Any],
    calls: dict[str, ToolCall],
    *,
    streamed: bool = False,
) -> Iterator[Event]:
    """The events of one entry (see the module's table), by its ``kind``. ``where`` holds ``state_id``, ``path``
    and ``position``; ``calls`` the calls of the latest reply by id; ``streamed`` that a reply's text came already
    as deltas."""
    match entry.kind:
        case "model_reply":
            yield from _reply_events(entry, where, streamed)
        case "tool_result":
            yield ToolCallEnded(
                call=entry.call,
                result=entry.content,
                outcome=entry.outcome,
                late=entry.late,
                child_ids=entry.child_ids,
                **where,
            )
        case "model_request":
            yield RequestSent(turn=entry.turn, model=entry.content, **where)
        case "user" | "notice":
            yield MessageAdded(message=entry.message, **where)
        case "model_event":
            yield ModelEventReported(event=entry.content, **where)
        case "ask" | "human":
            yield from _exchange_events(entry, where, calls)
        case "context_change":
            yield ContextChanged(change=entry.content, **where)
        case "run_start":
            yield RunStarted(agent=entry.content, parent_call_id=entry.parent_call_id, **where)
        case "stop":
            yield StopRecorded(stopped=entry.content, **where)
        case "extra_data":
            yield ExtraDataChanged(changed=entry.content, removed=entry.removed, **where)
        case "error":
            yield ErrorRecorded(text=entry.content, call=entry.call, **where)


def events_from_history(
    history: Iterable[HistoryEntry],
    state_id: str,
    *,
    path: Iterable[str] | None = None,
    after: int | None = None,
) -> Iterator[StreamEvent]:
    """The events of a history: those of every entry after position ``after`` (all of them when ``None``), in
    order, each with ``state_id``, ``path`` (default ``(state_id,)``) and its position. A reply's text comes whole,
    as one ``TextDelta``. No ``RunEnded`` and no deltas: those exist only live.

    Raises:
        ValueError: ``after`` is below -1.
    """
    entries = list(history)
    start = 0 if after is None else checked_after(after) + 1
    shown = (state_id,) if path is None else tuple(path)
    calls: dict[str, ToolCall] = _pending_calls(entries, start) if start else {}
    for position in range(start, len(entries)):
        entry = entries[position]
        if entry.kind == "model_reply":
            calls = {call.id: call for call in entry.content.message.tool_calls}
        where = {"state_id": state_id, "path": shown, "position": position}
        yield from entry_events(entry, where, calls)  # type: ignore[misc]  # every event is a StreamEvent


def events_of_state(state: State, *, after: int | None = None) -> Iterator[StreamEvent]:
    """The events of a State's history as it is now, after position ``after`` (all when ``None``), with the events
    of its subagents' runs inline, where a live stream gives them: what ``agent.stream(state, after=N)`` yields
    before the live run.

    A subagent's run happens while the call that started it is open, so its events come right before the entry of
    this State that ends that call's part in the run: the wait record of a call held because its subagent waits
    for approval, or the call's result. A subagent held and resumed ran once per such entry (its runs are the parts
    of its history that start at a ``run_start``; what it recorded before its first run no stream showed). Its
    events carry its place (``path``) and positions in its own history, and its own subagents come inline the same
    way. Subagents that ran at the same time (parallel calls) come one after the other, each whole. Subagent
    States not in memory are loaded from the State's store (``state.child``).

    Raises:
        ValueError: ``after`` is below -1.
    """
    start = 0 if after is None else checked_after(after) + 1
    return replay_events(state, start)


class Replayed(Protocol):
    """What a replay with subagents inline needs of a State: its id, its history, and its subagents by id (a
    ``State``, or what a store's follower read of one)."""

    @property
    def id(self) -> str: ...

    @property
    def history(self) -> Sequence[HistoryEntry]: ...

    def child(self, child_id: str) -> Replayed: ...


def replay_events(top: Replayed, start: int, *, growing: bool = False) -> Iterator[StreamEvent]:
    """The events of ``top``'s history from position ``start``, with its subagents' runs inline (the rule of
    ``events_of_state``). ``growing``: the history may still grow (a follower reading a run that goes on), so a
    wait record ends only the subagent run that stopped there, never a run resumed after it (its call's result,
    still to come, ends that one); without it the last entry naming a subagent ends all its runs left."""
    return _Tree(growing).events(top, (top.id,), start, None)


class _Tree:
    """Replays a State's history with its subagents' runs inline (see ``events_of_state``)."""

    def __init__(self, growing: bool = False) -> None:
        self.children: dict[str, Replayed] = {}
        self.growing = growing

    def events(self, state: Replayed, path: tuple[str, ...], start: int, stop: int | None) -> Iterator[StreamEvent]:
        entries = state.history
        end = len(entries) if stop is None else stop
        held: dict[str, list[int]] = {}  # each subagent: the positions of the entries that end its runs
        for position, entry in enumerate(entries):
            for child_id in children_named(entry):
                held.setdefault(child_id, []).append(position)
        calls: dict[str, ToolCall] = _pending_calls(list(entries), start) if start else {}
        for position in range(start, end):
            entry = entries[position]
            if entry.kind == "model_reply":
                calls = {call.id: call for call in entry.content.message.tool_calls}
            for child_id in children_named(entry):
                ends = held[child_id]
                number = ends.index(position)
                last = number == len(ends) - 1 and (not self.growing or entry.kind == "tool_result")
                yield from self._runs_ended_by(state, path, child_id, number, last)
            where = {"state_id": state.id, "path": path, "position": position}
            yield from entry_events(entry, where, calls)  # type: ignore[misc]  # every event is a StreamEvent

    def _runs_ended_by(
        self, state: Replayed, path: tuple[str, ...], child_id: str, number: int, last: bool
    ) -> Iterator[StreamEvent]:
        """The events of the subagent's run that the entry number ``number`` naming it ended (``last``: that entry
        ends all the runs left)."""
        child = self.children.get(child_id)
        if child is None:
            child = self.children[child_id] = state.child(child_id)
        history = child.history
        starts = [index for index, entry in enumerate(history) if entry.kind == "run_start"]
        bounds = [*starts[1:], len(history)]
        for begin, end in list(zip(starts, bounds, strict=True))[number : None if last else number + 1]:
            yield from self.events(child, (*path, child_id), begin, end)


def checked_after(after: object) -> int:
    if not is_whole(after):
        raise TypeError(
            fix_message(
                f"after= takes the position (an int) of the last event already shown (got: {after!r})",
                "pass event.position of the last event the reader got, or leave it out",
                "agent.stream(state, after=last_event.position)",
            )
        )
    if after < -1:
        raise ValueError(
            fix_message(
                f"after= is a history position, -1 or more (got: {after})",
                "pass event.position of the last event the reader got (-1: from the start)",
                "agent.stream(state, after=last_event.position)",
            )
        )
    return after
