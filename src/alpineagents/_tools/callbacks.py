"""The two functions a function tool may be given, checked when `@tool` runs: `exception_handler=` (turns the
exceptions it names into the model's message) and `hints_for=` (the hints of one call)."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from alpineagents.errors import fix_message

__all__ = ["HANDLER_EXAMPLE", "HINTS_FOR_EXAMPLE", "handled_classes", "check_hints_for", "is_async_callable"]

HANDLER_EXAMPLE = """\
def http_errors(error: HTTPError) -> str:
    return f"request failed: {error}"

@tool(exception_handler=http_errors)
def fetch(url: str) -> str: ..."""

HINTS_FOR_EXAMPLE = """\
def bash_hints(args: dict) -> Hints | None:
    if args.get("command") == "ls":
        return Hints(read_only=True)
    return None

@tool(hints_for=bash_hints)
def bash(command: str) -> str: ..."""

_ONE_ARGUMENT = " must take exactly one argument, the exception"


def is_async_callable(fn: object) -> bool:
    """Whether calling `fn` gives a coroutine: an `async def` function, or an object whose `__call__` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn):
        return False
    call = vars(type(fn)).get("__call__") or getattr(type(fn), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def handled_classes(name: str, handler: object) -> tuple[type[Exception], ...]:
    """The exception classes `handler` (the `exception_handler=` of the tool `name`) handles, read from the type
    hint of its one required parameter (one class, or several joined with `|`, all `Exception` subclasses).

    Raises `TypeError` for anything that is not a plain, one-argument function with such a hint.
    """
    where = f"Tool {name}: exception_handler={handler!r}"
    if not callable(handler) or isinstance(handler, type):
        raise _handler_error(
            where, " is not a function", "Pass a function that takes the exception and returns the model's message"
        )
    if is_async_callable(handler):
        raise _handler_error(
            where, " is async", "Use a regular def: the handler only turns the exception into a message"
        )
    param = _only_parameter(where, handler)
    target = handler if inspect.isroutine(handler) else type(handler).__call__
    try:
        hints = typing.get_type_hints(target)
    except Exception as error:
        raise _handler_error(
            where,
            f": cannot resolve the type hint of {param}: {error}",
            "Check that the exception classes are imported",
        )
    if param not in hints:
        raise _handler_error(
            where,
            f" has no type hint on its parameter {param}",
            "Name the exception classes it handles in the type hint",
        )
    return _exception_classes(where, param, hints[param])


def _handler_error(where: str, ending: str, fix: str) -> TypeError:
    return TypeError(fix_message(where + ending, fix, HANDLER_EXAMPLE))


def _only_parameter(where: str, handler: Callable[..., Any]) -> str:
    """The name of the handler's one required parameter, which must not be keyword-only."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        raise _handler_error(where, _ONE_ARGUMENT, "Take the exception as the only required parameter")
    required = [
        p
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(required) != 1 or required[0].kind is inspect.Parameter.KEYWORD_ONLY:
        raise _handler_error(where, _ONE_ARGUMENT, "Take the exception as the only required parameter")
    return required[0].name


def _exception_classes(where: str, param: str, hint: Any) -> tuple[type[Exception], ...]:
    origin = typing.get_origin(hint)
    members = typing.get_args(hint) if origin is typing.Union or origin is types.UnionType else (hint,)
    if not all(isinstance(m, type) and issubclass(m, BaseException) for m in members):
        raise _handler_error(
            where,
            f": the type hint of {param} must name exception classes (got: {hint!r})",
            "Type the parameter with an exception class, or several joined with |",
        )
    for member in members:
        if not issubclass(member, Exception):
            raise _handler_error(
                where,
                f": {member.__name__} cannot be handled. KeyboardInterrupt, SystemExit and other exceptions that "
                "are not Exception subclasses always stop the run",
                "Handle Exception subclasses only",
            )
    return tuple(members)


def check_hints_for(name: str, fn: object) -> None:
    """Check the `hints_for=` function of the tool `name`: a plain (not async) function of one argument, the
    call's arguments as a dict. Raises `TypeError` otherwise."""
    where = f"Tool {name}: hints_for={fn!r}"
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(
            fix_message(where + " is not a function", "Pass a function of the call's arguments", HINTS_FOR_EXAMPLE)
        )
    if is_async_callable(fn):
        raise TypeError(fix_message(where + " is async", "Use a regular def", HINTS_FOR_EXAMPLE))
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None)
    except TypeError:
        raise TypeError(
            fix_message(
                where + " must take exactly one argument, the call's arguments as a dict",
                "Take one parameter, the arguments dict, and return Hints or None",
                HINTS_FOR_EXAMPLE,
            )
        )
