"""Small helpers shared by the adapters' wire mapping."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["plain", "close_with_loop"]


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


def close_with_loop(client: Any) -> Any:
    """Arrange for `client.close()` to run when the running event loop shuts down its async generators (as
    `asyncio.run` does before it closes the loop), so a per-loop SDK client leaves no open connections behind.

    Returns the holder (a suspended async generator) that must stay referenced as long as the client, or `None`
    when the client has no `close`. Call it on the loop's thread while the loop runs.
    """
    close = getattr(client, "close", None)
    if not callable(close):
        return None

    async def holder() -> AsyncIterator[None]:
        try:
            yield
        finally:
            result = close()
            if inspect.isawaitable(result):
                await result

    generator = holder()
    step: Any = generator.__anext__()  # registers the generator with the running loop
    try:
        step.send(None)  # run it up to its `yield` (nothing is awaited before it)
    except StopIteration:
        pass
    return generator
