"""Small helpers shared by the adapters' wire mapping."""

from __future__ import annotations

from typing import Any

__all__ = ["plain"]


def plain(value: Any) -> Any:
    """A plain, editable deep copy of a (frozen) JSON value: dicts become `dict`, lists and tuples `list`.

    Like `alpineagents._frozen.thaw` for the values the types hold (frozen dicts and lists are `dict`/`list`
    subclasses), but faster: it checks concrete types, not the `Mapping` ABC.
    """
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
