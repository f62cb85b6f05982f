"""Tests for alpineagents._tokens: the character-count estimate of a context's tokens."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import alpineagents._tokens as tokens_module
from alpineagents._tokens import (
    IMAGE_TOKENS,
    context_tokens,
    estimate_message_tokens,
    estimate_overhead_tokens,
    estimate_text_tokens,
)
from alpineagents.types import Image, Message, RawBlock, TextBlock, ToolCall, ToolResultBlock, ToolSpec

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)


def user(text: str) -> Message:
    return Message.user(text)


def assistant(text: str, tokens: int | None = None) -> Message:
    return Message("assistant", (TextBlock(text),), tokens=tokens)


def test_text_and_message_estimates_count_characters() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("a") == 1
    assert estimate_text_tokens("abc") == 1
    assert estimate_text_tokens("abcd") == 2
    assert estimate_message_tokens(Message.user("hi")) == 5
    big_png = Image(b"\x89PNG\r\n\x1a\n" + bytes(300 * 1024))
    assert estimate_message_tokens(Message.user("", big_png)) == 1604
    one = Message.user("look", Image(PNG))
    two = Message.user("look", Image(PNG), Image(PNG))
    assert estimate_message_tokens(two) - estimate_message_tokens(one) == 1600
    assert IMAGE_TOKENS == 1600


def test_context_tokens_count_from_the_latest_reported_total() -> None:
    messages = [user("hello world"), assistant("ok", tokens=500), user("next one")]
    assert context_tokens(messages, 100) == 507
    assert context_tokens([user("hello world")], 100) == 108
    assert context_tokens([], 7) == 7
    spec = ToolSpec("read", "Read a file", {"type": "object"})
    assert estimate_overhead_tokens("You are helpful.", [spec]) == 17
    assert estimate_overhead_tokens(None, []) == 0


def test_message_estimate_examples() -> None:
    assert estimate_message_tokens(Message("assistant", ())) == 4
    assert estimate_message_tokens(Message("assistant", (ToolCall("read", {"path": "a.py"}, "c1"),))) == 11
    image = Image(PNG)
    result = ToolResultBlock("c1", (TextBlock("abc"), TextBlock("def"), image))
    assert estimate_message_tokens(Message("user", (result,))) == 1606
    assert estimate_message_tokens(Message("user", (ToolResultBlock("c", "abcd", name="x", is_error=True),))) == 6
    raw = RawBlock("p", {"a": 1})  # '{"a": 1}' is 8 characters
    assert estimate_message_tokens(Message("assistant", (raw,))) == 4 + 3


def test_each_block_is_rounded_separately() -> None:
    # "a" and "b" each round up to one token; together "ab" would be one.
    assert estimate_message_tokens(Message("assistant", (TextBlock("a"), TextBlock("b")))) == 6


def test_non_ascii_and_unknown_blocks() -> None:
    call = ToolCall("t", {"é": "ü"}, "c")  # t{"é": "ü"} is 11 characters with ensure_ascii=False
    assert estimate_message_tokens(Message("assistant", (call,))) == 4 + 4

    class Other:
        def __str__(self) -> str:
            return "abcdef"

    assert estimate_message_tokens(Message("assistant", (Other(),))) == 4 + 2  # type: ignore[arg-type]
    # a value json cannot show goes through str()
    assert estimate_message_tokens(Message("assistant", (ToolCall("t", {"s": b"x"}, "c"),))) > 4


def test_latest_anchor_wins_and_overhead_is_not_added() -> None:
    messages = [assistant("a", tokens=100), user("b"), assistant("c", tokens=300)]
    assert context_tokens(messages, 999) == 300
    assert context_tokens([*messages, user("abcdef")], 999) == 300 + 6


def test_overhead_terms_rounded_separately() -> None:
    specs = [ToolSpec("a", "", {}), ToolSpec("b", "", {})]  # "a{}" and "b{}": one token each
    assert estimate_overhead_tokens("", specs) == 2
    assert estimate_overhead_tokens("x", iter(specs)) == 3


def test_exports() -> None:
    assert tokens_module.__all__ == [
        "IMAGE_TOKENS",
        "estimate_text_tokens",
        "estimate_message_tokens",
        "estimate_overhead_tokens",
        "context_tokens",
    ]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=8), st.integers(0, 1000))
def test_property_no_anchor_is_overhead_plus_sum(texts: list[str], overhead: int) -> None:
    messages = [Message.user(t) for t in texts]
    expected = overhead + sum(4 + (len(t) + 2) // 3 for t in texts)
    assert context_tokens(messages, overhead) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=50))
def test_property_text_estimate(text: str) -> None:
    n = estimate_text_tokens(text)
    assert 3 * n >= len(text) > 3 * (n - 1)
