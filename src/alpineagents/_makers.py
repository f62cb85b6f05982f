"""Trusted makers of the values recorded on every turn (private to the package).

Each maker takes every field of its class, in field order, and skips the keyword parsing and ``__post_init__`` of
the constructor (``_fastinit.trusted``). Call one only with values already in the normal form the constructor
would leave: a tuple for ``content``, a ``ToolOutcomeKind`` for ``outcome``, ``at`` from the clock hook
``types._now()``. One maker per class, shared by the fold, the State, ``think`` and ``FakeModel``.
"""

from __future__ import annotations

from alpineagents._fastinit import trusted
from alpineagents.types import (
    Message,
    ModelReplyEntry,
    ModelRequestEntry,
    Reply,
    Request,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
)

__all__ = [
    "make_message",
    "make_result_block",
    "make_request_entry",
    "make_reply_entry",
    "make_result_entry",
    "make_usage",
    "make_reply",
    "make_request",
]

make_message = trusted(Message)
"""``(role, content, tokens, stop_reason)``; ``content`` a tuple of blocks."""

make_result_block = trusted(ToolResultBlock)
"""``(call_id, content, name, is_error)``; ``content`` a str or a tuple."""

make_request_entry = trusted(ModelRequestEntry)
"""``(kind, content, turn, at)``."""

make_reply_entry = trusted(ModelReplyEntry)
"""``(kind, content, turn, at)``."""

make_result_entry = trusted(ToolResultEntry)
"""``(kind, content, call, outcome, late, error, child_ids, usage, turn, at)``."""

make_usage = trusted(Usage)
"""``(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, requests, cost)``."""

make_reply = trusted(Reply)
"""``(message, usage, context_tokens, stop_reason, model)``."""

make_request = trusted(Request)
"""``(system, messages, tools, tool_choice)``; ``messages`` and ``tools`` tuples."""
