"""The Human role: a person who answers questions, and the answer-format helpers every Human shares.

A Human answers ``agent.ask_human``/``aask_human`` and ``DecideByHuman``. Subclasses implement ``ask`` (sync),
``aask`` (async) or both; the default ``aask`` runs ``ask`` on a daemon worker thread. Any object with a callable
``ask`` or ``aask`` may stand in for a Human.

Answer formats (``returns=``) are ``str``, ``bool`` or ``Literal[...]``: ``check_returns`` validates one,
``describe_choices`` names the choices shown to a person, ``parse_answer`` converts an answer.

Shared asking mechanism (not in ``__all__``; used by ``Agent.ask_human``/``aask_human`` and ``DecideByHuman``):
``Question(state, human, prompt, returns, ...)`` is one question to a Human chosen by the caller; ``ask()`` and
``await aask()`` check the State, raise ``NoHumanError`` when ``human`` is ``None``, check the answer format, ask,
and record one ``human`` entry with ``state._record_human`` once the answer is back.
"""

from __future__ import annotations

import inspect
from abc import ABC
from collections.abc import Awaitable
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, get_args, get_origin

from alpineagents import _observe as observe
from alpineagents._async import run_in_thread
from alpineagents._history.misuse import not_a_state_error
from alpineagents.errors import NoHumanError, fix_message

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["Human", "check_returns", "parse_answer", "describe_choices"]

_TRUE_WORDS = frozenset({"y", "yes", "true", "1"})
_FALSE_WORDS = frozenset({"n", "no", "false", "0"})
EMPTY_ANSWER = "Empty answers are not accepted. Please type something"
YES_OR_NO = "Answer 'yes' or 'no'"


class Human(ABC):  # noqa: B024 - abstract by the instantiation rule, not by abstract methods
    """A person who answers questions.

    Subclass it and implement ``ask``, ``aask`` or both. Implementations return a value in the ``returns``
    format (ask again themselves when an answer does not fit), ask one question at a time, and never change the
    State, call a model or interpret the answer beyond converting its format.

    Raises:
        TypeError: On instantiation, when the class overrides neither ``ask`` nor ``aask``.
    """

    def __new__(cls, *args: object, **kwargs: object) -> Any:
        if cls.ask is Human.ask and cls.aask is Human.aask:
            raise TypeError(
                fix_message(
                    f"{cls.__name__} implements neither ask nor aask",
                    "Implement ask(self, state, prompt, returns=str) (or async aask) in the subclass",
                    "class Console(Human):\n"
                    "    def ask(self, state, prompt, returns=str):\n"
                    "        return parse_answer(input(prompt + ' '), returns)",
                )
            )
        if inspect.iscoroutinefunction(cls.ask):
            raise TypeError(_async_ask(cls.__name__))
        return super().__new__(cls)

    def ask(self, state: State, prompt: str, returns: Any = str) -> Any:
        """Ask ``prompt`` and return the answer converted to ``returns`` (``str``, ``bool`` or ``Literal[...]``).

        Raises:
            TypeError: By default (a subclass that implements only ``aask`` answers only asynchronously).
        """
        raise TypeError(
            fix_message(
                f"{type(self).__name__} answers only asynchronously (it implements aask, not ask)",
                "Ask it from async code with await agent.aask_human(...), or implement ask as well",
                'answer = await agent.aask_human(state, "Continue?", returns=bool)',
            )
        )

    async def aask(self, state: State, prompt: str, returns: Any = str) -> Any:
        """Async twin of ``ask``. Default: runs ``ask`` on a daemon worker thread (with a copy of the contextvars).

        Cancelling the awaiting task does not stop that thread; its result is then dropped.
        """
        return await run_in_thread(self.ask, state, prompt, returns, name="alpineagents-human")


def _async_ask(shown: str) -> str:
    return fix_message(
        f"{shown}.ask is an async def, and ask must be a plain def (its answer would be a coroutine)",
        "Name the async method aask (await agent.aask_human(...) and arun() ask it), or make ask a plain def",
        "class Slack(Human):\n    async def aask(self, state, prompt, returns=str):\n        ...",
    )


def _is_literal(returns: object) -> bool:
    return get_origin(returns) is Literal and len(get_args(returns)) > 0


def check_returns(returns: object) -> None:
    """Check an answer format: ``str``, ``bool`` or a subscripted ``Literal[...]``.

    Raises:
        TypeError: Any other format (``int``, a dataclass, bare ``Literal``).
    """
    if returns is str or returns is bool or _is_literal(returns):
        return
    raise TypeError(
        fix_message(
            f"ask_human does not support returns={returns!r}",
            "Use str, bool or Literal[...] (a person answers in text)",
            'agent.ask_human(state, "Deploy now?", returns=bool)\n'
            'agent.ask_human(state, "Which one?", returns=Literal["a", "b"])',
        )
    )


def describe_choices(returns: object) -> str | None:
    """The choices shown to a person: ``"yes/no"`` for ``bool``, ``"a/b/c"`` for a Literal, else ``None``."""
    if returns is bool:
        return "yes/no"
    if _is_literal(returns):
        return "/".join(str(option) for option in get_args(returns))
    return None


def parse_answer(answer: object, returns: object) -> Any:
    """Convert ``answer`` to the ``returns`` format: the one conversion rule every Human shares.

    ``str``: ``str(answer)`` stripped, not empty. ``bool``: a real bool, or y/yes/true/1 and n/no/false/0 (any
    case, stripped). ``Literal[...]``: an option ``==`` the answer, else one whose ``str()`` equals the stripped
    answer; the option value itself is returned.

    Raises:
        TypeError: The format is not supported (``check_returns``).
        ValueError: The answer does not fit; the message is the hint shown before asking again.
    """
    check_returns(returns)
    if returns is str:
        text = str(answer).strip()
        if not text:
            raise ValueError(EMPTY_ANSWER)
        return text
    if returns is bool:
        if isinstance(answer, bool):
            return answer
        word = str(answer).strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise ValueError(YES_OR_NO)
    options = get_args(returns)
    for option in options:
        try:
            if option == answer:
                return option
        except Exception:  # noqa: BLE001 - an answer that cannot be compared simply does not match
            continue
    text = str(answer).strip()
    for option in options:
        if str(option) == text:
            return option
    raise ValueError("Answer with one of: " + ", ".join(str(option) for option in options))


# --- the shared ask-human mechanism --------------------------------------------------------------------------


class AsksSync(Protocol):
    """Anything that answers questions synchronously, with a Human's ``ask``."""

    def ask(self, state: State, prompt: str, returns: Any = str) -> Any: ...


class AsksAsync(Protocol):
    """Anything that answers questions asynchronously, with a Human's ``aask``."""

    def aask(self, state: State, prompt: str, returns: Any = str) -> Awaitable[Any]: ...


HumanLike = Human | AsksSync | AsksAsync
"""What may answer questions: a ``Human``, or any object with a callable ``ask`` or ``aask``."""


def answers_sync(human: object) -> TypeGuard[AsksSync]:
    """True when ``human`` has a callable ``ask`` (every ``Human`` has one, the default raising)."""
    return callable(getattr(human, "ask", None))


def answers_async(human: object) -> TypeGuard[AsksAsync]:
    """True when ``human`` has a callable ``aask`` (every ``Human`` has one, the default running ``ask``)."""
    return callable(getattr(human, "aask", None))


def answers_only_async(human: object) -> bool:
    """True when ``human`` cannot answer a sync question: a ``Human`` that implements only ``aask``, or another
    object without a callable ``ask``."""
    if isinstance(human, Human):
        return type(human).ask is Human.ask
    return not answers_sync(human)


def _check_state(state: object, method: str) -> None:
    from alpineagents.state import State

    if not isinstance(state, State):
        raise not_a_state_error(
            method, state, "Pass the State the question is about", f'agent.{method}(state, "Continue?", returns=bool)'
        )


def _no_human(prompt: str, method: str, inherited: bool) -> NoHumanError:
    if inherited:
        problem = (
            f"{method}() was called by a subagent with no human to ask (question: {prompt!r}); "
            "it was not given a human and the run that started it has human=None"
        )
        fix = "Give a human to the subagent's Agent, or to the Agent of the run that started it"
    else:
        problem = f"{method}() was called on an Agent with human=None (question: {prompt!r})"
        fix = "Give the Agent a human, e.g. the terminal"
    return NoHumanError(fix_message(problem, fix, 'agent = Agent("claude-sonnet-5", human=Terminal())'))


def _plain(human: object, answer: object) -> object:
    """The answer of a sync ``ask``, refused when it is awaitable (an object whose ``ask`` is an async def)."""
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: closed, so that no "never awaited" warning follows
        raise TypeError(_async_ask(type(human).__name__))
    return answer


def _recorded(state: State, prompt: str, answer: object) -> Any:
    """Record the exchange in ``state``, tell the tracer (when tracing is on) and give the answer back."""
    state._record_human(prompt, answer)
    if (observer := observe.OBSERVER) is not None:
        observer.answered(state, prompt, answer)
    return answer


@dataclass(frozen=True, slots=True)
class Question:
    """One question to a Human the caller chose, written once for both twins: ``ask()`` asks it synchronously,
    ``await aask()`` asynchronously. Either checks first (the State, ``NoHumanError`` when ``human`` is ``None``,
    the answer format), records one ``ExchangeEntry(kind="human")`` in ``state`` after the answer comes back and
    returns the Human's value unchanged; nothing is recorded when the Human raises.

    ``method`` names the Agent method in messages; ``inherited`` says that a ``None`` human was inherited by a
    subagent (another ``NoHumanError`` wording).
    """

    state: State
    human: HumanLike | None
    prompt: str
    returns: object = str
    _: KW_ONLY
    method: str = "ask_human"
    inherited: bool = False

    def _checked(self) -> HumanLike:
        _check_state(self.state, self.method)
        if self.human is None:
            raise _no_human(self.prompt, self.method, self.inherited)
        check_returns(self.returns)
        return self.human

    def ask(self) -> Any:
        """Ask synchronously.

        Raises:
            TypeError: ``state`` is not a State, an unsupported ``returns``, or a Human that answers only
                asynchronously.
            NoHumanError: ``human`` is ``None``.
        """
        human = self._checked()
        if not answers_sync(human):
            raise TypeError(
                fix_message(
                    f"human={human!r} answers only asynchronously (it has aask, not ask)",
                    f"Ask from async code with await agent.a{self.method}(...), or give the human a sync ask method",
                    f'answer = await agent.a{self.method}(state, "Continue?", returns=bool)',
                )
            )
        answer = _plain(human, human.ask(self.state, self.prompt, self.returns))
        return _recorded(self.state, self.prompt, answer)

    async def aask(self) -> Any:
        """Ask asynchronously: await the Human's ``aask`` when it has a callable one (on the event loop), else
        run its ``ask`` on a worker thread. Same checks and record as ``ask``."""
        human, state, prompt, returns = self._checked(), self.state, self.prompt, self.returns
        if answers_async(human):
            answer = await human.aask(state, prompt, returns)
        elif answers_sync(human):
            answer = _plain(human, await run_in_thread(human.ask, state, prompt, returns, name="alpineagents-human"))
        else:  # unreachable: a Human, or an object with ask or aask, was checked when it was given
            raise TypeError(f"human={human!r} has neither an ask nor an aask method")
        return _recorded(state, prompt, answer)
