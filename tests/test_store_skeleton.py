"""A skeleton store, the shape the "adding a store" checklist of docs/architecture.md starts from, passes the store
contract of `store_kinds.py`; a careless one that renumbers a gap away does not."""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from alpineagents.store import Record, StateInfo, Store
from helpers.store_kinds import check_contract


class ShelfStore(Store):
    """States on named shelves in this process's memory, each kept as JSON text (as a real store keeps it).
    Two `ShelfStore`s with one name are the same storage, so they are equal."""

    _shelves: ClassVar[dict[str, dict[str, tuple[list[str], str]]]] = {}
    _guard = threading.Lock()

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShelfStore) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("shelf", self.name))

    def write(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
    ) -> None:
        with self._guard:
            shelf = self._shelves.setdefault(self.name, {})
            if create and state_id in shelf:
                raise ValueError(f"a State with id {state_id!r} is already saved in {self!r}")
            if not create and state_id not in shelf:
                raise LookupError(f"no saved State with id {state_id!r} in {self!r}")
            lines = builtins.list(shelf[state_id][0]) if state_id in shelf else []
            for entry in entries:
                line = json.dumps(entry, separators=(",", ":"))
                seq = entry["seq"]
                if seq < len(lines):
                    if json.loads(lines[seq]) != entry:
                        raise ValueError(f"history entry {seq} of {state_id!r} differs from the saved one")
                    continue
                if seq != len(lines):
                    raise ValueError(f"history entries for {state_id!r} start at seq {seq}, but {len(lines)} are saved")
                lines.append(line)
            shelf[state_id] = (lines, json.dumps(dict(info)))  # the entries and the info, at once

    def read(self, state_id: str) -> Record | None:
        with self._guard:
            found = self._shelves.get(self.name, {}).get(state_id)
        if found is None:
            return None
        lines, info = found
        return Record([json.loads(line) for line in lines], json.loads(info))

    def list(self) -> builtins.list[StateInfo]:
        with self._guard:
            infos = [(state_id, info) for state_id, (_, info) in self._shelves.get(self.name, {}).items()]
        listed = [StateInfo.from_info(state_id, json.loads(info)) for state_id, info in infos]
        listed.sort(key=lambda i: i.id)
        listed.sort(
            key=lambda i: (i.updated_at is not None, i.updated_at.timestamp() if i.updated_at else 0), reverse=True
        )
        return listed

    def delete(self, state_id: str) -> None:
        with self._guard:
            self._shelves.get(self.name, {}).pop(state_id, None)


def test_a_skeleton_store_passes_the_store_contract() -> None:
    check_contract(ShelfStore("skeleton"), lambda store: ShelfStore(store.name))  # pyright: ignore[reportAttributeAccessIssue]


def test_the_contract_fails_a_store_that_accepts_a_gap() -> None:
    class Careless(ShelfStore):
        def write(
            self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
        ) -> None:
            gapless = [dict(entry, seq=entry["seq"]) for entry in entries]
            record = self.read(state_id)
            have = 0 if record is None else len(record.entries)
            for entry in gapless:  # renumbers a gap away instead of refusing it
                if entry["seq"] > have:
                    entry["seq"] = have
                have = max(have, entry["seq"] + 1)
            super().write(state_id, gapless, info, create=create)

    with pytest.raises(AssertionError, match="gap"):
        check_contract(Careless("careless"), lambda store: Careless(store.name))  # pyright: ignore[reportAttributeAccessIssue]


def test_a_line_in_the_registry_makes_a_store_a_built_in_export(monkeypatch: pytest.MonkeyPatch) -> None:
    """What step 2 of the store checklist promises: one line in `BUILTIN_STORES` and the package serves the class on
    first use (from `alpineagents.store` too, for a store that needs no extra)."""
    import alpineagents
    import alpineagents.store as store_module
    from alpineagents._stores import registry

    line = registry.BuiltinStore("ShelfStore", __name__, "shelf")
    monkeypatch.setattr(registry, "BUILTIN_STORES", (*registry.BUILTIN_STORES, line))
    try:
        assert alpineagents.ShelfStore is ShelfStore  # pyright: ignore[reportAttributeAccessIssue]
        assert store_module.ShelfStore is ShelfStore  # pyright: ignore[reportAttributeAccessIssue]
    finally:
        vars(store_module).pop("ShelfStore", None)  # the module keeps what it made on first use: forget it
