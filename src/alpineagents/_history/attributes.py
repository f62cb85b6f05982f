"""The State's attribute guard: the texts for assigning to a State, and for reading names that are gone.

Assigning any public name is refused (a State changes only through its commands); retired names of older releases
get guidance instead of Python's usual text.
"""

from __future__ import annotations

from alpineagents.errors import fix_message

__all__ = ["assignment_error", "missing_attribute_error"]

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
_GET_RETIRED = {
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


def assignment_error(cls: type, name: str) -> AttributeError:
    if name in _SET_RETIRED:
        text = fix_message(*_SET_RETIRED[name])
    elif name in _READ_ONLY:
        fix, example = _READ_ONLY[name]
        text = fix_message(f"state.{name} is read-only: a State is changed only through its commands", fix, example)
    elif name in _GET_RETIRED:
        text = fix_message(*_GET_RETIRED[name])
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


def missing_attribute_error(obj: object, name: str) -> AttributeError:
    """Reading a name a State does not have: guidance for a retired name, else Python's usual text."""
    if name in _GET_RETIRED:
        return AttributeError(fix_message(*_GET_RETIRED[name]), name=name, obj=obj)
    return AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'", name=name, obj=obj)
