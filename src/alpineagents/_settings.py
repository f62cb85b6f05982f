"""The checks of the settings an `Agent` takes (and `copy()` changes): each setting's rule, written once.

`RULES` holds, for each setting checked by kind, what is wrong with a value (`None` when it fits), how to fix it
and an example; `check_settings` reads it. The one rule that needs another setting (a budget in dollars needs a
model with prices) is `check_budget_price`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from alpineagents._turn.seams import DEFAULT
from alpineagents.errors import fix_message
from alpineagents.permissions import Permission
from alpineagents.reporter import METHODS as REPORTER_METHODS
from alpineagents.store import Store
from alpineagents.types import Budget

if TYPE_CHECKING:
    from alpineagents.models.base import Model

__all__ = ["RULES", "Rule", "check_budget_price", "check_settings"]


class Rule(NamedTuple):
    """One setting's rule: `problem(value)` says what is wrong (`None`: the value fits); `fix` and `example` go
    with it into the `TypeError`."""

    problem: Callable[[object], str | None]
    fix: str
    example: str


def _loop_problem(loop: object) -> str | None:
    if loop is None or callable(loop):
        return None
    return f"loop= takes a function that receives (agent, state) (got: {loop!r})"


def _reporter_problem(reporter: object) -> str | None:
    """None, the default, or an object with every Reporter method."""
    if reporter is None or reporter is DEFAULT:
        return None
    missing = [m for m in REPORTER_METHODS if not callable(getattr(reporter, m, None))]
    if not isinstance(reporter, type) and not missing:
        return None
    problem = f"reporter={reporter!r} is not a Reporter object"
    return f"{problem} (missing methods: {', '.join(missing)})" if missing else problem


def _human_problem(human: object) -> str | None:
    """None, the default, or an object (not a class) with `ask` or `aask`."""
    if human is None or human is DEFAULT:
        return None
    answers = callable(getattr(human, "ask", None)) or callable(getattr(human, "aask", None))
    if answers and not isinstance(human, type):
        return None
    return f"human={human!r} is not a Human object"


def _store_problem(store: object) -> str | None:
    return None if store is None or isinstance(store, Store) else f"store={store!r} is not a Store object"


def _permissions_problem(permissions: object) -> str | None:
    """Every item (of the tuple the list was turned into, or None) is a Permission object, not its class."""
    for item in permissions if isinstance(permissions, tuple) else ():
        if isinstance(item, Permission):
            continue
        if isinstance(item, type):
            return f"{item.__name__} passed in permissions= is not a Permission object (it is the class)"
        return f"{item!r} passed in permissions= is not a Permission object"
    return None


def _budget_problem(budget: object) -> str | None:
    return None if budget is None or isinstance(budget, Budget) else f"budget={budget!r} is not a Budget"


RULES: dict[str, Rule] = {
    "loop": Rule(
        _loop_problem,
        "pass a function (or a @loop) that calls agent.think(state) and agent.use_tools(state)",
        "@loop(until=waiting_for_user, limit=50)\ndef my_loop(agent, state):\n    agent.think(state)\n"
        "    if state.pending_calls:\n        agent.use_tools(state)\n\nAgent(model, loop=my_loop)",
    ),
    "reporter": Rule(
        _reporter_problem,
        "pass an object of a Reporter subclass (override the methods you need), or None for silence",
        "class Log(Reporter):\n    def on_tool_start(self, state, call):\n        print(call.name)\n\n"
        "Agent(model, reporter=Log())",
    ),
    "human": Rule(
        _human_problem,
        "pass an object with an ask (or async aask) method, such as Terminal(), or None",
        "Agent(model, human=Terminal())",
    ),
    "store": Rule(
        _store_problem,
        "pass an object of a Store subclass, such as FileStore(path)",
        'Agent(model, store=FileStore(".alpine/states"))',
    ),
    "permissions": Rule(
        _permissions_problem,
        "pass permission objects (create them with parentheses)",
        "Agent(model, permissions=[DenyByName(['rm']), AllowByDefault()])",
    ),
    "budget": Rule(
        _budget_problem,
        "pass a Budget with the limits you want (any of usd, tokens, requests, tool_calls), or None",
        "Agent(model, budget=Budget(usd=2.50, tool_calls=100))",
    ),
}
"""The settings checked by kind, in the order the constructor checks them."""


def check_settings(**settings: object) -> None:
    """Check each setting given by its rule in `RULES`, in the order given; the first that does not fit raises its
    `TypeError`."""
    for name, value in settings.items():
        rule = RULES[name]
        problem = rule.problem(value)
        if problem is not None:
            raise TypeError(fix_message(problem, rule.fix, rule.example))


def check_budget_price(budget: Budget | None, model: Model) -> None:
    """A budget in dollars needs a model with prices (what it spends is counted from them)."""
    if budget is not None and budget.usd is not None and model.price is None:
        raise ValueError(
            fix_message(
                f"budget={budget!r} limits dollars, but the model {model!r} has no price, so what it spends "
                "cannot be counted",
                "give the model its prices (price=Price(input=..., output=...)), or limit tokens and requests",
                'Agent(Anthropic("claude-sonnet-5", price=Price(input=3, output=15)), budget=Budget(usd=2.50))',
            )
        )
