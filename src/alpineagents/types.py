"""The data objects that the other classes take and return.

Every class here is a frozen dataclass (``ToolOutcomeKind`` is a ``StrEnum``). Values are normalized when built
(lists become tuples, JSON values are deep-frozen), so a value built in code equals the same value loaded from a
store. Nothing here does I/O except ``Image.from_path``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from alpineagents._frozen import FrozenDict
from alpineagents._values.approval import ApprovalDecision, StoppedForApproval, WaitingCall
from alpineagents._values.budget import Budget, BudgetRaise, BudgetStatus, BudgetWait, StoppedForBudget
from alpineagents._values.construct import as_tuples, freeze_fields, value
from alpineagents._values.content import (
    IMAGE_TYPES,
    INVALID_ARGS_KEY,
    NOTICE_PREFIX,
    TRUNCATED_ARGS_MESSAGE,
    Block,
    Image,
    Message,
    RawBlock,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolResultContent,
    format_call,
    result_text,
)
from alpineagents._values.cut_off import CUT_OFF_STOP_REASONS, is_cut_off
from alpineagents._values.request_input import RequestInput
from alpineagents._values.usage import Price, Usage
from alpineagents.errors import fix_message

__all__ = [
    "TextBlock",
    "Image",
    "ToolCall",
    "ToolResultBlock",
    "ToolResultContent",
    "RawBlock",
    "Block",
    "Message",
    "ToolSpec",
    "Request",
    "Reply",
    "Usage",
    "Price",
    "HistoryKind",
    "HistoryEntry",
    "MessageEntry",
    "ModelRequestEntry",
    "ModelReplyEntry",
    "ModelEventEntry",
    "ToolResultEntry",
    "ExchangeEntry",
    "ContextChangeEntry",
    "RunStartEntry",
    "StopEntry",
    "ExtraDataEntry",
    "ErrorEntry",
    "Exchange",
    "ContextChangeKind",
    "ContextChange",
    "AgentInfo",
    "ModelEvent",
    "ToolOutcomeKind",
    "ToolOutcome",
    "StoppedByUntil",
    "StoppedByLimit",
    "StoppedByFinish",
    "StoppedByPermission",
    "Stopped",
    "NOTICE_PREFIX",
    "INVALID_ARGS_KEY",
    "TRUNCATED_ARGS_MESSAGE",
    "CUT_OFF_STOP_REASONS",
    "format_call",
    "result_text",
    "IMAGE_TYPES",
    "StoppedForApproval",
    "WaitingCall",
    "ApprovalDecision",
    "RequestInput",
    "StoppedForBudget",
    "Budget",
    "BudgetWait",
    "BudgetRaise",
    "BudgetStatus",
]

HistoryKind = Literal[
    "user",
    "notice",
    "model_request",
    "model_reply",
    "model_event",
    "tool_result",
    "ask",
    "human",
    "context_change",
    "run_start",
    "stop",
    "extra_data",
    "error",
]
"""The ``kind`` of a history entry (13 values)."""

ContextChangeKind = Literal["compact", "clear_tool_results", "import", "restore"]
"""The ``kind`` of a ``ContextChange``."""

_set = object.__setattr__


def _now() -> datetime:
    """The clock for history time stamps: the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def _stamp() -> datetime:
    # Looks ``_now`` up on the module at each call, so replacing ``alpineagents.types._now`` takes effect.
    return _now()


# ---------------------------------------------------------------------------------------------------------------
# Requests, replies, usage


@value
class ToolSpec:
    """One tool as shown to the model. ``input_schema`` is a JSON Schema kept as the dict given."""

    name: str
    description: str
    input_schema: dict[str, Any]


@value
class Request:
    """A request the Agent sends to the Model. Model settings (``max_tokens`` etc.) belong to the Model."""

    system: str | None
    """The system prompt, or ``None``."""
    messages: tuple[Message, ...]
    """The context to send."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools shown to the model."""
    tool_choice: Literal["auto", "none"] = "auto"
    """``"auto"`` lets the model call tools. ``"none"`` still sends the tool definitions but forbids calls."""


@value
class Reply:
    """One reply from the Model."""

    message: Message
    """The assistant message. Blocks stay in the order the provider gave."""
    usage: Usage
    """The usage of this one request."""
    context_tokens: int | None = None
    """The token count of the whole context up to and including this reply, or ``None`` if unknown."""
    stop_reason: str | None = None
    """Exactly what the provider gave, e.g. ``"end_turn"``, ``"tool_use"`` or ``"max_tokens"``."""
    model: str | None = None
    """The model that answered, as the provider reported it (the requested name if it did not say)."""

    @property
    def text(self) -> str:
        """The message's text (``message.text``)."""
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The message's tool calls (``message.tool_calls``)."""
        return self.message.tool_calls

    @property
    def cut_off(self) -> bool:
        """True if ``stop_reason`` is in ``CUT_OFF_STOP_REASONS`` or is a cut-off word an adapter declared (an
        output limit stopped the model)."""
        return is_cut_off(self.stop_reason)


# ---------------------------------------------------------------------------------------------------------------
# Other records


@value
class Exchange:
    """The question and answer of ``ask``/``ask_human``: the content of an ``ExchangeEntry``.

    ``answer`` is JSON, deep-frozen (a ``FrozenDict``/``FrozenList`` for a dict or list); ``None`` if no answer
    came.
    """

    question: str
    answer: Any

    def __post_init__(self) -> None:
        freeze_fields(self, "answer")


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if type(value) is tuple else tuple(value)


@value
class ContextChange:
    """A record that the context changed (compact, clear_tool_results, import or restore).

    ``before_tokens``/``after_tokens`` are estimates without the system prompt and tools, recorded for display and
    never recomputed.
    """

    kind: ContextChangeKind
    """``"compact"``, ``"clear_tool_results"``, ``"import"`` or ``"restore"``."""
    before_tokens: int
    """The estimated context size before the change."""
    after_tokens: int
    """The estimated context size after the change."""
    summary: str | None = None
    """compact: the summary text put in the context. ``None`` for other kinds."""
    kept: int = 0
    """compact: how many of the latest messages stay after the summary."""
    cleared: tuple[str, ...] = ()
    """clear_tool_results: the ids of the tool calls whose results were blanked."""
    messages: tuple[Message, ...] = ()
    """import: the messages the State started with."""
    restored_to: int | None = None
    """restore: the history length the State went back to."""
    usage: Usage | None = None
    """compact done by a model: that request's usage. ``None`` otherwise."""

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            kind: ContextChangeKind,
            before_tokens: int,
            after_tokens: int,
            summary: str | None = None,
            kept: int = 0,
            cleared: Iterable[str] = (),
            messages: Iterable[Message] = (),
            restored_to: int | None = None,
            usage: Usage | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "cleared", "messages")


@value(kw_only=True)
class AgentInfo:
    """What an Agent was when it started a run, kept in history and compared on resume (``ResumeWarning``)."""

    name: str | None = None
    """The Agent's name, or ``None``."""
    model: str
    """``"provider/name"`` of its model."""
    system_sha256: str | None = None
    """The hex SHA-256 of the system prompt, or ``None`` without one. The text itself is not kept."""
    tools: tuple[str, ...] = ()
    """The names of the Agent's own tools."""
    mcp_servers: tuple[str, ...] = ()
    """The names of its MCP servers."""

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            *,
            name: str | None = None,
            model: str,
            system_sha256: str | None = None,
            tools: Iterable[str] = (),
            mcp_servers: Iterable[str] = (),
        ) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "tools", "mcp_servers")


@value
class ModelEvent:
    """Something the Model went through while handling a request (a fallback, a retry); not part of the reply.

    ``data`` is read-only (a ``FrozenDict``). Always unhashable.
    """

    kind: str
    """A short type name, e.g. ``"fallback"``."""
    message: str
    """One line for a person."""
    data: Mapping[str, Any] = field(default_factory=FrozenDict)
    """Extra values."""

    def __post_init__(self) -> None:
        freeze_fields(self, "data")


class ToolOutcomeKind(StrEnum):
    """How a tool call ended. A ``StrEnum``, so ``kind == "denied"`` works too."""

    DONE = "done"
    """The tool returned, and the result is its output."""
    ERROR = "error"
    """The tool returned an error result, which the model sees as an error."""
    INPUT_ERROR = "input_error"
    """Not called: the tool is unknown or the arguments failed validation."""
    ABORTED = "aborted"
    """The tool raised."""
    INTERRUPTED = "interrupted"
    """Closed by ``KeyboardInterrupt`` or ``CancelledError``."""
    DENIED = "denied"
    """Not run because a permission denied it; the result is the reason."""
    CANCELLED = "cancelled"
    """Not run because a permission stopped the turn (another call was denied with ``stop=True``)."""


_OUTCOME_KINDS: dict[str, ToolOutcomeKind] = {kind.value: kind for kind in ToolOutcomeKind}


def _outcome_kind(value: str) -> ToolOutcomeKind:
    """``ToolOutcomeKind(value)``, with a fast path for the plain strings a loaded history holds."""
    try:
        return _OUTCOME_KINDS[value]
    except (KeyError, TypeError):
        return ToolOutcomeKind(value)


@value
class ToolOutcome:
    """How a tool call ended, passed to ``Reporter.on_tool_end`` next to the result. Branch on ``kind``.

    Raises:
        ValueError: ``kind`` is not a ``ToolOutcomeKind`` value.
    """

    kind: ToolOutcomeKind
    """How it ended. A plain string such as ``"denied"`` becomes the matching member."""
    error: BaseException | None = None
    """The exception for ABORTED and INTERRUPTED, the ``ToolError`` of a permission for DENIED; else ``None``."""
    decided_by: str | None = None
    """The ``repr()`` of the permission that decided a DENIED or CANCELLED outcome, else ``None``."""

    if TYPE_CHECKING:  # the generated __init__ also takes the kind as a plain string

        def __init__(
            self, kind: ToolOutcomeKind | str, error: BaseException | None = None, decided_by: str | None = None
        ) -> None: ...

    def __post_init__(self) -> None:
        if type(self.kind) is not ToolOutcomeKind:
            _set(self, "kind", _outcome_kind(self.kind))


# ---------------------------------------------------------------------------------------------------------------
# Why a loop stopped


@value
class StoppedByUntil:
    """``state.stopped`` when an ``until`` function of ``@loop`` returned true."""

    name: str
    """The function's ``__name__`` (``"<lambda>"`` for a lambda)."""

    def __str__(self) -> str:
        return f"stopped by {self.name}"


@value
class StoppedByLimit:
    """``state.stopped`` when the loop ran ``limit`` turns in this call."""

    turns: int
    """The limit that was reached."""

    def __str__(self) -> str:
        return f"stopped at limit {self.turns}"


@value
class StoppedByFinish:
    """``state.stopped`` when ``state.finish()`` was called."""

    answer: Any = None
    """The answer given to ``finish`` as JSON (deep-frozen), or ``None``."""

    def __post_init__(self) -> None:
        freeze_fields(self, "answer")

    def __str__(self) -> str:
        return "stopped by finish"


@value
class StoppedByPermission:
    """``state.stopped`` when a permission denied a tool call with ``stop=True``. The State is not finished."""

    call: ToolCall
    """The denied call."""
    permission: str
    """The ``repr()`` of the permission that denied it."""

    def __str__(self) -> str:
        return f"stopped by permission {self.permission}"


Stopped = (
    StoppedByUntil | StoppedByLimit | StoppedByFinish | StoppedByPermission | StoppedForApproval | StoppedForBudget
)
"""The type of ``state.stopped`` (without ``None``)."""


# ---------------------------------------------------------------------------------------------------------------
# History entries
#
# Every entry is keyword-only and has ``kind`` (a single-kind class defaults it to its kind), ``content``, ``turn``
# (``state.turn`` when recorded, unless the class says otherwise) and ``at``: when the entry was recorded, a
# timezone-aware UTC datetime read from ``_now()`` once when the entry is built without one, and ignored by ``==``
# and ``hash``. Other fields exist only where they mean something.


def _at() -> Any:
    """The ``at`` field of every entry (see above)."""
    return field(default_factory=_stamp, compare=False)


@value(kw_only=True)
class MessageEntry:
    """A user message (``"user"``) or a notice (``"notice"``) added to the State.

    ``content`` is the text as a ``str`` when the message is one text block, else the tuple of ``TextBlock`` and
    ``Image``.
    """

    kind: Literal["user", "notice"]
    """``"user"``: from the person. ``"notice"``: from a loop or a tool (``Message.notice``)."""
    content: str | tuple[TextBlock | Image, ...]
    """The text, or the blocks when the message has images."""
    turn: int
    at: datetime = _at()

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            *,
            kind: Literal["user", "notice"],
            content: str | Iterable[TextBlock | Image],
            turn: int,
            at: datetime = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        content: Any = self.content
        if type(content) is str:
            return
        if type(content) is not tuple:
            if isinstance(content, str):
                return
            content = tuple(content)
        if len(content) == 1 and isinstance(content[0], TextBlock):
            _set(self, "content", content[0].text)
        elif content is not self.content:
            _set(self, "content", content)

    @classmethod
    def from_message(cls, message: Message, *, turn: int) -> MessageEntry:
        """The entry for a user message: ``"notice"`` if it is a notice, else ``"user"``.

        Raises:
            ValueError: The message is not a user message, or has blocks other than text and images.
        """
        if message.role != "user" or any(not isinstance(b, (TextBlock, Image)) for b in message.content):
            raise ValueError(
                fix_message(
                    "a MessageEntry holds a user message made of text and images only",
                    "Use Message.user(text, *images) or Message.notice(text)",
                    'Message.user("Now fix it")',
                )
            )
        kind: Literal["user", "notice"] = "notice" if message.is_notice else "user"
        return cls(kind=kind, content=message.content, turn=turn)  # type: ignore[arg-type]  # checked above

    @property
    def message(self) -> Message:
        """The user message this entry added."""
        content = self.content
        if isinstance(content, str):
            return Message("user", (TextBlock(content),))
        return Message("user", content)


@value(kw_only=True)
class ModelRequestEntry:
    """``think`` is sending a request. With an ``ErrorEntry`` after it instead of a reply, the turn was taken back."""

    kind: Literal["model_request"] = "model_request"
    content: str
    """The model name asked (``provider/name``)."""
    turn: int
    """The turn this request starts."""
    at: datetime = _at()
    input: RequestInput | None = field(default=None, compare=False, repr=False)
    """The system prompt and tool specs the request carried (by digest; their text the first time this State sent
    them), or ``None`` when not recorded (a request made by the program, or saved by an older version). Ignored by
    ``==``."""


@value(kw_only=True)
class ModelReplyEntry:
    """A model reply from ``think``."""

    kind: Literal["model_reply"] = "model_reply"
    content: Reply
    """The Reply, including ``reply.model``, the model that answered."""
    turn: int
    at: datetime = _at()
    """When the reply finished, as a timezone-aware UTC datetime."""


@value(kw_only=True)
class ModelEventEntry:
    """Something the Model went through, such as a fallback or a retry."""

    kind: Literal["model_event"] = "model_event"
    content: ModelEvent
    """The event."""
    turn: int
    at: datetime = _at()


@value(kw_only=True)
class ToolResultEntry:
    """The result of a tool call as the model got it, however the call ended (``outcome``).

    Raises:
        TypeError: ``child_ids`` is one string.
        ValueError: ``outcome`` is not a ``ToolOutcomeKind`` value.
    """

    kind: Literal["tool_result"] = "tool_result"
    content: ToolResultContent
    """The result sent to the model: a ``str``, or a tuple of ``TextBlock`` and ``Image``."""
    call: ToolCall
    """The call this answers."""
    outcome: ToolOutcomeKind
    """How the call ended. A plain string such as ``"denied"`` becomes the matching member."""
    late: bool = False
    """True if it arrived after its call was already closed."""
    error: BaseException | None = field(default=None, compare=False)
    """The ``ToolError`` behind an error result, or the exception that closed the call. Ignored by ``==``."""
    child_ids: tuple[str, ...] = ()
    """The ids of the subagent States this call started, in start order."""
    usage: Usage | None = None
    """The subagents' usage this State has not counted yet; ``None`` when the call started no subagent."""
    turn: int
    at: datetime = _at()

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            *,
            kind: Literal["tool_result"] = "tool_result",
            content: ToolResultContent,
            call: ToolCall,
            outcome: ToolOutcomeKind | str,
            late: bool = False,
            error: BaseException | None = None,
            child_ids: Iterable[str] = (),
            usage: Usage | None = None,
            turn: int,
            at: datetime = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        if type(self.outcome) is not ToolOutcomeKind:
            _set(self, "outcome", _outcome_kind(self.outcome))
        child_ids: Any = self.child_ids
        if type(child_ids) is not tuple:
            if isinstance(child_ids, (str, bytes)):
                raise TypeError(
                    fix_message(
                        f"ToolResultEntry.child_ids needs a sequence of ids, not one string (got: {child_ids!r})",
                        "Wrap a single id in a tuple",
                        'ToolResultEntry(..., child_ids=("kid1",))',
                    )
                )
            _set(self, "child_ids", tuple(child_ids))

    @property
    def is_error(self) -> bool:
        """True if the model got it as an error result: the outcome is anything but DONE."""
        return self.outcome is not ToolOutcomeKind.DONE


@value(kw_only=True)
class ExchangeEntry:
    """A question and its answer (``"ask"``: ``agent.ask``; ``"human"``: the Human). The context does not change."""

    kind: Literal["ask", "human"]
    """``"ask"`` or ``"human"``."""
    content: Exchange
    """The question and answer."""
    usage: Usage | None = None
    """The usage of the model request behind an ``"ask"``. ``None`` for ``"human"``."""
    turn: int
    at: datetime = _at()
    """When the answer came, as a timezone-aware UTC datetime."""


@value(kw_only=True)
class ContextChangeEntry:
    """The context was imported, compacted, had tool results cleared, or was restored (``content.kind``)."""

    kind: Literal["context_change"] = "context_change"
    content: ContextChange
    """What changed."""
    turn: int
    at: datetime = _at()


@value(kw_only=True)
class RunStartEntry:
    """A run started. ``content`` is the Agent that runs it, compared with a later resume of this State."""

    kind: Literal["run_start"] = "run_start"
    content: AgentInfo
    """The Agent that runs it."""
    parent_id: str | None = None
    """The id of the State whose tool call started this run (a subagent run), else ``None``."""
    parent_call_id: str | None = None
    """The ``ToolCall.id`` of that call, or ``None`` together with ``parent_id``."""
    turn: int
    at: datetime = _at()


@value(kw_only=True)
class StopEntry:
    """The current run is set to stop, and why; ``content`` is ``None`` for a record that clears an earlier stop."""

    kind: Literal["stop"] = "stop"
    content: Stopped | None
    """Why it stopped, or ``None``."""
    turn: int
    at: datetime = _at()


@value(kw_only=True)
class ExtraDataEntry:
    """``state.extra_data`` changed (``State(extra_data=...)`` or ``edit_extra_data()``)."""

    kind: Literal["extra_data"] = "extra_data"
    content: Mapping[str, Any]
    """The keys that were set, with their new JSON values (a ``FrozenDict``)."""
    removed: tuple[str, ...] = ()
    """The keys that were deleted."""
    turn: int
    at: datetime = _at()

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            *,
            kind: Literal["extra_data"] = "extra_data",
            content: Mapping[str, Any],
            removed: Iterable[str] = (),
            turn: int,
            at: datetime = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        freeze_fields(self, "content")
        as_tuples(self, "removed")


@value(kw_only=True)
class ErrorEntry:
    """An exception raised in ``think``, ``use_tools`` or ``run``, recorded once.

    Right after a ``model_request`` (no reply), the request failed and the turn was taken back.
    """

    kind: Literal["error"] = "error"
    content: str
    """Its type and message, e.g. ``"TimeoutError: timed out"`` (only the type if the message is empty)."""
    error: BaseException | None = field(default=None, compare=False)
    """The exception; ``None`` in a State loaded from a store. Ignored by ``==``."""
    call: ToolCall | None = None
    """The call whose tool or permission raised it, or ``None``."""
    turn: int
    at: datetime = _at()
    traceback: str | None = field(default=None, compare=False, repr=False)
    """Where it was raised: the stack as Python prints it, with known credentials replaced by ``[REDACTED]`` and
    at most ``TRACEBACK_CHARS`` characters (the frames nearest the error kept), or ``None`` when none was recorded.
    Ignored by ``==``."""


HistoryEntry = (
    MessageEntry
    | ModelRequestEntry
    | ModelReplyEntry
    | ModelEventEntry
    | ToolResultEntry
    | ExchangeEntry
    | ContextChangeEntry
    | RunStartEntry
    | StopEntry
    | ExtraDataEntry
    | ErrorEntry
)
"""One item of ``state.history``: check ``kind`` (or ``isinstance``) to know which."""


for _cls in (
    TextBlock,
    Image,
    ToolCall,
    ToolResultBlock,
    RawBlock,
    Message,
    Usage,
    Price,
    WaitingCall,
    ApprovalDecision,
    StoppedForApproval,
    StoppedForBudget,
    Budget,
    BudgetWait,
    BudgetRaise,
    BudgetStatus,
):
    _cls.__module__ = __name__
for _function in (format_call, result_text):
    _function.__module__ = __name__
del _cls, _function
