"""Making tools: hints, Tool, @tool/FunctionTool, schemas, validation, results, collect_tools, ToolMap."""

import asyncio
import dataclasses
import enum
import importlib
import json
import re
import sys
import traceback
import typing
from typing import Annotated, Any, Literal, NotRequired, Optional

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict as XTypedDict

from alpineagents.agent import Agent
from alpineagents.errors import ToolError, ToolInputError
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import (
    DONE,
    SUPPORTED_TYPES_TEXT,
    FunctionTool,
    Hints,
    Tool,
    ToolMap,
    _parse_docstring,
    collect_tools,
    format_result,
    hint_values,
    invalid_args_message,
    tool,
)
from alpineagents.types import INVALID_ARGS_KEY, TRUNCATED_ARGS_MESSAGE, Image, TextBlock, ToolSpec
from conftest import results, task

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
GIF = b"GIF89a" + b"\x00" * 10


def schema_of(fn: Any) -> dict[str, Any]:
    return tool(fn).input_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Address(XTypedDict):
    city: str
    zip: str


class Profile(BaseModel):
    age: int
    nickname: str | None = None


# --- module constants and __all__ -----------------------------------------------------------------------------


def test_module_exports_and_constants() -> None:
    module = importlib.import_module("alpineagents.tool")

    assert module.__all__ == [
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
    assert DONE == "(done)"
    assert SUPPORTED_TYPES_TEXT == (
        "str, int, float, bool, Literal[...], Enum, list[T], dict[str, T], T | None, dataclass, TypedDict, "
        "Pydantic model"
    )


# --- making tools, validating arguments, formatting results --------------------------------------------------


def test_a_parameter_without_a_type_hint_is_refused() -> None:
    with pytest.raises(TypeError) as info:

        @tool
        def f(x):  # type: ignore[no-untyped-def]
            ...

    message = str(info.value)
    assert "type hint" in message and "Fix:" in message and "state: State" in message
    assert message.startswith("Tool f: parameter x has no type hint")


def test_an_unsupported_parameter_type_is_refused() -> None:
    with pytest.raises(TypeError) as info:

        @tool
        def f(x: complex) -> None: ...

    message = str(info.value)
    assert "unsupported" in message and "dataclass" in message and "Pydantic" in message
    assert "Fix:" in message


@pytest.mark.parametrize("kind", ["args", "kwargs", "positional"])
def test_star_args_kwargs_and_positional_only_parameters_are_refused(kind: str) -> None:
    def star(*args: int) -> None: ...

    def double(**kw: int) -> None: ...

    def positional(x: int, /) -> None: ...

    fn = {"args": star, "kwargs": double, "positional": positional}[kind]
    with pytest.raises(TypeError, match="unsupported kind"):
        tool(fn)


def test_tool_names_are_1_to_64_letters_digits_underscores_or_dashes() -> None:
    def f(x: int) -> None: ...

    for bad in ["web search", "a" * 65, "", "outil_é", "a.b"]:
        with pytest.raises(TypeError, match="1-64 characters"):
            tool(name=bad)(f)
    for good in ["Web_Search2", "a" * 64, "web-search"]:
        assert tool(name=good)(f).name == good

    def café(x: int) -> None: ...

    with pytest.raises(TypeError) as info:
        tool(café)
    assert "Fix:" in str(info.value)
    assert str(info.value).startswith("function name 'café' cannot be used as a tool name")
    assert tool(name="search")(café).name == "search"
    with pytest.raises(TypeError, match=r"^name=5 cannot be used as a tool name"):
        Tool(name=5)  # type: ignore[arg-type]


def test_tool_applied_twice_or_to_a_non_function_is_refused() -> None:
    def f(x: int) -> None: ...

    with pytest.raises(TypeError, match="applied twice"):
        tool(tool(f))
    with pytest.raises(TypeError, match="is not a function"):
        tool(print)
    with pytest.raises(TypeError, match="is not a function"):
        tool(staticmethod(f))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a function"):
        tool(Point)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="1-64 characters"):
        tool(lambda x: x)
    assert tool(name="ident")(lambda: None).name == "ident"


def test_the_docstring_gives_the_description_and_the_parameter_docs() -> None:
    @tool
    def greet(name: str) -> str:
        """Greets someone.

        Args:
            name: name of the person
        """
        return name

    assert greet.description == "Greets someone."
    assert greet.input_schema["properties"]["name"] == {"description": "name of the person", "type": "string"}


def test_no_docstring_or_one_starting_with_args_gives_an_empty_description() -> None:
    @tool
    def bare(x: int) -> None: ...

    @tool
    def args_first(x: int) -> None:
        """Args:
        x: the x
        """

    assert bare.description == ""
    assert args_first.description == ""
    assert args_first.input_schema["properties"]["x"]["description"] == "the x"
    assert tool(description="")(bare.fn).description == ""


def test_parameters_without_a_default_are_required() -> None:
    @tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    assert add.input_schema["required"] == ["a"]
    assert add.prepare({"a": 5}) == {"a": 5, "b": 10}
    assert format_result(add.run({"a": 5}, State())) == "15"


def test_a_schema_with_nothing_required_has_no_required_key() -> None:
    @tool
    def f(s: str = "x") -> None: ...

    assert "required" not in f.input_schema


def test_the_spec_of_a_documented_tool_has_its_exact_repr() -> None:
    @tool
    def read_file(path: str, max_lines: int = 200) -> str:
        """Read a text file

        Args:
            path: Path of the file
            max_lines: How many lines to return
        """
        return ""

    assert repr(read_file.spec) == (
        "ToolSpec(name='read_file', description='Read a text file', input_schema={'additionalProperties': False, "
        "'properties': {'path': {'description': 'Path of the file', 'type': 'string'}, 'max_lines': {'default': "
        "200, 'description': 'How many lines to return', 'type': 'integer'}}, 'required': ['path'], 'type': "
        "'object'})"
    )
    assert read_file.spec == ToolSpec("read_file", "Read a text file", read_file.input_schema)


def test_a_state_parameter_is_hidden_from_the_schema_and_injected() -> None:
    seen: list[Any] = []

    @tool
    def peek(msg: str, ctx: State) -> str:
        seen.append(ctx)
        return msg

    assert set(peek.input_schema["properties"]) == {"msg"}
    state = State()
    assert peek.run({"msg": "hi"}, state) == "hi"
    assert seen[0] is state
    with pytest.raises(ToolInputError, match="ctx: unknown argument"):
        peek.prepare({"msg": "hi", "ctx": 1})


def test_state_imported_only_for_type_checking_is_recognised(tmp_path: Any) -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from alpineagents.tool import tool\n"
        "if TYPE_CHECKING:\n"
        "    from alpineagents.state import State\n"
        "@tool\n"
        "def submit(answer: str, state: State) -> str:\n"
        "    return answer\n"
    )
    namespace: dict[str, Any] = {"__name__": "future_module"}
    exec(compile(source, str(tmp_path / "future_module.py"), "exec"), namespace)
    submit = namespace["submit"]
    assert submit.input_schema["required"] == ["answer"]
    assert set(submit.input_schema["properties"]) == {"answer"}


def test_parameter_names_pydantic_uses_itself_work_as_arguments() -> None:
    @tool
    def f(model_config: str) -> str:
        return model_config

    assert f.prepare({"model_config": "a"}) == {"model_config": "a"}
    with pytest.raises(ToolInputError, match="model_config: required argument is missing"):
        f.prepare({})

    @tool
    def g(x: str) -> str:
        return x

    with pytest.raises(ToolInputError, match="unknown argument"):
        g.prepare({"a0": "v"})

    @tool
    def h(_private: int, json: str, schema: str, copy: str, validate: int = 1, model_dump: int = 2) -> None: ...

    assert list(h.input_schema["properties"]) == ["_private", "json", "schema", "copy", "validate", "model_dump"]
    assert h.prepare({"_private": 1, "json": "j", "schema": "s", "copy": "c"}) == {
        "_private": 1,
        "json": "j",
        "schema": "s",
        "copy": "c",
        "validate": 1,
        "model_dump": 2,
    }


def test_a_validation_failure_never_calls_the_function() -> None:
    calls: list[int] = []

    @tool
    def strict(n: int) -> int:
        calls.append(n)
        return n

    with pytest.raises(ToolInputError) as info:
        strict.run({"n": "not a number"}, State())
    assert str(info.value) == "n: Input should be a valid integer, unable to parse string as an integer"
    assert calls == []


def test_prepare_coerces_in_lax_mode_and_refuses_a_fraction_for_an_int() -> None:
    @tool
    def f(n: int) -> int:
        return n

    assert f.prepare({"n": "5"}) == {"n": 5}
    with pytest.raises(ToolInputError, match="n: Input should be a valid integer, got a number with a fractional part"):
        f.prepare({"n": 5.5})


def test_prepare_lists_every_missing_and_unknown_argument() -> None:
    @tool
    def f(a: int, b: int) -> None: ...

    with pytest.raises(ToolInputError) as info:
        f.prepare({"zzz": 1})
    assert str(info.value) == "a: required argument is missing; b: required argument is missing; zzz: unknown argument"
    assert info.value.__cause__ is not None


def test_annotated_metadata_is_ignored() -> None:
    @tool
    def f(q: Annotated[int, Field(ge=1)] = 5) -> int:
        return q

    assert f.input_schema["properties"]["q"] == {"default": 5, "type": "integer"}
    assert f.prepare({"q": 0}) == {"q": 0}


def test_none_gives_done_and_strings_pass_unchanged() -> None:
    assert format_result(None) == "(done)"
    assert format_result("passed as is") == "passed as is"
    assert format_result("") == ""


def test_other_values_become_their_json_text() -> None:
    assert format_result({"a": 1, "b": [1, 2, 3]}) == '{"a": 1, "b": [1, 2, 3]}'
    assert format_result(Point(1, 2)) == '{"x": 1, "y": 2}'
    assert format_result(Profile(age=3)) == '{"age": 3, "nickname": null}'
    assert format_result({"k": "é"}) == '{"k": "é"}'


def test_lists_with_images_become_blocks() -> None:
    png, gif = Image(PNG), Image(GIF)
    assert format_result(["Loaded", "", None, {"status": 200}, png, gif]) == (
        TextBlock("Loaded"),
        TextBlock('{"status": 200}'),
        png,
        gif,
    )
    assert format_result(["a", "b"]) == '["a", "b"]'
    assert format_result(png) == (png,)
    assert format_result(["", None, png]) == (png,)
    assert format_result((png,)) == (png,)


def test_values_that_cannot_become_json_are_refused() -> None:
    png = Image(PNG)
    with pytest.raises(TypeError, match="Return the Image itself, or a list of text and Images"):
        format_result({"shot": png})
    with pytest.raises(TypeError, match="Return the Image itself"):
        format_result([[png]])
    with pytest.raises(TypeError, match="JSON") as info:
        format_result(object())
    assert info.value.__cause__ is not None
    assert str(info.value).startswith("Cannot convert tool return value <object object at")
    with pytest.raises(TypeError, match="JSON"):
        format_result({"k": object()})


def test_tool_error_needs_a_non_empty_message() -> None:
    for blank in ["", "   "]:
        with pytest.raises(ValueError, match="ToolError"):
            ToolError(blank)
    with pytest.raises(TypeError, match="ToolError"):
        ToolError(404)  # type: ignore[arg-type]


class HTTPError(Exception):
    pass


class NotFound(HTTPError):
    pass


def http_errors(error: HTTPError) -> str:
    return f"request failed: {error}"


def test_the_exception_handler_turns_the_exceptions_it_names_into_tool_errors() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        raise NotFound(f"404 {url}")

    with pytest.raises(ToolError) as info:
        fetch.run({"url": "u"}, State())
    assert str(info.value) == "request failed: 404 u"
    assert isinstance(info.value.__cause__, NotFound)


def test_an_exception_the_handler_does_not_name_propagates() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        fetch.run({"url": "u"}, State())


def test_a_tool_error_never_reaches_the_handler() -> None:
    handled: list[Exception] = []

    def everything(error: Exception) -> str:
        handled.append(error)
        return "handled"

    @tool(exception_handler=everything)
    def fetch(url: str) -> str:
        raise ToolError("from the tool")

    with pytest.raises(ToolError, match="from the tool"):
        fetch.run({"url": "u"}, State())
    assert handled == []


def test_bad_exception_handlers_are_refused_when_tool_runs() -> None:
    def no_hint(e):  # type: ignore[no-untyped-def]
        return ""

    def text(e: str) -> str:
        return e

    def interrupt(e: KeyboardInterrupt) -> str:
        return ""

    async def later(e: HTTPError) -> str:
        return ""

    def two(e: HTTPError, other: str) -> str:
        return ""

    def keyword(*, e: HTTPError) -> str:
        return ""

    def run(x: int) -> None: ...

    cases = [
        (no_hint, "no type hint"),
        (text, "must name exception classes"),
        (interrupt, "cannot be handled"),
        (later, "is async"),
        (two, "exactly one argument"),
        (keyword, "exactly one argument"),
        ("name", "is not a function"),
        (HTTPError, "is not a function"),
    ]
    for handler, words in cases:
        with pytest.raises(TypeError, match=words) as info:
            tool(exception_handler=handler)(run)  # type: ignore[arg-type]
        assert str(info.value).startswith(f"Tool run: exception_handler={handler!r}")
        assert "Fix:" in str(info.value)

    def union(e: HTTPError | KeyError) -> str:
        return "u"

    def with_default(error: HTTPError, prefix: str = "failed") -> str:
        return prefix

    class Callable_:
        def __call__(self, error: HTTPError) -> str:
            return "c"

    for handler in (union, with_default, Callable_()):
        assert tool(exception_handler=handler)(run).exception_handler is handler

    def unresolved(e: "Missing") -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(TypeError, match=r"cannot resolve the type hint of e: name 'Missing' is not defined"):
        tool(exception_handler=unresolved)(run)

    def mixed(e: HTTPError | SystemExit) -> str:
        return ""

    with pytest.raises(TypeError, match="SystemExit cannot be handled"):
        tool(exception_handler=mixed)(run)


def test_a_handler_returning_no_message_is_a_type_error() -> None:
    for value in [None, "", 404]:

        def handler(error: Exception, value: Any = value) -> Any:
            return value

        @tool(exception_handler=handler)
        def fetch(url: str) -> str:
            raise HTTPError("boom")

        with pytest.raises(TypeError, match="returned") as info:
            fetch.run({"url": "u"}, State())
        assert isinstance(info.value.__cause__, HTTPError)
        assert f"returned {value!r} for HTTPError, not a message" in str(info.value)


def test_a_copy_without_handler_lets_exceptions_through() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise NotFound("x")

    plain = fetch.copy(exception_handler=None)
    assert plain is not fetch
    assert plain.exception_handler is None and fetch.exception_handler is http_errors
    assert plain.name == fetch.name and plain.input_schema == fetch.input_schema
    assert plain.description == "Fetch a page."
    with pytest.raises(NotFound):
        plain.run({"url": "u"}, State())
    with pytest.raises(TypeError, match="unknown options: handler"):
        fetch.copy(handler=http_errors)


class Web:
    @tool
    def fetch(self, url: str) -> str:
        """Fetch a page."""
        return f"{self.prefix}{url}"

    prefix = "got "


def test_a_copy_of_a_bound_tool_keeps_its_object() -> None:
    web = Web()
    renamed = web.fetch.copy(name="get", exception_handler=http_errors)
    assert renamed.bound_to is web
    assert renamed.name == "get"
    assert renamed.run({"url": "x"}, State()) == "got x"


def hints_of(t: Tool) -> tuple[bool, bool, bool, bool]:
    return (t.read_only, t.destructive, t.idempotent, t.open_world)


def test_hints_assume_the_worst_and_copy_changes_them() -> None:
    @tool
    def bash(command: str) -> str:
        return command

    assert hints_of(bash) == (False, True, False, True)
    assert hints_of(tool(read_only=True, open_world=False)(bash.fn)) == (True, False, True, False)
    assert hints_of(bash.copy(read_only=True)) == (True, False, True, True)
    assert hints_of(bash.copy(open_world=False)) == (False, True, False, False)
    with pytest.raises(ValueError, match="contradict"):
        bash.copy(read_only=True, destructive=True)
    assert hint_values(None, None, None, None) == (False, True, False, True)
    assert hint_values(True, True, False, None) == (True, False, True, True)
    assert hint_values(0, 1, 0, 0) == (False, True, False, False)  # type: ignore[arg-type]


def test_hint_values_are_checked() -> None:
    def f(x: int) -> None: ...

    with pytest.raises(TypeError, match="read_only= takes True or False") as info:
        tool(read_only="yes")(f)  # type: ignore[arg-type]
    assert str(info.value).startswith("Tool f: read_only= takes True or False (got: 'yes')")
    with pytest.raises(ValueError, match="contradict") as info2:
        tool(read_only=True, destructive=True)(f)
    assert str(info2.value).startswith("Tool f: read_only=True and destructive=True contradict each other.")
    with pytest.raises(ValueError, match="idempotent=False contradict"):
        tool(read_only=True, idempotent=False)(f)
    assert hints_of(tool(read_only=True, destructive=False, idempotent=True)(f)) == (True, False, True, True)


def test_the_hints_class_checks_and_fills_its_values() -> None:
    with pytest.raises(TypeError, match=re.escape("Hints: destructive= takes True or False (got: 'yes')")):
        Hints(destructive="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as info:
        Hints(read_only=True, idempotent=False)
    assert "Hints(read_only=True)" in str(info.value)
    with pytest.raises(TypeError):
        Hints(True)  # type: ignore[misc]
    assert Hints(read_only=True) == Hints(read_only=True, destructive=False, idempotent=True, open_world=True)
    assert Hints() == Hints(read_only=False, destructive=True, idempotent=False, open_world=True)
    assert repr(Hints(read_only=True)) == "Hints(read_only=True, destructive=False, idempotent=True, open_world=True)"
    assert hash(Hints()) == hash(Hints())
    with pytest.raises(dataclasses.FrozenInstanceError):
        Hints().read_only = True  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(Hints)] == ["read_only", "destructive", "idempotent", "open_world"]

    @dataclasses.dataclass(frozen=True)
    class FileHints(Hints):
        paths: tuple[str, ...] = ()

    hints = FileHints(read_only=True, paths=("a",))
    assert (hints.destructive, hints.idempotent, hints.paths) == (False, True, ("a",))
    assert hints != Hints(read_only=True)
    with pytest.raises(ValueError, match="FileHints: read_only=True and destructive=True contradict"):
        FileHints(read_only=True, destructive=True)


def test_hints_for_gives_the_hints_of_one_call() -> None:
    def bash_hints(args: dict[str, Any]) -> Hints | None:
        return Hints(read_only=True) if args.get("command") == "ls" else None

    @tool(hints_for=bash_hints)
    def bash(command: str) -> str:
        return command

    assert bash.hints_for({"command": "ls"}) == Hints(read_only=True)
    assert bash.hints_for({"command": "rm x"}) == Hints()
    assert bash.read_only is False
    assert Web().fetch.hints_for({}) == Hints()
    assert Tool(name="t", read_only=True).hints_for({}) == Hints(read_only=True)


def test_bad_hints_for_functions_are_refused() -> None:
    @tool(name="odd", hints_for=lambda args: True)
    def odd(x: int) -> None: ...

    with pytest.raises(TypeError, match=r"Tool odd: hints_for .* returned .*, not Hints") as info:
        odd.hints_for({})
    assert "return None" in str(info.value)

    def t(x: int) -> None: ...

    for bad, words in [
        (lambda: None, "must take exactly one argument"),
        (lambda args, state: None, "must take exactly one argument"),
        (Hints, "is not a function"),
        ("x", "is not a function"),
    ]:
        with pytest.raises(TypeError, match=words) as info:
            tool(hints_for=bad)(t)  # type: ignore[arg-type]
        assert "Tool t: hints_for=" in str(info.value)
        assert "@tool(hints_for=bash_hints)" in str(info.value)

    async def later(args: dict[str, Any]) -> None:
        return None

    with pytest.raises(TypeError, match="is async"):
        tool(hints_for=later)(t)  # type: ignore[arg-type]

    def boom(args: dict[str, Any]) -> Hints:
        raise KeyError("k")

    with pytest.raises(KeyError):
        tool(hints_for=boom)(t).hints_for({})


def test_the_tool_constructor_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="must be a JSON Schema object"):
        Tool(name="x", input_schema={"type": "array"})
    with pytest.raises(TypeError, match="must be a JSON Schema object"):
        Tool(name="x", input_schema="object")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="parallel= takes True or False"):
        Tool(name="x", parallel="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description= takes a string"):
        Tool(name="x", description=None)  # type: ignore[arg-type]
    fresh = Tool(name="x")
    assert fresh.input_schema == {"type": "object", "properties": {}}
    assert fresh.input_schema is not Tool(name="y").input_schema
    given = {"type": "object", "properties": {"a": {"type": "string"}}}
    made = Tool(name="x", input_schema=given)
    assert made.input_schema == given and made.input_schema is not given
    assert made.input_schema["properties"] is given["properties"]


class Ticket(Tool):
    def __init__(self) -> None:
        super().__init__(name="create_ticket", description="Create a ticket")

    def run(self, args: dict[str, Any], state: State) -> Any:
        return "created"


def test_tool_subclass_mistakes_are_refused_by_collect_tools() -> None:
    class NoInit(Tool):
        def __init__(self) -> None:
            pass

        def run(self, args: dict[str, Any], state: State) -> Any:
            return None

    class NoRun(Tool):
        def __init__(self) -> None:
            super().__init__(name="norun")

    with pytest.raises(TypeError, match="did not call Tool.__init__") as info:
        collect_tools([NoInit()])
    assert "super().__init__" in str(info.value)
    with pytest.raises(TypeError, match="does not implement run"):
        collect_tools([NoRun()])
    with pytest.raises(TypeError, match="got the class Ticket"):
        collect_tools([Ticket])
    with pytest.raises(NotImplementedError, match="NoRun does not implement run"):
        NoRun().run({}, State())


class Box:
    def __repr__(self) -> str:
        return "Box()"

    @tool
    def m(self, x: int) -> int:
        return x


def test_reprs_of_tools() -> None:
    assert repr(Ticket()) == "Ticket('create_ticket')"

    @tool
    def f(x: int) -> None: ...

    assert repr(f) == "FunctionTool('f')"
    box = Box()
    bound = box.m
    assert bound.bound_to is box
    assert "bound_to=" in repr(bound)
    assert repr(bound) == "FunctionTool('m', bound_to=Box())"
    assert Box.m.bound_to is None and repr(Box.m) == "FunctionTool('m')"


def test_is_async_is_a_read_only_property() -> None:
    assert isinstance(Tool.__dict__["is_async"], property) and Tool.__dict__["is_async"].fset is None
    assert isinstance(FunctionTool.__dict__["is_async"], property) and FunctionTool.__dict__["is_async"].fset is None

    @tool
    async def later(x: int) -> int:
        return x

    @tool
    def now(x: int) -> int:
        return x

    assert later.is_async is True and now.is_async is False
    with pytest.raises(AttributeError):
        later.is_async = False  # type: ignore[misc]

    class AsyncTicket(Ticket):
        async def run(self, args: dict[str, Any], state: State) -> Any:  # type: ignore[override]
            return "later"

    assert AsyncTicket().is_async is True and Ticket().is_async is False
    assert asyncio.run(later.run({"x": "3"}, State())) == 3


class Calc:
    @tool
    def add(self, a: int, b: int) -> int:
        return a + b

    @tool
    def sub(self, a: int, b: int) -> int:
        return a - b


def test_an_object_with_tool_methods_gives_its_bound_tools() -> None:
    calc = Calc()
    found = collect_tools([calc])
    assert list(found) == ["add", "sub"]
    assert all(t.bound_to is calc for t in found.values())  # type: ignore[attr-defined]
    assert found["sub"].run({"a": 5, "b": 2}, State()) == 3
    assert list(collect_tools([calc.add])) == ["add"]


def test_collect_tools_refuses_unbound_methods_plain_functions_and_duplicates() -> None:
    def plain_function(x: int) -> None: ...

    with pytest.raises(TypeError, match="unbound method tool") as info:
        collect_tools([Calc.add])
    assert "tools=[MyClass()] or tools=[obj.add]" in str(info.value)
    with pytest.raises(TypeError, match="does not have @tool"):
        collect_tools([plain_function])
    with pytest.raises(TypeError, match="has no methods with @tool"):
        collect_tools([object()])
    with pytest.raises(TypeError, match="got the class Calc. @tool methods are tools only on an object"):
        collect_tools([Calc])

    @tool(name="x")
    def one(a: int) -> None: ...

    @tool(name="x")
    def two(a: int) -> None: ...

    with pytest.raises(ValueError, match="Duplicate tool name 'x'") as dup:
        collect_tools([one, two])
    assert str(dup.value).startswith("Duplicate tool name 'x': FunctionTool('x') and FunctionTool('x')")
    with pytest.raises(ValueError, match="Duplicate tool name 'x'"):
        collect_tools([one, one])
    with pytest.raises(ValueError, match="Duplicate tool name 'add'"):
        collect_tools([Calc(), Calc()])


# --- more about hints, schemas, results and tools= ------------------------------------------------------------


def test_parse_docstring_examples() -> None:
    doc = "Summary.\n\nArgs:\n    q: the query\n        continued\n    n: count\n\nReturns:\n    results"
    assert _parse_docstring(doc) == ("Summary.", {"q": "the query continued", "n": "count"})
    assert _parse_docstring("Parses args\nfrom the command line.") == ("Parses args from the command line.", {})
    assert _parse_docstring(None) == ("", {})
    assert _parse_docstring("   \n ") == ("", {})
    doc2 = """Read.

        More text in the second paragraph.

        args
            path (str): where: exactly
            path: again
            mode:
                deep line
            other:  x

                after a blank
        Raises:
            Error: never
        """
    assert _parse_docstring(doc2) == (
        "Read.",
        {"path": "again", "mode": "deep line", "other": "x after a blank"},
    )
    assert _parse_docstring("Uses Arguments:\nParameters:\n  x: y") == ("Uses Arguments: Parameters: x: y", {})
    assert _parse_docstring("Summary\nArgs:\n  x: first\n    y: deeper is text")[1] == {"x": "first y: deeper is text"}
    assert _parse_docstring("S.\n\nArgs:\n  x: a\n\nTail paragraph") == ("S.", {"x": "a"})


def test_docs_for_invisible_parameters_are_ignored() -> None:
    @tool
    def f(q: str, state: State) -> str:
        """Search.

        Args:
            q: query
            state: the state
            qq: misspelled
        """
        return q

    assert f.input_schema == {
        "additionalProperties": False,
        "properties": {"q": {"description": "query", "type": "string"}},
        "required": ["q"],
        "type": "object",
    }


SCHEMA_CASES: list[tuple[str, Any, dict[str, Any]]] = []


def _case(fn: Any, expected: str) -> None:
    SCHEMA_CASES.append((fn.__name__, fn, json.loads(expected)))


def s1(s: str, i: int, f: float, b: bool) -> None: ...


_case(
    s1,
    '{"additionalProperties": false, "properties": {"s": {"type": "string"}, "i": {"type": "integer"}, "f": {"type": "number"}, "b": {"type": "boolean"}}, "required": ["s", "i", "f", "b"], "type": "object"}',
)


def s2(s: str = "x", i: int = 3, f: float = 1.5, b: bool = False, n: int | None = None) -> None: ...


_case(
    s2,
    '{"additionalProperties": false, "properties": {"s": {"default": "x", "type": "string"}, "i": {"default": 3, "type": "integer"}, "f": {"default": 1.5, "type": "number"}, "b": {"default": false, "type": "boolean"}, "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}}, "type": "object"}',
)


def s3(a: list[str], b: dict[str, int], c: list[list[int]], d: dict[str, list[str]]) -> None: ...


_case(
    s3,
    '{"additionalProperties": false, "properties": {"a": {"items": {"type": "string"}, "type": "array"}, "b": {"additionalProperties": {"type": "integer"}, "type": "object"}, "c": {"items": {"items": {"type": "integer"}, "type": "array"}, "type": "array"}, "d": {"additionalProperties": {"items": {"type": "string"}, "type": "array"}, "type": "object"}}, "required": ["a", "b", "c", "d"], "type": "object"}',
)


def s4(a: str | None, b: Optional[int], c: list[str] | None = None) -> None: ...  # noqa: UP045


_case(
    s4,
    '{"additionalProperties": false, "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "c": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "default": null}}, "required": ["a", "b"], "type": "object"}',
)


def s5(
    mode: Literal["fast", "slow"], n: Literal[1, 2, 3], one: Literal["only"], mixed: Literal["a", 1] = "a"
) -> None: ...


_case(
    s5,
    '{"additionalProperties": false, "properties": {"mode": {"enum": ["fast", "slow"], "type": "string"}, "n": {"enum": [1, 2, 3], "type": "integer"}, "one": {"const": "only", "type": "string"}, "mixed": {"default": "a", "enum": ["a", 1]}}, "required": ["mode", "n", "one"], "type": "object"}',
)


def s6(flag: Literal[True], x: float = 1) -> None: ...


_case(
    s6,
    '{"additionalProperties": false, "properties": {"flag": {"const": true, "type": "boolean"}, "x": {"default": 1, "type": "number"}}, "required": ["flag"], "type": "object"}',
)


def s7(color: Color, level: Level = Level.LOW) -> None: ...


_case(
    s7,
    '{"$defs": {"Color": {"enum": ["red", "blue"], "title": "Color", "type": "string"}, "Level": {"enum": [1, 2], "title": "Level", "type": "integer"}}, "additionalProperties": false, "properties": {"color": {"$ref": "#/$defs/Color"}, "level": {"$ref": "#/$defs/Level", "default": 1}}, "required": ["color"], "type": "object"}',
)


def s8(color: Color | None = None) -> None: ...


_case(
    s8,
    '{"$defs": {"Color": {"enum": ["red", "blue"], "title": "Color", "type": "string"}}, "additionalProperties": false, "properties": {"color": {"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}], "default": null}}, "type": "object"}',
)


def s9(p: Point) -> None: ...


_POINT = '{"Point": {"additionalProperties": false, "properties": {"x": {"title": "X", "type": "integer"}, "y": {"default": 0, "title": "Y", "type": "integer"}}, "required": ["x"], "title": "Point", "type": "object"}}'
_case(
    s9,
    '{"$defs": '
    + _POINT
    + ', "additionalProperties": false, "properties": {"p": {"$ref": "#/$defs/Point"}}, "required": ["p"], "type": "object"}',
)


def s10(origin: Point = Point(1, 2)) -> None: ...  # noqa: B008


_case(
    s10,
    '{"$defs": '
    + _POINT
    + ', "additionalProperties": false, "properties": {"origin": {"$ref": "#/$defs/Point", "default": {"x": 1, "y": 2}}}, "type": "object"}',
)


def s11(points: list[Point], by_name: dict[str, Point]) -> None: ...


_case(
    s11,
    '{"$defs": '
    + _POINT
    + ', "additionalProperties": false, "properties": {"points": {"items": {"$ref": "#/$defs/Point"}, "type": "array"}, "by_name": {"additionalProperties": {"$ref": "#/$defs/Point"}, "type": "object"}}, "required": ["points", "by_name"], "type": "object"}',
)


def s12(a: Address) -> None: ...


_case(
    s12,
    '{"$defs": {"Address": {"additionalProperties": false, "properties": {"city": {"title": "City", "type": "string"}, "zip": {"title": "Zip", "type": "string"}}, "required": ["city", "zip"], "title": "Address", "type": "object"}}, "additionalProperties": false, "properties": {"a": {"$ref": "#/$defs/Address"}}, "required": ["a"], "type": "object"}',
)


def s13(p: Profile, ps: list[Profile] | None = None) -> None: ...


_case(
    s13,
    '{"$defs": {"Profile": {"properties": {"age": {"title": "Age", "type": "integer"}, "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Nickname"}}, "required": ["age"], "title": "Profile", "type": "object"}}, "additionalProperties": false, "properties": {"p": {"$ref": "#/$defs/Profile"}, "ps": {"anyOf": [{"items": {"$ref": "#/$defs/Profile"}, "type": "array"}, {"type": "null"}], "default": null}}, "required": ["p"], "type": "object"}',
)


def s14(q: Annotated[str, Field(description="The query")], k: Annotated[int, Field(ge=1, le=10)] = 5) -> None: ...


_case(
    s14,
    '{"additionalProperties": false, "properties": {"q": {"type": "string"}, "k": {"default": 5, "type": "integer"}}, "required": ["q"], "type": "object"}',
)


def s15(q: str, state: State) -> None: ...


_case(
    s15,
    '{"additionalProperties": false, "properties": {"q": {"type": "string"}}, "required": ["q"], "type": "object"}',
)


def s16() -> None: ...


_case(s16, '{"additionalProperties": false, "properties": {}, "type": "object"}')


def s17(path: str, *, encoding: str = "utf-8", max_bytes: int | None = None) -> None:
    """Read.

    Args:
        path: File path
        encoding: Text encoding
    """


_case(
    s17,
    '{"additionalProperties": false, "properties": {"path": {"description": "File path", "type": "string"}, "encoding": {"default": "utf-8", "description": "Text encoding", "type": "string"}, "max_bytes": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}}, "required": ["path"], "type": "object"}',
)


@pytest.mark.parametrize("name,fn,expected", SCHEMA_CASES, ids=[c[0] for c in SCHEMA_CASES])
def test_schema_table(name: str, fn: Any, expected: dict[str, Any]) -> None:
    schema = tool(fn).input_schema
    assert schema == expected
    assert json.dumps(schema) == json.dumps(expected)  # key order too


def test_schema_of_method_equals_plain_function() -> None:
    class Holder:
        @tool
        def m(self, x: int) -> None:
            """Do it."""

    def m(x: int) -> None:
        """Do it."""

    assert Holder.m.needs_self is True
    assert (
        Holder.m.input_schema
        == tool(m).input_schema
        == json.loads(
            '{"additionalProperties": false, "properties": {"x": {"type": "integer"}}, "required": ["x"], "type": "object"}'
        )
    )
    assert Holder.m.description == "Do it."

    class Annotated_:
        @tool
        def n(self: int) -> None: ...

    assert Annotated_.n.needs_self is False
    assert list(Annotated_.n.input_schema["properties"]) == ["self"]


def test_pydantic_field_description_kept_in_defs() -> None:
    class Item(BaseModel):
        sku: str = Field(description="Stock keeping unit")

    def f(item: Item) -> None: ...

    assert tool(f).input_schema["$defs"]["Item"]["properties"]["sku"] == {
        "description": "Stock keeping unit",
        "title": "Sku",
        "type": "string",
    }


@dataclasses.dataclass
class Tree:
    value: int
    children: list["Tree"] = dataclasses.field(default_factory=list)


def test_supported_and_unsupported_types() -> None:
    def recursive(t: Tree) -> None: ...

    assert "Tree" in tool(recursive).input_schema["$defs"]
    bad_types: list[Any] = [
        tuple[int, int],
        set[int],
        Any,
        complex,
        bytes,
        list,
        dict,
        dict[int, str],
        int | str,
        Image,
        State | None,
        list[complex],
    ]
    for bad in bad_types:

        def f(x: int) -> None: ...

        f.__annotations__["x"] = bad
        with pytest.raises(TypeError, match="has unsupported type") as info:
            tool(f)
        assert f"Only these types can be used: {SUPPORTED_TYPES_TEXT}" in str(info.value)

    import datetime

    def when(x: datetime.datetime) -> None: ...

    with pytest.raises(TypeError, match="unsupported type"):
        tool(when)

    @dataclasses.dataclass
    class Broken:
        x: "Missing"  # type: ignore[name-defined]  # noqa: F821

    def broken(b: Broken) -> None: ...

    with pytest.raises(TypeError, match="unsupported type"):
        tool(broken)

    def missing(x: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821
        ...

    with pytest.raises(TypeError, match="cannot resolve type hints: name 'Missing' is not defined"):
        tool(missing)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.11 only")
def test_stdlib_typeddict_on_311() -> None:
    class Plain(typing.TypedDict):
        a: int

    def f(x: Plain) -> None: ...

    def g(x: list[Plain]) -> None: ...

    for fn in (f, g):
        with pytest.raises(
            TypeError, match=r"parameter x: typing.TypedDict \(Plain\) cannot be used on Python 3.11"
        ) as info:
            tool(fn)
        assert "typing_extensions.TypedDict" in str(info.value)


@pytest.mark.parametrize(
    "tp,sent,expected",
    [
        (int, "5", 5),
        (int, 5.0, 5),
        (int, True, 1),
        (float, 3, 3.0),
        (float, "3.5", 3.5),
        (bool, "true", True),
        (bool, "yes", True),
        (bool, 1, True),
        (Color, "blue", Color.BLUE),
        (Literal[1, 2], 1, 1),
    ],
)
def test_lax_coercion(tp: Any, sent: Any, expected: Any) -> None:
    def f(n: int) -> None: ...

    f.__annotations__["n"] = tp
    result = tool(f).prepare({"n": sent})["n"]
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    "tp,sent,message",
    [
        (int, "abc", "n: Input should be a valid integer, unable to parse string as an integer"),
        (int, None, "n: Input should be a valid integer"),
        (int | None, "q", "n: Input should be a valid integer, unable to parse string as an integer"),
        (str, 5, "n: Input should be a valid string"),
        (bool, "maybe", "n: Input should be a valid boolean, unable to interpret input"),
        (Color, "green", "n: Input should be 'red' or 'blue'"),
        (Literal["a", "b"], "c", "n: Input should be 'a' or 'b'"),
        (Literal[1, 2], "1", "n: Input should be 1 or 2"),
        (list[str], ["a", 2], "n.1: Input should be a valid string"),
        (list[str], "a", "n: Input should be a valid list"),
        (Point, {"x": 1, "extra": 2}, "n.extra: Unexpected keyword argument"),
        (Point, {}, "n.x: required argument is missing"),
        (Address, {"city": "x", "zip": "z", "q": 1}, "n.q: unknown argument"),
        (Address, {}, "n.city: required argument is missing; n.zip: required argument is missing"),
        (Profile, {}, "n.age: required argument is missing"),
        (dict[str, int], {"k": "x"}, "n.k: Input should be a valid integer, unable to parse string as an integer"),
    ],
)
def test_validation_messages(tp: Any, sent: Any, message: str) -> None:
    def f(n: int) -> None: ...

    f.__annotations__["n"] = tp
    with pytest.raises(ToolInputError) as info:
        tool(f).prepare({"n": sent})
    assert str(info.value) == message


def test_prepare_values_and_containers() -> None:
    class Optional_(XTypedDict):
        a: int
        b: NotRequired[str]

    @tool
    def f(
        p: Point,
        prof: Profile,
        color: Color,
        addr: Address,
        tags: list[str],
        opt: Optional_,
        x: int = None,  # type: ignore[assignment]
    ) -> None: ...

    frozen_tags = ["a"]
    result = f.prepare(
        {
            "p": {"x": 1},
            "prof": {"age": 2, "zzz": 1},
            "color": "red",
            "addr": {"city": "c", "zip": "z"},
            "tags": frozen_tags,
            "opt": {"a": 1},
        }
    )
    assert list(result) == ["p", "prof", "color", "addr", "tags", "opt", "x"]
    assert result["p"] == Point(1, 0)
    assert isinstance(result["prof"], Profile) and result["prof"].age == 2
    assert result["color"] is Color.RED
    assert result["addr"] == {"city": "c", "zip": "z"} and type(result["addr"]) is dict
    assert result["tags"] == ["a"] and result["tags"] is not frozen_tags
    assert result["x"] is None
    assert "b" not in f.input_schema["$defs"]["Optional_"]["required"]


def test_invalid_args_message() -> None:
    assert invalid_args_message({"a": 1}) is None
    assert invalid_args_message({INVALID_ARGS_KEY: '{"title": '}) == 'arguments are not valid JSON: {"title": '
    assert invalid_args_message({INVALID_ARGS_KEY: 5}) == "arguments are not valid JSON: 5"
    assert invalid_args_message({INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}) == TRUNCATED_ARGS_MESSAGE

    @tool
    def f(x: int) -> None: ...

    with pytest.raises(ToolInputError, match="arguments are not valid JSON: oops"):
        f.prepare({INVALID_ARGS_KEY: "oops", "x": 1})


def test_format_result_json_rules() -> None:
    import datetime

    assert format_result(5) == "5"
    assert format_result(1.5) == "1.5"
    assert format_result(True) == "true"
    assert format_result(0) == "0"
    assert format_result([1, "a"]) == '[1, "a"]'
    assert format_result((1, 2)) == "[1, 2]"
    assert format_result([]) == "[]"
    assert format_result({}) == "{}"
    assert format_result(Point(1)) == '{"x": 1, "y": 0}'
    assert format_result(Color.RED) == '"red"'
    assert format_result({1, 2}) == "[1, 2]"
    assert format_result(datetime.date(2024, 1, 2)) == '"2024-01-02"'
    assert format_result(b"ab") == '"ab"'
    assert format_result(float("nan")) == "NaN"
    png = Image(PNG)
    assert format_result([TextBlock("t"), png]) == (TextBlock('{"text": "t"}'), png)


def test_invoke_call_and_binding() -> None:
    @tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    assert add(5) == 15
    assert add.invoke({"a": 1, "b": 2}, None) == 3

    class Files:
        root = "/r"

        @tool(read_only=True, hints_for=lambda args: None)
        def read_file(self, path: str, state: State) -> str:
            """Read a file."""
            return f"{self.root}/{path}:{state is not None}"

    files = Files()
    one, two = files.read_file, files.read_file
    assert one is not two and one.bound_to is files and Files.read_file.bound_to is None
    assert Files.read_file is Files.read_file
    assert one.input_schema is Files.read_file.input_schema
    assert one("a.txt", None) == "/r/a.txt:False"
    assert one.run({"path": "b"}, State()) == "/r/b:True"
    assert one.read_only is True and one._hints_fn is not None
    with pytest.raises(ToolInputError):
        one.run({"path": 1}, State())


def test_handler_on_async_tool_and_tool_input_error_with_exception_handler() -> None:
    def everything(error: Exception) -> str:
        return f"handled {type(error).__name__}"

    @tool(exception_handler=everything)
    async def fetch(url: str) -> str:
        raise ToolInputError("bad url")

    with pytest.raises(ToolError, match="handled ToolInputError"):
        asyncio.run(fetch.run({"url": "u"}, State()))

    @tool(exception_handler=http_errors)
    async def fetch2(url: str) -> str:
        raise NotFound("404")

    with pytest.raises(ToolError, match="request failed: 404"):
        asyncio.run(fetch2.run({"url": "u"}, State()))

    with pytest.raises(ToolInputError):
        fetch2.run({"url": 5}, State())


def test_tool_base_defaults() -> None:
    class Now(Tool):
        def __init__(self) -> None:
            super().__init__(name="now", description="The time")

        def run(self, args: dict[str, Any], state: State) -> Any:
            return "noon"

    now = Now()
    assert now.input_schema == {"type": "object", "properties": {}}
    assert now.spec == ToolSpec("now", "The time", {"type": "object", "properties": {}})
    assert (now.parallel, now.is_async) == (True, False)
    assert hints_of(now) == (False, True, False, True)
    assert collect_tools([now]) == {"now": now}


def test_collect_tools_order_and_mro() -> None:
    @tool
    def read_file(path: str) -> str:
        return path

    @tool
    def bash(command: str) -> str:
        return command

    class Base:
        @tool
        def delete_file(self, path: str) -> None: ...

        @tool
        def shared(self, x: int) -> str:
            return "base"

    class Files(Base):
        @tool
        def list_files(self) -> list[str]:
            return []

        @tool
        def shared(self, x: int) -> str:
            return "files"

    found = collect_tools([read_file, Files(), bash])
    assert list(found) == ["read_file", "list_files", "shared", "delete_file", "bash"]
    assert found["shared"].run({"x": 1}, State()) == "files"


def test_tool_map() -> None:
    t = Ticket()
    source = {"create_ticket": t}
    tools = ToolMap(source, ())
    source["other"] = t
    assert list(tools) == ["create_ticket"] and len(tools) == 1
    assert tools["create_ticket"] is t and tools.get("create_ticket") is t
    assert "create_ticket" in tools and "nope" not in tools
    assert tools.get("nope") is None
    assert dict(tools.items()) == {"create_ticket": t}
    assert repr(tools) == "{'create_ticket': Ticket('create_ticket')}"
    with pytest.raises(TypeError):
        tools["x"] = t  # type: ignore[index]
    with pytest.raises(KeyError) as plain:
        tools["nope"]
    assert type(plain.value) is KeyError and plain.value.args == ("nope",)
    waiting = ToolMap({}, ("github", "files"))
    with pytest.raises(KeyError) as info:
        waiting["github__x"]
    message = str(info.value)
    assert message.startswith(
        "No tool named 'github__x'. This Agent's MCP servers (github, files) are not connected, so their tools "
        "are not listed yet"
    )
    assert "with agent:" in message and "Fix:" in message
    shown = "".join(traceback.format_exception_only(type(info.value), info.value))
    assert shown.startswith("KeyError: No tool named")
    assert waiting.get("github__x") is None and "github__x" not in waiting


def test_package_attribute_reads_like_the_module() -> None:
    import alpineagents

    assert alpineagents.Hints is alpineagents.tool.Hints  # type: ignore[attr-defined]
    assert alpineagents.tool.__all__ == importlib.import_module("alpineagents.tool").__all__  # type: ignore[attr-defined]
    assert alpineagents.tool is tool and alpineagents.Tool is alpineagents.tool.Tool  # type: ignore[attr-defined]


# --- results whose repr fails ----------------------------------------------------------------------------------


class _ReprFails:
    def __repr__(self) -> str:
        raise RuntimeError("repr broke")


class _ReprAndStrFail(_ReprFails):
    def __str__(self) -> str:
        raise RuntimeError("str broke")


@pytest.mark.parametrize("cls", [_ReprFails, _ReprAndStrFail])
def test_a_result_whose_repr_raises_is_the_conversion_type_error(cls: type) -> None:
    with pytest.raises(TypeError, match="Cannot convert tool return value <.*object at 0x.*> to JSON") as info:
        format_result(cls())
    assert "Fix:" in str(info.value)
    with pytest.raises(TypeError, match="Cannot convert tool return value"):
        format_result({"inner": cls()})


def test_a_tool_returning_a_value_whose_repr_raises_closes_its_call_as_aborted_type_error() -> None:
    @tool
    def make() -> Any:
        return _ReprAndStrFail()

    agent = Agent(model=FakeModel([tool_call("make"), "done"]), tools=[make], reporter=None)
    state = task()
    with pytest.raises(TypeError, match="Cannot convert tool return value") as info:
        agent.run(state)
    assert "exception raised in tool make()" in info.value.__notes__
    [closed] = results(state)
    assert closed.content == "(aborted: TypeError)"
    assert closed.outcome == "aborted"
    assert closed.error is info.value


# --- the same mistakes in Agent(tools=...) -----------------------------------------------------------------------


def test_tool_subclass_mistakes_are_refused_by_agent_tools() -> None:
    class NoInit(Tool):
        def __init__(self) -> None:
            pass

        def run(self, args: dict[str, Any], state: State) -> Any:
            return None

    class NoRun(Tool):
        def __init__(self) -> None:
            super().__init__(name="norun")

    with pytest.raises(TypeError, match=r"did not call Tool\.__init__") as info:
        Agent(model=FakeModel([]), tools=[NoInit()], reporter=None)
    assert "super().__init__" in str(info.value)
    with pytest.raises(TypeError, match="does not implement run"):
        Agent(model=FakeModel([]), tools=[NoRun()], reporter=None)
    with pytest.raises(TypeError, match="got the class Ticket"):
        Agent(model=FakeModel([]), tools=[Ticket], reporter=None)


def test_tools_mistakes_are_refused_by_agent_tools() -> None:
    def plain_function(x: int) -> None: ...

    @tool(name="x")
    def one(a: int) -> None: ...

    @tool(name="x")
    def two(a: int) -> None: ...

    with pytest.raises(TypeError, match="unbound method tool"):
        Agent(model=FakeModel([]), tools=[Calc.add], reporter=None)
    with pytest.raises(TypeError, match="does not have @tool"):
        Agent(model=FakeModel([]), tools=[plain_function], reporter=None)
    with pytest.raises(TypeError, match="has no methods with @tool"):
        Agent(model=FakeModel([]), tools=[object()], reporter=None)
    with pytest.raises(ValueError, match="Duplicate tool name 'x'"):
        Agent(model=FakeModel([]), tools=[one, two], reporter=None)
