"""The run of an Agent on a State (03 §3, §10): pre-checks, the run start, the step sequence, the resume check."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import warnings
from typing import Any

from alpineagents._async import ASYNC_RUN
from alpineagents._context import RUNS, RunContext, run_context
from alpineagents._drive import Steps, save_after_error
from alpineagents._scope import CALL_SCOPE
from alpineagents.errors import ResumeWarning, fix_message
from alpineagents.loop import adefault_loop, default_loop, is_async_callable
from alpineagents.permissions import check_run_start
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import AgentInfo, Message

__all__ = ["prepare_run", "start_run", "run_steps", "resume_warning"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _loop_name(loop: Any) -> str:
    name = getattr(loop, "__name__", None)
    return name if isinstance(name, str) else repr(loop)


def choose_loop(agent: Any, method: str) -> Any:
    """The loop `run` or `arun` calls (03 §8.1), or the `TypeError` of 03 §3.1 step 2."""
    loop = agent._loop
    if method == "run":
        if is_async_callable(loop):
            raise TypeError(
                fix_message(
                    f"This Agent's loop {_loop_name(loop)!r} is async, so it cannot run with run()",
                    "Start the run with arun() from async code (answer = await agent.arun(...)), or give the "
                    "Agent a regular def loop",
                    "answer = await agent.arun(state)",
                )
            )
        return loop
    if loop is default_loop:
        return adefault_loop
    if not is_async_callable(loop):
        raise TypeError(
            fix_message(
                f"arun() needs an async loop, but this Agent's loop {_loop_name(loop)!r} is a regular def",
                "Write the loop with async def (await agent.athink(state), ...), or use adefault_loop; "
                "a regular def loop runs with run()",
                "@loop(until=waiting_for_user, limit=50)\nasync def my_loop(agent, state):\n"
                "    await agent.athink(state)\n    if state.pending_calls:\n        await agent.ause_tools(state)",
            )
        )
    return loop


def _check_store(store: Any) -> None:
    if store is not None and type(store).write is Store.write:
        name = type(store).__name__
        raise TypeError(
            fix_message(
                f"{name} works only asynchronously (it implements awrite, not write)",
                "run the agent with await agent.arun(...), and use the a* methods of the store",
                "state = await store.aload(state_id)\nawait agent.arun(state)",
            )
        )


def prepare_run(agent: Any, prompt_or_state: Any, method: str) -> tuple[State, RunContext, Any]:
    """03 §3.1 steps 2-8: choose the loop, build the run context, make the pre-checks and start the run.

    Returns the State (marked "being run", `run_start` recorded), its run context and the loop to call.
    """
    loop = choose_loop(agent, method)
    context = run_context(agent)
    if method == "run":
        _check_store(context.store)
    check_run_start(context.permissions, method="run" if method == "run" else "arun")
    state = start_run(agent, prompt_or_state, method, context)
    return state, context, loop


def to_state(prompt_or_state: Any, method: str) -> State:
    """03 §3.1 step 5: a prompt becomes a new State; a State is used as is."""
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


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


def resume_warning(saved: AgentInfo, current: AgentInfo) -> ResumeWarning | None:
    """The `ResumeWarning` for a State last run by `saved` and now run by `current`, or None (03 §10.2)."""
    changes: dict[str, tuple[Any, Any]] = {}
    parts: list[str] = []
    for key in ("name", "model", "system_sha256", "tools", "mcp_servers"):
        old = getattr(saved, key)
        new = getattr(current, key)
        if key in ("tools", "mcp_servers"):
            if set(old) == set(new):
                continue
            changes[key] = (tuple(old), tuple(new))
            removed = [name for name in old if name not in new]
            added = [name for name in new if name not in old]
            pieces = []
            if removed:
                pieces.append("removed " + ", ".join(removed))
            if added:
                pieces.append("added " + ", ".join(added))
            parts.append(f"{key}: " + ", ".join(pieces))
        elif old != new:
            changes[key] = (old, new)
            if key == "system_sha256":
                parts.append("system prompt changed")
            else:
                parts.append(f"{key}: {_shown(old)} -> {_shown(new)}")
    if not changes:
        return None
    message = (
        f"This State was saved by a different Agent ({'; '.join(parts)}). The run continues, but may behave "
        "differently than before it was saved"
    )
    return ResumeWarning(message, changes)


def start_run(agent: Any, prompt_or_state: Any, method: str, context: RunContext | None = None) -> State:
    """03 §15 `_start_run`: 03 §3.1 steps 5-8, then the `run_start` entry and the "being run" mark."""
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
        state._start_run(agent, info, context=context)
    else:
        parent_state, call = parent
        state._start_run(agent, info, (parent_state.id, call.id), parent_state._depth, context=context)
        parent_state._add_child(call.id, state, call=call)
    return state


def _call_loop(loop: Any, agent: Any, state: State) -> Any:
    return loop(agent, state)


async def _await_loop(loop: Any, agent: Any, state: State) -> Any:
    token = ASYNC_RUN.set(asyncio.get_running_loop())
    try:
        result = loop(agent, state)
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        ASYNC_RUN.reset(token)


def run_steps(agent: Any, state: State, context: RunContext, loop: Any) -> Steps:
    """03 §3.2: the save after `run_start`, `on_run_start`, the loop, the closing save; the exception path;
    always `on_run_end` and the release of the "being run" mark."""
    reporter = context.reporter
    store = context.store
    runs_token = RUNS.set((*RUNS.get(), context))
    scope_token = CALL_SCOPE.set(None)
    try:
        if store is not None:
            yield (store.save, store.asave, (state,))
        error: BaseException | None = None
        using_mcp = False
        abandoned = False
        try:
            if reporter is not None:
                reporter.on_run_start(state)
            if agent._mcp_servers:
                yield (agent._mcp_open, agent._amcp_open, ())
                using_mcp = True
            result = yield (_call_loop, _await_loop, (loop, agent, state))
            if store is not None:
                yield (store.save, store.asave, (state,))
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
            interrupt: BaseException | None = None
            if using_mcp:
                try:
                    if abandoned:  # a generator being closed cannot yield
                        agent._mcp_close()
                    else:  # `arun` awaits the release: the event loop does not wait for a server to shut down
                        yield (agent._mcp_close, agent._amcp_close, ())
                except BaseException as stop:  # noqa: BLE001 - Ctrl+C or cancellation meanwhile: after on_run_end
                    interrupt = stop
            if reporter is not None:
                reporter.on_run_end(state, error)
            error = None
            if interrupt is not None:
                raise interrupt
        return result
    finally:
        state._end_run()
        CALL_SCOPE.reset(scope_token)
        RUNS.reset(runs_token)
