"""Sync and async drivers for the Agent's step sequences (00 §4: one path for both twins).

Each Agent operation is written once as a generator that yields its blocking actions. An action is a tuple
`(sync_fn, async_fn, args)`: the sync driver calls `sync_fn(*args)`, the async driver awaits
`async_fn(*args)`. The result is sent back into the generator; an exception is thrown into it at the yield.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

__all__ = ["Steps", "drive", "adrive", "save_action", "save_after_error"]

Steps = Generator[tuple[Any, Any, tuple[Any, ...]], Any, Any]


def drive(steps: Steps) -> Any:
    """Run a step sequence, performing each action with its sync function; return the sequence's value."""
    send = steps.send
    throw = steps.throw
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                action = send(value)
            else:
                thrown, error = error, None
                action = throw(thrown)
                del thrown
        except StopIteration as stop:
            return stop.value
        try:
            value = action[0](*action[2])
        except BaseException as failure:  # noqa: BLE001 - thrown into the sequence unchanged
            error = failure
            value = None


async def adrive(steps: Steps) -> Any:
    """Run a step sequence, awaiting each action's async function; return the sequence's value."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                action = steps.send(value)
            else:
                thrown, error = error, None
                action = steps.throw(thrown)
                del thrown
        except StopIteration as stop:
            return stop.value
        try:
            value = await action[1](*action[2])
        except BaseException as failure:  # noqa: BLE001 - thrown into the sequence unchanged
            error = failure
            value = None


def save_action(store: Any, state: Any) -> tuple[Any, Any, tuple[Any, ...]]:
    """The action that saves `state` in `store` (`save` / `await asave`)."""
    return (store.save, store.asave, (state,))


def save_after_error(store: Any, state: Any, error: BaseException) -> Steps:
    """The save point after an exception (03 §2.9): a failing save becomes a note on `error`.

    A save interrupted by a `BaseException` that is not an `Exception` propagates instead.
    """
    if store is None:
        return
    try:
        yield (store.save, store.asave, (state,))
    except Exception as failure:
        if type(failure) is type(error) and str(failure) == str(error):
            return
        note = f"saving the state also failed: {type(failure).__name__}: {failure}"
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)
