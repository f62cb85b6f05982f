"""Values on their way to a provider and back, the same for every adapter: plain copies of frozen JSON, the
placeholder text of an empty message, the Usage of a reply with its cost, the cut-off tool call, and the streamed
text handed to `on_text`."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from alpineagents.models.base import Model, OnText
from alpineagents.types import INVALID_ARGS_KEY, TRUNCATED_ARGS_MESSAGE, ToolCall, Usage

__all__ = ["EMPTY_REPLY", "TextSink", "plain", "priced_usage", "truncate_last_call"]

EMPTY_REPLY = "(empty reply)"
"""Sent for a message with no content at all, which the APIs refuse."""


def plain(value: Any) -> Any:
    """A plain, editable deep copy of a (frozen) JSON value: dicts become `dict`, lists and tuples `list`.

    Like `alpineagents._frozen.thaw` for the values the types hold (frozen dicts and lists are `dict`/`list`
    subclasses), but faster: it checks concrete types, not the `Mapping` ABC.
    """
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def priced_usage(model: Model, input_tokens: int, output: int, cache_read: int, cache_write: int) -> Usage:
    """The Usage of one reply of `model` (`requests == 1`), with its cost at the model's price (`None` without)."""
    usage = Usage(input_tokens, output, cache_read, cache_write, 1)
    cost = model._cost(usage)  # pyright: ignore[reportPrivateUsage] - the helper Model keeps for adapters
    return usage if cost is None else Usage(input_tokens, output, cache_read, cache_write, 1, cost)


def truncate_last_call(blocks: list[Any], stop_reason: str | None, cut_off: Container[str | None]) -> None:
    """A reply cut off by the output limit (its stop reason is one of `cut_off`): when its last block is a tool
    call, that call's arguments are incomplete, so they become `{INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}` (same
    name and id)."""
    if stop_reason in cut_off and blocks and isinstance(blocks[-1], ToolCall):
        last = blocks[-1]
        blocks[-1] = ToolCall(last.name, {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, last.id)


class TextSink:
    """Hands each streamed text chunk to `on_text` (if any) and remembers an exception it raised, so that the
    adapter lets that very exception leave unwrapped, whatever its type."""

    __slots__ = ("on_text", "error", "opened")

    def __init__(self, on_text: OnText | None) -> None:
        self.on_text = on_text
        self.error: BaseException | None = None
        self.opened = False  # the stream's response began (a failure after it is a failure mid-reply)

    def __call__(self, text: str) -> None:
        if self.on_text is not None:
            try:
                self.on_text(text)
            except BaseException as error:
                self.error = error
                raise
