"""Private parts of ``alpineagents.state``: misuse texts, the attribute guard, ``str(state)`` lines, and the
bookkeeping of the subagents a tool call started."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from alpineagents.errors import fix_message
from alpineagents.types import (
    ContextChangeEntry,
    ErrorEntry,
    ExchangeEntry,
    ExtraDataEntry,
    Image,
    MessageEntry,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    RunStartEntry,
    StopEntry,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    ToolResultEntry,
    Usage,
    format_call,
    result_text,
)

if TYPE_CHECKING:
    from alpineagents.state import State

# --- constructor messages -------------------------------------------------------------------------------------

MESSAGES_EXAMPLE = 'State(messages=[Message.user("Find the bug in this repo")])'
ACCEPTED = ("id", "messages", "extra_data", "history")
_DERIVED = ("turn", "usage", "stopped", "finished", "answer", "pending_calls")
_UNKNOWN_KEYWORDS = {
    "task": (
        "State has no task in 0.5: the first message is not special",
        "pass the first message as State(messages=[Message.user(...)])",
        'State(messages=[Message.user("Fix calc.py")])',
    ),
    "context": (
        "State(context=...) is State(messages=...) in 0.5, and takes Message objects",
        "rename the keyword to messages= and wrap each item with Message.user(...)",
        'State(messages=[Message.user("Fix calc.py")])',
    ),
    "data": (
        "State(data=...) is State(extra_data=...) in 0.5",
        "rename the keyword to extra_data=",
        'State(extra_data={"repo": "api"})',
    ),
}


def unknown_keyword(name: str) -> TypeError:
    if name in _UNKNOWN_KEYWORDS:
        return TypeError(fix_message(*_UNKNOWN_KEYWORDS[name]))
    if name in _DERIVED:
        return TypeError(
            fix_message(
                f"State(...) takes no {name}=: it is derived from history",
                "pass history=, or let the Agent record it",
                "State(history=other.history)",
            )
        )
    return TypeError(
        fix_message(
            f"State(...) got an unexpected keyword argument {name!r}",
            "the accepted keywords are id, messages, extra_data, history",
            'State(messages=[Message.user("...")], id="bug-1", extra_data={"repo": "api"})',
        )
    )


def messages_type_error(value: Any, fix: str) -> TypeError:
    return TypeError(
        fix_message(
            f"State(messages=...) takes a list of Message objects (got: {type(value).__name__})",
            fix,
            MESSAGES_EXAMPLE,
        )
    )


# --- attribute guard texts -------------------------------------------------------------------------------------

_EDIT_EXAMPLE = 'with state.edit_extra_data() as d:\n    d["k"] = v'
_SET_RETIRED = {
    "data": (
        "state.data is gone in 0.5: it is state.extra_data, and read-only",
        "change it inside edit_extra_data()",
        _EDIT_EXAMPLE,
    ),
    "context": (
        "state.context is gone in 0.5: it is state.messages, and read-only",
        "state.messages is read-only; use state.add_message(...) / state.compact(...)",
        'state.add_message(Message.user("..."))',
    ),
    "task": (
        "state.task is gone in 0.5: the first message is not special",
        "removed; the first message is state.messages[0]",
        "state.messages[0].text",
    ),
    "lock": (
        "state.lock is gone in 0.5: no State method needs you to hold a lock",
        "removed; edit_extra_data() is atomic",
        _EDIT_EXAMPLE,
    ),
}
_READ_ONLY = {
    "messages": (
        "state.add_message(...) adds one, state.compact(summary) or state.clear_tool_results() shrink it, "
        "state.restore(snapshot) goes back",
        'state.add_message(Message.user("..."))',
    ),
    "extra_data": ("change it inside edit_extra_data()", 'with state.edit_extra_data() as d:\n    d["k"] = 1'),
    "history": (
        "history only grows: every command records its own entry (to start from a history, build State(history=...))",
        "copy = State(history=state.history)",
    ),
    "pending_calls": (
        "agent.use_tools(state) gives them results; they come from the model's reply",
        "agent.use_tools(state)",
    ),
    "turn": ("it is derived from history: agent.think(state) adds a turn", "agent.think(state)"),
    "usage": ("it is derived from history: every think, ask and compact adds to it", "agent.think(state)"),
    "finished": ("call state.finish(answer)", 'state.finish("done")'),
    "answer": ("call state.finish(answer)", 'state.finish("done")'),
    "stopped": (
        "it is set by the run (an until, a limit, a permission) or by state.finish(answer)",
        'state.finish("done")',
    ),
    "created_at": ("it is the time of the first history entry", "state.created_at"),
    "updated_at": ("it is the time of the latest history entry", "state.updated_at"),
    "id": ("the id is given when the State is made", 'State(id="bug-1")'),
    "parent_id": ("it is the first RunStartEntry.parent_id in the history", "state.parent_id"),
    "parent_call_id": ("it is the first RunStartEntry.parent_call_id in the history", "state.parent_call_id"),
}
_CALLS_EXAMPLE = 'with state.edit_extra_data() as d:\n    d["calls"] = d.get("calls", 0) + 1'
_CONTEXT_TOKENS_FIX = (
    "ask the Agent that will run the State",
    "agent.context_tokens(state)",
)
GET_RETIRED = {
    "data": (
        "state.data is gone in 0.5: it is state.extra_data, and read-only",
        "read state.extra_data; change it inside edit_extra_data()",
        _CALLS_EXAMPLE,
    ),
    "context": (
        "state.context is gone in 0.5: it is state.messages (a read-only tuple)",
        "read state.messages; change it with state.add_message(...) or state.compact(...)",
        'state.add_message(Message.user("..."))',
    ),
    "task": (
        "state.task is gone in 0.5: the first message is not special",
        "read state.messages[0] (or StateInfo.first_message in a store listing)",
        "state.messages[0].text",
    ),
    "lock": (
        "state.lock is gone in 0.5: no State method needs you to hold a lock",
        "use edit_extra_data(), which is atomic, or state.snapshot() for several values that belong together",
        _CALLS_EXAMPLE,
    ),
    "is_answered": (
        "State.is_answered is gone in 0.5: the same check is the function waiting_for_user",
        "import it, and pass the function itself to until=",
        "from alpineagents import waiting_for_user\n\n@loop(until=waiting_for_user, limit=50)",
    ),
    "wants_tools": (
        "state.wants_tools() is gone in 0.5",
        "read state.pending_calls: the tool calls the model asked for that have no result yet",
        "if state.pending_calls:\n    agent.use_tools(state)",
    ),
    "is_finished": (
        "state.is_finished() is gone in 0.5: it is the property state.finished",
        "read state.finished, without parentheses",
        "if state.finished: ...",
    ),
    "add_user_message": (
        "state.add_user_message(text) is gone in 0.5",
        "pass a Message to state.add_message (images go into Message.user after the text)",
        'state.add_message(Message.user("..."))',
    ),
    "add_notice": (
        "state.add_notice(text) is gone in 0.5",
        "pass a notice Message to state.add_message",
        'state.add_message(Message.notice("..."))',
    ),
    "start_from": (
        "state.start_from(summary) is gone in 0.5",
        "use state.compact(summary): it keeps the first message and the summary",
        'state.compact("what happened so far")',
    ),
    "context_used": (
        "state.context_used is gone in 0.5: the answer depends on the model, so the Agent gives it",
        "ask the Agent that will run the State",
        "agent.context_used(state)",
    ),
    "context_tokens": (
        "state.context_tokens is gone in 0.5: the answer depends on the model, so the Agent gives it",
        *_CONTEXT_TOKENS_FIX,
    ),
    "parent": (
        "state.parent is gone: a link to another State object does not survive store.load",
        "read state.parent_id, and open the parent with store.load(state.parent_id)",
        "parent = store.load(state.parent_id) if state.parent_id else None",
    ),
    "root": (
        "state.root is gone: a link to another State object does not survive store.load",
        "keep run-wide values in the object that needs them (a permission can hold its own memory)",
        "class AskOnce(DecidePermission):\n    def __init__(self):\n        self.allowed = set()  # its own memory",
    ),
    "depth": (
        "state.depth is gone: it was only the Terminal's indentation",
        "follow state.parent_id up through the stored States to count the levels",
        "state.parent_id is not None  # a subagent",
    ),
}


def _usage_since(now: Usage, then: Usage) -> Usage:
    """What a child used since ``then`` (08 §3.4)."""
    requests = max(now.requests - then.requests, 0)
    if requests == 0:
        cost = None
    elif then.requests == 0:
        cost = now.cost
    elif now.cost is None or then.cost is None:
        cost = None
    else:
        cost = now.cost - then.cost
    return Usage(
        input_tokens=now.input_tokens - then.input_tokens,
        output_tokens=now.output_tokens - then.output_tokens,
        cache_read_tokens=now.cache_read_tokens - then.cache_read_tokens,
        cache_write_tokens=now.cache_write_tokens - then.cache_write_tokens,
        requests=requests,
        cost=cost,
    )


class Joined:
    """The children of one call: each child State with its usage when this State last counted it."""

    __slots__ = ("call", "children")

    def __init__(self, call: ToolCall | None) -> None:
        self.call = call
        self.children: list[tuple[State, Usage]] = []

    def add(self, child: State) -> None:
        if all(known.id != child.id for known, _ in self.children):
            self.children.append((child, child.usage))

    def measure(self) -> tuple[tuple[str, ...], Usage | None, list[tuple[State, Usage]]]:
        """The child ids, the usage not counted yet, and the new join points (for ``settle``)."""
        if not self.children:
            return (), None, []
        total = Usage()
        moved: list[tuple[State, Usage]] = []
        for child, then in self.children:
            now = child.usage
            total = total + _usage_since(now, then)
            moved.append((child, now))
        return tuple(child.id for child, _ in moved), total, moved

    def settle(self, moved: list[tuple[State, Usage]]) -> None:
        """After the usage was recorded: count from the measured points on (children added since stay as they are)."""
        self.children[: len(moved)] = moved


def assignment_error(cls: type, name: str) -> AttributeError:
    if name in _SET_RETIRED:
        text = fix_message(*_SET_RETIRED[name])
    elif name in _READ_ONLY:
        fix, example = _READ_ONLY[name]
        text = fix_message(f"state.{name} is read-only: a State is changed only through its commands", fix, example)
    elif name in GET_RETIRED:
        text = fix_message(*GET_RETIRED[name])
    elif callable(getattr(cls, name, None)):
        text = fix_message(
            f"state.{name} is a State method and cannot be replaced",
            "call it instead of assigning to it",
            f"state.{name}(...)",
        )
    else:
        text = fix_message(
            f"State has no attribute {name!r} and does not accept new attributes",
            "keep your own values in state.extra_data (edit_extra_data()), or in a variable next to the State",
            f'with state.edit_extra_data() as d:\n    d["{name}"] = ...',
        )
    return AttributeError(text)


# --- str(state) ---------------------------------------------------------------------------------------------------

_SPACES = re.compile(r"\s+")


def _short(value: Any, limit: int = 60) -> str:
    text = _SPACES.sub(" ", str(value)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(content: Any) -> str:
    if isinstance(content, str):
        n = len(content.encode("utf-8"))
    else:
        n = 0
        for block in content:
            if isinstance(block, TextBlock):
                n += len(block.text.encode("utf-8"))
            elif isinstance(block, Image):
                n += len(block.data)
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"


def turns(n: int) -> str:
    return "1 turn" if n == 1 else f"{n} turns"


def line(entry: Any) -> str:
    head = f"[turn {entry.turn}] {entry.kind}"
    if isinstance(entry, MessageEntry):
        content = entry.content
        if isinstance(content, str):
            text = content
        else:
            text = " ".join(
                block.text if isinstance(block, TextBlock) else f"({block.media_type})" for block in content
            )
        return f"{head}: {_short(text)}"
    if isinstance(entry, ModelRequestEntry):
        return f"{head}: {_short(entry.content)}"
    if isinstance(entry, ModelReplyEntry):
        reply = entry.content
        parts = [_short(reply.text)] if reply.text else []
        parts.extend(_short(format_call(call)) for call in reply.tool_calls)
        return f"{head}: {'; '.join(parts) if parts else '(empty reply)'}"
    if isinstance(entry, ModelEventEntry):
        return f"{head}: {_short(str(entry.content))}"
    if isinstance(entry, ToolResultEntry):
        late = " (late)" if entry.late else ""
        name = entry.call.name
        outcome = entry.outcome
        if outcome is ToolOutcomeKind.DONE:
            return f"{head} {name}: {_size(entry.content)}{late}"
        shown = outcome.value if outcome in (ToolOutcomeKind.DENIED, ToolOutcomeKind.CANCELLED) else "error"
        return f"{head} {name}{late} ({shown}): {_short(result_text(entry.content))}"
    if isinstance(entry, ExchangeEntry):
        exchange = entry.content
        return f"{head}: {_short(exchange.question, 40)} → {_short(exchange.answer, 40)}"
    if isinstance(entry, ContextChangeEntry):
        change = entry.content
        if change.kind == "import":
            return f"{head} import: {len(change.messages)} messages"
        if change.kind == "restore":
            return f"{head} restore: back to {change.restored_to} history entries"
        return f"{head} {change.kind}: {change.before_tokens} → {change.after_tokens} tokens"
    if isinstance(entry, RunStartEntry):
        info = entry.content
        name = f" ({info.name})" if info.name is not None else ""
        return f"{head}: {info.model}{name}"
    if isinstance(entry, StopEntry):
        return f"{head}: {entry.content if entry.content is not None else '(cleared)'}"
    if isinstance(entry, ExtraDataEntry):
        parts = []
        if entry.content:
            parts.append("set " + ", ".join(entry.content))
        if entry.removed:
            parts.append("removed " + ", ".join(entry.removed))
        return f"{head}: {'; '.join(parts)}"
    if isinstance(entry, ErrorEntry):
        if entry.call is not None:
            return f"{head} {entry.call.name}: {_short(entry.content)}"
        return f"{head}: {_short(entry.content)}"
    return head  # pragma: no cover - every entry class is handled above
