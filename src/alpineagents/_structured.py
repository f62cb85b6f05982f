"""Structured answers for `agent.ask(returns=...)`: the accepted types, the texts sent, the parsing of replies."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from alpineagents.errors import fix_message

__all__ = ["check_returns", "question_text", "retry_text", "parse_reply", "type_name", "Answers"]

_ADAPTERS: dict[Any, tuple[TypeAdapter[Any], str]] = {}
_FENCE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def type_name(returns: object) -> str:
    """`returns.__name__`, or its repr when it has none (for messages)."""
    name = getattr(returns, "__name__", None)
    return name if isinstance(name, str) else repr(returns)


def _unsupported(returns: object) -> TypeError:
    return TypeError(
        fix_message(
            f"ask(returns={returns!r}) is not a supported type",
            "pass the type itself to returns, such as str, a dataclass or a Pydantic model",
            'plan = agent.ask(state, "Make a plan", returns=Plan)',
        )
    )


def _adapter(returns: object) -> tuple[TypeAdapter[Any], str]:
    try:
        cached = _ADAPTERS.get(returns)
    except TypeError:  # unhashable returns
        cached = None
    if cached is not None:
        return cached
    try:
        # Any type form Pydantic reads (a class, list[...], Literal[...]); one it cannot read raises just below.
        adapter: TypeAdapter[Any] = TypeAdapter(returns)  # pyright: ignore[reportArgumentType]
        schema = json.dumps(adapter.json_schema(), ensure_ascii=False)
    except Exception as error:
        raise _unsupported(returns) from error
    try:
        _ADAPTERS[returns] = (adapter, schema)
    except TypeError:
        pass
    return adapter, schema


def check_returns(returns: object) -> None:
    """Raise a `TypeError` when `returns` is not a supported answer type (`str`, or a type Pydantic can validate
    from JSON: a dataclass, a model, a `list[...]`, ...)."""
    if returns is str:
        return
    if returns is None or isinstance(returns, (str, bytes, int, float, bool)):
        raise _unsupported(returns)
    _adapter(returns)


def question_text(prompt: str, returns: object) -> str:
    """The question sent to the model: the prompt, plus for a type other than `str` the request for a single JSON
    value and the JSON schema it must match."""
    if returns is str:
        return prompt
    schema = _adapter(returns)[1]
    return (
        f"{prompt}\n\nReply with a single JSON value matching the JSON schema below. Do not write anything else.\n"
        f"{schema}"
    )


def retry_text(error: BaseException) -> str:
    """The user message sent after a reply that does not match the format."""
    return f"The reply does not match the format: {error}\nReply again in the required format."


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _balanced(text: str) -> str | None:
    """The first balanced `{...}` or `[...]` of `text` that parses as JSON (brackets inside strings ignored)."""
    start = 0
    length = len(text)
    while True:
        # Find the next opening bracket.
        while start < length and text[start] not in "{[":
            start += 1
        if start >= length:
            return None
        depth = 0
        in_string = False
        escaped = False
        index = start
        end = -1
        while index < length:
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    end = index
                    break
            index += 1
        if end >= 0:
            candidate = text[start : end + 1]
            if _is_json(candidate):
                return candidate
        start += 1


def _candidate(text: str) -> str | None:
    if _is_json(text):
        return text
    match = _FENCE.search(text)
    body = match.group(1).strip() if match else None
    if body is not None and _is_json(body):
        return body
    if body is not None:
        found = _balanced(body)
        if found is not None:
            return found
    return _balanced(text)


def _validation_message(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item.get("loc", ()))
        msg = item.get("msg", "")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def parse_reply(text: str, returns: object) -> Any:
    """Convert the reply `text` to `returns`, or raise `ValueError` saying why it does not fit.

    `str`: the stripped text. Otherwise the JSON value found first in: the whole text, the body of the first code
    fence, the first balanced `{...}`/`[...]` in that body and then in the whole text; validated by Pydantic.
    """
    stripped = text.strip()
    if returns is str:
        if not stripped:
            raise ValueError("the reply is empty")
        return stripped
    if not stripped:
        raise ValueError("the reply is empty. Reply with a single JSON value")
    adapter = _adapter(returns)[0]
    candidate = _candidate(stripped)
    if candidate is None:
        raise ValueError("no JSON found in the reply. Reply with a single JSON value only")
    try:
        return adapter.validate_json(candidate)
    except ValidationError as error:
        raise ValueError(_validation_message(error)) from None


class Answers:
    """The answer format of one `ask(returns=...)`: the question text, the parsing, the retry message."""

    __slots__ = ("returns", "name")

    def __init__(self, returns: object) -> None:
        self.returns = returns
        self.name = type_name(returns)

    def question(self, prompt: str) -> str:
        """The text of the question sent to the model."""
        return question_text(prompt, self.returns)

    def parse(self, text: str) -> Any:
        """The answer in the reply `text`, or `ValueError` saying why it does not fit."""
        return parse_reply(text, self.returns)

    def retry(self, error: ValueError) -> str:
        """The message sent after a reply that did not fit."""
        return retry_text(error)
