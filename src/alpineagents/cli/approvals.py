"""`alpineagents approvals`, `approve ID CALL` and `deny ID CALL --reason ...`: the runs waiting for a person's
decision about a tool call, and the decision.

A decision is recorded in the run's history (who, when, the note) and saved; running the run again
(`alpineagents resume ID`, `agent.run(state)`, or submitting it to the workers again) carries it out.
"""

from __future__ import annotations

import click

from alpineagents.cli.ids import state_id
from alpineagents.cli.output import note, print_json, say
from alpineagents.cli.stores import chosen_store, store_errors, store_option
from alpineagents.types import StoppedForApproval, format_call


@click.command(short_help="List the runs waiting for a decision about a tool call.")
@click.option("--json", "as_json", is_flag=True, help="Print the waiting calls as a JSON list.")
@store_option
def approvals(as_json: bool, store: str | None) -> None:
    """List each tool call waiting for a person's decision: the run, the call id, the call, the question, and
    where it is (the ids from the run down to a subagent's run)."""
    opened = chosen_store(store)
    rows = []
    with store_errors():
        for info in opened.list():
            if info.parent_id is not None or not isinstance(info.stopped, StoppedForApproval):
                continue
            for waiting in opened.load(info.id).awaiting_approval:
                rows.append(
                    {
                        "run": info.id,
                        "call": waiting.call.id,
                        "tool": waiting.tool,
                        "shown": format_call(waiting.call),
                        "question": waiting.question,
                        "permission": waiting.permission,
                        "path": list(waiting.path),
                        "asked_at": waiting.asked_at.isoformat(),
                        "expires_at": None if waiting.expires_at is None else waiting.expires_at.isoformat(),
                    }
                )
    if as_json:
        print_json(rows)
    elif not rows:
        note("no run is waiting for a decision")
    for row in [] if as_json else rows:
        where = "" if len(row["path"]) == 1 else f"  (in subagent {row['path'][-1]})"
        say(f"{row['run']}  {row['call']}  {row['shown']}  {row['question']}{where}")


@click.command(short_help="Approve a waiting tool call of a run.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.argument("call_id", metavar="CALL")
@click.option("--by", help="Who decided (kept in the history).")
@click.option("--note", "text", help="A note kept with the decision.")
@store_option
def approve(state_id: str, call_id: str, by: str | None, text: str | None, store: str | None) -> None:
    """Approve the waiting call CALL of the run ID; the next run of ID runs it (an approval after the call's
    expiry is recorded as a denial)."""
    _decide(state_id, call_id, None, by, text, store)


@click.command(short_help="Deny a waiting tool call of a run.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.argument("call_id", metavar="CALL")
@click.option("--reason", required=True, help="Why: the model reads it as the call's result.")
@click.option("--by", help="Who decided (kept in the history).")
@click.option("--note", "text", help="A note kept with the decision.")
@store_option
def deny(state_id: str, call_id: str, reason: str, by: str | None, text: str | None, store: str | None) -> None:
    """Deny the waiting call CALL of the run ID; the model reads REASON when the run goes on."""
    _decide(state_id, call_id, reason, by, text, store)


def _decide(
    state_id: str, call_id: str, reason: str | None, by: str | None, text: str | None, store: str | None
) -> None:
    opened = chosen_store(store)
    with store_errors():
        state = opened.load(state_id)
        if reason is None:
            decision = state.approve(call_id, by=by, note=text)
        else:
            decision = state.deny(call_id, reason, by=by, note=text)
        opened.save(state)
    if decision.expired:
        note(f"{call_id}: the approval came after the call expired, so it was recorded as a denial")
    else:
        note(f"{call_id}: {'approved' if decision.approved else 'denied'}; run {state_id} again to go on")
