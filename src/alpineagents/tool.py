"""Tools: what the model can call.

`Tool` is the base of every tool; `@tool` / `FunctionTool` make one from a typed Python function, with its JSON
Schema built from the signature and its Google-style docstring, and its arguments validated by Pydantic.
`format_result` turns what a tool returned into what the model receives. The parts behind `FunctionTool` live in
`alpineagents._tools`: the parameters and schema (`schema`), the docstring parser (`docstring`) and the checks of
its `exception_handler=` and `hints_for=` functions (`callbacks`).
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import inspect
import json
import re
import types
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, overload

import pydantic
import pydantic_core
from typing_extensions import Unpack

from alpineagents._tools.callbacks import HANDLER_EXAMPLE, HINTS_FOR_EXAMPLE, check_hints_for, handled_classes
from alpineagents._tools.docstring import parse_docstring as _parse_docstring
from alpineagents._tools.docstring import warn_about_docstring
from alpineagents._tools.reconcile import CannotTell, Happened, NotHappened, Reconcile, check_reconcile
from alpineagents._tools.schema import SUPPORTED_TYPES_TEXT, error_message, read_parameters
from alpineagents._tools.scope import CurrentCall, current_call
from alpineagents.errors import ToolError, ToolInputError, fix_message
from alpineagents.types import INVALID_ARGS_KEY, TRUNCATED_ARGS_MESSAGE, Image, TextBlock, ToolResultContent, ToolSpec

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = [
    "tool",
    "Tool",
    "FunctionTool",
    "ToolMap",
    "collect_tools",
    "format_result",
    "hint_values",
    "Hints",
    "invalid_args_message",
    "SUPPORTED_TYPES_TEXT",
    "DONE",
    "current_call",
    "CurrentCall",
    "Happened",
    "NotHappened",
    "CannotTell",
]

DONE = "(done)"

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HINTS = ("read_only", "destructive", "idempotent", "open_world")


# --- hints ------------------------------------------------------------------------------------------------------


def hint_values(
    read_only: bool | None, destructive: bool | None, idempotent: bool | None, open_world: bool | None
) -> tuple[bool, bool, bool, bool]:
    """Fill in the four hints, assuming the worst for any left out (`None`); `read_only` forces the other two."""
    ro = False if read_only is None else bool(read_only)
    if ro:
        return True, False, True, True if open_world is None else bool(open_world)
    return (
        False,
        True if destructive is None else bool(destructive),
        False if idempotent is None else bool(idempotent),
        True if open_world is None else bool(open_world),
    )


def _checked_hints(
    where: str,
    maker: str,
    read_only: bool | None,
    destructive: bool | None,
    idempotent: bool | None,
    open_world: bool | None,
) -> tuple[bool, bool, bool, bool]:
    """The four hints filled in, after checking each is True, False or None (left out) and that `read_only=True`
    is not contradicted; `where` and `maker` name the tool and the call in the error texts."""
    values = {"read_only": read_only, "destructive": destructive, "idempotent": idempotent, "open_world": open_world}
    for hint, value in values.items():
        if value is not None and not isinstance(value, bool):
            raise TypeError(
                fix_message(
                    f"{where}: {hint}= takes True or False (got: {value!r})",
                    "Pass True or False, or leave the hint out to assume the worst",
                    f"{maker}(read_only=True, open_world=False)",
                )
            )
    if read_only is True:
        for hint, bad in (("destructive", True), ("idempotent", False)):
            if values[hint] is bad:
                raise ValueError(
                    fix_message(
                        f"{where}: read_only=True and {hint}={bad} contradict each other. A read-only tool changes "
                        "nothing, so it is never destructive and always idempotent",
                        f"Drop {hint}=, or drop read_only=True if the tool changes something",
                        f"{maker}(read_only=True)",
                    )
                )
    return hint_values(read_only, destructive, idempotent, open_world)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hints:
    """What a tool (or one call) does, for permissions and user code; the model never sees them.

    A hint left out (`None`) assumes the worst. `read_only=True` makes `destructive` False and `idempotent` True.
    Subclass it (as a frozen dataclass) to carry more facts about a call.
    """

    read_only: bool = None  # type: ignore[assignment]
    destructive: bool = None  # type: ignore[assignment]
    idempotent: bool = None  # type: ignore[assignment]
    open_world: bool = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        name = type(self).__name__
        values = _checked_hints(name, name, self.read_only, self.destructive, self.idempotent, self.open_world)
        for hint, value in zip(_HINTS, values, strict=True):
            object.__setattr__(self, hint, value)


# --- the Tool base ------------------------------------------------------------------------------------------------


def _check_name(name: object, problem: str | None = None) -> str:
    if isinstance(name, str) and _NAME.fullmatch(name):
        return name
    raise TypeError(
        fix_message(
            problem
            or f"name={name!r} cannot be used as a tool name. It must be 1-64 characters of letters, digits, _ and -",
            "Give the tool a valid name with @tool(name=...)",
            '@tool(name="web_search")',
        )
    )


class Tool:
    """The base of every tool: a name, a description and a JSON Schema the model sees, plus `run`.

    Subclasses call `super().__init__(...)` and implement `run(self, args, state)` (as `def` or `async def`).
    A tool whose effect must never happen twice may also define `reconcile(self, call)` (or pass `reconcile=`):
    it is asked, when a run resumes, about each call of the tool whose effect is unknown (see `Happened`).
    """

    reconcile: Reconcile | None = None
    """Asked about a call whose process died before its result was saved: `Happened(result)`, `NotHappened()` or
    `CannotTell()`. `None`: the call stays closed as unknown."""

    name: str
    description: str
    input_schema: dict[str, Any]
    parallel: bool
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        parallel: bool = True,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        reconcile: Reconcile | None = None,
    ) -> None:
        _check_name(name)
        check_reconcile(name, reconcile)
        if not isinstance(description, str):
            raise TypeError(
                fix_message(
                    f"Tool {name}: description= takes a string (got: {description!r})",
                    "Pass the text the model reads about the tool",
                    'Tool(name="now", description="The current time")',
                )
            )
        if input_schema is None:
            schema: dict[str, Any] = {"type": "object", "properties": {}}
        elif isinstance(input_schema, Mapping) and input_schema.get("type") == "object":
            schema = dict(input_schema)
        else:
            raise TypeError(
                fix_message(
                    f'Tool {name}: input_schema= must be a JSON Schema object with "type": "object" '
                    f"(got: {input_schema!r})",
                    "Describe the arguments as one JSON object with named properties",
                    'input_schema={"type": "object", "properties": {"title": {"type": "string"}}, '
                    '"required": ["title"]}',
                )
            )
        if not isinstance(parallel, bool):
            raise TypeError(
                fix_message(
                    f"Tool {name}: parallel= takes True or False (got: {parallel!r})",
                    "Pass True to run with the turn's other calls, or False to run alone after them",
                    "@tool(parallel=False)",
                )
            )
        hints = _checked_hints(f"Tool {name}", "@tool", read_only, destructive, idempotent, open_world)
        self.name = name
        self.description = description
        self.input_schema = schema
        self.parallel = parallel
        self.read_only, self.destructive, self.idempotent, self.open_world = hints
        if reconcile is not None:
            self.reconcile = reconcile
        self._tool_initialized = True

    @property
    def spec(self) -> ToolSpec:
        """What the model sees: `ToolSpec(name, description, input_schema)` (hints are never part of it)."""
        return ToolSpec(self.name, self.description, self.input_schema)

    @property
    def is_async(self) -> bool:
        """True when `run` is an `async def`."""
        return inspect.iscoroutinefunction(self.run)

    def run(self, args: dict[str, Any], state: State) -> Any:
        """Run one call with the model's arguments (an editable copy, not validated) and the run's State."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run(self, args, state)")

    def hints_for(self, args: Mapping[str, Any]) -> Hints:
        """The hints of one call; by default the tool's own (worst-case) hints."""
        return Hints(
            read_only=self.read_only,
            destructive=self.destructive,
            idempotent=self.idempotent,
            open_world=self.open_world,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# --- FunctionTool -------------------------------------------------------------------------------------------------


class ToolOptions(TypedDict, total=False):
    """The options of `@tool(...)`, `FunctionTool(fn, ...)` and `FunctionTool.copy(...)` (each left out: its
    default, as in `FunctionTool`'s signature)."""

    name: str | None
    description: str | None
    parallel: bool
    exception_handler: Callable[[Any], str] | None
    hints_for: Callable[[dict[str, Any]], Hints | None] | None
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None
    reconcile: Reconcile | None


_OPTIONS = tuple(ToolOptions.__annotations__)


def _options(names: Mapping[str, Any]) -> ToolOptions:
    """The tool options among a function's local names (`locals()` read before any other local is bound)."""
    return {key: names[key] for key in _OPTIONS}  # type: ignore[return-value]


class FunctionTool(Tool):
    """A tool made from a typed Python function (normally by `@tool`).

    The schema comes from the signature and the docstring; `run` validates the model's arguments with Pydantic
    (`prepare`) and calls the function (`invoke`). Calling the tool object calls the plain function.
    """

    fn: Callable[..., Any]
    needs_self: bool
    bound_to: Any
    exception_handler: Callable[[Any], str] | None

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parallel: bool = True,
        exception_handler: Callable[[Any], str] | None = None,
        hints_for: Callable[[dict[str, Any]], Hints | None] | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        reconcile: Reconcile | None = None,
    ) -> None:
        self._given = _options(locals())
        if isinstance(fn, Tool):
            raise TypeError(
                fix_message(
                    f"@tool was applied twice to {fn.name!r}",
                    "Apply @tool once; use tool.copy(...) to change options",
                    '@tool(name="search")\ndef search(query: str) -> str: ...',
                )
            )
        if not inspect.isfunction(fn):
            raise TypeError(
                fix_message(
                    f"{fn!r} is not a function, so @tool cannot be applied to it",
                    "Apply @tool to a function defined with def (or subclass Tool)",
                    "@tool\ndef search(query: str) -> str: ...",
                )
            )
        if name is None:
            _check_name(
                fn.__name__,
                f"function name {fn.__name__!r} cannot be used as a tool name. It must be 1-64 characters of "
                "letters, digits, _ and -",
            )
            name = fn.__name__
        summary, param_docs = _parse_docstring(fn.__doc__)
        warn_about_docstring(fn, name, summary if description is None else description, param_docs)
        Tool.__init__(
            self,
            name=name,
            description=summary if description is None else description,
            parallel=parallel,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            open_world=open_world,
            reconcile=reconcile,
        )
        self._handled = handled_classes(name, exception_handler) if exception_handler is not None else ()
        if hints_for is not None:
            check_hints_for(name, hints_for)
        self.fn = fn
        self.exception_handler = exception_handler
        self._hints_fn = hints_for
        self._is_async = inspect.iscoroutinefunction(fn)
        self._bind(None)
        found = read_parameters(fn, name, param_docs)
        self.needs_self = found.needs_self
        self.input_schema = found.input_schema
        self._validate = found.validate
        self._param_names = found.names
        self._state_params = found.state_params

    def _bind(self, obj: object) -> None:
        """Make this tool's function a method of `obj` (`None`: unbound). `_target` is what a call calls."""
        self.bound_to = obj
        self._target: Callable[..., Any] = self.fn if obj is None else types.MethodType(self.fn, obj)

    @property
    def is_async(self) -> bool:
        """True when the function is an `async def`."""
        return self._is_async

    def prepare(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return every visible parameter's value (defaults filled in).

        Raises `ToolInputError` for unreadable arguments or when validation fails.
        """
        if INVALID_ARGS_KEY in args:
            raise ToolInputError(invalid_args_message(args))
        try:
            instance = self._validate(args if type(args) is dict else dict(args))
        except pydantic.ValidationError as error:
            raise ToolInputError(error_message(error)) from error
        return dict(zip(self._param_names, instance.__dict__.values(), strict=True))

    def invoke(self, kwargs: Mapping[str, Any], state: State) -> Any:
        """Call the function with validated arguments, injecting `state` and the bound object.

        An `async def` function's awaitable is returned. The `exception_handler` applies to the body's exceptions.
        """
        return self._call(dict(kwargs), state)

    def _call(self, kwargs: dict[str, Any], state: State) -> Any:
        for param in self._state_params:
            kwargs[param] = state
        if not self._handled:
            return self._target(**kwargs)
        if self._is_async:
            return self._ahandled(self._target(**kwargs))
        try:
            return self._target(**kwargs)
        except Exception as error:
            raise self._handled_error(error) from error

    async def _ahandled(self, coro: Awaitable[Any]) -> Any:
        try:
            return await coro
        except Exception as error:
            raise self._handled_error(error) from error

    def _handled_error(self, error: Exception) -> Exception:
        """What the tool raises for `error`: the exception handler's `ToolError` when the handler takes it (never a
        `ToolError`, which is already the model's message), else `error` itself."""
        if isinstance(error, ToolError) or not isinstance(error, self._handled):
            return error
        handler = self.exception_handler
        assert handler is not None
        message = handler(error)
        if not isinstance(message, str) or not message.strip():
            problem = TypeError(
                fix_message(
                    f"Tool {self.name}: exception_handler {handler!r} returned {message!r} for "
                    f"{type(error).__name__}, not a message",
                    "Return a non-empty string for the model, or raise to stop the run",
                    HANDLER_EXAMPLE,
                )
            )
            problem.__cause__ = error
            return problem
        result = ToolError(message)
        result.__cause__ = error
        return result

    def run(self, args: dict[str, Any], state: State) -> Any:
        """`invoke(prepare(args), state)`."""
        return self._call(self.prepare(args), state)

    def hints_for(self, args: Mapping[str, Any]) -> Hints:
        """The hints of one call: the `hints_for=` function's answer, or the tool's own hints."""
        fn = self._hints_fn
        if fn is None:
            return Tool.hints_for(self, args)
        value = fn(dict(args))
        if value is None:
            return Tool.hints_for(self, args)
        if isinstance(value, Hints):
            return value
        raise TypeError(
            fix_message(
                f"Tool {self.name}: hints_for {fn!r} returned {value!r}, not Hints",
                "Return a Hints object, or None when unsure (the tool's own hints then apply)",
                HINTS_FOR_EXAMPLE,
            )
        )

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self._target(*args, **kwargs)

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> FunctionTool: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> FunctionTool: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> FunctionTool:
        if obj is None or not self.needs_self:
            return self
        bound = _copy.copy(self)
        bound._bind(obj)
        return bound

    def copy(self, **changes: Unpack[ToolOptions]) -> FunctionTool:
        """A new tool from the same function with the options as originally given, updated by `changes`."""
        unknown = [key for key in changes if key not in _OPTIONS]
        if unknown:
            raise TypeError(
                fix_message(
                    f"copy() got unknown options: {', '.join(unknown)}",
                    f"Change only these options: {', '.join(_OPTIONS)}",
                    'shell = bash.copy(name="shell", read_only=False)',
                )
            )
        new = FunctionTool(self.fn, **(self._given | changes))
        if self.bound_to is not None:
            new._bind(self.bound_to)
        return new

    def __repr__(self) -> str:
        if self.bound_to is not None:
            return f"FunctionTool({self.name!r}, bound_to={self.bound_to!r})"
        return f"FunctionTool({self.name!r})"


@overload
def tool(fn: Callable[..., Any], /, **options: Unpack[ToolOptions]) -> FunctionTool: ...
@overload
def tool(fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = True,
    exception_handler: Callable[[Any], str] | None = None,
    hints_for: Callable[[dict[str, Any]], Hints | None] | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    reconcile: Reconcile | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a tool from a typed function: `@tool` or `@tool(name=..., read_only=True, ...)`."""
    options = _options(locals())
    if fn is None:

        def decorate(function: Callable[..., Any]) -> FunctionTool:
            return FunctionTool(function, **options)

        return decorate
    return FunctionTool(fn, **options)


# --- results ------------------------------------------------------------------------------------------------------


def _holds_image(value: object, depth: int) -> bool:
    if isinstance(value, Image):
        return True
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return any(_holds_image(item, depth - 1) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_image(item, depth - 1) for item in value)
    return False


def _shown(value: object) -> str:
    """`repr(value)` for an error text; a value whose own `repr` (or `str`) raises is shown by type and address,
    so the conversion error stays the `TypeError` the tool's caller expects."""
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - any failure of user code in repr falls back to object's own form
        return object.__repr__(value)


def _json_text(value: object) -> str:
    if isinstance(value, (dict, list, tuple)) and _holds_image(value, 4):
        raise TypeError(
            fix_message(
                f"Cannot convert tool return value {_shown(value)} to JSON",
                "Return the Image itself, or a list of text and Images (not an Image inside a dict)",
                'return ["Here is the chart", Image.from_path("chart.png")]',
            )
        )
    try:
        data = pydantic_core.to_jsonable_python(value)
        return json.dumps(data, ensure_ascii=False)
    except Exception as error:
        raise TypeError(
            fix_message(
                f"Cannot convert tool return value {_shown(value)} to JSON",
                "Return a str, dict, list, dataclass or Pydantic model",
                'return {"status": 200, "body": text}',
            )
        ) from error


def format_result(value: object) -> ToolResultContent:
    """Turn what a tool returned into what the model receives: a `str`, or a tuple of text blocks and Images."""
    if value is None:
        return DONE
    if isinstance(value, str):
        return value
    if isinstance(value, Image):
        return (value,)
    if isinstance(value, (list, tuple)) and any(isinstance(item, Image) for item in value):
        blocks: list[TextBlock | Image] = []
        for item in value:
            if isinstance(item, Image):
                blocks.append(item)
            elif item is None or (isinstance(item, str) and not item):
                continue
            elif isinstance(item, str):
                blocks.append(TextBlock(item))
            else:
                blocks.append(TextBlock(_json_text(item)))
        return tuple(blocks)
    return _json_text(value)


def invalid_args_message(args: Mapping[str, Any]) -> str | None:
    """The input-error text for arguments the model adapter could not read, or `None` when they were read."""
    if INVALID_ARGS_KEY not in args:
        return None
    raw = args[INVALID_ARGS_KEY]
    if raw == TRUNCATED_ARGS_MESSAGE:
        return TRUNCATED_ARGS_MESSAGE
    return f"arguments are not valid JSON: {raw}"


# --- tools= -------------------------------------------------------------------------------------------------------


def _tool_methods(cls: type) -> Iterator[str]:
    seen: set[str] = set()
    for klass in cls.__mro__:
        for attr, value in vars(klass).items():
            if attr in seen:
                continue
            seen.add(attr)
            if isinstance(value, FunctionTool):
                yield attr


def collect_tools(items: Iterable[Any]) -> dict[str, Tool]:
    """Flatten the items of `tools=` into a `name -> Tool` dict, in order ."""
    found: dict[str, Tool] = {}
    sources: dict[str, Any] = {}

    def add(item: Tool, source: object) -> None:
        if item.name in found:
            raise ValueError(
                fix_message(
                    f"Duplicate tool name {item.name!r}: {sources[item.name]!r} and {source!r}",
                    'Rename one with @tool(name="..."), or give the Agent another name= if it is an Agent',
                    '@tool(name="search_docs")',
                )
            )
        found[item.name] = item
        sources[item.name] = source

    for item in items:
        if isinstance(item, FunctionTool):
            if item.needs_self and item.bound_to is None:
                raise TypeError(
                    fix_message(
                        f"{item!r} is an unbound method tool",
                        "Create an object and pass that, or one of its methods",
                        f"tools=[MyClass()] or tools=[obj.{item.name}]",
                    )
                )
            add(item, item)
        elif isinstance(item, Tool):
            if not getattr(item, "_tool_initialized", False):
                raise TypeError(
                    fix_message(
                        f"{type(item).__name__} object passed in tools= did not call Tool.__init__",
                        "Call super().__init__(name=..., description=..., input_schema=...) in its __init__",
                        'def __init__(self):\n    super().__init__(name="create_ticket", description="Create a ticket")',
                    )
                )
            if type(item).run is Tool.run:
                raise TypeError(
                    fix_message(
                        f"{item!r} does not implement run",
                        "Define run(self, args, state) in the Tool subclass",
                        'def run(self, args, state):\n    return "done"',
                    )
                )
            add(item, item)
        elif isinstance(item, type) and issubclass(item, Tool):
            raise TypeError(
                fix_message(
                    f"tools= got the class {item.__name__}. A Tool subclass is a tool only as an object",
                    "Create an object and pass that, not the class",
                    f"tools=[{item.__name__}(...)]",
                )
            )
        elif inspect.isfunction(item) or inspect.ismethod(item) or inspect.isbuiltin(item):
            raise TypeError(
                fix_message(
                    f"{item!r} does not have @tool",
                    "Put @tool above the function's def",
                    "@tool\ndef search(query: str) -> str: ...",
                )
            )
        elif isinstance(item, type) and any(True for _ in _tool_methods(item)):
            raise TypeError(
                fix_message(
                    f"tools= got the class {item.__name__}. @tool methods are tools only on an object",
                    "Create an object and pass that, not the class",
                    f"tools=[{item.__name__}()]",
                )
            )
        else:
            names = list(_tool_methods(type(item)))
            if not names:
                raise TypeError(
                    fix_message(
                        f"{item!r} has no methods with @tool",
                        "Pass tools, or objects whose class has methods decorated with @tool",
                        "class Files:\n    @tool\n    def read_file(self, path: str) -> str: ...\n\ntools=[Files()]",
                    )
                )
            for attr in names:
                add(getattr(item, attr), item)
    return found


# --- ToolMap ------------------------------------------------------------------------------------------------------


class _NoToolError(KeyError):
    """A missing tool while MCP servers are not connected: `str()` is the message itself."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


_NoToolError.__module__ = "builtins"
_NoToolError.__qualname__ = "KeyError"


class ToolMap(Mapping[str, Tool]):
    """The read-only `name -> Tool` mapping of `agent.tool_map`; holds its own copy of the tools."""

    __slots__ = ("_tools", "_waiting")

    def __init__(self, tools: Mapping[str, Any], waiting: tuple[str, ...] = ()) -> None:
        self._tools: dict[str, Tool] = dict(tools)
        self._waiting = tuple(waiting)

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            if not self._waiting:
                raise KeyError(name) from None
            raise _NoToolError(
                fix_message(
                    f"No tool named {name!r}. This Agent's MCP servers ({', '.join(self._waiting)}) are not "
                    "connected, so their tools are not listed yet",
                    "Read tool_map during a run (in the loop, a block or a Reporter), or inside a with agent: block",
                    f"with agent:\n    tool = agent.tool_map[{name!r}]",
                )
            ) from None

    def get(self, name: str, default: object = None) -> Any:  # type: ignore[override]
        return self._tools.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return repr(self._tools)


# The package root re-exports the decorator as `alpineagents.tool`, which hides this module behind it: the decorator
# also carries the module's names, so `alpineagents.tool.Hints is alpineagents.Hints` and
# `alpineagents.tool.__all__` read as they do on the module .
def _mirror_module_names() -> None:
    names = globals()
    for name in (*__all__, "__all__", "_parse_docstring"):
        if name != "tool":
            setattr(tool, name, names[name])


_mirror_module_names()
