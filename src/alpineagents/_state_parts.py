"""Private parts of ``alpineagents.state``: misuse texts, the attribute guard, ``str(state)`` lines, and the
bookkeeping of the subagents a tool call started."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from alpineagents._fold import StateSnapshot, first_non_entry, replay
from alpineagents._jsoncopy import json_copy, json_form
from alpineagents._tokens import context_tokens
from alpineagents.errors import fix_message
from alpineagents.types import (
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
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


def messages_type_error(value: Any, *, iterable: bool) -> TypeError:
    fix = (
        "wrap each message with Message.user(...), Message.notice(...) or Message.assistant(...)"
        if iterable
        else "pass a list of messages, wrapping each one with Message.user(...), Message.notice(...) or "
        "Message.assistant(...)"
    )
    return TypeError(
        fix_message(
            f"State(messages=...) takes a list of Message objects (got: {type(value).__name__})", fix, MESSAGES_EXAMPLE
        )
    )


def restore_busy_error(why: str) -> ValueError:
    return ValueError(
        fix_message(
            f"cannot call restore() while {why}",
            "wait for the think or compact to end, then restore",
            "agent.think(state)\nstate.restore(before)",
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


# --- misuse errors of State -------------------------------------------------------------------------------------

_ID_EXAMPLE = 'State(id="bug-hunt-1")'
_ADD_EXAMPLE = 'state.add_message(Message.user("Next step: run the tests"))'
_COMPACT_EXAMPLE = 'summary = agent.ask(state, "Summarize the work so far")\nstate.compact(summary)'


_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_id(value: Any, where: str) -> str:
    """Return ``value`` if it is a valid State id (``[A-Za-z0-9_-]{1,128}``).

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: it has other characters, or is empty or longer than 128 characters.
    """
    if not isinstance(value, str):
        raise id_type_error(where, value)
    if _ID.fullmatch(value) is None:
        raise id_value_error(where, value)
    return value


def id_type_error(where: Any, value: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"{where} needs the id as a string (got: {type(value).__name__})",
            "use letters, digits, _ and -",
            _ID_EXAMPLE,
        )
    )


def id_value_error(where: Any, value: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"{where} got the id {value!r}, which may only have letters, digits, _ and - (1 to 128 characters)",
            "leave out dots, slashes and spaces (a FileStore uses the id as a file name)",
            _ID_EXAMPLE,
        )
    )


def positional_error(args: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"State takes keyword arguments only (got the positional argument {args[0]!r})",
            "give the starting messages with messages=",
            'State(messages=[Message.user("Find the bug in this repo")])',
        )
    )


def history_combined_error() -> TypeError:
    return TypeError(
        fix_message(
            "State(history=...) cannot be combined with messages= or extra_data=: the history already holds them",
            "pass the history alone, or leave it out and build the State from messages=",
            "State(history=other.history)\nState(messages=[Message.user('...')], extra_data={'repo': 'api'})",
        )
    )


def history_item_error(index: Any, item: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"State(history=...) takes history entries (history[{index}] is {item!r})",
            "pass state.history, or the entries a store loaded",
            "State(history=state.history)",
        )
    )


def history_fold_error(index: Any, entries: Any, error: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"history entry {index} ({entries[index].kind}) cannot follow the entries before it: {error}",
            "pass a history that a State recorded (state.history), without leaving entries out",
            "State(history=state.history)",
        )
    )


def message_item_error(item: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"State(messages=...) takes Message objects only (got: {item!r})",
            "wrap text with Message.user(...), Message.notice(...) or Message.assistant(...)",
            MESSAGES_EXAMPLE,
        )
    )


def extra_data_type_error(extra_data: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"State(extra_data=...) takes a dict (got: {type(extra_data).__name__})",
            "pass your values as a dict with string keys",
            'State(extra_data={"repo": "api"})',
        )
    )


def add_message_type_error(message: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"add_message() takes a Message (got: {type(message).__name__})",
            "wrap the text with Message.user(...) or Message.notice(...)",
            _ADD_EXAMPLE,
        )
    )


def add_message_role_error(message: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"add_message() takes user messages only (got a {message.role} message)",
            "assistant messages come from the model; to start from a conversation that has them, use State(messages=[...])",
            _ADD_EXAMPLE,
        )
    )


def add_message_empty_error(message: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"add_message() got a message with no text and no image (text: {message.text!r}). Providers reject empty messages",
            "pass a message with text (if the human's input was empty, ask again)",
            _ADD_EXAMPLE,
        )
    )


def keep_last_error(keep_last: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"keep_last must be an integer >= 0 (got: {keep_last!r})",
            "pass the number of recent tool results to keep as an integer",
            "state.clear_tool_results(keep_last=5)",
        )
    )


def restore_type_error(snapshot: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"restore() takes a StateSnapshot (got: {type(snapshot).__name__})",
            "pass what state.snapshot() returned",
            "before = state.snapshot()\n...\nstate.restore(before)",
        )
    )


def restore_foreign_error() -> ValueError:
    return ValueError(
        fix_message(
            "restore takes a snapshot taken from this State (its history is not the start of this State's history)",
            "for a snapshot of another State, build a new State from it: State(history=snapshot.history)",
            "copy = State(history=snapshot.history)",
        )
    )


def restore_waiting_snapshot_error() -> ValueError:
    return ValueError(
        fix_message(
            "this snapshot was taken while the model was being waited on, so there is no complete turn to go back to",
            "take snapshots between turns (before think, or after use_tools)",
            "before = state.snapshot()  # not inside a think",
        )
    )


def fork_waiting_error() -> ValueError:
    return ValueError(
        fix_message(
            "cannot call fork() while the model is being waited on: the copy would be waiting for a reply that no think() will record",
            "fork before think, or after think returns (e.g. in Reporter.on_think_end)",
            "attempt = state.fork()\nagent.think(state)",
        )
    )


def child_no_store_error(child_id: Any, state_id: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"subagent {child_id!r} is not in memory, and State {state_id!r} has no store to load it from (it was not loaded from a store or saved in one)",
            "run the subagents with Agent(store=...), which saves them in that store, and load this State from it",
            "store = FileStore('.alpine/states')\nagent = Agent(model=..., store=store)\nstate = store.load(state_id)\nstate.child(child_id)",
        )
    )


def finished_error(action: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"cannot call {action}() on a finished State (finish() ends the whole run)",
            "if a block called state.finish(), return from the loop body right away",
            "submit(agent, state)\nif state.finished:\n    return\nagent.think(state)",
        )
    )


def pending_error(action: Any, shown: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"cannot call {action}() while calls are pending ({shown})",
            "run them first with agent.use_tools(state) (its permissions decide which ones run)",
            "agent.think(state)\nif state.pending_calls:\n    agent.use_tools(state)",
        )
    )


def running_error() -> ValueError:
    return ValueError(
        fix_message(
            "this State is already being run by another run() or arun() call, and a State runs one at a time",
            "wait for that run to end, then run the State again",
            "agent.run(state)\nagent.run(state)  # one after the other",
        )
    )


def think_waiting_error() -> ValueError:
    return ValueError(
        fix_message(
            "cannot call think() while another think() is waiting on the model",
            "wait for that think() to end",
            "agent.think(state)\nagent.think(state)  # one after the other",
        )
    )


def think_empty_error() -> ValueError:
    return ValueError(
        fix_message(
            "cannot call think() on a State with no messages (the model would get an empty request)",
            "start the State with messages, or add one first",
            'state = State(messages=[Message.user("Find the bug")])\n# or\nstate.add_message(Message.user("Find the bug"))',
        )
    )


def compact_window_error() -> ValueError:
    return ValueError(
        fix_message(
            "cannot call compact() while another compaction of this State is under way",
            "wait for it to end",
            "agent.compact(state)\nagent.compact(state)  # one after the other",
        )
    )


def compact_type_error(summary: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"compact() needs summary to be a string (got: {type(summary).__name__})",
            "pass summary as a str",
            _COMPACT_EXAMPLE,
        )
    )


def compact_empty_error(summary: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"compact() got an empty summary (got: {summary!r}). Providers reject empty messages",
            "pass a non-empty summary (if the human's input was empty, ask again)",
            _COMPACT_EXAMPLE,
        )
    )


def store_binding_error(state_id: Any, store: Any, bound: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"State {state_id!r} is saved in another store ({bound!r}), and a State is saved in one store only (this one is {store!r})",
            "save it in the store it was saved in, or start a new State (State(messages=state.messages) keeps the messages)",
            'state = store.load("task-1")\nstore.save(state)',
        )
    )


def damaged_error(state_id: Any, reason: Any) -> ValueError:
    return ValueError(
        fix_message(
            f"saved State {state_id!r} is damaged: {reason}",
            "restore the store's data from a backup, or start a new State",
        )
    )


# --- small helpers of State ------------------------------------------------------------------------------------


def keyword_signature() -> inspect.Signature:
    """The signature ``State(*, id, messages, extra_data, history)`` shown by ``help`` and ``inspect``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("id", keyword, default=None, annotation="str | None"),
            inspect.Parameter("messages", keyword, default=(), annotation="Iterable[Message]"),
            inspect.Parameter("extra_data", keyword, default=None, annotation="Mapping[str, Any] | None"),
            inspect.Parameter("history", keyword, default=None, annotation="Iterable[HistoryEntry] | None"),
        ],
        return_annotation="None",
    )


def non_empty(messages: Any) -> bool:
    """Whether ``messages`` (given next to ``history=``) holds anything; consumes it."""
    if messages is None:
        return False
    try:
        return len(list(messages)) > 0
    except TypeError:
        return True


def canonical(value: Any) -> str:
    """The JSON text ``edit_extra_data`` compares values by (sorted keys: 1, 1.0 and True differ)."""
    return json.dumps(value, sort_keys=True)


def exchange_answer(question: str, answer: Any) -> Any:
    """The JSON form of an ``ask``/``human`` answer, or its ``repr`` when it has none."""
    try:
        return json_form(answer, f"the answer to {question!r}")
    except TypeError:
        return repr(answer)


# --- the constructor's starting entries -----------------------------------------------------------------------


def history_snapshot(history: Any, messages: Any, extra_data: Any) -> StateSnapshot:
    """The snapshot of ``State(history=...)``: the replay of the given entries.

    Raises:
        TypeError: ``messages=``/``extra_data=`` given too, or an item is not a history entry.
        ValueError: the entries do not fold (the message names the first entry that does not fit).
    """
    if extra_data is not None or non_empty(messages):
        raise history_combined_error()
    entries = list(history)
    bad = first_non_entry(entries)
    if bad >= 0:
        raise history_item_error(bad, entries[bad])
    try:
        return replay(entries)
    except ValueError as error:
        index: int = getattr(error, "index", 0)
        raise history_fold_error(index, entries, error) from error


def initial_entries(messages: Any, extra_data: Any) -> list[HistoryEntry]:
    """The entries ``State(messages=..., extra_data=...)`` starts with: an ``import`` context change holding the
    messages, and the extra data (each only when given).

    Raises:
        TypeError: ``messages`` is not an iterable of ``Message``, or ``extra_data`` is not a JSON mapping.
    """
    if isinstance(messages, (str, bytes, Message)):
        raise messages_type_error(messages, iterable=True)
    try:
        iterator = iter(messages)
    except TypeError:
        raise messages_type_error(messages, iterable=False) from None
    items: list[Message] = []
    for item in iterator:
        if not isinstance(item, Message):
            raise message_item_error(item)
        items.append(item)
    values: dict[str, Any] = {}
    if extra_data is not None:
        if not isinstance(extra_data, Mapping):
            raise extra_data_type_error(extra_data)
        values = json_copy(extra_data, "State(extra_data=...)")
    entries: list[HistoryEntry] = []
    if items:
        found = tuple(items)
        change = ContextChange("import", before_tokens=0, after_tokens=context_tokens(found, 0), messages=found)
        entries.append(ContextChangeEntry(content=change, turn=0))
    if values:
        entries.append(ExtraDataEntry(content=values, removed=(), turn=0))
    return entries
