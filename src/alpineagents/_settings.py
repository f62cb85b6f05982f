"""The checks of the settings an `Agent` takes (and `copy()` changes): each setting's rule, written once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from alpineagents._turn.seams import DEFAULT
from alpineagents.errors import fix_message
from alpineagents.permissions import Permission
from alpineagents.reporter import METHODS as REPORTER_METHODS
from alpineagents.store import Store
from alpineagents.types import Budget

if TYPE_CHECKING:
    from alpineagents.models.base import Model

__all__ = ["check_budget", "check_human", "check_loop", "check_permission_items", "check_reporter", "check_store"]


def check_loop(loop: object) -> None:
    """`loop=`: None, or a function of (agent, state)."""
    if loop is not None and not callable(loop):
        raise TypeError(
            fix_message(
                f"loop= takes a function that receives (agent, state) (got: {loop!r})",
                "pass a function (or a @loop) that calls agent.think(state) and agent.use_tools(state)",
                "@loop(until=waiting_for_user, limit=50)\ndef my_loop(agent, state):\n    agent.think(state)\n"
                "    if state.pending_calls:\n        agent.use_tools(state)\n\nAgent(model, loop=my_loop)",
            )
        )


def check_reporter(reporter: object) -> None:
    """`reporter=`: None, the default, or an object with every Reporter method."""
    if reporter is None or reporter is DEFAULT:
        return
    missing = [m for m in REPORTER_METHODS if not callable(getattr(reporter, m, None))]
    if isinstance(reporter, type) or missing:
        problem = f"reporter={reporter!r} is not a Reporter object"
        if missing:
            problem += f" (missing methods: {', '.join(missing)})"
        raise TypeError(
            fix_message(
                problem,
                "pass an object of a Reporter subclass (override the methods you need), or None for silence",
                "class Log(Reporter):\n    def on_tool_start(self, state, call):\n        print(call.name)\n\n"
                "Agent(model, reporter=Log())",
            )
        )


def check_human(human: object) -> None:
    """`human=`: None, the default, or an object (not a class) with `ask` or `aask`."""
    if human is None or human is DEFAULT:
        return
    if isinstance(human, type) or not (callable(getattr(human, "ask", None)) or callable(getattr(human, "aask", None))):
        raise TypeError(
            fix_message(
                f"human={human!r} is not a Human object",
                "pass an object with an ask (or async aask) method, such as Terminal(), or None",
                "Agent(model, human=Terminal())",
            )
        )


def check_store(store: object) -> None:
    """`store=`: None or a Store."""
    if store is not None and not isinstance(store, Store):
        raise TypeError(
            fix_message(
                f"store={store!r} is not a Store object",
                "pass an object of a Store subclass, such as FileStore(path)",
                'Agent(model, store=FileStore(".alpine/states"))',
            )
        )


def check_permission_items(permissions: tuple[Any, ...] | None) -> None:
    """Every item of `permissions=` is a Permission object (not its class)."""
    for item in permissions or ():
        if isinstance(item, Permission):
            continue
        if isinstance(item, type):
            problem = f"{item.__name__} passed in permissions= is not a Permission object (it is the class)"
        else:
            problem = f"{item!r} passed in permissions= is not a Permission object"
        raise TypeError(
            fix_message(
                problem,
                "pass permission objects (create them with parentheses)",
                "Agent(model, permissions=[DenyByName(['rm']), AllowByDefault()])",
            )
        )


def check_budget(budget: object, model: Model) -> None:
    """`budget=`: None or a Budget; a budget in dollars needs a model with prices."""
    if budget is None:
        return
    if not isinstance(budget, Budget):
        raise TypeError(
            fix_message(
                f"budget={budget!r} is not a Budget",
                "pass a Budget with the limits you want (any of usd, tokens, requests, tool_calls), or None",
                "Agent(model, budget=Budget(usd=2.50, tool_calls=100))",
            )
        )
    if budget.usd is not None and model.price is None:
        raise ValueError(
            fix_message(
                f"budget={budget!r} limits dollars, but the model {model!r} has no price, so what it spends "
                "cannot be counted",
                "give the model its prices (price=Price(input=..., output=...)), or limit tokens and requests",
                'Agent(Anthropic("claude-sonnet-5", price=Price(input=3, output=15)), budget=Budget(usd=2.50))',
            )
        )
