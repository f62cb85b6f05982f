"""House rules of the code base that a test can hold: room sizes, export lists, and the map naming every room.

- No module of `src/` is over 800 lines (a longer one is split by concern).
- Each module's `__all__` is its one export list: every name in it exists in the module, once.
- `docs/architecture.md` names every module: by its path (`models/_clients.py`), or by its name inside the line of
  its folder. The users of the facade (the top row of the layer diagram) may be named by their folder alone
  (`cli/`, `viewer/`): they are described as one part each.
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
