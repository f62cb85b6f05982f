"""Google-style docstring parsing for `@tool`: a tool's description and the texts of its parameters.

`alpineagents.tool._parse_docstring` is this module's `parse_docstring` (that name in `tool` is fixed).
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["parse_docstring", "warn_about_docstring"]

_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:(.*)$")
"""An entry line: `name: text` or `name (type): text`."""

_SECTION = re.compile(r"^[A-Z][A-Za-z]*(?: [A-Za-z]+)*:$")
"""A section header such as `Returns:` or `Raises:` (capitalized words and a colon, nothing else)."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a raw docstring into its description and its `Args:` parameter texts.

    Returns `(description, {parameter name: text})`. The description is the first paragraph before the `Args:`
    header, its lines stripped and joined with single spaces. An empty or blank docstring gives `("", {})`.
    """
    if doc is None or not doc.strip():
        return "", {}
    lines = inspect.cleandoc(doc).split("\n")
    header = _args_header(lines)
    if header < 0:
        return _first_paragraph(lines), {}
    return _first_paragraph(lines[:header]), _entries(lines, header)


def _args_header(lines: list[str]) -> int:
    """The index of the `Args:` header, or -1. The first line that is exactly `args:` (any case, any indentation)
    is the header; a bare `args` counts only at the start of a paragraph."""
    for index, line in enumerate(lines):
        text = line.strip().lower()
        if text == "args:" or (text == "args" and (index == 0 or not lines[index - 1].strip())):
            return index
    return -1


def _first_paragraph(lines: list[str]) -> str:
    """The first paragraph (leading blank lines skipped), its lines stripped and joined with single spaces."""
    summary: list[str] = []
    for line in lines:
        if line.strip():
            summary.append(line.strip())
        elif summary:
            break
    return " ".join(summary)


def _entries(lines: list[str], header: int) -> dict[str, str]:
    """The parameter texts of the section under `lines[header]`.

    The section ends at a line indented no deeper than the header that looks like a section header or follows a
    blank line. An entry line starts a new entry when it is the first or indented no deeper than the entry before;
    any other line continues the current entry. A name given twice keeps its last text.
    """
    header_indent = _indent(lines[header])
    params: dict[str, str] = {}
    current: str | None = None
    current_indent = -1
    after_blank = False
    for line in lines[header + 1 :]:
        stripped = line.strip()
        if not stripped:
            after_blank = True
            continue
        indent = _indent(line)
        if indent <= header_indent and (_SECTION.match(stripped) or after_blank):
            break
        after_blank = False
        match = _ENTRY.match(stripped)
        if match and (current is None or indent <= current_indent):
            current, current_indent = match[1], indent
            params[match[1]] = match[2].strip()  # a name given again: its last text wins
        elif current is not None:
            params[current] = f"{params[current]} {stripped}" if params[current] else stripped
    return params


def warn_about_docstring(fn: Callable[..., Any], name: str, summary: str, param_docs: Mapping[str, str]) -> None:
    """Warn, at the function's own line, when the model would read nothing about the tool `name` (no docstring and
    no `description=`: `summary` is empty) or when an `Args:` entry names no parameter of `fn` (a typo, or a
    parameter renamed since), since the model reads these texts to choose and call the tool."""
    problems: list[str] = []
    if not summary:
        problems.append(
            f"tool {name!r} has no description, so the model reads nothing about what it does: give "
            f"{fn.__name__} a docstring whose first paragraph says it (or pass @tool(description=...))"
        )
    unknown = [key for key in param_docs if key not in inspect.signature(fn).parameters]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        problems.append(
            f"the Args: section of tool {name!r} describes {names}, which {fn.__name__} has no parameter named: "
            "fix the name in the docstring, or remove the entry"
        )
    code = getattr(fn, "__code__", None)
    for problem in problems:
        warnings.warn_explicit(
            problem,
            UserWarning,
            code.co_filename if code is not None else "<unknown>",
            code.co_firstlineno if code is not None else 0,
            module=getattr(fn, "__module__", None) or "alpineagents.tool",
        )
