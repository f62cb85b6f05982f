"""The texts of the State's misuse errors: what was wrong, how to fix it, and an example (``fix_message``)."""

from __future__ import annotations

from alpineagents.errors import fix_message
from alpineagents.types import HistoryEntry, Message

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


def messages_type_error(value: object, *, iterable: bool) -> TypeError:
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


_ADD_EXAMPLE = 'state.add_message(Message.user("Next step: run the tests"))'
_COMPACT_EXAMPLE = 'summary = agent.ask(state, "Summarize the work so far")\nstate.compact(summary)'


def positional_error(args: tuple[object, ...]) -> TypeError:
    return TypeError(
        fix_message(
            f"State takes keyword arguments only (got the positional argument {args[0]!r})",
            "give the starting messages with messages=",
            'State(messages=[Message.user("Find the bug in this repo")])',
        )
    )


HISTORY_COMBINED = (
    "State(history=...) cannot be combined with messages= or extra_data=: the history already holds them",
    "pass the history alone, or leave it out and build the State from messages=",
    "State(history=other.history)\nState(messages=[Message.user('...')], extra_data={'repo': 'api'})",
)


def history_item_error(index: int, item: object) -> TypeError:
    return TypeError(
        fix_message(
            f"State(history=...) takes history entries (history[{index}] is {item!r})",
            "pass state.history, or the entries a store loaded",
            "State(history=state.history)",
        )
    )


def history_fold_error(index: int, entry: HistoryEntry, error: ValueError) -> ValueError:
    return ValueError(
        fix_message(
            f"history entry {index} ({entry.kind}) cannot follow the entries before it: {error}",
            "pass a history that a State recorded (state.history), without leaving entries out",
            "State(history=state.history)",
        )
    )


def message_item_error(item: object) -> TypeError:
    return TypeError(
        fix_message(
            f"State(messages=...) takes Message objects only (got: {item!r})",
            "wrap text with Message.user(...), Message.notice(...) or Message.assistant(...)",
            MESSAGES_EXAMPLE,
        )
    )


def extra_data_type_error(extra_data: object) -> TypeError:
    return TypeError(
        fix_message(
            f"State(extra_data=...) takes a dict (got: {type(extra_data).__name__})",
            "pass your values as a dict with string keys",
            'State(extra_data={"repo": "api"})',
        )
    )


def add_message_type_error(message: object) -> TypeError:
    return TypeError(
        fix_message(
            f"add_message() takes a Message (got: {type(message).__name__})",
            "wrap the text with Message.user(...) or Message.notice(...)",
            _ADD_EXAMPLE,
        )
    )


def add_message_role_error(message: Message) -> ValueError:
    return ValueError(
        fix_message(
            f"add_message() takes user messages only (got a {message.role} message)",
            "assistant messages come from the model; to start from a conversation that has them, use State(messages=[...])",
            _ADD_EXAMPLE,
        )
    )


def add_message_empty_error(message: Message) -> ValueError:
    return ValueError(
        fix_message(
            f"add_message() got a message with no text and no image (text: {message.text!r}). Providers reject empty messages",
            "pass a message with text (if the human's input was empty, ask again)",
            _ADD_EXAMPLE,
        )
    )


def keep_last_error(keep_last: object) -> ValueError:
    return ValueError(
        fix_message(
            f"keep_last must be an integer >= 0 (got: {keep_last!r})",
            "pass the number of recent tool results to keep as an integer",
            "state.clear_tool_results(keep_last=5)",
        )
    )


def restore_type_error(snapshot: object) -> TypeError:
    return TypeError(
        fix_message(
            f"restore() takes a StateSnapshot (got: {type(snapshot).__name__})",
            "pass what state.snapshot() returned",
            "before = state.snapshot()\n...\nstate.restore(before)",
        )
    )


RESTORE_FOREIGN = (
    "restore takes a snapshot taken from this State (its history is not the start of this State's history)",
    "for a snapshot of another State, build a new State from it: State(history=snapshot.history)",
    "copy = State(history=snapshot.history)",
)


RESTORE_WAITING_SNAPSHOT = (
    "this snapshot was taken while the model was being waited on, so there is no complete turn to go back to",
    "take snapshots between turns (before think, or after use_tools)",
    "before = state.snapshot()  # not inside a think",
)


FORK_WAITING = (
    "cannot call fork() while the model is being waited on: the copy would be waiting for a reply that no think() will record",
    "fork before think, or after think returns (e.g. in Reporter.on_think_end)",
    "attempt = state.fork()\nagent.think(state)",
)


def child_no_store_error(child_id: str, state_id: str) -> ValueError:
    return ValueError(
        fix_message(
            f"subagent {child_id!r} is not in memory, and State {state_id!r} has no store to load it from (it was not loaded from a store or saved in one)",
            "run the subagents with Agent(store=...), which saves them in that store, and load this State from it",
            "store = FileStore('.alpine/states')\nagent = Agent(model=..., store=store)\nstate = store.load(state_id)\nstate.child(child_id)",
        )
    )


def finished_error(action: str) -> ValueError:
    return ValueError(
        fix_message(
            f"cannot call {action}() on a finished State (finish() ends the whole run)",
            "if a block called state.finish(), return from the loop body right away",
            "submit(agent, state)\nif state.finished:\n    return\nagent.think(state)",
        )
    )


def not_waiting_error(state_id: str, action: str) -> ValueError:
    """The error of ``approve``/``deny`` (``action``) on a State that waits for no decision."""
    return ValueError(
        fix_message(
            f"State {state_id!r} is not waiting for an approval, so there is no call to {action}",
            "check state.awaiting_approval first; a State waits when state.stopped is a StoppedForApproval",
            "for waiting in state.awaiting_approval:\n    state.approve(waiting.call.id)",
        )
    )


def pending_error(action: str, shown: str) -> ValueError:
    return ValueError(
        fix_message(
            f"cannot call {action}() while calls are pending ({shown})",
            "run them first with agent.use_tools(state) (its permissions decide which ones run)",
            "agent.think(state)\nif state.pending_calls:\n    agent.use_tools(state)",
        )
    )


RUNNING = (
    "this State is already being run by another run() or arun() call, and a State runs one at a time",
    "wait for that run to end, then run the State again",
    "agent.run(state)\nagent.run(state)  # one after the other",
)


THINK_WAITING = (
    "cannot call think() while another think() is waiting on the model",
    "wait for that think() to end",
    "agent.think(state)\nagent.think(state)  # one after the other",
)


THINK_EMPTY = (
    "cannot call think() on a State with no messages (the model would get an empty request)",
    "start the State with messages, or add one first",
    'state = State(messages=[Message.user("Find the bug")])\n# or\nstate.add_message(Message.user("Find the bug"))',
)


def program_waiting(action: str) -> tuple[str, str, str]:
    """The texts of ``action`` (``run_tool``, ``load_skill``...) called while a think waits on the model."""
    return (
        f"cannot call {action}() while a think() is waiting on the model",
        "wait for that think() to end",
        f"agent.think(state)\nagent.{action}(state, ...)  # one after the other",
    )


def program_empty(action: str) -> tuple[str, str, str]:
    """The texts of ``action`` called on a State with no messages (its call would open the conversation)."""
    return (
        f"cannot call {action}() on a State with no messages (the model's context would start with the call)",
        "start the State with messages, or add one first",
        f'state = State(messages=[Message.user("Find the bug")])\nagent.{action}(state, ...)',
    )


COMPACT_WINDOW = (
    "cannot call compact() while another compaction of this State is under way",
    "wait for it to end",
    "agent.compact(state)\nagent.compact(state)  # one after the other",
)


def compact_type_error(summary: object) -> TypeError:
    return TypeError(
        fix_message(
            f"compact() needs summary to be a string (got: {type(summary).__name__})",
            "pass summary as a str",
            _COMPACT_EXAMPLE,
        )
    )


def compact_empty_error(summary: str) -> ValueError:
    return ValueError(
        fix_message(
            f"compact() got an empty summary (got: {summary!r}). Providers reject empty messages",
            "pass a non-empty summary (if the human's input was empty, ask again)",
            _COMPACT_EXAMPLE,
        )
    )


def store_binding_error(state_id: str, store: object, bound: object) -> ValueError:
    return ValueError(
        fix_message(
            f"State {state_id!r} is saved in another store ({bound!r}), and a State is saved in one store only (this one is {store!r})",
            "save it in the store it was saved in, or start a new State (State(messages=state.messages) keeps the messages)",
            'state = store.load("task-1")\nstore.save(state)',
        )
    )


def damaged_error(state_id: str, reason: str) -> ValueError:
    return ValueError(
        fix_message(
            f"saved State {state_id!r} is damaged: {reason}",
            "restore the store's data from a backup, or start a new State",
        )
    )


def not_a_state_error(method: str, got: object, fix: str, example: str) -> TypeError:
    """The error of an Agent method (``agent.{method}()``) whose first argument is not a State."""
    return TypeError(
        fix_message(f"The first argument of agent.{method}() must be a State (got: {got!r})", fix, example)
    )
