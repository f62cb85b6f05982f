"""Finding the Agent (or the Workers) a command names as MODULE:AGENT.

MODULE is a dotted module name importable from the current folder (`myproject.agents`) or the path of a Python
file (`agents.py`, `tools/agents.py`); AGENT is the name of an `Agent` in it. A name that holds a function is
called with no arguments, so a module can build its Agent lazily (`make_agent`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import TypeVar, cast

import click

from alpineagents.agent import Agent
from alpineagents.cli.stores import Misuse

T = TypeVar("T")


def _split(spec: str) -> tuple[str, str]:
    module, sep, name = spec.rpartition(":")
    if not sep or not module or not name:
        raise Misuse(f"{spec!r} is not MODULE:AGENT (for example: myproject.agents:agent or agents.py:agent)")
    return module, name


def _import_file(path: str) -> ModuleType:
    if not os.path.isfile(path):
        raise Misuse(f"{path} is not a file")
    name = "alpineagents_cli_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Misuse(f"{path} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _import(module: str) -> ModuleType:
    """The module, imported with the current folder first on the path, as `python -m` would."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if module.endswith(".py") or os.sep in module:
            return _import_file(module)
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name and module.startswith(error.name):
            raise Misuse(f"cannot import {module}: no module named {error.name!r}")
        raise click.ClickException(f"cannot import {module}: {type(error).__name__}: {error}")
    except (Misuse, click.ClickException):
        raise
    except Exception as error:  # the user's module raised while importing
        first = str(error).splitlines()[0] if str(error) else ""
        raise click.ClickException(f"cannot import {module}: {type(error).__name__}: {first}")


def load_object(spec: str, kind: type[T]) -> T:
    """The `kind` object that `spec` (MODULE:NAME) names; one clear error line when it cannot be found."""
    module_name, name = _split(spec)
    module = _import(module_name)
    found: object = getattr(module, name, None)
    if found is None:
        raise Misuse(f"{module_name} has no {name!r}")
    made: object = found() if callable(found) and not isinstance(found, (kind, type)) else found
    if isinstance(made, kind):
        return cast(T, made)  # pyright narrows `made` to T | Callable here, though the check above is on `kind`
    article = "an" if kind.__name__[0] in "AEIOU" else "a"
    raise Misuse(f"{spec} is a {type(made).__name__}, not {article} {kind.__name__}")


def load_agent(spec: str) -> Agent:
    """The Agent that `spec` (MODULE:AGENT) names; one clear error line when it cannot be found."""
    return load_object(spec, Agent)
