"""Google-style docstring parsing for `@tool` (04 §4.3).

`alpineagents.tool._parse_docstring` is this module's `parse_docstring` (the fixed name lives in `tool`).
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:(.*)$")
_SECTION = re.compile(r"^[A-Z][A-Za-z]*(?: [A-Za-z]+)*:$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a raw docstring into its description and its `Args:` parameter texts.

    Returns `(description, {parameter name: text})`. The description is the first paragraph before the `Args:`
    header, its lines stripped and joined with single spaces.
    """
    if doc is None or not doc.strip():
        return "", {}
    lines = inspect.cleandoc(doc).split("\n")
    header = -1
    for index, line in enumerate(lines):
        text = line.strip().lower()
        if text == "args:" or (text == "args" and (index == 0 or not lines[index - 1].strip())):
            header = index
            break
    before = lines if header < 0 else lines[:header]
    summary: list[str] = []
    for line in before:
        if not line.strip():
            if summary:
                break
            continue
        summary.append(line.strip())
    description = " ".join(summary)
    params: dict[str, str] = {}
    if header < 0:
        return description, params
    header_indent = _indent(lines[header])
    current: str | None = None
    current_indent = -1
    texts: list[str] = []
    after_blank = False

    def close() -> None:
        if current is not None:
            params[current] = " ".join(text for text in texts if text)

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
            close()
            current = match.group(1)
            current_indent = indent
            texts = [match.group(2).strip()]
            continue
        if current is not None:
            texts.append(stripped)
    close()
    return description, params
