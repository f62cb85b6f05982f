"""Cassettes: one stored run in one file, in the store's own JSON-lines form, so it reads and diffs well in git.

A cassette file holds exactly what a `FileStore` keeps in a State's `log.jsonl`: one compact JSON object per history
entry, in `seq` order, each line ending with a newline. It is read back through `Store.load`, so the same checks
apply (format version, `seq` order, damaged entries). No key ever goes into one: before a cassette is written,
its text is searched for the value of every environment variable whose name says it holds a secret, and a
cassette that holds one is refused.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from alpineagents._secrets import environment_secrets
from alpineagents._serial import VERSION, entry_to_dict
from alpineagents._stores.lines import log_bytes
from alpineagents.errors import fix_message
from alpineagents.state import State
from alpineagents.store import Record, Store

__all__ = ["CassetteStore", "read_cassette", "write_cassette", "secret_values", "cassette_id"]


def cassette_id(path: str | os.PathLike[str]) -> str:
    """The State id of a cassette: its file name without `.jsonl`, each character an id cannot hold as `-`."""
    stem = Path(path).name.removesuffix(".jsonl")
    return re.sub(r"[^A-Za-z0-9_-]", "-", stem)[:128] or "cassette"


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables whose name says they hold a secret (`*_API_KEY`, `*TOKEN*`, ...), by name."""
    return environment_secrets(environ)


class _OneRun(Store):
    """A store that holds one record, read-only: what `load` reads a cassette through."""

    def __init__(self, state_id: str, entries: list[dict[str, Any]]) -> None:
        self._record = Record(entries, {"v": VERSION})
        self._id = state_id

    def read(self, state_id: str) -> Record | None:
        return self._record if state_id == self._id else None

    def write(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
    ) -> None:
        raise TypeError("a cassette is read-only here")


def read_cassette(path: str | os.PathLike[str]) -> State:
    """The run a cassette file holds, loaded as a `Store` loads a State (same checks, same errors)."""
    import json

    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(
            fix_message(
                f"no cassette at {str(file)!r}",
                "record it first: run the test with pytest --record-runs (it then calls the real model once)",
            )
        ) from None
    lines = data.split(b"\n")[:-1]  # a last segment without a newline is a torn write: ignored, as a store does
    entries: list[dict[str, Any]] = []
    state_id = cassette_id(file)
    for number, line in enumerate(lines, start=1):
        try:
            entries.append(json.loads(line))
        except ValueError as error:
            raise ValueError(f"cassette {str(file)!r} is damaged: line {number} is not valid JSON ({error})") from error
    return _OneRun(state_id, entries).load(state_id)


def _check_secrets(text: str, where: str, secrets: Mapping[str, str]) -> None:
    for name, value in secrets.items():
        if value in text:
            line = text[: text.index(value)].count("\n") + 1
            raise ValueError(
                fix_message(
                    f"the cassette {where} would hold the value of ${name} (line {line}), and a key never goes into "
                    "a cassette; nothing was written",
                    "keep secrets out of messages and tool results (a tool should use a key, not return it)",
                )
            )


def write_cassette(
    path: str | os.PathLike[str], state: State, *, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> None:
    """Write `state`'s history to `path` as JSON lines (replacing the file whole), after checking that no secret
    (a value of `secrets`, or of a secret-named environment variable) is in it."""
    file = Path(path)
    data = log_bytes([entry_to_dict(entry, seq) for seq, entry in enumerate(state.history)])
    known = secret_values(environ)
    known.update({f"secrets[{index}]": value for index, value in enumerate(secrets) if value})
    _check_secrets(data.decode("utf-8", "replace"), repr(str(file)), known)
    file.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".", suffix=".jsonl", dir=file.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class CassetteStore(Store):
    """A store in memory for the runs of one test: `tops` are the States saved that no tool call started (a
    cassette keeps one such run); subagent States are kept too, so they run as usual."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.tops: list[str] = []

    def write(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
    ) -> None:
        record = self.records.get(state_id)
        if create:
            if record is not None:
                raise ValueError(f"a State with id {state_id!r} is already saved in {self!r}")
            record = self.records[state_id] = Record([], {})
            if info.get("parent_id") is None:
                self.tops.append(state_id)
        elif record is None:
            raise LookupError(f"no saved State with id {state_id!r} in {self!r} (was it deleted?)")
        have = len(record.entries)
        record.entries.extend(entry for entry in entries if entry["seq"] >= have)
        self.records[state_id] = Record(record.entries, dict(info))

    def read(self, state_id: str) -> Record | None:
        return self.records.get(state_id)

    def __repr__(self) -> str:
        return "CassetteStore()"
