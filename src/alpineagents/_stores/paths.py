"""What a store built on the file system takes as its place (a path, given as a `str` or an `os.PathLike`), and
what makes two such stores the same storage."""

from __future__ import annotations

import os
from typing import ClassVar

from alpineagents.errors import fix_message

__all__ = ["check_path", "AtPath"]


def check_path(path: object, problem: str, fix: str, example: str) -> str:
    """`path` as a string, or the `TypeError` saying `problem` (with the type that was given), `fix` and `example`.

    Raises:
        TypeError: `path` is neither a `str` nor an `os.PathLike`.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(fix_message(f"{problem} (got: {type(path).__name__})", fix, example))
    return str(path)


class AtPath:
    """A store whose storage is the file or folder at a path: its repr shows the path as given, and two stores of
    one kind are the same storage, so equal (which ties a State to its store), when their paths resolve to one real
    path (`os.path.realpath`, resolved once, on first need). A store kept in memory (`_memory`) is only itself.

    The store class that lists `AtPath` among its bases is the kind: its subclasses compare and show as it."""

    _kind: ClassVar[type[AtPath]]
    _given: str
    """The path as given."""
    _resolved: str | None = None
    _memory: bool = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if AtPath in cls.__bases__:
            cls._kind = cls

    def __repr__(self) -> str:
        return f"{self._kind.__name__}({self._given!r})"

    def _real(self) -> str:
        """The real path of the storage (the given text for a store in memory)."""
        if self._resolved is None:
            self._resolved = self._given if self._memory else os.path.realpath(self._given)
        return self._resolved

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, self._kind):
            return NotImplemented
        if self._memory or other._memory:
            return self is other
        return self._real() == other._real()

    def __hash__(self) -> int:
        return id(self) if self._memory else hash(self._real())
