"""The budget rule of a run: before each model request (a ``think``, a model compaction, an ``ask``), and before a
turn's tool calls run, what they may take is reserved against every budget that applies; a step that would pass one
is not taken, and the run waits (an ``ask``, which must return an answer, fails instead).

A run of an Agent with ``budget=`` opens a ``BudgetGuard`` on its State (the owner); its subagent runs inherit the
guards of the runs above, and add their own when their Agent has a budget too. A guard counts, under its lock:

- what is spent, read from the history: the owner's usage and the usage its subagents added since their calls
  last counted them (``_history.budget.live_usage``), and the tool calls that ran (counted once from the histories
  when the guard opens, then as calls run);
- what is reserved: the estimates of the requests sent and not answered yet (parallel subagents reserve side by
  side, so together they cannot pass the budget either).

A request's estimate is its input tokens (the context-token estimate of ``_tokens``) plus the largest output it may
produce (the model's ``max_tokens``, else what the context window leaves), priced at the model's prices (input at
the dearer of the input and cache-write prices). So what is recorded stays within the budget unless a reply's input
was larger than its estimate: by at most one request's estimation error.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from alpineagents._history.budget import RAN, budget_wait_record, live_usage, raised, spend_of, tool_calls_ran
from alpineagents._tokens import context_tokens, estimate_overhead_tokens
from alpineagents._turn.context import active_context
from alpineagents._values.budget import LIMITS, Budget, Spend, StoppedForBudget, shown
from alpineagents.errors import fix_message
from alpineagents.types import ToolResultEntry

if TYPE_CHECKING:
    from alpineagents._turn.context import RunContext
    from alpineagents._turn.seams import AgentSeam
    from alpineagents.models.base import Model
    from alpineagents.state import State
    from alpineagents.types import HistoryEntry, Request

__all__ = [
    "BudgetGuard",
    "budget_guards",
    "open_budget",
    "request_needs",
    "reserve_request",
    "release",
    "reserve_tool_calls",
    "tool_calls_done",
    "resume_budget_wait",
]


class BudgetGuard:
    """The budget of one run (its owner State and everything below it): what it allows, and what is reserved."""

    __slots__ = ("owner", "budget", "lock", "reserved", "tool_calls")

    def __init__(self, owner: State, budget: Budget, tool_calls: int) -> None:
        self.owner = owner
        self.budget = budget
        self.lock = threading.Lock()
        self.reserved = Spend(0.0, 0, 0, 0)
        self.tool_calls = tool_calls

    def spent(self) -> Spend:
        """What the owner and its subagents spent, as recorded so far (tool calls: as counted by this guard)."""
        return spend_of(live_usage(self.owner), self.tool_calls)

    def take(self, needs: Spend) -> StoppedForBudget | None:
        """Reserve ``needs``, or the stop of the first limit it would pass (nothing reserved then)."""
        with self.lock:
            spent = self.spent()
            reserved = self.reserved
            for name in LIMITS:
                limit = getattr(self.budget, name)
                need = needs.amount(name)
                if limit is None or not need:
                    continue
                used = spent.amount(name)
                if used is None or need is None:
                    raise _no_price(self.owner.id)
                left = limit - used - (reserved.amount(name) or 0)
                if need > left:
                    return StoppedForBudget(name, float(need), float(max(left, 0)), self.owner.id)
            self.reserved = _add(reserved, needs, 1)
            return None

    def give_back(self, needs: Spend) -> None:
        with self.lock:
            self.reserved = _add(self.reserved, needs, -1)


def _add(a: Spend, b: Spend, sign: int) -> Spend:
    return Spend(
        (a.usd or 0.0) + sign * (b.usd or 0.0),
        a.tokens + sign * b.tokens,
        a.requests + sign * b.requests,
        a.tool_calls + sign * b.tool_calls,
    )


def _no_price(state_id: str) -> ValueError:
    return ValueError(
        fix_message(
            f"The budget of State {state_id!r} limits dollars (usd=), but a model of its run has no price, so what "
            "it spends cannot be counted",
            "give every model of the run its prices (price=Price(...)), or limit tokens and requests instead",
            'Anthropic("claude-sonnet-5", price=Price(input=3, output=15))\nBudget(tokens=500_000, requests=40)',
        )
    )


def _above(context: RunContext) -> list[tuple[HistoryEntry, ...]]:
    """The histories of the States above a subagent run, nearest first."""
    found: list[tuple[HistoryEntry, ...]] = []
    parent = context.parent
    while parent is not None:
        state = parent[0]
        found.append(state.history)
        above = state._run_context
        parent = above.parent if above is not None else None
    return found


def open_budget(agent: AgentSeam, state: State, context: RunContext) -> None:
    """At a run's start: when the Agent has a budget, record its limits on the State (when they changed) and add
    its guard to the run's guards, with the raises recorded on the State and the States above it."""
    budget = agent._budget
    if budget is None:
        return
    state._record_budget(budget)
    raises = raised([state.history, *_above(context)], state.id)
    # counting the tool calls reads the subagents' histories (from the store): only for a budget that limits them
    tool_calls = tool_calls_ran(state) if budget.tool_calls is not None else 0
    guard = BudgetGuard(state, budget.plus(raises), tool_calls)
    context.budgets = (*context.budgets, guard)


def request_needs(model: Model, request: Request) -> Spend:
    """The estimate of `request` to `model`: its input tokens (messages, system prompt and tools) plus the largest
    output it may produce, priced when the model has prices."""
    overhead = estimate_overhead_tokens(request.system, request.tools)
    input_tokens = context_tokens(request.messages, overhead)
    output = model.max_tokens if model.max_tokens else max(model.context_window - input_tokens, 1)
    price = model.price
    usd: float | None = None
    if price is not None:
        dearest = max(price.input, price.cache_write if price.cache_write is not None else price.input)
        usd = (input_tokens * dearest + output * price.output) / 1_000_000
    return Spend(usd, input_tokens + output, 1, 0)


def budget_guards(agent: AgentSeam, state: State) -> tuple[BudgetGuard, ...]:
    """The budget guards of the run `agent`'s call on `state` belongs to: its run's, else, when `state` is being
    run (another Agent, such as a reviewer, sends a request on the run's State from its loop), the guards of that
    run, whose State pays for the request; none outside a run."""
    context = active_context(agent, state)
    if context is None and state._running:
        context = state._run_context
    return context.budgets if context is not None else ()


def _reserve(
    guards: tuple[BudgetGuard, ...], needs: Spend
) -> tuple[list[BudgetGuard], tuple[BudgetGuard, StoppedForBudget] | None]:
    """Reserve ``needs`` on every guard: the guards reserved and None, or nothing reserved and the first guard it
    would pass with its stop."""
    taken: list[BudgetGuard] = []
    for guard in guards:
        if needs.usd is None and guard.budget.usd is not None and needs.requests:
            for done in taken:
                done.give_back(needs)
            raise _no_price(guard.owner.id)
        stopped = guard.take(needs)
        if stopped is not None:
            for done in taken:
                done.give_back(needs)
            return [], (guard, stopped)
        taken.append(guard)
    return taken, None


def _ask_passes(guard: BudgetGuard, stopped: StoppedForBudget) -> ValueError:
    limit = stopped.limit
    return ValueError(
        fix_message(
            f"ask() was not sent: its request needs about {shown(limit, stopped.needed)}, and only "
            f"{shown(limit, stopped.left)} of the budget of State {guard.owner.id!r} "
            f"({shown(limit, getattr(guard.budget, limit))}) is left. An answer cannot wait for a raise",
            "give the Agent a bigger budget and run the State again (the work done so far is kept), or ask less often",
            f"agent = agent.copy(budget=Budget({limit}=...))",
        )
    )


def reserve_request(
    agent: AgentSeam, state: State, request: Request, guards: tuple[BudgetGuard, ...], *, wait: bool = True
) -> tuple[list[BudgetGuard], Spend] | None:
    """Before a model request of a run (a think, a compaction, an ask): reserve the estimate of `request` to the
    Agent's model on `guards`. Returns what to give back once the reply is recorded, or None when the request must
    not be sent: it would pass a budget (its wait and the stop are recorded), or the State already waits for a
    raise in this run (nothing goes out before one). With ``wait=False`` (an ``ask``, which must return an answer)
    a request that would pass a budget raises the ``ValueError`` that says so instead, and nothing is recorded.
    """
    if wait and type(state.stopped) is StoppedForBudget:
        return None  # a step of this run already waits for a raise: the next request waits with it
    needs = request_needs(agent._model, request)
    taken, passed = _reserve(guards, needs)
    if passed is None:
        return taken, needs
    guard, stopped = passed
    if not wait:
        raise _ask_passes(guard, stopped)
    state._hold_for_budget(stopped, guard.budget, guard.spent())
    return None


def release(reserved: tuple[list[BudgetGuard], Spend]) -> None:
    """Give back what ``reserve_request`` or ``reserve_tool_calls`` reserved."""
    guards, needs = reserved
    for guard in guards:
        guard.give_back(needs)


def reserve_tool_calls(state: State, guards: tuple[BudgetGuard, ...]) -> tuple[list[BudgetGuard], Spend] | None:
    """Before a turn's pending calls run: reserve one tool call each on the run's `guards`, or (None) record the
    wait of the budget they would pass; then none of them runs."""
    needs = Spend(0.0, 0, 0, len(state.pending_calls))
    taken, passed = _reserve(guards, needs)
    if passed is not None:
        guard, stopped = passed
        state._hold_for_budget(stopped, guard.budget, guard.spent())
        return None
    if type(state.stopped) is StoppedForBudget:
        state._clear_stop()
    return taken, needs


def tool_calls_done(state: State, reserved: tuple[list[BudgetGuard], Spend], start: int) -> None:
    """After the calls ran: give back their reservation and count the calls that ran (the results recorded from
    history position ``start`` on)."""
    guards, needs = reserved
    if not guards:
        return
    acc = state._acc
    history = acc.history
    ran = 0
    for index in range(start, acc.history_len):
        entry = history[index]
        if type(entry) is ToolResultEntry and entry.outcome in RAN:
            ran += 1
    for guard in guards:
        with guard.lock:
            guard.reserved = _add(guard.reserved, needs, -1)
            guard.tool_calls += ran


def resume_budget_wait(state: State) -> bool:
    """At a run's start (its ``run_start`` ended the stop): True when the latest turn's calls were held for a
    budget, so they must run (checked again) before the loop."""
    return bool(state.pending_calls) and budget_wait_record(state._acc) is not None
