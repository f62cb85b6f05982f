"""The two commands that need the viewer extra: `export` (one offline HTML file) and `view` (the web app)."""

from __future__ import annotations

import errno
import importlib
import sys
from pathlib import Path
from types import ModuleType

import click

from alpineagents.cli.stores import chosen_store, store_errors, store_option

EXTRA = "the viewer needs its extra: pip install 'alpineagents[viewer]'"
DEFAULT_PORT = 8321
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _viewer(name: str) -> ModuleType:
    """`alpineagents.viewer.<name>`, or one error line naming the extra when Starlette or Jinja2 is missing."""
    try:
        return importlib.import_module(f"alpineagents.viewer.{name}")
    except ImportError as error:
        raise click.ClickException(f"{EXTRA} ({error})")


@click.command(short_help="Write a run as one offline HTML file.")
@click.argument("state_id", metavar="ID")
@click.option(
    "-o", "--output", "output", metavar="FILE", help="Where to write the page (default: ID.html; - for stdout)."
)
@store_option
def export(state_id: str, output: str | None, store: str | None) -> None:
    """Write the run ID as one self-contained HTML file: the viewer's page, for a browser with no server."""
    page = _viewer("page")
    opened = chosen_store(store)
    with store_errors():
        html: str = page.export_html(opened, state_id)
    if output == "-":
        click.echo(html, nl=False)
        return
    target = Path(output or f"{state_id}.html")
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as error:
        raise click.ClickException(f"cannot write {target}: {error.strerror or error}")
    click.echo(f"wrote {target}", file=sys.stderr)


@click.command(short_help="Start the run viewer on 127.0.0.1.")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="The address to listen on (only this machine by default)."
)
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="The port (0: any free port).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests made to this host name (repeatable); by default only the loopback names and --host.",
)
@store_option
def view(host: str, port: int, allow_hosts: tuple[str, ...], store: str | None) -> None:
    """Start the run viewer and print its address; Ctrl+C stops it.

    The viewer answers only requests addressed to the loopback names (localhost, 127.0.0.1, ::1), to --host and to
    each --allow-host, so a web page of another site cannot read the runs by pointing its name at this machine.
    """
    app = _viewer("app")
    opened = chosen_store(store)

    def announce(address: str) -> None:
        click.echo(f"alpineagents viewer: {address}  (store {opened!r}; Ctrl+C stops it)")
        if host not in LOOPBACK:
            click.echo(
                f"warning: listening on {host}: anyone who can reach it can read every run in the store", err=True
            )
        sys.stdout.flush()

    try:
        app.serve(opened, host=host, port=port, announce=announce, allowed_hosts=allow_hosts)
    except OSError as error:
        hint = ": pick another with --port, or --port 0 for any free port" if error.errno == errno.EADDRINUSE else ""
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}{hint}")
