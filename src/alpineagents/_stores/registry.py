"""The built-in stores, listed once: their class names, the modules that hold them, and what the command line's
`--store` calls them.

Read by `alpineagents.store` and `alpineagents` (which make each class on first use: importing the package loads no
store module it does not need) and by the command line (which picks a store by the kind of `--store` it was given).
A new built-in store is one more line here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["BuiltinStore", "BUILTIN_STORES", "builtin_store", "store_of_kind"]


@dataclass(frozen=True)
class BuiltinStore:
    """One built-in store: `name` is its class name (and the name the package exports), `module` the module that
    defines it, `kind` what `--store` calls it, `extra` the pip extra it needs (`None`: nothing to install)."""

    name: str
    module: str
    kind: str
    extra: str | None = None

    def load(self) -> Any:
        """The store class (its module imported now, if it was not yet)."""
        return getattr(importlib.import_module(self.module), self.name)


BUILTIN_STORES = (
    BuiltinStore("FileStore", "alpineagents._stores.filestore", "file"),
    BuiltinStore("SQLiteStore", "alpineagents._stores.sqlite", "sqlite"),
    BuiltinStore("PostgresStore", "alpineagents._stores.postgres", "postgres", extra="postgres"),
)


def builtin_store(name: str) -> BuiltinStore | None:
    """The built-in store whose class name is `name`, or `None`."""
    return next((store for store in BUILTIN_STORES if store.name == name), None)


def store_of_kind(kind: str) -> BuiltinStore:
    """The built-in store that `--store` calls `kind` ("file", "sqlite", "postgres").

    Raises:
        LookupError: No built-in store is of that kind.
    """
    for store in BUILTIN_STORES:
        if store.kind == kind:
            return store
    raise LookupError(f"no built-in store of kind {kind!r}")
