"""The State ids a command is given: checked before anything is opened, so a bad one is misuse (exit code 2)."""

from __future__ import annotations

import click

from alpineagents.cli.stores import Misuse
from alpineagents.state import check_id
from alpineagents.viewer.runs import first_line


def state_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A Click callback: `value` when it is a valid State id (or not given), else one misuse line that says why."""
    if value is None:
        return None
    name = param.opts[0] if param.param_type_name == "option" else (param.metavar or "ID")
    try:
        return check_id(value, name)
    except (TypeError, ValueError) as error:
        raise Misuse(first_line(error))
