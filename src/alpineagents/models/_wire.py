"""Values on their way to a provider and back, the same for every adapter: plain copies of frozen JSON, the
placeholder text of an empty message, the Usage of a reply with its cost, the cut-off tool call, the Reply made of
what was read, and the streamed pieces handed to `on_text` (text; thinking and tool-call arguments when it is an
`OnStream`)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

from alpineagents import _observe as observe
from alpineagents.models.base import Model, OnStream, OnText
from alpineagents.types import INVALID_ARGS_KEY, TRUNCATED_ARGS_MESSAGE, Block, Message, Reply, ToolCall, Usage

__all__ = ["EMPTY_REPLY", "TextSink", "assistant_reply", "plain", "priced_usage", "truncate_last_call"]

EMPTY_REPLY = "(empty reply)"
"""Sent for a message with no content at all, which the APIs refuse."""


def plain(value: object) -> Any:
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


def assistant_reply(
    model: Model,
    blocks: Sequence[Block],
    usage: Usage,
    context_tokens: int | None,
    stop_reason: str | None,
    *,
    answered_by: str | None,
    response_id: str | None,
) -> Reply:
    """The Reply an adapter made of what it read: the assistant message of `blocks`, named for the model the provider
    says answered (`answered_by`, else the adapter's name). The provider's `response_id` goes to the tracer (nothing
    happens when nobody traces)."""
    observe.response_id(response_id)
    return Reply(
        Message("assistant", tuple(blocks)),
        usage,
        context_tokens=context_tokens,
        stop_reason=stop_reason,
        model=answered_by or model.name,
    )


def truncate_last_call(blocks: list[Any], stop_reason: str | None, cut_off: Container[str | None]) -> None:
    """A reply cut off by the output limit (its stop reason is one of `cut_off`): when its last block is a tool
    call, that call's arguments are incomplete, so they become `{INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}` (same
    name and id)."""
    if stop_reason in cut_off and blocks and isinstance(blocks[-1], ToolCall):
        last = blocks[-1]
        blocks[-1] = ToolCall(last.name, {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, last.id)


class TextSink:
    """Hands each streamed piece to `on_text` (if any) and remembers an exception it raised, so that the adapter
    lets that very exception leave unwrapped, whatever its type.

    Text goes to `on_text` itself; thinking and tool-call arguments go to its `thinking`/`tool_args` when it is an
    `OnStream` (`pieces` is then that stream, else `None`: an adapter may skip the work of finding the pieces).
    """

    __slots__ = ("on_text", "pieces", "error", "opened")

    def __init__(self, on_text: OnText | None) -> None:
        self.on_text = on_text
        self.pieces: OnStream | None = on_text if isinstance(on_text, OnStream) else None
        self.error: BaseException | None = None
        self.opened = False  # the stream's response began (a failure after it is a failure mid-reply)

    def __call__(self, text: str) -> None:
        if self.on_text is not None:
            try:
                self.on_text(text)
            except BaseException as error:
                self.error = error
                raise

    def thinking(self, text: str) -> None:
        """A piece of thinking, for an `OnStream`."""
        if self.pieces is not None:
            try:
                self.pieces.thinking(text)
            except BaseException as error:
                self.error = error
                raise

    def tool_args(self, call_id: str, name: str, delta: str) -> None:
        """A piece of a tool call's arguments, for an `OnStream`."""
        if self.pieces is not None:
            try:
                self.pieces.tool_args(call_id, name, delta)
            except BaseException as error:
                self.error = error
                raise
