"""What a store built on the file system takes as its place: a path, given as a `str` or an `os.PathLike`."""

from __future__ import annotations

import os

from alpineagents.errors import fix_message

__all__ = ["check_path"]


def check_path(path: object, problem: str, fix: str, example: str) -> str:
    """`path` as a string, or the `TypeError` saying `problem` (with the type that was given), `fix` and `example`.

    Raises:
        TypeError: `path` is neither a `str` nor an `os.PathLike`.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(fix_message(f"{problem} (got: {type(path).__name__})", fix, example))
    return str(path)
