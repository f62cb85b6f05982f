"""The makers state.py and _think.py still import by these names, until they make their own with ``maker``.

Each is ``alpineagents._values.construct.maker`` of its class: it gives exactly the value the class gives.
"""

from __future__ import annotations

from alpineagents._values.construct import maker
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

make_message = maker(Message)
make_result_block = maker(ToolResultBlock)
make_request_entry = maker(ModelRequestEntry)
make_reply_entry = maker(ModelReplyEntry)
make_result_entry = maker(ToolResultEntry)
make_usage = maker(Usage)
make_reply = maker(Reply)
make_request = maker(Request)
