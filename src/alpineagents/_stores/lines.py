"""The JSON lines every store keeps: one compact JSON text per entry (and for the info), and many of them read back
in one parse.

A line is compact JSON (`separators=(",", ":")`), non-ASCII characters written as themselves, NaN and infinities
refused; a line UTF-8 cannot hold (a lone surrogate) is written with ASCII escapes instead, which read back as the
same string. The same bytes are a line of a `FileStore` log and a row of a database store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["json_line", "log_bytes", "log_text", "parse_all", "parse_each"]

_DICT = {dict}

# One encoder of each kind, made once: `json.dumps` with options builds a new one at every call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def json_line(value: object) -> bytes:
    """`value` as one compact JSON text, UTF-8.

    Raises:
        ValueError: A value is NaN or infinite.
        TypeError: A value is not JSON.
    """
    try:
        return _COMPACT.encode(value).encode()
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes read back as the same string
        return _ASCII.encode(value).encode()


def log_text(lines: Sequence[bytes]) -> bytes:
    """The log bytes of these `json_line`s: each one `"\\n"`-terminated."""
    return b"".join(line + b"\n" for line in lines)


def log_bytes(entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The log bytes of these entry dicts: one `json_line` each, `"\\n"`-terminated."""
    return log_text([json_line(entry) for entry in entries])


def parse_all(array: str | bytes, count: int) -> list[Any] | None:
    """The entries of `array`, the text of a JSON array made by joining `count` stored lines (one parse for all of
    them), or `None` when it does not hold exactly `count` JSON objects: then `parse_each` finds the bad line."""
    try:
        values = json.loads(array)
    except ValueError:  # UnicodeDecodeError included
        return None
    if type(values) is not list or len(values) != count or not set(map(type, values)) <= _DICT:  # pyright: ignore
        return None
    return values  # pyright: ignore[reportUnknownVariableType]


def parse_each(lines: Iterable[tuple[int, str | bytes]], damaged: Callable[[int, ValueError], ValueError]) -> list[Any]:
    """The JSON value of each `(number, line)`, in order; `damaged(number, error)` is raised (chained) for the first
    line that is not valid JSON or not UTF-8."""
    values: list[Any] = []
    for number, line in lines:
        try:
            values.append(json.loads(line))
        except ValueError as error:  # UnicodeDecodeError included
            raise damaged(number, error) from error
    return values
