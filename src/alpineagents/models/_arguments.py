"""Reading a tool call's arguments from a provider: only a strict JSON object is a usable set of arguments.

Anything else is unreadable and becomes `{INVALID_ARGS_KEY: <the raw text>}`, which the tool closes as an input
error the model can read (and the run goes on): text that is not JSON, JSON that is not an object (`[1, 2]`,
`null`), and JSON extended with the non-finite numbers `NaN`, `Infinity` and `-Infinity`, which some servers
(vLLM, Ollama) emit and Python's `json` module accepts, but which no JSON encoder of a store or of the next
request can write back.
"""

from __future__ import annotations

import json
from typing import Any

from alpineagents.types import INVALID_ARGS_KEY

__all__ = ["parse_arguments"]


def parse_arguments(raw: str) -> dict[str, Any]:
    """The arguments in the JSON text `raw`: `{}` for an empty text, the object when `raw` is a strict JSON
    object, else `{INVALID_ARGS_KEY: raw}`."""
    if raw == "":
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_ARGS_KEY: raw}
    if isinstance(value, dict):
        return value
    return {INVALID_ARGS_KEY: raw}
