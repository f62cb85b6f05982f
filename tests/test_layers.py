"""The house rule of docs/architecture.md, checked against the code: imports point down.

The layers are read from the diagram of that page, so the page and the code cannot drift apart: every module of
the package belongs to one layer named there, and an import that runs when a module is loaded (outside
`if TYPE_CHECKING:` and outside functions) names a module of the same layer or a lower one, with no loop. A lower
layer reaches a higher one only through an object it was handed or an import inside a function.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "alpineagents"
TOP = 99  # the package's own face (`__init__`, `__main__`) sits above every layer


def diagram_layers() -> dict[str, int]:
    """`{first name under alpineagents: layer}` from the layer diagram, the lowest layer 1."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    rows: list[list[str]] = []
    for line in block.splitlines()[1:]:
        if not line.strip() or "▼" in line:
            continue
        label, _, items = line.strip().partition("  ") if not line.startswith(" " * 8) else ("", "", line)
        if label:
            rows.append([])
        rows[-1].extend(item.strip() for item in re.sub(r"\([^)]*\)", "", items).split("·"))
    layers: dict[str, int] = {}
    for number, row in enumerate(reversed(rows), 1):
        for item in row:
            if item:
                layers[item.rstrip("/")] = number
    return layers


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def load_time_imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """`(module, line)` of each import of the package that runs when the module is loaded."""
    found: list[tuple[str, int]] = []
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if not _type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(part)
            elif isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                source = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    found.append((submodule if submodule in known else source, node.lineno))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return [(module, line) for module, line in found if module.split(".")[0] == "alpineagents"]


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return TOP
    return layers.get(parts[1])


LAYERS = diagram_layers()
MODULES = modules()


def test_the_diagram_names_six_layers_from_the_values_up() -> None:
    assert LAYERS["types"] == 1 and LAYERS["state"] == 2 and LAYERS["store"] == 3
    assert LAYERS["_turn"] == 4 and LAYERS["agent"] == 5 and LAYERS["cli"] == 6


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_sits_in_a_layer_of_the_diagram_and_imports_only_its_own_layer_or_lower_ones(name: str) -> None:
    mine = layer_of(name, LAYERS)
    assert mine is not None, f"{name} is in no layer of docs/architecture.md: add it to the diagram"
    for module, line in load_time_imports(name, MODULES[name], MODULES):
        theirs = layer_of(module, LAYERS)
        assert theirs is not None, f"{name} imports {module}, which is in no layer of docs/architecture.md"
        assert theirs <= mine, (
            f"{MODULES[name].relative_to(REPO)}:{line} imports {module} (layer {theirs}) from layer {mine}: "
            "reach up through an object that was handed down, or import inside the function, with a comment"
        )


def test_no_modules_import_each_other_in_a_loop_when_they_load() -> None:
    graph = {
        name: {module for module, _ in load_time_imports(name, path, MODULES) if module in MODULES}
        for name, path in MODULES.items()
    }
    done: set[str] = set()

    def walk(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError("modules import each other when they load: " + " -> ".join([*path, name]))
        if name in done:
            return
        for module in sorted(graph[name]):
            walk(module, [*path, name])
        done.add(name)

    for name in sorted(graph):
        walk(name, [])
