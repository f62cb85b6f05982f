"""A function tool's parameters, input schema and argument validation, built once per tool with Pydantic v2.

`read_parameters` reads a function's signature (which parameters the model fills, which receive the State),
checks each type against the supported set, and builds the argument model, its JSON Schema and its validator.
`error_message` turns a validation failure into the `prepare` message the model reads.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import sys
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, Union

import pydantic
import typing_extensions
from pydantic import BaseModel, ConfigDict, Field

from alpineagents.errors import fix_message

__all__ = ["SUPPORTED_TYPES_TEXT", "Parameters", "read_parameters", "error_message"]

SUPPORTED_TYPES_TEXT = (
    "str, int, float, bool, Literal[...], Enum, list[T], dict[str, T], T | None, dataclass, TypedDict, Pydantic model"
)

_SCALARS = (str, int, float, bool)
_MISSING_TYPES = frozenset(
    {"missing", "missing_argument", "missing_keyword_only_argument", "missing_positional_only_argument"}
)
_STDLIB_TYPEDDICT_META: Any = getattr(typing, "_TypedDictMeta", None)
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class Parameters(NamedTuple):
    """What `read_parameters` found in a function's signature."""

    needs_self: bool
    """The first parameter is an unannotated `self` (a method): it receives the object the tool is bound to."""
    input_schema: dict[str, Any]
    """The JSON Schema object of the arguments the model fills."""
    validate: Callable[[Any], Any]
    """Validates a dict of arguments; returns an object whose `__dict__` holds every value in parameter order."""
    names: tuple[str, ...]
    """The parameters the model fills, in signature order."""
    state_params: tuple[str, ...]
    """The parameters that receive the run's State."""


def read_parameters(fn: Callable[..., Any], name: str, param_docs: dict[str, str]) -> Parameters:
    """Read the parameters of `fn`, the function of the tool `name` (`param_docs`: their docstring texts).

    Every parameter other than `self` needs a type hint; one typed `State` (also when `State` was imported only
    for type checking) receives the run's State and is not shown to the model; every other type must be one of
    `SUPPORTED_TYPES_TEXT`. Raises `TypeError` (a `fix_message`) for anything else.
    """
    params = list(inspect.signature(fn).parameters.values())
    needs_self = bool(params) and params[0].name == "self" and params[0].annotation is inspect.Parameter.empty
    if needs_self:
        params = params[1:]
    for p in params:
        if p.kind not in _NAMED:
            raise TypeError(
                fix_message(
                    f"Tool {name}: parameter {p.name} is of an unsupported kind",
                    "Use only named parameters, without *args, **kwargs or positional-only parameters",
                    f"@tool\ndef {fn.__name__}(query: str, limit: int = 10) -> str: ...",
                )
            )
    from alpineagents.state import State  # lazy: the State sits above the tools; only its class is needed here

    hints = _type_hints(fn, name, State)
    visible: list[tuple[str, Any, Any, str | None]] = []
    state_params: list[str] = []
    for p in params:
        if p.name not in hints:
            raise TypeError(
                fix_message(
                    f"Tool {name}: parameter {p.name} has no type hint",
                    "Add a type hint. To receive State, use state: State",
                    f"@tool\ndef {fn.__name__}({p.name}: str) -> str: ...",
                )
            )
        tp = hints[p.name]
        if isinstance(tp, type) and issubclass(tp, State):
            state_params.append(p.name)
            continue
        _check_type(name, p.name, tp)
        default = ... if p.default is inspect.Parameter.empty else p.default
        visible.append((p.name, tp, default, param_docs.get(p.name)))
    try:
        schema, validate = _build_args_model(visible)
    except Exception as error:
        raise TypeError(
            fix_message(
                f"Tool {name}: cannot build the input schema: {error}",
                f"Pick parameter types from: {SUPPORTED_TYPES_TEXT}",
            )
        )
    return Parameters(needs_self, schema, validate, tuple(v[0] for v in visible), tuple(state_params))


def _type_hints(fn: Callable[..., Any], name: str, state_class: type) -> dict[str, Any]:
    """The resolved hints of `fn`; a `State` hint resolves even when `State` is imported only for type checking."""
    try:
        try:
            return typing.get_type_hints(fn)
        except NameError:
            if "State" in fn.__globals__:
                raise
            return typing.get_type_hints(fn, localns={"State": state_class})
    except Exception as error:
        raise TypeError(
            fix_message(
                f"Tool {name}: cannot resolve type hints: {error}",
                "Check that the types are imported in the function's module",
            )
        )


def _check_type(name: str, param: str, tp: object) -> None:
    """Refuse a parameter type outside the supported set, and a stdlib `typing.TypedDict` on Python 3.11."""
    try:
        supported = _supported(tp, set())
    except _StdlibTypedDict as error:
        raise TypeError(
            fix_message(
                f"Tool {name}, parameter {param}: typing.TypedDict ({error.cls.__name__}) cannot be used on "
                "Python 3.11",
                "Use typing_extensions.TypedDict",
                "from typing_extensions import TypedDict",
            )
        )
    if not supported:
        raise TypeError(
            fix_message(
                f"Tool {name}: parameter {param} has unsupported type {tp!r}",
                f"Only these types can be used: {SUPPORTED_TYPES_TEXT}",
            )
        )


class _StdlibTypedDict(Exception):
    """Raised by the type check for a stdlib `typing.TypedDict` on Python 3.11 (Pydantic refuses it there)."""

    def __init__(self, cls: type) -> None:
        super().__init__(cls.__name__)
        self.cls = cls


def _supported(tp: object, seen: set[int]) -> bool:
    """Whether `tp` is in the supported set: a scalar, a `Literal`, `list[T]`, `dict[str, T]`, `T | None` of
    supported types, or an Enum, TypedDict, dataclass or Pydantic model whose fields all are (`seen` holds the
    classes being checked, so a class that refers to itself is supported)."""
    if tp in _SCALARS:
        return True
    origin = typing.get_origin(tp)
    if origin is None:
        return isinstance(tp, type) and _supported_class(tp, seen)
    args = typing.get_args(tp)
    if origin is Literal:
        return True
    if origin is list:
        return len(args) == 1 and _supported(args[0], seen)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _supported(args[1], seen)
    if origin is Union or origin is types.UnionType:
        members = [arg for arg in args if arg is not type(None)]
        return len(members) == 1 and _supported(members[0], seen)
    return False


def _supported_class(tp: type, seen: set[int]) -> bool:
    if issubclass(tp, enum.Enum) or id(tp) in seen:
        return True
    field_types = _field_types(tp)
    if field_types is None:
        return False
    seen.add(id(tp))
    return all(_supported(field, seen) for field in field_types)


def _field_types(tp: type) -> list[Any] | None:
    """The field types of a TypedDict, dataclass or Pydantic model class; `None` for any other class, or when the
    hints cannot be resolved."""
    try:
        if typing_extensions.is_typeddict(tp) or typing.is_typeddict(tp):
            if sys.version_info < (3, 12) and type(tp) is _STDLIB_TYPEDDICT_META:
                raise _StdlibTypedDict(tp)
            return [_strip_required(hint) for hint in typing_extensions.get_type_hints(tp).values()]
        if dataclasses.is_dataclass(tp):
            hints = typing.get_type_hints(tp)
            return [hints[f.name] for f in dataclasses.fields(tp) if f.name in hints]
    except _StdlibTypedDict:
        raise
    except Exception:  # noqa: BLE001 - hints that cannot be resolved make the type unsupported
        return None
    if issubclass(tp, BaseModel):
        return [field.annotation for field in tp.model_fields.values()]
    return None


def _strip_required(tp: object) -> object:
    origin = typing.get_origin(tp)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly):
        return _strip_required(typing.get_args(tp)[0])
    return tp


def _build_args_model(
    params: Sequence[tuple[str, Any, Any, str | None]],
) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    """Build the argument model; return its input schema and its validate function.

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
    return schema, model.__pydantic_validator__.validate_python


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) if loc else "(value)"


def error_message(error: pydantic.ValidationError) -> str:
    """The `prepare` message: each error as `{where}: {text}`, joined with `; `. A missing argument reads
    `required argument is missing`, an extra one `unknown argument`; other texts are Pydantic's own."""
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
