"""The JSON bytes a request body is sent as, each message encoded once per conversation.

A request of a long conversation is mostly its messages, and all but the newest were in the request before. The
adapters keep each message's wire items (`_request_cache`) and, beside them, each item's JSON bytes, made when the
item is made; a body is then encoded as its few other fields plus the kept bytes of its conversation, joined. At
5,000 messages (about 2 MB of JSON) this takes encoding a request from 10-20 ms (`json.dumps` of the whole body)
to well under a millisecond (`benchmarks/long_context.py`). The bytes are exactly what encoding the whole body
gives, with the conversation's key moved last (the same JSON value).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["WireList", "dumps", "encode"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """The JSON bytes of `value`, as an SDK's HTTP client encodes a body: compact, UTF-8, strict (a non-finite
    number is a `ValueError`)."""
    return _ENCODER.encode(value).encode()


class WireList(list[dict[str, Any]]):
    """Wire items that carry their JSON bytes: `encoded` holds one `dumps` of each item, in order.

    It is a plain list to everything else. A list made from it by slicing or adding is a plain list, and one
    changed in place no longer has as many items as `encoded`: `encode` then encodes it whole.
    """

    __slots__ = ("encoded",)

    def __init__(self, items: Iterable[dict[str, Any]], encoded: tuple[bytes, ...]) -> None:
        super().__init__(items)
        self.encoded = encoded

    def prefixed(self, item: dict[str, Any]) -> WireList:
        """A new WireList with `item` first (the system message of a Chat Completions request)."""
        return WireList((item, *self), (dumps(item), *self.encoded))


def encode(body: dict[str, Any]) -> bytes:
    """The JSON bytes of a request body: the kept bytes of a `WireList` value joined, everything else encoded."""
    for key, value in body.items():
        encoded = value.encoded if type(value) is WireList else None
        if encoded and len(encoded) == len(value):
            head = dumps({k: v for k, v in body.items() if k != key})
            opening = b"".join((head[:-1], b"," if len(head) > 2 else b"", dumps(key), b":["))
            if len(encoded) == 1:
                return opening + encoded[0] + b"]}"
            # one join: the whole body is copied once (it is megabytes in a long conversation)
            return b",".join((opening + encoded[0], *encoded[1:-1], encoded[-1] + b"]}"))
    return dumps(body)
