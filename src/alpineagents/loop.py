"""Loops: `@loop`, `Loop`, `waiting_for_user`, `default_loop` and `adefault_loop`.

A loop is any callable `(agent, state)`. `@loop(until=..., limit=...)` wraps a one-turn body into a `Loop`
that checks its stop rules before every turn and records why it stopped.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents._async import ASYNC_RUN
from alpineagents._turn.driver import Steps, adrive, drive
from alpineagents._values.budget import WAITING_STOPS
from alpineagents._values.numbers import is_whole
from alpineagents.blocks import acompact_if_full, compact_if_full
from alpineagents.errors import fix_message
from alpineagents.types import (
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
)

if TYPE_CHECKING:
    from alpineagents.agent import Agent  # the facade that imports this module: only its type is named here
    from alpineagents.state import State
    from alpineagents.types import Stopped

__all__ = ["loop", "Loop", "default_loop", "adefault_loop", "waiting_for_user"]

_KEEP = object()


class LoopState(Protocol):
    """What a Loop reads and records on the State it loops over (any object offering these can be looped over)."""

    @property
    def stopped(self) -> Stopped | None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def answer(self) -> Any: ...

    def _record_stop(self, stopped: Stopped | None) -> None: ...


_NEEDS_BOTH = "@loop needs both until and limit"


def is_async_callable(obj: object) -> bool:
    """True for an `async def` function (or a partial of one), an object with a true `is_async`, or an object
    whose class's `__call__` is `async def`: such a loop runs only with `arun`."""
    target = obj
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    if getattr(obj, "is_async", False):
        return True
    call = getattr(type(obj), "__call__", None)  # noqa: B004 - the class's __call__, not callable(obj)
    return call is not None and inspect.iscoroutinefunction(call)


def condition_name(condition: object) -> str:
    """The name of an `until` condition: its `__name__`, or its class name when it has none."""
    name = getattr(condition, "__name__", None)
    if isinstance(name, str):
        return name
    return type(condition).__name__


def _shown_name(obj: object) -> str:
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) else repr(obj)


def _needs_both() -> TypeError:
    return TypeError(
        fix_message(
            _NEEDS_BOTH,
            "set both: until= (when the work is done) and limit= (the most turns one call may run)",
            "@loop(until=waiting_for_user, limit=50)\ndef my_loop(agent, state):\n    agent.think(state)",
        )
    )


def _check_until(until: object) -> tuple[Any, ...]:
    items = tuple(until) if isinstance(until, (list, tuple)) else (until,)
    for item in items:
        if isinstance(item, bool):
            raise TypeError(
                fix_message(
                    "until got the result of a call (a bool)",
                    "pass the function itself, without parentheses",
                    "@loop(until=waiting_for_user, limit=50)  # not waiting_for_user(state)",
                )
            )
        if not callable(item):
            raise TypeError(
                fix_message(
                    f"until item {item!r} is not callable",
                    "pass functions that take the State and return True when the loop should stop",
                    "def tests_pass(state):\n    return state.extra_data.get('tests') == 'ok'\n\n"
                    "@loop(until=[waiting_for_user, tests_pass], limit=50)",
                )
            )
        if getattr(item, "__name__", None) == "<lambda>":
            warnings.warn(
                "an unnamed function (lambda) in until leaves no useful name in state.stopped "
                '(StoppedByUntil("<lambda>")). Use a named function.',
                UserWarning,
                stacklevel=3,
            )
    return items


def _check_limit(limit: object) -> int:
    if not is_whole(limit):
        raise TypeError(
            fix_message(
                f"limit must be an integer of 1 or more (got: {limit!r})",
                "pass the most turns one call of the loop may run, as an int",
                "@loop(until=waiting_for_user, limit=50)",
            )
        )
    if limit < 1:
        raise ValueError(
            fix_message(
                f"limit must be 1 or more (got: {limit})",
                "pass the most turns one call of the loop may run",
                "@loop(until=waiting_for_user, limit=50)",
            )
        )
    return limit


class Loop:
    """A one-turn body with stop rules: `until` conditions (checked first) and a `limit` of turns per call.

    Calling it runs turns until a stop and returns `state.answer`. Before every turn, in order: a finish or
    permission stop, a finished State, each `until` condition, the `limit`. An async body makes an async Loop
    (`is_async`), whose call returns a coroutine.
    """

    body: Callable[..., Any]
    until: tuple[Any, ...]
    limit: int
    is_async: bool

    def __init__(self, body: Callable[..., Any], *, until: object, limit: object) -> None:
        if until is None or limit is None:
            raise _needs_both()
        until_items = _check_until(until)
        checked_limit = _check_limit(limit)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                value = getattr(body, attr)
            except AttributeError:
                continue
            object.__setattr__(self, attr, value)
        self.__wrapped__ = body
        self.body = body
        self.until = until_items
        self.limit = checked_limit
        self.is_async = is_async_callable(body)

    def copy(self, *, until: object = _KEEP, limit: object = _KEEP) -> Loop:
        """A new Loop with the same body and the given `until`/`limit` (omitted ones kept)."""
        return Loop(
            self.body,
            until=self.until if until is _KEEP else until,
            limit=self.limit if limit is _KEEP else limit,
        )

    def __repr__(self) -> str:
        names = [_shown_name(item) for item in self.until]
        return f"Loop({_shown_name(self.body)}, until={names!r}, limit={self.limit})"

    def _reason(self, state: LoopState, turns: int) -> Stopped | None:
        stopped = state.stopped
        if stopped is not None and isinstance(stopped, (StoppedByFinish, StoppedByPermission, *WAITING_STOPS)):
            return stopped
        if state.finished:
            return StoppedByFinish()
        for condition in self.until:
            if condition(state):
                return StoppedByUntil(condition_name(condition))
        if turns >= self.limit:
            return StoppedByLimit(self.limit)
        return None

    @staticmethod
    def _stop(state: LoopState, reason: Stopped) -> Any:
        if state.stopped != reason:
            state._record_stop(reason)
        return state.answer

    def _bad_result(self, result: object) -> TypeError:
        """The `TypeError` for a body that returned something other than None (an awaitable only matters in a
        sync loop: the body was meant to be async)."""
        name = _shown_name(self.body)
        if not self.is_async and inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()  # no "never awaited" warning
            return TypeError(
                fix_message(
                    f"loop body {name!r} returned an awaitable, but this loop is not async",
                    "write the body with async def (and await agent.athink(state)), or call the sync methods",
                    "@loop(until=waiting_for_user, limit=50)\nasync def my_loop(agent, state):\n"
                    "    await agent.athink(state)",
                )
            )
        return TypeError(
            fix_message(
                f"loop body {name!r} returned a value ({result!r})",
                "the return value is ignored. To set the answer, use state.finish(answer)",
                "state.finish(answer)\nreturn",
            )
        )

    def _turns(self, agent: object, state: LoopState) -> Steps:
        """The turns of one call, as a step sequence whose one action is the body (called, or awaited when the
        loop is async): before each turn the stop rules, after it the check of what the body returned."""
        body = self.body
        nested = isinstance(body, Loop)  # an inner loop returns its answer, which is not a mistake
        turns = 0
        while True:
            reason = self._reason(state, turns)
            if reason is not None:
                return self._stop(state, reason)
            if state.stopped is not None:  # an inner loop's until/limit stop: the body sees no stop
                state._record_stop(None)
            result = yield (body, body, (agent, state))
            turns += 1
            if result is not None and not nested:
                raise self._bad_result(result)

    def __call__(self, agent: object, state: LoopState) -> Any:
        if self.is_async:
            return self._acall(agent, state)
        return drive(self._turns(agent, state))

    async def _acall(self, agent: object, state: LoopState) -> Any:
        token = ASYNC_RUN.set(asyncio.get_running_loop())  # sync Agent methods are refused meanwhile
        try:
            return await adrive(self._turns(agent, state))
        finally:
            ASYNC_RUN.reset(token)


def turn_steps(loop: object, agent: object, state: LoopState) -> Steps | None:
    """The turns one call `loop(agent, state)` would run, as a step sequence, when `loop` is a `Loop` (of this
    class itself: a subclass may change what a call does); None for any other loop.

    A run yields from them instead of calling the loop (see `run_steps`): the same turns with no driver of the
    loop's own in between.
    """
    if type(loop) is Loop:
        return loop._turns(agent, state)
    return None


def loop(fn: object = None, /, *, until: object = None, limit: object = None) -> Callable[[Callable[..., Any]], Loop]:
    """Decorator factory: `@loop(until=..., limit=...)` wraps a one-turn body into a `Loop`.

    Both `until` and `limit` are required; every check happens when the decorator is applied.
    """
    if fn is not None:
        raise _needs_both()

    def decorate(body: Callable[..., Any]) -> Loop:
        return Loop(body, until=until, limit=limit)

    return decorate


def waiting_for_user(state: State) -> bool:
    """True when the model has handed the turn back: no pending calls, and the last message is an assistant
    message without tool calls."""
    snapshot = state.snapshot()  # one consistent value (pending calls and messages of the same moment)
    if snapshot.pending_calls:
        return False
    messages = snapshot.messages  # the State's next reads of `messages` (the Request) reuse this tuple
    if not messages:
        return False
    last = messages[-1]
    return last.role == "assistant" and not last.tool_calls


@loop(until=waiting_for_user, limit=50)
def default_loop(agent: Agent, state: State) -> None:
    """The default loop: compact when the context is full, think, then run the calls the model asked for."""
    compact_if_full(agent, state)
    agent.think(state)
    if state.pending_calls:
        agent.use_tools(state)


@loop(until=waiting_for_user, limit=50)
async def adefault_loop(agent: Agent, state: State) -> None:
    """The async default loop: `default_loop` with `acompact_if_full`, `athink` and `ause_tools`."""
    await acompact_if_full(agent, state)
    await agent.athink(state)
    if state.pending_calls:
        await agent.ause_tools(state)
