"""`alpineagents raise-budget ID --usd ...`: raise the budget a run waits on.

The raise is recorded in the run's history (how much, who, the note) and saved; running the run again
(`alpineagents resume ID`, `agent.run(state)`, or submitting it to the workers again) goes on where it stopped.
"""

from __future__ import annotations

import click

from alpineagents.cli.ids import state_id
from alpineagents.cli.output import note
from alpineagents.cli.stores import chosen_store, store_errors, store_option


@click.command("raise-budget", short_help="Raise the budget a run waits on.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.option("--usd", type=float, help="Dollars to add to the limit.")
@click.option("--tokens", type=int, help="Tokens to add to the limit.")
@click.option("--requests", type=int, help="Model requests to add to the limit.")
@click.option("--tool-calls", "tool_calls", type=int, help="Tool calls to add to the limit.")
@click.option("--by", help="Who raised it (kept in the history).")
@click.option("--note", "text", help="A note kept with the raise.")
@store_option
def raise_budget(
    state_id: str,
    usd: float | None,
    tokens: int | None,
    requests: int | None,
    tool_calls: int | None,
    by: str | None,
    text: str | None,
    store: str | None,
) -> None:
    """Raise the budget of the run ID, which waits because its next step would pass it; the next run of ID goes
    on (a raise still too small makes it wait again)."""
    opened = chosen_store(store)
    with store_errors():
        state = opened.load(state_id)
        state.raise_budget(usd, tokens, requests, tool_calls, by=by, note=text)
        opened.save(state)
        status = state.budget
    left = f" ({status})" if status is not None else ""
    note(f"{state_id}: budget raised{left}; run {state_id} again to go on")
