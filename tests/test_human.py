"""Human role and answer-format helpers (07 §2; checks 34-37)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any, Literal

import pytest

from alpineagents import human as human_module
from alpineagents.human import Human, check_returns, describe_choices, parse_answer


def test_exports():
    assert human_module.__all__ == ["Human", "check_returns", "parse_answer", "describe_choices"]


class SyncHuman(Human):
    def __init__(self, answer: Any = "yes") -> None:
        self.answer = answer
        self.threads: list[int] = []

    def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        self.threads.append(threading.get_ident())
        return parse_answer(self.answer, returns)


class AsyncHuman(Human):
    async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        return parse_answer("yes", returns)


def test_34_instantiation_rule():
    with pytest.raises(TypeError, match="Human implements neither ask nor aask") as info:
        Human()
    assert "Fix:" in str(info.value)

    class Middle(Human):
        pass

    with pytest.raises(TypeError, match="Middle implements neither ask nor aask"):
        Middle()

    class Leaf(Middle):
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "x"

    assert Leaf().ask(None, "q") == "x"  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"answers only asynchronously \(it implements aask, not ask\)") as info:
        AsyncHuman().ask(None, "Continue?", bool)  # type: ignore[arg-type]
    assert "await agent.aask_human(" in str(info.value)
    assert asyncio.run(AsyncHuman().aask(None, "Continue?", bool)) is True  # type: ignore[arg-type]


def test_aask_default_runs_ask_on_worker_thread():
    h = SyncHuman("yes")

    async def main() -> tuple[Any, int]:
        return await h.aask(None, "Go?", bool), threading.get_ident()  # type: ignore[arg-type]

    answer, loop_thread = asyncio.run(main())
    assert answer is True
    assert h.threads and h.threads[0] != loop_thread


def test_35_parse_answer():
    assert parse_answer(" Yes ", bool) is True
    assert parse_answer("0", bool) is False
    for word in ("y", "YES", "true", "1"):
        assert parse_answer(word, bool) is True
    for word in ("n", "No", "FALSE", "0"):
        assert parse_answer(word, bool) is False
    assert parse_answer(True, bool) is True
    assert parse_answer(False, bool) is False
    with pytest.raises(ValueError) as info:
        parse_answer("maybe", bool)
    assert str(info.value) == "Answer 'yes' or 'no'"
    assert parse_answer("1", Literal[1, 2]) == 1
    assert parse_answer(2, Literal[1, 2]) == 2
    assert parse_answer(1, Literal["1", "2"]) == "1"
    assert parse_answer(" b ", Literal["a", "b"]) == "b"
    with pytest.raises(ValueError) as info:
        parse_answer("c", Literal["a", "b"])
    assert str(info.value) == "Answer with one of: a, b"
    with pytest.raises(ValueError) as info:
        parse_answer("  ", str)
    assert str(info.value).startswith("Empty answers are not accepted")
    assert str(info.value) == "Empty answers are not accepted. Please type something"
    assert parse_answer(" hi ", str) == "hi"
    assert parse_answer(42, str) == "42"
    with pytest.raises(TypeError, match="ask_human does not support returns="):
        parse_answer("1", int)


def test_36_check_returns_and_describe_choices():
    @dataclasses.dataclass
    class Point:
        x: int

    for bad in (int, Point, Literal, list, None, "str"):
        with pytest.raises(TypeError, match="ask_human does not support returns=") as info:
            check_returns(bad)
        assert "str, bool or Literal[...]" in str(info.value)
    for good in (str, bool, Literal["a"], Literal[1, "b"]):
        check_returns(good)
    assert describe_choices(bool) == "yes/no"
    assert describe_choices(Literal["a", "b", "c"]) == "a/b/c"
    assert describe_choices(Literal["a", 1]) == "a/1"
    assert describe_choices(str) is None
    assert describe_choices(int) is None
