"""Building a State: the checks of ``State(...)`` and what it starts from (a replayed history, or the entries that
hold the given messages and extra data)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from alpineagents._history import misuse
from alpineagents._history.fold import EntryCannotFollow, first_non_entry, replay
from alpineagents._history.json_values import json_copy
from alpineagents._history.snapshot import StateSnapshot
from alpineagents._tokens import context_tokens
from alpineagents.errors import fix_message
from alpineagents.types import ContextChange, ContextChangeEntry, ExtraDataEntry, HistoryEntry, Message

__all__ = ["check_keywords", "history_snapshot", "initial_entries", "keyword_signature"]


def check_keywords(args: tuple[object, ...], kwargs: Mapping[str, object]) -> None:
    """Refuse positional arguments and unknown keywords, with the texts that say what to write instead."""
    if args:
        raise misuse.positional_error(args)
    for name in kwargs:
        if name not in misuse.ACCEPTED:
            raise misuse.unknown_keyword(name)


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


def _non_empty(messages: object) -> bool:
    """Whether ``messages`` (given next to ``history=``) holds anything; consumes it."""
    if messages is None:
        return False
    try:
        return len(list(messages)) > 0  # pyright: ignore[reportArgumentType]
    except TypeError:
        return True


def history_snapshot(history: Iterable[object], messages: object, extra_data: object) -> StateSnapshot:
    """The snapshot of ``State(history=...)``: the replay of the given entries.

    Raises:
        TypeError: ``messages=``/``extra_data=`` given too, or an item is not a history entry.
        ValueError: the entries do not fold (the message names the first entry that does not fit).
    """
    if extra_data is not None or _non_empty(messages):
        raise TypeError(fix_message(*misuse.HISTORY_COMBINED))
    entries: list[Any] = list(history)
    bad = first_non_entry(entries)
    if bad >= 0:
        raise misuse.history_item_error(bad, entries[bad])
    try:
        return replay(entries)
    except EntryCannotFollow as error:
        cause = error.__cause__
        assert isinstance(cause, ValueError)
        raise misuse.history_fold_error(error.index, entries[error.index], cause) from cause


def initial_entries(messages: object, extra_data: object) -> list[HistoryEntry]:
    """The entries ``State(messages=..., extra_data=...)`` starts with: an ``import`` context change holding the
    messages, and the extra data (each only when given).

    Raises:
        TypeError: ``messages`` is not an iterable of ``Message``, or ``extra_data`` is not a JSON mapping.
    """
    if isinstance(messages, (str, bytes, Message)):
        raise misuse.messages_type_error(messages, iterable=True)
    try:
        iterator = iter(messages)  # pyright: ignore[reportCallIssue, reportArgumentType]
    except TypeError:
        raise misuse.messages_type_error(messages, iterable=False) from None
    items: list[Message] = []
    for item in iterator:
        if not isinstance(item, Message):
            raise misuse.message_item_error(item)
        items.append(item)
    values: dict[str, Any] = {}
    if extra_data is not None:
        if not isinstance(extra_data, Mapping):
            raise misuse.extra_data_type_error(extra_data)
        values = json_copy(extra_data, "State(extra_data=...)")
    entries: list[HistoryEntry] = []
    if items:
        found = tuple(items)
        change = ContextChange("import", before_tokens=0, after_tokens=context_tokens(found, 0), messages=found)
        entries.append(ContextChangeEntry(content=change, turn=0))
    if values:
        entries.append(ExtraDataEntry(content=values, removed=(), turn=0))
    return entries
