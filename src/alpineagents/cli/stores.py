"""Turning the `--store` text into a Store.

The text is a folder (a `FileStore`), a database file or a `sqlite:///path` URL (a `SQLiteStore`), or a
`postgresql://` URL (a `PostgresStore`, with the `postgres` extra installed). Every command but `run` needs the store
to exist already, so that a typo in the path gives an error instead of a new, empty store.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from alpineagents._stores.registry import store_of_kind
from alpineagents.store import StateLockedError, Store
from alpineagents.viewer.runs import first_line

DEFAULT_STORE = "runs.db"
"""The store used when neither --store nor ALPINEAGENTS_STORE names one."""

ENV_STORE = "ALPINEAGENTS_STORE"
"""The environment variable that names the store when --store is not given."""

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""A path that does not exist yet is a SQLite file when it ends with one of these; else it is a folder."""


class Misuse(click.ClickException):
    """A mistake in how the command was called: printed as one line, exit code 2."""

    exit_code = 2


def store_text(given: str | None) -> str:
    """The store the user chose: `--store`, else `ALPINEAGENTS_STORE`, else `./runs.db`."""
    return given or os.environ.get(ENV_STORE) or DEFAULT_STORE


def _sqlite_path(text: str) -> str:
    """`sqlite:///runs.db` is `runs.db`; `sqlite:////tmp/runs.db` is `/tmp/runs.db`."""
    rest = text[len("sqlite:") :]
    if rest.startswith("///"):
        return rest[3:]
    if rest.startswith("//"):
        raise Misuse(f"--store {text!r}: write a SQLite URL as sqlite:///relative/path.db or sqlite:////absolute.db")
    return rest


def _kind_and_path(text: str) -> tuple[str, str]:
    """(the kind of built-in store, as `_stores/registry.py` names it: "file", "sqlite" or "postgres"; the path or
    URL) for a store text; a misuse error for one it cannot open."""
    if text.startswith("sqlite:"):
        return "sqlite", _sqlite_path(text)
    if text.startswith("file://"):
        return "file", text[len("file://") :]
    if text.startswith(("postgresql:", "postgres:")):
        return "postgres", text
    if "://" in text:
        raise Misuse(f"--store {text!r}: unknown kind of store; give a folder, a .db file or sqlite:///runs.db")
    path = Path(text)
    if path.is_dir():
        return "file", text
    if path.exists() or path.suffix in SQLITE_SUFFIXES:
        return "sqlite", text
    return "file", text


def open_store(given: str | None, *, create: bool = False) -> Store:
    """The Store named by `given` (or the environment, or the default).

    Without `create`, a store that does not exist is an error (exit code 1) and nothing is created.
    """
    text = store_text(given)
    kind, path = _kind_and_path(text)
    if kind == "postgres":
        _check_postgres_url(path)
    else:
        _check_place(text, kind, path, create)
    try:
        store_class = store_of_kind(kind).load()
        return store_class(path, create=create) if kind == "postgres" else store_class(path)
    except ImportError as error:  # the store's extra is not installed
        raise click.ClickException(first_line(error))


def _check_postgres_url(url: str) -> None:
    """A URL psycopg can read, else a usage error that gives the reason without the URL (it may hold a password)."""
    try:
        from psycopg import conninfo
    except ImportError:  # the extra is not installed: the store itself says how to install it
        return
    try:
        conninfo.conninfo_to_dict(url)
    except Exception as error:  # psycopg's parser
        reason = first_line(error).split(" in URI:")[0]
        raise Misuse(f"--store is not a PostgreSQL URL psycopg can read ({reason}): postgresql://user@host/dbname")


def _check_place(text: str, kind: str, path: str, create: bool) -> None:
    """A file or folder store's path: given, there (unless the command may create the store), of its kind."""
    if not path:
        raise Misuse(f"--store {text!r} names no path")
    if not create and not os.path.exists(path):
        raise click.ClickException(f"no store at {text}: give an existing folder or database with --store")
    parent = os.path.dirname(os.path.abspath(path))
    if create and not os.path.exists(path) and not os.path.isdir(parent):  # a typo must not make folders
        raise click.ClickException(
            f"no folder {parent} to make the new store {text} in: create it first (mkdir -p {parent}), or give an "
            "existing folder or database with --store"
        )
    if kind == "sqlite" and os.path.isdir(path):
        raise click.ClickException(f"{text} is a folder, not a SQLite database file")
    if kind == "file" and os.path.exists(path) and not os.path.isdir(path):
        raise click.ClickException(f"{text} is a file, not a FileStore folder")


Command = TypeVar("Command", bound=Callable[..., Any])
"""A Click command function, as the option decorators take and return it."""

STORE_HELP = (
    f"The store: a folder (FileStore), a .db file or sqlite:///runs.db (SQLiteStore), a postgresql:// URL "
    f"(PostgresStore). "
    f"Default: ${ENV_STORE}, else ./runs.db."
)


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Turns what a store or a State raises into one error line with exit code 1."""
    try:
        yield
    except click.ClickException:
        raise
    except (LookupError, ValueError, TypeError, OSError, StateLockedError) as error:
        raise click.ClickException(first_line(error))


def store_option(command: Command) -> Command:
    """Adds `--store` to a command; it may also be given before the command name."""
    return click.option("--store", "store", metavar="URL", help=STORE_HELP)(command)


def chosen_store(given: str | None, *, create: bool = False) -> Store:
    """The store named on the command, else before it, else by the environment, else ./runs.db."""
    outer = click.get_current_context().find_root().params.get("store")
    try:
        return open_store(given or outer, create=create)
    except OSError as error:  # a path the file system refuses (too long, not allowed)
        text = store_text(given or outer)
        shown = text if len(text) <= 80 else f"{text[:60]}… ({len(text)} characters)"
        failure = Misuse if error.errno == errno.ENAMETOOLONG else click.ClickException
        raise failure(f"--store {shown}: {error.strerror or first_line(error)}")
