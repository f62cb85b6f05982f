"""`alpineagents diff A B`: two stored runs aligned step by step, the first divergence marked, and each side's
turns, tokens, cost and time."""

from __future__ import annotations

import click

from alpineagents.cli.output import print_json, say
from alpineagents.cli.stores import chosen_store, store_errors, store_option
from alpineagents.compare import diff as diff_runs
from alpineagents.viewer.runs import open_run


@click.command(short_help="Compare two stored runs step by step.")
@click.argument("first", metavar="A")
@click.argument("second", metavar="B")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--exit-code", is_flag=True, help="Exit with 1 when the runs differ (as git diff --exit-code).")
@store_option
def diff(first: str, second: str, as_json: bool, exit_code: bool, store: str | None) -> None:
    """Compare the stored runs A and B: their steps aligned (user messages, replies, tool calls and results,
    context changes, errors, stops; ids and times left out), the first divergence marked (>>), and per run the
    turns, tokens, cost, time and tool calls."""
    opened = chosen_store(store)
    with store_errors():
        compared = diff_runs(open_run(opened, first).state, open_run(opened, second).state)
    if as_json:
        print_json(compared.to_json())
    else:
        say(str(compared))  # model and tool text: control characters shown as escapes
    if exit_code and not compared.same:
        raise SystemExit(1)
