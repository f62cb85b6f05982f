"""State ids: what a valid id looks like, and the errors for one that is not."""

from __future__ import annotations

import re

from alpineagents.errors import fix_message

__all__ = ["check_id"]

_ID_EXAMPLE = 'State(id="bug-hunt-1")'
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_id(value: object, where: str) -> str:
    """Return ``value`` if it is a valid State id (``[A-Za-z0-9_-]{1,128}``).

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: it has other characters, or is empty or longer than 128 characters.
    """
    if not isinstance(value, str):
        raise _type_error(where, value)
    if _ID.fullmatch(value) is None:
        raise _value_error(where, value)
    return value


def _type_error(where: str, value: object) -> TypeError:
    problem = f"{where} needs the id as a string (got: {type(value).__name__})"
    return TypeError(fix_message(problem, "use letters, digits, _ and -", _ID_EXAMPLE))


def _value_error(where: str, value: str) -> ValueError:
    problem = f"{where} got the id {value!r}, which may only have letters, digits, _ and - (1 to 128 characters)"
    fix = "leave out dots, slashes and spaces (a FileStore uses the id as a file name)"
    return ValueError(fix_message(problem, fix, _ID_EXAMPLE))
