"""Input schemas and argument validation for function tools (04 §4.4–§4.7), built once per tool with Pydantic v2."""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal, Union

import pydantic
import typing_extensions
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SUPPORTED_TYPES_TEXT", "StdlibTypedDict", "unsupported_reason", "build_args_model", "error_message"]

SUPPORTED_TYPES_TEXT = (
    "str, int, float, bool, Literal[...], Enum, list[T], dict[str, T], T | None, dataclass, TypedDict, Pydantic model"
)

_SCALARS = (str, int, float, bool)
_MISSING_TYPES = frozenset(
    {"missing", "missing_argument", "missing_keyword_only_argument", "missing_positional_only_argument"}
)
_STDLIB_TYPEDDICT_META: Any = getattr(typing, "_TypedDictMeta", None)


class StdlibTypedDict(Exception):
    """Raised by the type check for a stdlib `typing.TypedDict` on Python 3.11."""

    def __init__(self, cls: type) -> None:
        super().__init__(cls.__name__)
        self.cls = cls


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and (typing_extensions.is_typeddict(tp) or typing.is_typeddict(tp))


def unsupported_reason(tp: Any) -> bool:
    """Whether `tp` (a resolved parameter type) is outside the supported set (04 §4.5).

    Raises `StdlibTypedDict` for a stdlib `typing.TypedDict` anywhere in the type on Python 3.11.
    """
    return not _supported(tp, set())


def _supported(tp: Any, seen: set[int]) -> bool:
    if tp in _SCALARS:
        return True
    origin = typing.get_origin(tp)
    if origin is Literal:
        return True
    if origin is list:
        args = typing.get_args(tp)
        return len(args) == 1 and _supported(args[0], seen)
    if origin is dict:
        args = typing.get_args(tp)
        return len(args) == 2 and args[0] is str and _supported(args[1], seen)
    if origin is Union or origin is types.UnionType:
        members = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return len(members) == 1 and _supported(members[0], seen)
    if not isinstance(tp, type):
        return False
    if issubclass(tp, enum.Enum):
        return True
    if id(tp) in seen:
        return True
    if _is_typeddict(tp):
        if sys.version_info < (3, 12) and _STDLIB_TYPEDDICT_META is not None and type(tp) is _STDLIB_TYPEDDICT_META:
            raise StdlibTypedDict(tp)
        seen.add(id(tp))
        try:
            hints = typing_extensions.get_type_hints(tp)
        except Exception:
            return False
        return all(_supported(_strip_required(hint), seen) for hint in hints.values())
    if dataclasses.is_dataclass(tp):
        seen.add(id(tp))
        try:
            hints = typing.get_type_hints(tp)
        except Exception:
            return False
        return all(_supported(hints[f.name], seen) for f in dataclasses.fields(tp) if f.name in hints)
    if issubclass(tp, BaseModel):
        seen.add(id(tp))
        return all(_supported(field.annotation, seen) for field in tp.model_fields.values())
    return False


def _strip_required(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly):
        return _strip_required(typing.get_args(tp)[0])
    return tp


def build_args_model(
    params: Sequence[tuple[str, Any, Any, str | None]],
) -> tuple[type[BaseModel], dict[str, Any], Callable[[Any], Any]]:
    """Build the argument model, its input schema and its validate function.

    `params` holds `(name, type, default, description)` per visible parameter (`default` is `...` when required).
    Fields get internal names with the parameter name as alias, so no parameter name clashes with Pydantic.
    """
    fields: dict[str, Any] = {}
    for index, (name, tp, default, description) in enumerate(params):
        if description is None:
            info = Field(default, alias=name)
        else:
            info = Field(default, alias=name, description=description)
        fields[f"a{index}"] = (tp, info)
    model = pydantic.create_model("Args", __config__=ConfigDict(extra="forbid"), **fields)
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return model, schema, model.__pydantic_validator__.validate_python


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) if loc else "(value)"


def error_message(error: pydantic.ValidationError) -> str:
    """The `prepare` message of 04 §4.7: each error as `{loc}: {text}`, joined with `; `."""
    parts: list[str] = []
    for item in error.errors(include_url=False, include_context=False, include_input=False):
        kind = item["type"]
        if kind in _MISSING_TYPES:
            text = "required argument is missing"
        elif kind == "extra_forbidden":
            text = "unknown argument"
        else:
            text = item["msg"]
        parts.append(f"{_loc(item['loc'])}: {text}")
    return "; ".join(parts)
