"""The run of an Agent on a State: the checks before it starts, the run start, the run's step sequence, and the
warning when a loaded State is resumed by a different Agent."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

from alpineagents._async import ASYNC_RUN
from alpineagents._history.approvals import has_waits
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents._turn.budget import open_budget, resume_budget_wait
from alpineagents._turn.context import RUNS, RunContext, run_context
from alpineagents._turn.driver import Steps, save, save_after_error
from alpineagents._turn.permission_rules import check_run_start
from alpineagents._turn.reconcile import reconcile_steps
from alpineagents._turn.steps import use_tools_steps
from alpineagents._values.budget import WAITING_STOPS
from alpineagents.errors import ResumeWarning, fix_message
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import AgentInfo, Message

if TYPE_CHECKING:
    from collections.abc import Callable

    from alpineagents._turn.seams import AgentSeam, Feed

__all__ = ["prepare_run", "start_run", "run_steps", "resume_warning"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _check_store(store: Store | None) -> None:
    """A sync run cannot use a store that writes only asynchronously."""
    if store is not None and type(store).write is Store.write:
        name = type(store).__name__
        raise TypeError(
            fix_message(
                f"{name} works only asynchronously (it implements awrite, not write)",
                "run the agent with await agent.arun(...), and use the a* methods of the store",
                "state = await store.aload(state_id)\nawait agent.arun(state)",
            )
        )


def prepare_run(
    agent: AgentSeam, prompt_or_state: str | State, method: str, feed: Feed | None = None
) -> tuple[State, RunContext]:
    """The checks before a run, then its start: build the run context, refuse an async-only store for `run`, make
    the permission checks, then `start_run`. Returns the State (marked "being run", `run_start` recorded) and its
    run context. Nothing is recorded when a check fails. `feed` is the stream that follows the run, if any (a
    subagent run inherits the one of the run above)."""
    context = run_context(agent)
    if feed is not None:
        context.feed = feed
    if method == "run":
        _check_store(context.store)
    check_run_start(context.permissions, method="run" if method == "run" else "arun")
    state = start_run(agent, prompt_or_state, method, context)
    open_budget(agent, state, context)
    return state, context


def to_state(prompt_or_state: str | State, method: str) -> State:
    """A prompt becomes a new State holding it as the user's message; a State is used as is."""
    if isinstance(prompt_or_state, State):
        return prompt_or_state
    if isinstance(prompt_or_state, str):
        if not prompt_or_state.strip():
            raise ValueError(
                fix_message(
                    f"{method}() got an empty prompt (got: {prompt_or_state!r}). Providers reject empty messages",
                    "pass the task as a non-empty string (if the human's input was empty, ask again)",
                    f'agent.{method}("Find the bug in calc.py")',
                )
            )
        return State(messages=[Message.user(prompt_or_state)])
    raise TypeError(
        fix_message(
            f"{method}() takes a prompt string or a State (got: {prompt_or_state!r})",
            "pass the task as a string, or a State to continue",
            f'agent.{method}("Find the bug in calc.py")\nagent.{method}(State(messages=[Message.user("...")]))',
        )
    )


def _stacklevel() -> int:
    """The `stacklevel` that attributes a warning to the first frame outside this package (the caller's line)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _shown(value: object) -> str:
    return "(none)" if value is None else str(value)


def _names_change(key: str, old: tuple[str, ...], new: tuple[str, ...]) -> str:
    """`tools: removed a, b, added c`: saved names missing now (saved order), then new names (current order)."""
    removed = [name for name in old if name not in new]
    added = [name for name in new if name not in old]
    pieces = []
    if removed:
        pieces.append("removed " + ", ".join(removed))
    if added:
        pieces.append("added " + ", ".join(added))
    return f"{key}: " + ", ".join(pieces)


def resume_warning(saved: AgentInfo, current: AgentInfo) -> ResumeWarning | None:
    """The `ResumeWarning` for a State last run by `saved` and now run by `current`, or None when they agree.

    Compares name, model, system prompt hash, tools and MCP servers (the last two as sets), in that order.
    """
    changes: dict[str, tuple[Any, Any]] = {}
    parts: list[str] = []
    for key in ("name", "model", "system_sha256", "tools", "mcp_servers"):
        old = getattr(saved, key)
        new = getattr(current, key)
        if key in ("tools", "mcp_servers"):
            if set(old) != set(new):
                changes[key] = (tuple(old), tuple(new))
                parts.append(_names_change(key, old, new))
        elif old != new:
            changes[key] = (old, new)
            shown = f"{key}: {_shown(old)} -> {_shown(new)}"
            parts.append("system prompt changed" if key == "system_sha256" else shown)
    if not changes:
        return None
    message = (
        f"This State was saved by a different Agent ({'; '.join(parts)}). The run continues, but may behave "
        "differently than before it was saved"
    )
    return ResumeWarning(message, changes)


def start_run(agent: AgentSeam, prompt_or_state: str | State, method: str, context: RunContext | None = None) -> State:
    """Turn the argument into a State, refuse a finished one, compare Agents on the first run after a load, then
    record `run_start` and take the "being run" mark (one atomic step, which refuses a State already being
    run). A subagent run records its parent's ids and registers with its parent. The caller releases the mark
    with `state._end_run()`."""
    state = to_state(prompt_or_state, method)
    if state.finished:
        raise ValueError(
            fix_message(
                f"Cannot {method}() a State that was finish()ed",
                "start a new State from this one's messages (a fork() of a finished State is finished too), or "
                "go back with state.restore(snapshot) to a snapshot taken before finish()",
                f"agent.{method}(State(messages=state.messages))",
            )
        )
    info = agent._agent_info_now()
    saved = getattr(state, "_resume_info", None)
    if saved is not None:
        warning = resume_warning(saved, info)
        if warning is not None:
            warnings.warn(warning, stacklevel=_stacklevel())
        state._resume_info = None
    if context is None:
        context = run_context(agent)
    parent = context.parent
    if parent is None:
        state._start_run(agent, info, context=context)  # type: ignore[arg-type]  # the State names the Agent class
    else:
        parent_state, call = parent
        ids = (parent_state.id, call.id)
        state._start_run(agent, info, ids, parent_state._depth, context=context)  # type: ignore[arg-type]
        parent_state._add_child(call.id, state, call=call)
    return state


def _call_loop(loop: Callable[..., Any], agent: AgentSeam, state: State) -> Any:
    return loop(agent, state)


def _no_mark() -> None:
    return None


async def _mark_async_run() -> contextvars.Token[asyncio.AbstractEventLoop | None]:
    return ASYNC_RUN.set(asyncio.get_running_loop())  # the awaiting task's context keeps it


_MARK = (_no_mark, _mark_async_run, ())
"""The action that sets the async-run mark under `arun` (sync Agent methods are then refused on this thread) and
gives its token; nothing under `run`."""


async def _await_loop(loop: Callable[..., Any], agent: AgentSeam, state: State) -> Any:
    token = ASYNC_RUN.set(asyncio.get_running_loop())  # sync Agent methods are refused on this thread meanwhile
    try:
        result = loop(agent, state)
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        ASYNC_RUN.reset(token)


def _release_mcp(agent: AgentSeam, abandoned: bool) -> Steps:
    """Give back the run's use of the MCP servers; a Ctrl+C or cancellation meanwhile is returned, to be raised
    after `on_run_end`."""
    try:
        if abandoned:  # a generator being closed cannot yield
            agent._mcp_use("release")
        else:  # `arun` awaits the release: the event loop does not wait for a server to shut down
            yield (agent._mcp_use, agent._amcp_use, ("release",))
    except BaseException as stop:  # noqa: BLE001 - raised after on_run_end
        return stop
    return None


def run_steps(
    agent: AgentSeam, state: State, context: RunContext, loop: Callable[..., Any], turns: Steps | None = None
) -> Steps:
    """The run after its start: save; `on_run_start`; connect the MCP servers; call the loop; save; return the
    loop's result.

    `turns`, when given, is the step sequence a call of `loop` would drive (a `Loop`'s turns): the run yields
    from it instead of calling the loop, with the async-run mark set under `arun` as the loop's call would set
    it. The same actions happen in the same order; what it buys is fewer objects per run in flight (no driver,
    coroutine and context token of the loop's own while the run waits on its model: at 10,000 runs at once, the
    garbage collector examines each of them again at every full pass).

    On any exception: record it (once), close the pending calls, clear a stop, save (a failing save is a note),
    re-raise it unchanged. Always, last: release the MCP servers, `on_run_end(state, error)`, release the
    "being run" mark. Tools of the run set the call scope again; the loop itself runs outside any call scope.
    """
    reporter = context.reporter
    store = context.store
    runs_token = RUNS.set((*RUNS.get(), context))
    # Outside any tool call (the usual case) the call scope is None already: no token to keep for the run.
    scope_token = None if CALL_SCOPE.get() is None else CALL_SCOPE.set(None)
    try:
        if store is not None:
            yield save(store, state)
        error: BaseException | None = None
        using_mcp = False
        abandoned = False
        try:
            if reporter is not None:
                reporter.on_run_start(state)
            if agent._mcp_servers:
                yield (agent._mcp_use, agent._amcp_use, ("acquire",))
                using_mcp = True
            yield from reconcile_steps(agent, state)  # calls whose effect is unknown, when their tools can tell
            held = resume_budget_wait(state)  # a step waited for a bigger budget: it is checked again now
            if state.pending_calls and (held or has_waits(state._acc)):  # calls held for a person
                yield from use_tools_steps(agent, state, "run")
            if type(state.stopped) in WAITING_STOPS:  # some still wait: the loop has nothing to do
                result = None
            elif turns is None:
                result = yield (_call_loop, _await_loop, (loop, agent, state))
            else:
                mark = yield _MARK
                try:
                    result = yield from turns
                finally:
                    if mark is not None:
                        ASYNC_RUN.reset(mark)
            if store is not None:
                yield save(store, state)
        except GeneratorExit:  # the driver was abandoned: nothing to record
            abandoned = True
            raise
        except BaseException as failure:
            error = failure
            state._record_error(failure)
            state._close_pending(failure)
            state._clear_stop()
            yield from save_after_error(store, state, failure)
            raise
        finally:
            interrupt = (yield from _release_mcp(agent, abandoned)) if using_mcp else None
            if reporter is not None:
                reporter.on_run_end(state, error)
            if context.feed is not None:
                context.feed.ended(state, error)
            error = None
            if interrupt is not None:
                raise interrupt
        return result
    finally:
        state._end_run()
        if scope_token is not None:
            CALL_SCOPE.reset(scope_token)
        RUNS.reset(runs_token)
