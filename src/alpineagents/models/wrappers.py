"""Wrapper Models: `Retry` starts a failed reply over, `Fallback` moves on to the next model.

Both follow the wrapper contract: they copy the settings (`name`, `provider`, `supports`, `price`, `max_tokens`,
`temperature`, `timeout`, `retries`) from the (primary) inner model, delegate `context_window`, `count_tokens`,
`mark_cache`, `compact` and `acompact`, implement `respond` and `arespond`, pass `on_text`/`on_event` through
(an `OnStream` stays one), and report each restart through `on_event` (`ModelEvent("retry", ...)` or
`ModelEvent("fallback", ...)`), so the Agent records it in the history as a `model_event` entry.

Retried failures are the ones another attempt may get past: a `RateLimitError`, and a `ProviderError` from a
timeout, a dropped connection, a stream that broke or ended early, an overloaded or failing server (408, 409, 429,
5xx, 529). A `ProviderError` whose `status_code` is another 4xx status or that was caused by a request the adapter
could not build, an `AuthError` and a `ContextTooLongError` are raised at once, as is every exception that is not a
`ProviderError` (a callback's exception, `KeyboardInterrupt`, `asyncio.CancelledError`, misuse errors).

Streamed text of a failed attempt: `on_text` already received it and it is not taken back. The event reported
before the next attempt says so (its `data` holds `"streamed_chars"`, the length of the text streamed by the
failed attempt), and the next attempt streams its reply from the start. The returned `Reply` holds only the
successful attempt's blocks and usage; tokens of a failed attempt are not counted anywhere.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from alpineagents._values.numbers import is_number, is_whole
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, fix_message
from alpineagents.models.base import ForwardingStream, Model, OnEvent, OnStream, OnText
from alpineagents.types import ModelEvent, Reply, Request

__all__ = ["Retry", "Fallback", "is_retryable"]

_RETRY_STATUS = frozenset({408, 409, 429})
_SETTINGS = ("name", "provider", "supports", "price", "max_tokens", "temperature", "timeout", "retries")
"""The settings a wrapper copies from its (primary) inner model: every setting a `Model` declares."""


def is_retryable(error: BaseException) -> bool:
    """True when another attempt (or another model) may get past `error`.

    Only `ProviderError`s are retryable, and not `AuthError`, `ContextTooLongError`, nor a `ProviderError` whose
    `status_code` is in 400-499 other than 408, 409 and 429, nor one caused by a `TypeError` (a request that could
    not be built).
    """
    if not isinstance(error, ProviderError):
        return False
    if isinstance(error, (AuthError, ContextTooLongError)):
        return False
    cause = error.__cause__
    if isinstance(cause, TypeError):
        return False
    status = error.status_code
    if status is not None and 400 <= status < 500 and status not in _RETRY_STATUS:
        return False
    return True


def _describe(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _check_model(value: object, role: str, example: str) -> Model:
    if not isinstance(value, Model):
        raise TypeError(
            fix_message(
                f"{role} must be a Model instance (got: {type(value).__name__})",
                "Build the adapter first, e.g. with resolve_model('anthropic/claude-sonnet-5')",
                example,
            )
        )
    return value


class _Counter:
    """Counts the characters of text streamed to `on_text` during one attempt (an `OnStream` is passed through
    whole, only its text counted: what the retry event records does not depend on who reads)."""

    __slots__ = ("on_text", "chars")

    def __init__(self, on_text: OnText | None) -> None:
        self.on_text = on_text
        self.chars = 0

    def wrap(self) -> OnText | None:
        on_text = self.on_text
        if on_text is None:
            return None
        if isinstance(on_text, OnStream):
            return _CountedStream(self, on_text)

        def counted(chunk: str) -> None:
            self.chars += len(chunk)
            on_text(chunk)

        return counted


class _CountedStream(ForwardingStream):
    """An `OnStream` passed through to the inner model, its text counted."""

    __slots__ = ("counter",)

    def __init__(self, counter: _Counter, inner: OnStream) -> None:
        super().__init__(inner)
        self.counter = counter

    def __call__(self, chunk: str) -> None:
        self.counter.chars += len(chunk)
        self.inner(chunk)


class _Wrapper(Model):
    """Shared delegation of the wrapper Models."""

    _inner: Model

    def _copy_settings(self, inner: Model) -> None:
        for setting in _SETTINGS:
            setattr(self, setting, getattr(inner, setting))

    @property
    def context_window(self) -> int:
        """The inner model's context window."""
        return self._inner.context_window

    def count_tokens(self, request: Request) -> int:
        """The inner model's estimate."""
        return self._inner.count_tokens(request)

    def mark_cache(self, request: Request) -> Request:
        """The inner model's cache markers."""
        return self._inner.mark_cache(request)

    # -- the attempts: one loop for both wrappers, sync and async ------------------------------------------------

    def _attempts(self) -> list[Model]:
        """The model of each attempt, in order."""
        raise NotImplementedError

    def _after_failure(self, error: ProviderError, number: int, chars: int, on_event: OnEvent | None) -> float:
        """After attempt `number` (0-based) failed: re-raise `error` when there is no next attempt or it cannot get
        past the failure; otherwise report the next attempt and return the wait before it."""
        raise NotImplementedError

    def _run(
        self, call: Callable[[Model, OnText | None], Reply], on_text: OnText | None, on_event: OnEvent | None
    ) -> Reply:
        for number, model in enumerate(self._attempts()):
            counter = _Counter(on_text)
            try:
                return call(model, counter.wrap())
            except ProviderError as error:
                delay = self._after_failure(error, number, counter.chars, on_event)
            if delay:
                time.sleep(delay)
        raise AssertionError("unreachable: the last failure is re-raised")  # pragma: no cover

    async def _arun(
        self,
        call: Callable[[Model, OnText | None], Awaitable[Reply]],
        on_text: OnText | None,
        on_event: OnEvent | None,
    ) -> Reply:
        for number, model in enumerate(self._attempts()):
            counter = _Counter(on_text)
            try:
                return await call(model, counter.wrap())
            except ProviderError as error:
                delay = self._after_failure(error, number, counter.chars, on_event)
            if delay:
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last failure is re-raised")  # pragma: no cover


class Retry(_Wrapper):
    """Starts a reply over when it failed in a way another attempt may get past.

    `Retry(model, attempts=3, backoff=1.0)`: at most `attempts` attempts in all; before attempt n+1 it waits
    `backoff * 2 ** (n - 1)` seconds (at most 60), and reports `ModelEvent("retry", ...)` through `on_event`.
    These retries come on top of the SDK's own (which only cover failures before a reply starts streaming).
    `compact`/`acompact` are retried the same way.
    """

    def __init__(self, model: Model, attempts: int = 3, backoff: float = 1.0) -> None:
        self._inner = _check_model(model, "Retry's model", "Retry(Anthropic('claude-sonnet-5'), attempts=3)")
        if not is_whole(attempts) or attempts < 1:
            raise ValueError(
                fix_message(
                    f"Retry attempts must be a whole number of 1 or more (got: {attempts!r})",
                    "Give the total number of attempts, the first one included",
                    "Retry(model, attempts=3)",
                )
            )
        if not is_number(backoff) or backoff < 0:
            raise ValueError(
                fix_message(
                    f"Retry backoff must be a number of seconds, 0 or more (got: {backoff!r})",
                    "Give the wait before the second attempt; it doubles for each later one",
                    "Retry(model, backoff=1.0)",
                )
            )
        self.attempts = attempts
        """Attempts in all, the first one included."""
        self.backoff = float(backoff)
        """Seconds to wait before the second attempt; doubled for each later one (at most 60)."""
        self._copy_settings(self._inner)

    @property
    def model(self) -> Model:
        """The wrapped model."""
        return self._inner

    def __repr__(self) -> str:
        return f"Retry({self._inner!r}, attempts={self.attempts}, backoff={self.backoff})"

    def _delay(self, attempt: int) -> float:
        return min(60.0, self.backoff * 2 ** (attempt - 1))

    def _event(self, error: BaseException, attempt: int, chars: int, delay: float) -> ModelEvent:
        streamed = f"; {chars} characters of streamed text are discarded" if chars else ""
        return ModelEvent(
            "retry",
            f"{self.name} failed ({_describe(error)}){streamed}; starting the reply over "
            f"(attempt {attempt + 1} of {self.attempts})",
            {
                "model": self.name,
                "error": type(error).__name__,
                "attempt": attempt + 1,
                "attempts": self.attempts,
                "delay": delay,
                "streamed_chars": chars,
            },
        )

    def _attempts(self) -> list[Model]:
        return [self._inner] * self.attempts

    def _after_failure(self, error: ProviderError, number: int, chars: int, on_event: OnEvent | None) -> float:
        attempt = number + 1
        if attempt >= self.attempts or not is_retryable(error):
            raise error
        delay = self._delay(attempt)
        if on_event is not None:
            on_event(self._event(error, attempt, chars, delay))
        return delay

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """The inner model's reply, started over after a retryable failure (at most `attempts` times in all)."""
        return self._run(lambda m, text: m.respond(request, text, on_event), on_text, on_event)

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond`."""
        return await self._arun(lambda m, text: m.arespond(request, text, on_event), on_text, on_event)

    def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
        """The inner model's `compact`, retried like `respond`."""
        return self._run(lambda m, _text: m.compact(request, instructions, on_event), None, on_event)

    async def acompact(
        self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None
    ) -> Reply:
        """The inner model's `acompact`, retried like `arespond`."""
        return await self._arun(lambda m, _text: m.acompact(request, instructions, on_event), None, on_event)


class Fallback(_Wrapper):
    """Asks the next model when one fails in a way another attempt may get past.

    `Fallback(primary, *others)` tries the models in order. Before moving on it reports
    `ModelEvent("fallback", ...)` through `on_event`; the reply's `model` names the model that answered, and its
    cost uses that model's price. The settings (`name`, `provider`, ...) are the primary's; `context_window` is
    the smallest of all, so a context that fits is never too long for a later model. Each model's own
    `mark_cache` is applied to the request it gets. `compact`/`acompact` fall back the same way.
    """

    def __init__(self, primary: Model, *others: Model) -> None:
        example = "Fallback(Anthropic('claude-sonnet-5'), OpenAICompatible('gpt-5'))"
        models = [_check_model(primary, "Fallback's primary model", example)]
        models.extend(_check_model(m, "Each model given to Fallback", example) for m in others)
        if not others:
            raise ValueError(
                fix_message(
                    "Fallback got only one model, so it has nothing to fall back to",
                    "Give the primary model and at least one other",
                    example,
                )
            )
        self.models: tuple[Model, ...] = tuple(models)
        """The models, in the order they are tried."""
        self._inner = models[0]
        self._copy_settings(self._inner)

    def __repr__(self) -> str:
        return f"Fallback({', '.join(repr(m) for m in self.models)})"

    @property
    def context_window(self) -> int:
        """The smallest context window of the models."""
        return min(m.context_window for m in self.models)

    def mark_cache(self, request: Request) -> Request:
        """The request unchanged; each model places its own markers when it is asked."""
        return request

    def _event(self, error: BaseException, failed: Model, following: Model, chars: int) -> ModelEvent:
        streamed = f"; {chars} characters of streamed text are discarded" if chars else ""
        return ModelEvent(
            "fallback",
            f"{failed.name} failed ({_describe(error)}){streamed}; switching to {following.name}",
            {
                "from": failed.name,
                "to": following.name,
                "error": type(error).__name__,
                "streamed_chars": chars,
            },
        )

    def _attempts(self) -> list[Model]:
        return list(self.models)

    def _after_failure(self, error: ProviderError, number: int, chars: int, on_event: OnEvent | None) -> float:
        if number == len(self.models) - 1 or not is_retryable(error):
            raise error
        if on_event is not None:
            on_event(self._event(error, self.models[number], self.models[number + 1], chars))
        return 0.0

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """The first reply a model gives, moving on after a retryable failure."""
        return self._run(lambda m, text: m.respond(m.mark_cache(request), text, on_event), on_text, on_event)

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond`."""
        return await self._arun(lambda m, text: m.arespond(m.mark_cache(request), text, on_event), on_text, on_event)

    def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
        """The first summary a model gives, moving on after a retryable failure."""
        return self._run(lambda m, _text: m.compact(m.mark_cache(request), instructions, on_event), None, on_event)

    async def acompact(
        self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None
    ) -> Reply:
        """Async twin of `compact`."""
        return await self._arun(
            lambda m, _text: m.acompact(m.mark_cache(request), instructions, on_event), None, on_event
        )
