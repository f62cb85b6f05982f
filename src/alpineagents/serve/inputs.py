"""Reading what a client sends: JSON bodies, and the conversations of the three dialects turned into messages.

- This library's own form: `{"prompt": "..."}` or `{"messages": [{"role": "user", "content": "..."}, ...]}`, and
  `"state_id"` to continue a stored run.
- AG-UI: the `RunAgentInput` that `@ag-ui/client` posts; its `threadId` is the State id.
- Vercel AI SDK: `{"id", "messages": [UIMessage...]}` that `DefaultChatTransport` posts; `id` is the State id.

A State that exists gets only the messages after the last assistant message (the client sends the whole
conversation; the State already has the rest); a new one gets them all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from alpineagents.serve.errors import ApiError
from alpineagents.types import Message

ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Start:
    """What a request asks to run: the State id to continue (or None for a new one), the id a new run gets when the
    client chose it, and the messages to add."""

    state_id: str | None
    messages: tuple[Message, ...]
    new_id: str | None = None
    run_id: str | None = None
    decisions: tuple[tuple[str, bool, str | None], ...] = ()
    """`(call id, approved, reason)` of the approvals a client answered (the AI SDK's tool approval responses)."""


def shape_error(message: str) -> ApiError:
    return ApiError(422, "bad_request", message)


async def json_body(request: Request) -> Any:
    """The request's JSON body (400 when it is not JSON)."""
    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, "bad_json", f"the request body is not valid JSON ({error}): send a JSON object")


def _message(role: object, text: object, where: str) -> Message:
    if role not in ROLES:
        raise shape_error(f"{where}: role must be 'user' or 'assistant' (got {role!r})")
    if not isinstance(text, str):
        raise shape_error(f"{where}: the content must be a string")
    return Message.user(text) if role == "user" else Message.assistant(text)


def native(data: Any) -> Start:
    """`{"prompt"}` or `{"messages"}`, optionally `"state_id"` (a stored run to continue)."""
    if not isinstance(data, dict):
        raise shape_error('send a JSON object: {"prompt": "..."} or {"messages": [...]}, and "state_id" to continue')
    state_id = data.get("state_id")
    if state_id is not None and not isinstance(state_id, str):
        raise shape_error("state_id must be a string: the id of a stored run")
    prompt, given = data.get("prompt"), data.get("messages")
    if (prompt is None) == (given is None):
        raise shape_error('send either "prompt" (a string) or "messages" (a list of {"role", "content"}), not both')
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise shape_error('"prompt" must be a non-empty string')
        return Start(state_id, (Message.user(prompt),))
    if not isinstance(given, list) or not given:
        raise shape_error('"messages" must be a non-empty list of {"role": "user", "content": "..."}')
    messages = []
    for index, item in enumerate(given):
        if not isinstance(item, dict):
            raise shape_error(f"messages[{index}] must be an object with role and content")
        messages.append(_message(item.get("role"), item.get("content"), f"messages[{index}]"))
    return Start(state_id, tuple(messages))


def agui(data: Any) -> Start:
    """AG-UI's `RunAgentInput`: `threadId` is the State id, `runId` names this run in the events."""
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    try:
        given = RunAgentInput.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise shape_error(f"not an AG-UI RunAgentInput: {where}: {first['msg']}")
    messages = []
    for message in given.messages:
        if message.role in ROLES:
            content = getattr(message, "content", None)
            messages.append(_message(message.role, _agui_text(content), f"message {message.id}"))
    return Start(None, tuple(messages), new_id=given.thread_id, run_id=given.run_id)


def _agui_text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(getattr(part, "text", "") or "" for part in content)


def vercel(data: Any) -> Start:
    """The body of the AI SDK's `DefaultChatTransport`: `{"id", "messages": [{"id", "role", "parts"}]}`."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise shape_error('send the AI SDK chat body: {"id": CHAT_ID, "messages": [{"role", "parts"}]}')
    chat_id = data.get("id")
    if chat_id is not None and not isinstance(chat_id, str):
        raise shape_error('"id" (the chat id) must be a string')
    messages = []
    decisions: list[tuple[str, bool, str | None] | None] = []
    for index, item in enumerate(data["messages"]):
        if not isinstance(item, dict) or not isinstance(item.get("parts"), list):
            raise shape_error(f"messages[{index}] must be a UIMessage with role and parts")
        if item.get("role") not in ROLES:
            continue
        parts = [part for part in item["parts"] if isinstance(part, dict)]
        text = "".join(part.get("text", "") for part in parts if part.get("type") == "text")
        messages.append(_message(item.get("role"), text, f"messages[{index}]"))
        decisions.extend(_approval(part) for part in parts if isinstance(part.get("approval"), dict))
    answered = tuple(decision for decision in decisions if decision is not None)
    return Start(None, tuple(messages), new_id=chat_id, decisions=answered)


def _approval(part: dict[str, Any]) -> tuple[str, bool, str | None] | None:
    """A tool part's approval response (`{"approval": {"id", "approved", "reason"}}`), or None if unanswered."""
    approval = part["approval"]
    if not isinstance(approval.get("approved"), bool) or not isinstance(approval.get("id"), str):
        return None
    reason = approval.get("reason")
    return approval["id"], approval["approved"], reason if isinstance(reason, str) else None


def new_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages after the last assistant message (what a client adds to a conversation the State has)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return tuple(messages[index + 1 :])
    return tuple(messages)
