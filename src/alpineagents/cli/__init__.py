"""The `alpineagents` command line: run an Agent from your code, and list, show, resume, fork, remove, export and
view the runs kept in a store. `main` is the console script."""

from alpineagents.cli.commands import main

__all__ = ["main"]
