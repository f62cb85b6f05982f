"""The two commands that need the viewer extra: `export` (one offline HTML file) and `view` (the web app)."""

from __future__ import annotations

import errno
import importlib
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import click

from alpineagents._install import install_hint
from alpineagents.cli.ids import state_id
from alpineagents.cli.stores import chosen_store, store_errors, store_option

EXTRA = "the viewer needs its extra: " + install_hint("viewer")
DEFAULT_PORT = 8321
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _viewer(name: str) -> ModuleType:
    """`alpineagents.viewer.<name>`, or one error line naming the extra when Starlette or Jinja2 is missing."""
    try:
        return importlib.import_module(f"alpineagents.viewer.{name}")
    except ImportError as error:
        raise click.ClickException(f"{EXTRA} ({error})")


@click.command(short_help="Write a run as one offline HTML file.")
@click.argument("state_id", metavar="ID", callback=state_id)
@click.option(
    "-o", "--output", "output", metavar="FILE", help="Where to write the page (default: ID.html; - for stdout)."
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists (a symbolic link is replaced, not followed).")
@store_option
def export(state_id: str, output: str | None, force: bool, store: str | None) -> None:
    """Write the run ID as one self-contained HTML file: the viewer's page, for a browser with no server.

    An existing FILE is kept unless --force is given; a symbolic link is never written through.
    """
    page = _viewer("page")
    opened = chosen_store(store)
    with store_errors():
        html: str = page.export_html(opened, state_id)
    if output == "-":
        click.echo(html, nl=False)
        return
    target = Path(output or f"{state_id}.html")
    try:
        (replace_file if force else new_file)(target, html.encode("utf-8"))
    except FileExistsError:
        kind = "a symbolic link" if target.is_symlink() else "a file"
        raise click.ClickException(f"{target} exists ({kind}): pass --force to replace it, or choose another -o FILE")
    except OSError as error:
        raise click.ClickException(f"cannot write {target}: {error.strerror or error}")
    click.echo(f"wrote {target}", file=sys.stderr)


def new_file(target: Path, data: bytes) -> None:
    """Writes `data` to `target`, which must not exist (`FileExistsError`, also for a symbolic link, even one that
    points nowhere); a write that fails leaves no file behind."""
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
    except OSError:
        target.unlink(missing_ok=True)
        raise


def replace_file(target: Path, data: bytes) -> None:
    """Writes `data` to a new file beside `target`, then renames it onto `target`: a file or symbolic link there is
    replaced (a link is never followed), and a reader sees the old file or the new one, never half of one."""
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
