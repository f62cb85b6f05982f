"""Eval cases and datasets: what each case asks, what it expects, and the checks its runs must pass.

A dataset is written in Python (`Dataset([Case(...), ...])`) or loaded from a YAML file (a list of cases, or a
mapping with `cases:` and optional `checks:` every case gets) or a JSON-lines file (one case per line). A case in a
file is a mapping: `input` (required), `name`, `expected`, and `checks`, a list whose items each have one key:

    equals: VALUE (or null: the case's expected)   contains: TEXT      regex: PATTERN
    json_schema: {SCHEMA}                          called: TOOL, or {tool: TOOL, args: {...}}
    max_turns: N                                   max_cost: DOLLARS   judge: RUBRIC, or {rubric: ..., model: ...}

A case with `expected` and no checks gets `equals`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from alpineagents.errors import fix_message
from alpineagents.evals.checks import (
    CalledTool,
    CaseRun,
    Check,
    Contains,
    Equals,
    JSONSchema,
    Judge,
    MaxCost,
    MaxTurns,
    Regex,
    as_check,
)

__all__ = ["Case", "Dataset", "check_from_spec"]

CheckLike = Check | Callable[[CaseRun], Any]

_BUILDERS: dict[str, Callable[[Any], Check]] = {
    "equals": lambda value: Equals(value),
    "contains": lambda value: Contains(value),
    "regex": lambda value: Regex(value),
    "json_schema": lambda value: JSONSchema(value),
    "called": lambda value: (
        CalledTool(value) if isinstance(value, str) else CalledTool(value["tool"], value.get("args"))
    ),
    "max_turns": lambda value: MaxTurns(int(value)),
    "max_cost": lambda value: MaxCost(float(value)),
    "judge": lambda value: Judge(value) if isinstance(value, str) else Judge(value["rubric"], value.get("model")),
}


def check_from_spec(spec: Any, where: str = "a check") -> Check:
    """The check a one-key mapping of a dataset file describes (`{"contains": "Paris"}`)."""
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ValueError(
            fix_message(
                f"{where} is {spec!r}, and a check in a dataset is a mapping with one key",
                f"use one of: {', '.join(_BUILDERS)}",
                "checks:\n  - contains: Paris\n  - max_turns: 3",
            )
        )
    ((kind, value),) = spec.items()
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ValueError(fix_message(f"{where} has the unknown kind {kind!r}", f"use one of: {', '.join(_BUILDERS)}"))
    try:
        return builder(value)
    except (KeyError, TypeError, ValueError, re.error) as error:
        raise ValueError(f"{where} ({kind}: {value!r}) cannot be used: {type(error).__name__}: {error}") from error


class Case:
    """One eval case: the `input` (a prompt), an optional `expected` output, and the `checks` its runs must
    pass (with `expected` and no checks: `Equals()`). `name` defaults to `case-N` by its place in the dataset."""

    def __init__(
        self, input: str, *, expected: Any = None, checks: Iterable[CheckLike] = (), name: str | None = None
    ) -> None:
        if not isinstance(input, str) or not input.strip():
            raise ValueError(
                fix_message(
                    f"Case() needs an input prompt, a non-empty string (got: {input!r})",
                    "pass the prompt the agent gets",
                    'Case("What is the capital of France?", expected="Paris")',
                )
            )
        self.text = input
        self.expected = expected
        self.checks: tuple[Check, ...] = tuple(as_check(check) for check in checks)
        if not self.checks and expected is not None:
            self.checks = (Equals(),)
        self.name = name

    def __repr__(self) -> str:
        return f"Case({self.text!r}, name={self.name!r})"


class Dataset(Sequence[Case]):
    """The cases of an eval, in order, each with a unique name; `checks` are added to every case."""

    def __init__(self, cases: Iterable[Case], *, checks: Iterable[CheckLike] = (), name: str = "dataset") -> None:
        shared = tuple(as_check(check) for check in checks)
        self.name = name
        self.cases: list[Case] = []
        seen: set[str] = set()
        for number, case in enumerate(cases, start=1):
            if not isinstance(case, Case):
                raise TypeError(f"Dataset() takes Case objects; item {number} is {case!r}")
            case.name = case.name or f"case-{number}"
            if case.name in seen:
                raise ValueError(f"two cases of the dataset are named {case.name!r}: give each case its own name")
            seen.add(case.name)
            case.checks = case.checks + shared
            self.cases.append(case)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, index: Any) -> Any:
        return self.cases[index]

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    @classmethod
    def from_records(cls, records: Any, *, name: str = "dataset", where: str = "the dataset") -> Dataset:
        """A dataset from plain values: a list of case mappings, or `{"cases": [...], "checks": [...]}`."""
        shared: list[Check] = []
        if isinstance(records, Mapping):
            shared = [
                check_from_spec(spec, f"{where}: check {n}") for n, spec in enumerate(records.get("checks") or [], 1)
            ]
            records = records.get("cases")
        if not isinstance(records, list):
            raise ValueError(f"{where} holds no list of cases (write a list, or a mapping with cases:)")
        cases = [_case(record, f"{where}: case {number}") for number, record in enumerate(records, start=1)]
        return cls(cases, checks=shared, name=name)

    @classmethod
    def from_yaml(cls, text: str, *, name: str = "dataset") -> Dataset:
        """A dataset from YAML text."""
        return cls.from_records(yaml.safe_load(text), name=name)

    @classmethod
    def from_jsonl(cls, text: str, *, name: str = "dataset") -> Dataset:
        """A dataset from JSON lines, one case per line (blank lines skipped)."""
        records: list[Any] = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as error:
                    raise ValueError(f"line {number} of the dataset is not valid JSON ({error})") from error
        return cls.from_records(records, name=name)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Dataset:
        """A dataset from a `.yaml`/`.yml` or `.jsonl` file."""
        file = Path(path)
        text = file.read_text(encoding="utf-8")
        if file.suffix in (".yaml", ".yml"):
            return cls.from_yaml(text, name=file.stem)
        if file.suffix == ".jsonl":
            return cls.from_jsonl(text, name=file.stem)
        raise ValueError(f"{file} is neither .yaml, .yml nor .jsonl: say which format the dataset is in by its suffix")


def _case(record: Any, where: str) -> Case:
    if not isinstance(record, Mapping) or "input" not in record:
        raise ValueError(f"{where} is {record!r}: a case is a mapping with at least input:")
    unknown = sorted(set(record) - {"input", "name", "expected", "checks"})
    if unknown:
        raise ValueError(f"{where} has unknown keys {', '.join(unknown)} (a case has input, name, expected, checks)")
    checks = [check_from_spec(spec, f"{where}, check {n}") for n, spec in enumerate(record.get("checks") or [], 1)]
    return Case(record["input"], expected=record.get("expected"), checks=checks, name=record.get("name"))
