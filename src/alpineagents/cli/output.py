"""What the commands print: JSON forms of a run's outcome and usage, table rows, short texts."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click

from alpineagents._values.visible import json_visible, visible
from alpineagents.state import State
from alpineagents.types import Usage
from alpineagents.viewer.runs import Summary

FIRST_MESSAGE_WIDTH = 48
"""How many characters of the first message `ls` shows."""


def print_json(value: Any) -> None:
    """`value` as indented JSON on standard output (values JSON cannot hold are written with `str`; control
    characters escaped, so the text is safe on a terminal)."""
    click.echo(json_visible(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def say(text: str) -> None:
    """A line on standard output of text that may come from a model, a tool or a store: control characters are
    shown as escapes (see `_values.visible`), never acted on by the terminal."""
    click.echo(visible(text))


def usage_json(usage: Usage) -> dict[str, Any]:
    """The usage counters as a JSON object (the six fields of `Usage`)."""
    return dataclasses.asdict(usage)


def outcome_json(state: State) -> dict[str, Any]:
    """How a run left its State: id, answer, stop, turn and usage."""
    return {
        "id": state.id,
        "answer": state.answer,
        "stopped": str(state.stopped) if state.stopped is not None else None,
        "finished": state.finished,
        "turn": state.turn,
        "usage": usage_json(state.usage),
    }


def when(at: datetime | None) -> str:
    """A time stamp in local time to the second, or `-`."""
    return at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if at else "-"


def cost_text(cost: float | None) -> str:
    """`$0.0123`, or `-` when the price is unknown."""
    return "-" if cost is None else f"${cost:.4f}"


def one_line(text: str | None, width: int) -> str:
    """The text on one line (control characters shown as escapes), cut to `width` characters with an ellipsis."""
    flat = " ".join(visible(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_table(rows: Sequence[Summary]) -> None:
    """The `ls` table: id, first message, turns, updated, status, cost."""
    header = ("ID", "FIRST MESSAGE", "TURNS", "UPDATED", "STATUS", "COST")
    cells = [
        tuple(
            visible(cell)
            for cell in (
                row.id if row.parent_id is None else row.id + " (sub)",
                one_line(row.first_message, FIRST_MESSAGE_WIDTH),
                str(row.turns),
                when(row.updated_at),
                row.status,
                cost_text(row.cost),
            )
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header) - 1)]
    for line in [header, *cells]:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])


def note(text: str) -> None:
    """A line for the person, on standard error (so standard output stays clean for --json)."""
    click.echo(text, file=sys.stderr)


def warning_line(message: Warning | str, *_place: object) -> None:
    """A warning raised while a command runs an Agent (a `ResumeWarning`, say), as one line on standard error:
    `warning: {text}`. Python's own form names the line of code that called the run, which on the command line is
    the command-line library's, not anything of the person's. (Takes `warnings.showwarning`'s arguments.)"""
    note(f"warning: {visible(str(message))}")
