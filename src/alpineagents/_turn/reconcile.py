"""A run that starts on calls whose effect is unknown asks their tools' ``reconcile`` functions about them.

Runs first in every run (``run_steps``), so a State resumed in another process or taken over by a worker is
reconciled before its loop reads anything. Each call of the latest turn closed as unknown whose tool declares
``reconcile`` is given to it, with the call scope set (``current_call()`` works there too). Then
``_history.effects.record_reconciled`` records the answers and reopens the calls: a call that happened has the
result ``reconcile`` gave; one that did not happen runs now, once, through the usual tool runner (permissions,
threads, save points); one nobody can tell waits for a person like a call held for approval. A ``reconcile`` that
raises cannot tell: its error is part of the question a person reads.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from alpineagents._history.approvals import Hold
from alpineagents._history.effects import Unknown, record_reconciled, unknown_calls
from alpineagents._tools.reconcile import CannotTell, Happened, NotHappened, Verdict, read_verdict
from alpineagents._tools.scope import CALL_SCOPE, CallScope, call_of
from alpineagents._turn.driver import Steps
from alpineagents._turn.steps import use_tools_steps
from alpineagents.tool import format_result
from alpineagents.types import ToolCall, format_call

if TYPE_CHECKING:
    from collections.abc import Callable

    from alpineagents._turn.seams import AgentSeam
    from alpineagents.state import State

__all__ = ["RECONCILE_PERMISSION", "reconcile_steps"]

RECONCILE_PERMISSION = "reconcile"
"""What a call that waits because its ``reconcile`` could not tell names as the permission that asked."""


def _failed(call: ToolCall, error: Exception) -> CannotTell:
    return CannotTell(f"{_question(call)} (its reconcile failed: {type(error).__name__}: {error})")


def _ask(fn: Callable[..., object], state: State, call: ToolCall) -> Verdict:
    token = CALL_SCOPE.set(CallScope(state, call))
    try:
        answer = fn(call_of(state, call))
    except Exception as error:  # noqa: BLE001 - a reconcile that fails cannot tell; a person reads why
        return _failed(call, error)
    finally:
        CALL_SCOPE.reset(token)
    return read_verdict(call.name, answer)


async def _aask(fn: Callable[..., object], state: State, call: ToolCall) -> Verdict:
    token = CALL_SCOPE.set(CallScope(state, call))
    try:
        answer = fn(call_of(state, call))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as error:  # noqa: BLE001 - as in _ask
        return _failed(call, error)
    finally:
        CALL_SCOPE.reset(token)
    return read_verdict(call.name, answer)


def _question(call: ToolCall) -> str:
    return (
        f"The process running {format_call(call)} stopped before its result was saved, and the tool cannot tell "
        "whether it took effect. Approve to run it again; deny with what happened (the model reads it)."
    )


def reconcile_steps(agent: AgentSeam, state: State) -> Steps:
    """Reconcile the unknown calls of `state`'s latest turn whose tools can, then run those that did not happen
    (or hold those nobody can tell). Nothing when there are none (one look at the entries since the reply)."""
    unknown: Unknown | None = unknown_calls(state._acc)
    if unknown is None:
        return
    tools = agent._tool_map
    verdicts: dict[str, str] = {}
    results: dict[str, Any] = {}
    holds: list[Hold] = []
    for call in unknown.calls:
        tool = tools.get(call.name)
        fn = getattr(tool, "reconcile", None)
        if fn is None:
            continue
        verdict: Verdict = yield (_ask, _aask, (fn, state, call))
        if isinstance(verdict, Happened):
            verdicts[call.id] = "happened"
            results[call.id] = format_result(verdict.result)
        elif isinstance(verdict, NotHappened):
            verdicts[call.id] = "not_happened"
        else:
            verdicts[call.id] = "cannot_tell"
            holds.append(Hold(call, call.name, RECONCILE_PERMISSION, verdict.question or _question(call)))
    if not verdicts:
        return
    record_reconciled(state, unknown, verdicts, results)
    if holds:
        state._hold_for_approval(holds)  # the run's check of held calls carries the others along
    elif state.pending_calls:
        yield from use_tools_steps(agent, state, "run")
