"""What a run records beyond the saved format's own lines: each request's input and each error's stack.

The saved format (version 5) fixes the keys every entry writes, so a plain run writes exactly those lines. Setting
the environment variable `ALPINEAGENTS_RECORD` adds, as keys that every reader of format 5 ignores:

- `inputs`: each model request's system prompt and tool specs (`RequestInput`, each text once per State);
- `stacks`: each recorded error's traceback (`ErrorEntry.traceback`);
- `all`: both.

Words are separated by commas (`ALPINEAGENTS_RECORD=inputs,stacks`). The viewer shows what was recorded. The variable
is read at each request and each error, so a long-running process can turn it on or off.
"""

from __future__ import annotations

import os
import warnings
from typing import Literal

__all__ = ["DETAILS", "RECORD_VARIABLE", "recorded"]

RECORD_VARIABLE = "ALPINEAGENTS_RECORD"
"""The environment variable that names what a run records beyond the format's own lines."""

DETAILS = ("inputs", "stacks")
"""The details `ALPINEAGENTS_RECORD` may name (or `all` for every one)."""

_parsed: dict[str, frozenset[str]] = {"": frozenset()}
"""By the variable's text: the details it names (parsed once per distinct text; a turn pays one dict lookup)."""


def recorded(detail: Literal["inputs", "stacks"]) -> bool:
    """Whether `ALPINEAGENTS_RECORD` asks for `detail`."""
    text = os.environ.get(RECORD_VARIABLE, "")
    found = _parsed.get(text)
    if found is None:
        found = _parsed[text] = _parse(text)
    return detail in found


def _parse(text: str) -> frozenset[str]:
    words = {word.strip().lower() for word in text.split(",")} - {""}
    if "all" in words:
        words = (words - {"all"}) | set(DETAILS)
    unknown = sorted(words - set(DETAILS))
    if unknown:
        warnings.warn(
            f"{RECORD_VARIABLE} names {', '.join(map(repr, unknown))}, which is not something a run can record, so "
            f"it is ignored\nFix: use a comma-separated list of {', '.join(DETAILS)} (or all), e.g. "
            f"{RECORD_VARIABLE}=inputs,stacks",
            UserWarning,
            stacklevel=3,
        )
    return frozenset(words & set(DETAILS))
