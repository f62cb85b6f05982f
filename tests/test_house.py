"""House rules of the code base that a test can hold: room sizes, export lists, and the map naming every room.

- No module of `src/` is over 800 lines (a longer one is split by concern).
- Each module's `__all__` is its one export list: every name in it exists in the module, once.
- `docs/architecture.md` names every module: by its path (`models/_clients.py`), or by its name inside the line of
  its folder. The users of the facade (the top row of the layer diagram) may be named by their folder alone
  (`cli/`, `viewer/`): they are described as one part each.
- No parameter of the core (every layer below the users of the facade) is typed `Any`: a value of ours has its
  class or a small Protocol, a user's object that is checked at run time is `object`, a JSON value is `JSON`.
  The few left are listed in `ANY_ALLOWED`, each group with its reason.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

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
    unnamed = []
    for path in module_files():
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" or relative.split("/")[0] + "/" in by_folder:
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
    # reason -> the parameters it covers, as "module:function(parameter)"
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
