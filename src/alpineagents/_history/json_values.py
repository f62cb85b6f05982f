"""Plain deep copies of JSON values: the one walk over a value, with the error texts of the two places that check.

- ``json_copy``: extra data (``State(extra_data=...)``, ``edit_extra_data``), whose errors say ``must be JSON`` and
  how to turn the value into JSON;
- ``plain``: every value the saved form holds (tool arguments, raw blocks, event data, answers), whose errors say
  which value ``cannot be saved as JSON``; ``answer`` is the JSON form of an answer (``finish``, ``ask``).

A copy is made only of ``dict`` (string keys), ``list``, ``str``, ``int``, finite ``float``, ``bool`` and ``None``:
mappings (frozen ones included) become dicts, lists and tuples become lists, subclasses of the plain types become
the plain type.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal

from alpineagents._frozen import freeze
from alpineagents.errors import fix_message

__all__ = ["JSON_EXAMPLE", "answer", "json_copy", "plain"]

JSON_EXAMPLE = "with state.edit_extra_data() as data:\n    data['seen'] = sorted(seen)  # a list, not a set"

Problem = Literal["number", "key", "value"]
"""What is wrong: a float JSON cannot hold (NaN, infinity), a key that is not a string, or a value of another type."""

Refusal = Callable[[str, object, Problem], TypeError]


def _copy(value: object, where: str, refuse: Refusal) -> Any:
    cls = type(value)
    if value is None or cls is str or cls is int or cls is bool:
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        raise refuse(where, value, "number")
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(key, str):
                raise refuse(where, key, "key")
            key = str.__str__(key)
            out[key] = _copy(item, f"{where}[{key!r}]", refuse)
        return out
    if isinstance(value, (list, tuple)):
        return [_copy(item, f"{where}[{index}]", refuse) for index, item in enumerate(value)]  # pyright: ignore
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str.__str__(value)
    raise refuse(where, value, "value")


# --- extra data -------------------------------------------------------------------------------------------------

_HINTS = {
    "set": "use a list: sorted(seen)",
    "frozenset": "use a list: sorted(seen)",
    "bytes": "use text: base64.b64encode(data).decode()",
    "datetime": "use value.isoformat()",
}
_OTHER_HINT = "turn it into a dict, list, str, int, float, bool or None first (a dataclass: dataclasses.asdict)"


def _must_be_json(where: str, value: object, problem: Problem) -> TypeError:
    if problem == "number":
        text = (
            f"{where} must be JSON (got {value!r}, which JSON cannot hold)",
            'use a finite number, or None for "no value"',
        )
    elif problem == "key":
        kind = type(value).__name__
        text = (
            f"{where} must be JSON, and its key {value!r} is a {kind} (JSON keys are strings)",
            "use str(key) as the key",
        )
    else:
        hint = _HINTS.get(type(value).__name__, _OTHER_HINT)
        text = (f"{where} must be JSON (got {type(value).__name__}); {hint}", hint)
    return TypeError(fix_message(*text, JSON_EXAMPLE))


def json_copy(value: object, where: str) -> Any:
    """A plain deep copy of a JSON value, by the rules of extra data.

    Raises:
        TypeError: something in it is not JSON; the message names where (``{where}['seen'] must be JSON (got set)``).
    """
    return _copy(value, where, _must_be_json)


# --- the saved form -----------------------------------------------------------------------------------------------

_SAVED_FIX = (
    "with a store, keep dicts (string keys), lists, str, int, float, bool or None there (turn other values into one "
    "of these first)"
)


def _cannot_be_saved(where: str, value: object, problem: Problem) -> TypeError:
    if problem == "key":
        where = f"{where} key {value!r}"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:59] + "…"
    problem_line = f"{where} holds {type(value).__name__} {shown}, which cannot be saved as JSON"
    return TypeError(fix_message(problem_line, _SAVED_FIX, JSON_EXAMPLE))


def plain(value: object, where: str) -> Any:
    """A deep copy of ``value`` made only of plain JSON values; frozen containers become ``dict``/``list``, tuples
    become lists.

    Raises:
        TypeError: something in it is not JSON; the message names where (``{where}['k'][0] holds set {1}, ...``).
    """
    return _copy(value, where, _cannot_be_saved)


def answer(value: Any, where: str) -> Any:
    """The JSON form of an answer, frozen: a Pydantic model is dumped in JSON mode, a dataclass instance goes
    through ``dataclasses.asdict``, then ``plain``, then ``freeze``.

    Raises:
        TypeError: the answer holds something that is not JSON.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return freeze(plain(value, where))
