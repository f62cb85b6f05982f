"""Message content in the form of the GenAI semantic conventions (only written when content capture is on).

Messages become the JSON text of a list of ``{"role", "parts"}`` objects; a part is ``text``, ``tool_call`` (id,
name, arguments), ``tool_call_response`` (id, response), ``blob`` (an image: its media type and size, never its
bytes) or ``raw`` (a provider's own block: only its provider). Nothing here reads a Model or its settings, so no
credential can reach a span from here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from alpineagents._frozen import thaw
from alpineagents.types import Image, Message, RawBlock, TextBlock, ToolCall, ToolResultBlock, ToolResultContent

__all__ = ["messages_json", "output_json", "system_json", "result_json", "arguments_json", "answer_text"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _result(content: ToolResultContent) -> Any:
    if isinstance(content, str):
        return content
    return [_part(block) for block in content]


def _part(block: Any) -> dict[str, Any]:
    if type(block) is TextBlock:
        return {"type": "text", "content": block.text}
    if type(block) is ToolCall:
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": thaw(block.args)}
    if type(block) is ToolResultBlock:
        return {"type": "tool_call_response", "id": block.call_id, "response": _result(block.content)}
    if type(block) is Image:
        return {"type": "blob", "modality": "image", "mime_type": block.media_type, "size": len(block.data)}
    if type(block) is RawBlock:
        return {"type": "raw", "provider": block.provider}
    return {"type": type(block).__name__}


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [_part(block) for block in message.content]}


def messages_json(messages: Iterable[Message]) -> str:
    """``gen_ai.input.messages``: the messages sent to the model."""
    return _dumps([_message(message) for message in messages])


def output_json(message: Message, finish_reason: str | None) -> str:
    """``gen_ai.output.messages``: the reply's message, with why the model stopped."""
    out = _message(message)
    out["finish_reason"] = finish_reason or "unknown"
    return _dumps([out])


def system_json(system: str) -> str:
    """``gen_ai.system_instructions``: the system prompt."""
    return _dumps([{"type": "text", "content": system}])


def result_json(content: ToolResultContent) -> str:
    """``gen_ai.tool.call.result``: what the model receives as the tool's result."""
    return content if isinstance(content, str) else _dumps(_result(content))


def arguments_json(call: ToolCall) -> str:
    """``gen_ai.tool.call.arguments``: the call's arguments as JSON text."""
    return _dumps(thaw(call.args))


def answer_text(answer: Any) -> str:
    """A Human's answer as text."""
    return answer if isinstance(answer, str) else _dumps(answer)
