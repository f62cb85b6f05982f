"""The character-count context-token estimate: one token per 3 characters, 1,600 per image.

The only size rule the core uses without asking a provider: ``agent.context_tokens``, the default
``Model.count_tokens``, ``ContextChange.before_tokens``/``after_tokens`` and ``FakeModel``'s usage.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from alpineagents.types import Image, Message, RawBlock, TextBlock, ToolCall, ToolResultBlock, ToolSpec

__all__ = [
    "IMAGE_TOKENS",
    "estimate_text_tokens",
    "estimate_message_tokens",
    "estimate_overhead_tokens",
    "context_tokens",
]

IMAGE_TOKENS = 1600
"""The estimate for one image, whatever its byte size."""


def estimate_text_tokens(text: str) -> int:
    """``(len(text) + 2) // 3``: one token per 3 characters, rounded up."""
    return (len(text) + 2) // 3


def estimate_message_tokens(message: Message) -> int:
    """4 for the message, plus each block estimated and rounded on its own (an image counts ``IMAGE_TOKENS``)."""
    total = 4
    for block in message.content:
        # A tool result with text, the commonest block after a text, by exact type first (no isinstance chain).
        if type(block) is ToolResultBlock and type(block.content) is str:
            total += (len(block.content) + 2) // 3
        elif isinstance(block, TextBlock):
            total += (len(block.text) + 2) // 3
        elif isinstance(block, ToolCall):
            total += estimate_text_tokens(block.name + json.dumps(block.args, ensure_ascii=False, default=str))
        elif isinstance(block, ToolResultBlock):
            content = block.content
            if isinstance(content, str):
                total += (len(content) + 2) // 3
            else:
                texts: list[str] = []
                for part in content:
                    if isinstance(part, TextBlock):
                        texts.append(part.text)
                    elif isinstance(part, Image):
                        total += IMAGE_TOKENS
                total += estimate_text_tokens("".join(texts))
        elif isinstance(block, Image):
            total += IMAGE_TOKENS
        elif isinstance(block, RawBlock):
            total += estimate_text_tokens(json.dumps(block.data, ensure_ascii=False, default=str))
        else:
            total += estimate_text_tokens(str(block))
    return total


def estimate_overhead_tokens(system: str | None, tools: Iterable[ToolSpec]) -> int:
    """What every request carries outside the messages: the system prompt and each tool's name, description and
    schema (each estimated on its own)."""
    total = estimate_text_tokens(system or "")
    for spec in tools:
        total += estimate_text_tokens(spec.name + spec.description + json.dumps(spec.input_schema, ensure_ascii=False))
    return total


# The latest ``(messages, overhead, result)`` computed for a tuple (``overhead`` None when the result did not use
# it). A turn asks twice for the same tuple (``agent.context_used`` before ``think``, then the model's
# ``count_tokens`` of the Request), and a tuple of frozen messages always gives the same result. Replaced as one
# tuple, so a reader on another thread sees a whole entry.
_last: tuple[tuple[Message, ...] | None, int | None, int] = (None, None, 0)


def context_tokens(messages: Sequence[Message], overhead: int) -> int:
    """The estimated size of the whole context.

    From the latest message with ``tokens`` set (a provider count that already includes the system prompt and
    tools), add the estimate of each message after it; without one, ``overhead`` plus every message's estimate.
    """
    global _last
    last = _last
    if last[0] is messages and (last[1] is None or last[1] == overhead):
        return last[2]
    for i in range(len(messages) - 1, -1, -1):
        tokens = messages[i].tokens
        if tokens is not None:
            for message in messages[i + 1 :]:
                tokens += estimate_message_tokens(message)
            if type(messages) is tuple:
                _last = (messages, None, tokens)
            return tokens
    total = overhead
    for message in messages:
        total += estimate_message_tokens(message)
    if type(messages) is tuple:
        _last = (messages, overhead, total)
    return total
