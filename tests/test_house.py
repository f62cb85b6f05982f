"""House rules of the code base that a test can hold: room sizes, export lists, and the map naming every room.

- No module of `src/` is over 800 lines (a longer one is split by concern).
- Each module's `__all__` is its one export list: every name in it exists in the module, once.
- `docs/architecture.md` names every module: by its path (`models/_clients.py`), or by its name inside the line of
  its folder. The users of the facade (the top row of the layer diagram) may be named by their folder alone
  (`cli/`, `viewer/`): they are described as one part each. A model adapter's module is named by its row of
  `PROVIDERS` (`models/resolve.py`), the one list of the adapters, and a built-in store's module by its line of
  `BUILTIN_STORES` (`_stores/registry.py`), the one list of the stores: the page points to both.
- No parameter of the core (every layer below the users of the facade) is typed `Any`: a value of ours has its
  class or a small Protocol, a user's object that is checked at run time is `object`, a JSON value is `JSON`.
  The few left are listed in `ANY_ALLOWED`, each group with its reason.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from alpineagents._stores.registry import BUILTIN_STORES
from alpineagents.models.resolve import PROVIDERS

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "alpineagents"
MAX_LINES = 800


def module_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_is_over_800_lines() -> None:
    long = {}
    for path in module_files():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            long[str(path.relative_to(REPO))] = lines
    assert long == {}, f"split these modules by concern (at most {MAX_LINES} lines each): {long}"


def _declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            assert node.value is not None
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", module_files(), ids=lambda path: module_name(path))
def test_every_name_in_an_export_list_exists_once(path: Path) -> None:
    exported = _declared_all(path)
    if exported is None:
        pytest.skip("no __all__")
    duplicates = sorted({name for name in exported if exported.count(name) > 1})
    assert duplicates == [], f"{module_name(path)}.__all__ names these twice: {duplicates}"
    module = importlib.import_module(module_name(path))
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == [], f"{module_name(path)}.__all__ names what the module does not have: {missing}"


def _facade_users() -> set[str]:
    """The folders of the top row of the layer diagram (the users of the facade)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    first = next(line for line in block.splitlines() if line.strip())
    return {item.strip() for item in first.split("  ", 1)[1].split("·") if item.strip().endswith("/")}


def test_the_architecture_page_names_every_module() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    by_folder = _facade_users()
    listed = {row.adapter.__module__ for row in PROVIDERS} | {store.module for store in BUILTIN_STORES}
    assert "`PROVIDERS`" in text and "`BUILTIN_STORES`" in text, "the page points to the lists of adapters and stores"
    unnamed = []
    for path in module_files():
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" or relative.split("/")[0] + "/" in by_folder:
            continue
        if module_name(path) in listed:
            continue
        stem = relative.removesuffix(".py")
        named = relative in text or f"`{stem}`" in text
        if not named and "/" in relative:  # `name.py` in the text about its folder
            folder = relative.split("/")[0]
            named = any(f"`{path.name}`" in line and f"{folder}/" in line for line in _paragraphs(text))
        if not named:
            unnamed.append(relative)
    assert unnamed == [], f"docs/architecture.md does not name these modules (say what each holds): {unnamed}"


def _paragraphs(text: str) -> list[str]:
    """The bullets and paragraphs of the page, each joined into one line."""
    found: list[str] = []
    for line in text.splitlines():
        if line.startswith(("- ", "#", "|")) or not line.strip() or not found:
            found.append(line)
        else:
            found[-1] += " " + line.strip()
    return found


ANY_ALLOWED: dict[str, frozenset[str]] = {
    "an object of a provider's SDK or of its HTTP client (a client, a stream, an event, a chunk, a raw response, an "
    "SDK error or enum): its type belongs to the SDK, an optional extra for some providers, and the adapter reads it "
    "by attribute": frozenset(
        {
            "models._clients:close_with_loop(client)",
            "models._clients:SDKClients._warm(client)",
            "models._openai_sdk:usage_of(raw)",
            "models._openai_sdk:StreamReader.add(event)",
            "models._openai_sdk:OpenAIStreaming._open(client)",
            "models._openai_sdk:OpenAIStreaming._open(stream_cls)",
            "models._redact:_clean_headers(headers)",
            "models._redact:_body(message)",
            "models._redact:_Copier.request(request)",
            "models._redact:_Copier.response(response)",
            "models.anthropic:_raw_post(stream_cls)",
            "models.anthropic:_check_complete(stream)",
            "models.anthropic:_check_complete(final)",
            "models.anthropic:_final_message_sync(stream)",
            "models.anthropic:_final_message_async(stream)",
            "models.anthropic:Anthropic.__init__(client)",
            "models.anthropic:Anthropic._adopt(client)",
            "models.anthropic:Anthropic._limit_of(info)",
            "models.anthropic:Anthropic._resolve_max_tokens(client)",
            "models.anthropic:Anthropic._aresolve_max_tokens(client)",
            "models.anthropic:Anthropic._to_reply(final_message)",
            "models.anthropic:Anthropic._open(client)",
            "models.anthropic:Anthropic._aopen(client)",
            "models.anthropic:Anthropic._stream(client)",
            "models.anthropic:Anthropic._astream(client)",
            "models.anthropic:Anthropic._finished(final)",
            "models.bedrock:Bedrock.__init__(client)",
            "models.bedrock:_status(error)",
            "models.gemini:Gemini.__init__(client)",
            "models.gemini:_Reader.add(chunk)",
            "models.gemini:_Reader._part(part)",
            "models.gemini:_usage(metadata)",
            "models.gemini:_b64(signature)",
            "models.gemini:_name(value)",
            "models.gemini:_details(error)",
            "models.gemini:_reason(error)",
            "models.gemini:_retry_delay(error)",
            "models.openai_compatible:_StreamReader.add(chunk)",
            "models.openai_compatible:_StreamReader._call_piece(item)",
            "models.openai_responses:OpenAIResponses._to_reply(response)",
            "models.openai_responses:_ResponseReader.add(event)",
            "models.openai_responses:_ResponseReader._piece(event)",
            "models.anthropic:_Pieces.add(event)",
            "models.openai_responses:_message_text(item)",
            "models.openai_responses:_stop_reason(response)",
        }
    ),
    "the answer format of a Human's ask or aask, a hook users implement: `Any` lets an implementation annotate it "
    "as it likes (`returns: type[T]`) and still fit the role": frozenset(
        {
            "human:Human.ask(returns)",
            "human:Human.aask(returns)",
            "human:AsksSync.ask(returns)",
            "human:AsksAsync.aask(returns)",
            "terminal:Terminal.ask(returns)",
            "testing:FakeHuman.ask(returns)",
        }
    ),
    "dispatched on `type(value)` on a hot path (every value a State records is frozen, every loaded entry built, "
    "every prepared item of a FakeModel read): an exact-type test that a type checker does not narrow": frozenset(
        {"_frozen:freeze(value)", "_frozen:thaw(value)", "types:_as_tuple(value)", "testing:FakeModel._convert(item)"}
    ),
    "built like `dict(...)`: the arguments of the builtin's overloaded constructor, handed on to it": frozenset(
        {
            "_frozen:FrozenDict.__new__(args)",
            "_frozen:FrozenDict.__new__(kwargs)",
            "_frozen:FrozenDict.__init__(args)",
            "_frozen:FrozenDict.__init__(kwargs)",
        }
    ),
    "a user's value probed at run time before it is used (is it iterable and not a string, does it name exception "
    "classes, is it a model of Pydantic, found only when loaded): `object` is not narrowed by such a probe, and the "
    "error it raises says what was wrong": frozenset(
        {
            "_history.json_values:answer(value)",
            "_tools.callbacks:_exception_classes(hint)",
            "_tools.patterns:name_patterns(value)",
            "agent:_list_like(value)",
            "agent:_as_tuple(value)",
            "agent:_check_lists(tools)",
            "agent:_check_lists(permissions)",
            "agent:_check_lists(skills)",
            "agent:Agent._choose_specs(tools)",
            "agent:Agent._mcp_chosen(item)",
        }
    ),
    "the run-time body behind a signature declared for the type checker: `State(...)` has typed overloads, and an "
    "adapter class is called with the keywords its own constructor declares": frozenset(
        {
            "state:State.__init__(args)",
            "state:State.__init__(kwargs)",
            "models.resolve:AdapterClass.__call__(args)",
            "models.resolve:AdapterClass.__call__(options)",
        }
    ),
    "one recorder for two entry classes (`StopEntry` takes a stop, `ModelEventEntry` a model event)": frozenset(
        {"_history.recording:Recorder._record(content)"}
    ),
}
"""The core parameters that stay typed `Any`, grouped by the reason each group has."""


def _top_row() -> set[str]:
    """The names of the top row of the layer diagram (the users of the facade), folders with their slash."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    first = next(line for line in block.splitlines() if line.strip())
    return {item.strip() for item in first.split("  ", 1)[1].split("·") if item.strip()}


def _is_any(annotation: ast.expr | None) -> bool:
    """Whether an annotation is `Any`, or a union with `Any` in it (`Any | None`)."""
    if isinstance(annotation, ast.Name | ast.Attribute):
        return (annotation.id if isinstance(annotation, ast.Name) else annotation.attr) == "Any"
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _is_any(ast.parse(annotation.value, mode="eval").body)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_any(annotation.left) or _is_any(annotation.right)
    return False


def _any_parameters(tree: ast.Module, module: str) -> list[str]:
    """Every parameter typed `Any` in a module, as "module:function(parameter)" (methods as `Class.method`)."""
    found: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = child.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
                found.extend(f"{module}:{prefix}{child.name}({arg.arg})" for arg in every if _is_any(arg.annotation))
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def core_any_parameters() -> list[str]:
    """The parameters typed `Any` in the core: every module below the users of the facade."""
    outside = {name.rstrip("/") for name in _top_row()}
    found: list[str] = []
    for path in module_files():
        relative = path.relative_to(PACKAGE).with_suffix("").as_posix()
        if relative.split("/")[0] in outside:
            continue
        module = relative.removesuffix("/__init__").replace("/", ".")
        found += _any_parameters(ast.parse(path.read_text(encoding="utf-8")), module)
    return found


def test_no_core_parameter_is_typed_any() -> None:
    allowed = set().union(*ANY_ALLOWED.values())
    found = core_any_parameters()
    untyped = [name for name in found if name not in allowed]
    assert untyped == [], (
        "type these parameters: a class or a small Protocol for a value of ours, `object` for a user's object "
        f"checked at run time, `JSON` (alpineagents._frozen) for a JSON value: {untyped}"
    )
    gone = sorted(allowed - set(found))
    assert gone == [], f"ANY_ALLOWED lists parameters that are no longer typed Any (remove them): {gone}"


def test_the_any_check_sees_every_form() -> None:
    source = (
        "from typing import Any\n"
        "def f(a: Any, b: 'Any', c: Any | None, d: int, *e: Any, **f: Any) -> Any: ...\n"
        "class C:\n"
        "    def m(self, g: typing.Any) -> None: ...\n"
    )
    found = _any_parameters(ast.parse(source), "m")
    assert found == ["m:f(a)", "m:f(b)", "m:f(c)", "m:f(e)", "m:f(f)", "m:C.m(g)"]
