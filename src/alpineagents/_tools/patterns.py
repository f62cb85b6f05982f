"""Tool-name patterns, as the name-based permissions take them: shell-style (``*``, ``?``), case-sensitive."""

from __future__ import annotations

import fnmatch
from typing import Any

from alpineagents.errors import fix_message

__all__ = ["matches_any", "name_patterns"]


def name_patterns(maker: str, value: Any) -> tuple[str, ...]:
    """The patterns given to ``maker`` (a permission class's name, for the error texts) as a tuple of strings.

    Raises:
        TypeError: ``value`` is one string, not iterable, or holds something that is not a string.
    """
    example = f'{maker}(["read_*", "github__*"])'
    if isinstance(value, str):
        raise TypeError(
            fix_message(
                f"{maker} takes a list of name patterns (got: {value!r})",
                "Wrap the pattern in square brackets",
                example,
            )
        )
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(
            fix_message(
                f"{maker} takes a list of name patterns (got: {value!r})",
                "Pass the patterns as a list, in square brackets",
                example,
            )
        ) from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(
                fix_message(
                    f"{maker} takes name patterns as strings (got: {item!r})",
                    "Write each pattern as a string; * and ? are wildcards",
                    example,
                )
            )
    return items


def matches_any(patterns: tuple[str, ...], name: str) -> bool:
    """Whether ``name`` matches one of the shell-style ``patterns`` (``*`` and ``?``, case-sensitive)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
