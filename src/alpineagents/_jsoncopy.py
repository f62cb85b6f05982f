"""Plain deep copies of JSON values, with errors that say how to fix the value (``extra_data`` and answers).

Private helpers of ``alpineagents.state`` and its fold.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from typing import Any

from alpineagents._frozen import freeze
from alpineagents.errors import fix_message

__all__ = ["JSON_EXAMPLE", "json_copy", "json_form"]

# --- JSON values ----------------------------------------------------------------------------------------------

JSON_EXAMPLE = "with state.edit_extra_data() as data:\n    data['seen'] = sorted(seen)  # a list, not a set"
_HINTS = {
    "set": "use a list: sorted(seen)",
    "frozenset": "use a list: sorted(seen)",
    "bytes": "use text: base64.b64encode(data).decode()",
    "datetime": "use value.isoformat()",
}
_OTHER_HINT = "turn it into a dict, list, str, int, float, bool or None first (a dataclass: dataclasses.asdict)"


def json_copy(value: Any, where: str) -> Any:
    """A plain deep copy of a JSON value (``extra_data`` rules); ``TypeError`` names ``where`` otherwise."""
    cls = type(value)
    if value is None or cls is bool or cls is int or cls is str:
        return value
    if cls is float:
        if math.isfinite(value):
            return value
        raise TypeError(
            fix_message(
                f"{where} must be JSON (got {value!r}, which JSON cannot hold)",
                'use a finite number, or None for "no value"',
                JSON_EXAMPLE,
            )
        )
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return json_copy(float(value), where)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    fix_message(
                        f"{where} must be JSON, and its key {key!r} is a {type(key).__name__} (JSON keys are strings)",
                        "use str(key) as the key",
                        JSON_EXAMPLE,
                    )
                )
            out[key] = json_copy(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [json_copy(item, f"{where}[{index}]") for index, item in enumerate(value)]
    hint = _HINTS.get(cls.__name__, _OTHER_HINT)
    raise TypeError(fix_message(f"{where} must be JSON (got {cls.__name__}); {hint}", hint, JSON_EXAMPLE))


_ANSWER_FIX = (
    "with a store, keep dicts (string keys), lists, str, int, float, bool or None there "
    "(turn other values into one of these first)"
)


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _not_json(where: str, value: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"{where} holds {type(value).__name__} {_short_repr(value)}, which cannot be saved as JSON",
            _ANSWER_FIX,
            JSON_EXAMPLE,
        )
    )


def _answer_copy(value: Any, where: str) -> Any:
    cls = type(value)
    if value is None or cls is bool or cls is int or cls is str:
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise _not_json(where, value)
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _not_json(f"{where} key {key!r}", key)
            out[key] = _answer_copy(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_answer_copy(item, f"{where}[{index}]") for index, item in enumerate(value)]
    raise _not_json(where, value)


def json_form(value: Any, where: str) -> Any:
    """The frozen JSON form of an answer: a Pydantic model dumped, a dataclass as a dict, then a deep JSON copy."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return freeze(_answer_copy(value, where))
