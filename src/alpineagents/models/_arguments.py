"""Reading a tool call's arguments from a provider: only a strict JSON object is a usable set of arguments.

Anything else is unreadable and becomes `{INVALID_ARGS_KEY: <the raw text>}`, which the tool closes as an input
error the model can read (and the run goes on): text that is not JSON, JSON that is not an object (`[1, 2]`,
`null`), and JSON extended with the non-finite numbers `NaN`, `Infinity` and `-Infinity`, which some servers
(vLLM, Ollama) emit and Python's `json` module accepts, but which no JSON encoder of a store or of the next
request can write back.
"""

from __future__ import annotations

import json
import math
from typing import Any

from alpineagents.types import INVALID_ARGS_KEY

__all__ = ["parse_arguments", "checked_arguments"]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(raw: str) -> dict[str, Any]:
    """The arguments in the JSON text `raw`: `{}` for an empty text, the object when `raw` is a strict JSON
    object, else `{INVALID_ARGS_KEY: raw}`."""
    if raw == "":
        return {}
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        return {INVALID_ARGS_KEY: raw}
    if isinstance(value, dict):
        return value
    return {INVALID_ARGS_KEY: raw}


def _finite(value: object) -> bool:
    """True when `value` (a decoded JSON value) holds no NaN or infinite number at any depth."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(item) for item in value)
    return True


def checked_arguments(value: object) -> dict[str, Any]:
    """Arguments an SDK already decoded: a copy of the dict when it is one holding only JSON numbers, else
    `{INVALID_ARGS_KEY: <its text>}`."""
    if isinstance(value, dict) and _finite(value):
        return dict(value)
    if isinstance(value, dict):
        return {INVALID_ARGS_KEY: json.dumps(value, ensure_ascii=False)}
    return {INVALID_ARGS_KEY: str(value)}
