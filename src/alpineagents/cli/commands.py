"""The `alpineagents` command: run, list, show, resume, fork, remove, export and view stored runs.

Exit codes: 0 when the command did its work, 1 on an error (an unknown id, a missing or damaged store, a run that
raised), 2 on misuse (a bad option or argument, a MODULE:AGENT that cannot be found). Errors are one line on
standard error, and a command that fails writes nothing.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import click

from alpineagents._history.effects import effect_marks
from alpineagents._replay.fork import fork_onto, forked_model
from alpineagents._values.details import RECORD_VARIABLE
from alpineagents._values.visible import visible
from alpineagents.agent import Agent
from alpineagents.cli.agents import load_agent
from alpineagents.cli.approvals import approvals, approve, deny
from alpineagents.cli.budgets import raise_budget
from alpineagents.cli.diffing import diff
from alpineagents.cli.evaluate import evaluate
from alpineagents.cli.ids import state_id
from alpineagents.cli.output import note, outcome_json, print_json, print_table, say, warning_line
from alpineagents.cli.replay import Replay, usage_line
from alpineagents.cli.serve import serve
from alpineagents.cli.stores import Command, Misuse, chosen_store, store_errors, store_option
from alpineagents.cli.web import export, view
from alpineagents.cli.worker import worker
from alpineagents.loop import waiting_for_user
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.terminal import Terminal
from alpineagents.types import Message, RunStartEntry
from alpineagents.viewer.runs import UNFINISHED, first_line, matches, open_run, stored_runs, summarize, unlisted_summary


class Commands(click.Group):
    """The command group; an error line it prints shows control characters as escapes, since it may quote text
    from a model, a tool or a store."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            shown = visible(error.message)
            if shown == error.message:
                raise
            raise (Misuse(shown) if error.exit_code == Misuse.exit_code else click.ClickException(shown)) from None


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@store_option
def main(store: str | None) -> None:
    """Run agents and look at their stored runs.

    A run is kept in a store (--store, or $ALPINEAGENTS_STORE, else ./runs.db). `alpineagents view` shows the
    runs in a browser.
    """


def _run(agent: Agent, store: Store, state: State, model: str | None, as_json: bool) -> None:
    """Runs `state` with `agent` saving to `store`, the Terminal printing its progress; exit 1 if the run raised.

    A run started here records each request's input and each error's stack for the viewer (`ALPINEAGENTS_RECORD`
    defaults to `all` on the command line; set it, even to nothing, to choose otherwise)."""
    os.environ.setdefault(RECORD_VARIABLE, "all")
    terminal = Terminal(output=sys.stderr if as_json else None)
    changes: dict[str, Any] = {"store": store, "reporter": terminal}
    if isinstance(agent.human, Terminal):  # one Terminal prints and asks, so its lines and questions do not mix
        changes["human"] = terminal
    if model:
        changes["model"] = model
    try:
        configured = agent.copy(**changes)
    except (TypeError, ValueError) as error:
        raise Misuse(first_line(error))
    before = len(state.history)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = warning_line
            configured.run(state)
    except Exception as error:
        started = any(isinstance(entry, RunStartEntry) for entry in state.history[before:])
        if not started:
            raise click.ClickException(first_line(error))
        raise click.ClickException(f"run {state.id} ended with {type(error).__name__}: {first_line(error)}")
    if as_json:
        print_json(outcome_json(state))
    else:
        note(f"saved as {state.id}")


def run_options(command: Command) -> Command:
    """Adds the options of the commands that run an Agent: --model, --json and --store."""
    command = click.option("--model", help="Use this model instead of the Agent's (e.g. openai/gpt-5).")(command)
    command = click.option(
        "--json", "as_json", is_flag=True, help="Print the outcome as JSON (progress goes to stderr)."
    )(command)
    return store_option(command)


@main.command(short_help="Run an Agent of your code on a prompt.")
@click.argument("agent_spec", metavar="MODULE:AGENT")
@click.argument("prompt")
@click.option("--id", "state_id", callback=state_id, help="The id of the new run (letters, digits, _ and -).")
@run_options
def run(
    agent_spec: str, prompt: str, model: str | None, state_id: str | None, as_json: bool, store: str | None
) -> None:
    """Run the Agent AGENT of module MODULE on PROMPT, saving the run in the store."""
    agent = load_agent(agent_spec)
    try:
        state = State(id=state_id, messages=[Message.user(prompt)])
    except ValueError as error:
        raise Misuse(first_line(error))
    opened = chosen_store(store, create=True)
    with store_errors():
        if state_id is not None and opened.read(state_id) is not None:
            raise click.ClickException(f"the store already has a run {state_id!r}: pick another --id, or resume it")
    _run(agent, opened, state, model, as_json)


@main.command(short_help="Continue a stored run.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.argument("agent_spec", metavar="MODULE:AGENT")
@click.argument("message", required=False)
@run_options
def resume(
    state_id: str, agent_spec: str, message: str | None, model: str | None, as_json: bool, store: str | None
) -> None:
    """Continue the stored run ID with AGENT, after adding MESSAGE when given (a crashed run too)."""
    agent = load_agent(agent_spec)
    opened = chosen_store(store)
    with store_errors():
        state = opened.load(state_id)
        if message:
            state.add_message(Message.user(message))
        elif waiting_for_user(state):  # running it again would send the same messages for the same answer
            raise Misuse(
                f"run {state_id} is waiting for the user: give the message to send, e.g. "
                f'alpineagents resume {state_id} {agent_spec} "your reply"'
            )
    _run(agent, opened, state, model or forked_model(state), as_json)  # a fork --model names its model


@main.command(name="ls", short_help="List the stored runs, newest first.")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many runs (newest first).")
@click.option("--filter", "text", metavar="TEXT", help="Only runs whose id or first message holds TEXT.")
@click.option("--top", is_flag=True, help="Only runs that no tool call started (no subagents).")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON list.")
@store_option
def list_runs(limit: int | None, text: str | None, top: bool, as_json: bool, store: str | None) -> None:
    """List the stored runs, newest first: id, first message, turns, updated, status and cost."""
    opened = chosen_store(store)
    with store_errors():
        runs = stored_runs(opened)
        infos = [info for info in runs.infos if (not top or info.parent_id is None)]
        if text:
            infos = [info for info in infos if matches(info, text)]
        rows = [summarize(opened, info) for info in infos]
        rows += [unlisted_summary(gone) for gone in runs.unlisted if (text or "").casefold() in gone.id.casefold()]
        rows = rows[:limit]
    if as_json:
        print_json([row.to_json() for row in rows])
    elif rows:
        print_table(rows)
    else:
        note("no runs")


EFFECT_MARKS = {
    "unknown": "effect unknown (the process stopped before its result was saved)",
    "happened": "effect unknown, reconciled: it had happened (the result comes from reconcile)",
    "not_happened": "effect unknown, reconciled: it had not happened (run again, once)",
    "cannot_tell": "effect unknown, reconcile cannot tell (waits for a person's decision)",
}
"""What `show` says of a call whose effect was unknown, by what became of it."""


@main.command(short_help="Print a run as the Terminal showed it.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.option("--json", "as_json", is_flag=True, help="Print the saved history entries as a JSON list.")
@store_option
def show(state_id: str, as_json: bool, store: str | None) -> None:
    """Print the run ID as the Terminal showed it, then its usage and cost."""
    opened = chosen_store(store)
    with store_errors():
        found = open_run(opened, state_id)
        if as_json:
            print_json(list(found.raw))
            return
        say(f"run {found.id}: {found.info.first_message or '(no first message)'}")
        Replay(opened, sys.stdout).history(found.history)
    for call_id, mark in effect_marks(found.state.history).items():  # calls cut off by a crash (as loading closes them)
        click.echo(f"call {call_id}: {EFFECT_MARKS[mark]}")
    if found.unfinished:
        click.echo(UNFINISHED)
    click.echo(usage_line(found.state.usage))
    budget = found.state.budget
    if budget is not None:  # what the run's budget allowed, what it spent and what is left
        click.echo(f"budget: {budget}")


@main.command(short_help="Copy a run, up to entry N, under a new id.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.option("--at", "at", type=click.IntRange(min=0), help="Keep the first N entries (default: all).")
@click.option("--id", "new_id", callback=state_id, help="The id of the copy (default: a new random id).")
@click.option("--model", help="The model to continue the copy with: resume uses it (e.g. openai/gpt-5).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "from", "entries"} as JSON.')
@store_option
def fork(
    state_id: str, at: int | None, new_id: str | None, model: str | None, as_json: bool, store: str | None
) -> None:
    """Copy the run ID, up to its first N entries, under a new id in the same store; with --model, the copy
    records that model, and resume continues it with that model."""
    opened = chosen_store(store)
    with store_errors():
        history = open_run(opened, state_id).history
        if at is not None and at > len(history):
            raise Misuse(f"--at {at} is past the end: run {state_id} has {len(history)} entries")
        if new_id is not None and opened.read(new_id) is not None:
            raise click.ClickException(f"the store already has a run {new_id!r}: pick another --id")
        kept = history if at is None else history[:at]
        copy = fork_onto(kept, state_id, model, new_id)
        opened.save(copy)
    if as_json:
        print_json({"id": copy.id, "from": state_id, "entries": len(kept)})
    else:
        click.echo(copy.id)


@main.command(short_help="Remove a run from the store.")
@click.argument("state_id", metavar="ID", callback=state_id)
@store_option
def rm(state_id: str, store: str | None) -> None:
    """Remove the run ID from the store (its subagent runs stay)."""
    opened = chosen_store(store)
    with store_errors():
        if opened.read(state_id) is None:
            raise click.ClickException(f"no saved State with id {state_id!r} in {opened!r}")
        opened.delete(state_id)
    note(f"removed {state_id}")


main.add_command(export)
main.add_command(diff)
main.add_command(evaluate)
main.add_command(view)
main.add_command(worker)
main.add_command(approvals)
main.add_command(approve)
main.add_command(deny)
main.add_command(raise_budget)
main.add_command(serve)
