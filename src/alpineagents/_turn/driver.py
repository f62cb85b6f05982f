"""The step driver: one definition that performs a step sequence for a sync method and for its async twin.

Each Agent operation is written once as a generator that yields its blocking actions (a model call, a tool batch,
a save, an MCP connect). An action is a tuple `(sync_fn, async_fn, args)`: the sync driver calls
`sync_fn(*args)`, the async driver awaits `async_fn(*args)`. The result is sent back into the generator; an
exception is thrown into it at the yield. So both twins make the same checks, records, notifications and saves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.store import Store

__all__ = ["Action", "Steps", "drive", "adrive", "save", "save_after_error"]

Action = tuple[Callable[..., Any], Callable[..., Awaitable[Any]], tuple[Any, ...]]
"""A blocking action: `(sync_fn, async_fn, args)`."""

Steps = Generator[Action, Any, Any]
"""A step sequence: yields actions, receives their results, returns the operation's value."""


async def _perform(steps: Steps, awaiting: bool) -> Any:
    """Run `steps` to its end, performing each action with its async function when `awaiting`, else its sync one.

    With `awaiting` false nothing here awaits, so the coroutine finishes at its first `send` (see `drive`).
    Nothing but the awaitable is kept across a wait: with thousands of runs in flight, every object a waiting run
    holds is examined again by each full pass of the garbage collector.
    """
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                action = steps.send(value)
            else:
                thrown, error = error, None
                action = steps.throw(thrown)
                del thrown  # no reference cycle through the traceback
        except StopIteration as stop:
            return stop.value
        try:
            if awaiting:
                waiting = action[1](*action[2])
                del action  # its tuples are not kept alive for the wait
                value = await waiting
            else:
                value = action[0](*action[2])
        except BaseException as failure:  # noqa: BLE001 - thrown into the sequence unchanged
            error = failure
            value = None


def drive(steps: Steps) -> Any:
    """Run a step sequence, performing each action with its sync function; return the sequence's value."""
    runner: Coroutine[Any, Any, Any] = _perform(steps, False)
    try:
        runner.send(None)
    except StopIteration as done:
        return done.value
    runner.close()  # pragma: no cover - a sync action never awaits
    raise RuntimeError("a sync step awaited")  # pragma: no cover


def adrive(steps: Steps) -> Coroutine[Any, Any, Any]:
    """Run a step sequence, awaiting each action's async function; the awaitable gives the sequence's value.

    A plain function returning the one coroutine (an `async def` here would add a second one per call).
    """
    return _perform(steps, True)


def save(store: Store, state: State) -> Action:
    """The save point's action: save what `store` lacks of `state` (`save`, or `await asave`)."""
    return (store.save, store.asave, (state,))


def save_after_error(store: Store | None, state: State, error: BaseException) -> Steps:
    """The save point after an exception: a failing save becomes a note on `error`, once, unless it has the
    same type and message. A save interrupted by a `BaseException` that is not an `Exception` propagates."""
    if store is None:
        return
    try:
        yield save(store, state)
    except Exception as failure:
        if type(failure) is type(error) and str(failure) == str(error):
            return
        note = f"saving the state also failed: {type(failure).__name__}: {failure}"
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)
