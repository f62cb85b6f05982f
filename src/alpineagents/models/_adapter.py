"""`Adapter`: what every built-in model adapter shares, whether it talks to its provider through an SDK or not.

An adapter is a `Model` that maps a `Request` to a provider's wire form and the provider's answer back to a
`Reply`. The parts that are the same for every provider are written here once:

- the settings every adapter takes (`name`, the provider's prefix taken off it, `max_tokens`, `temperature`, `timeout`, `retries`, `price`,
  `supports`: its own default, `_DEFAULT_SUPPORTS`, unless given) and the `context_window` it was given
  (`_set_up_model`);
- the request: the conversation in the provider's wire form, each message mapped once by the adapter's
  `_wire_message` and kept so that a request maps only its new messages (`_conversation`, see `_request_cache`),
  the sampling settings sent only when set (`_sampling`), and the whole JSON body (`_request_body`);
- the provider's own cut-off stop reasons (`cut_off_stop_reasons`, declared on the class): a reply that stopped
  for one of them has its last tool call marked incomplete (`_truncate_if_cut_off`), and `Reply.cut_off` is true
  for it;
- the library error raised for a provider's failure: its HTTP status as a typed `status_code` (what `Retry`
  reads), and no credential in its text or its cause's (`_provider_error`).

An adapter built on an SDK adds the SDK's clients (`_clients.SDKClients`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, ClassVar, TypeVar

from alpineagents._values.cut_off import declare_cut_off
from alpineagents._values.numbers import is_whole
from alpineagents.errors import ProviderError
from alpineagents.models._json import WireList
from alpineagents.models._redact import redacted_error
from alpineagents.models._request_cache import MappedMessages
from alpineagents.models._wire import truncate_last_call
from alpineagents.models.base import Model
from alpineagents.types import Message, Price, Request

__all__ = ["Adapter", "status_of"]

_P = TypeVar("_P", bound=ProviderError)


def status_of(error: BaseException | None) -> int | None:
    """The HTTP status of a provider's answer that `error` (an SDK's exception) carries, or `None`.

    The one place that reads an SDK's own status attribute: the library's errors carry it typed.
    """
    for owner in (error, getattr(error, "response", None)):
        status = getattr(owner, "status_code", None)
        if is_whole(status):
            return status
    return None


class Adapter(Model):
    """Base of the built-in adapters: their settings, the kept wire form of recent conversations, their
    provider's cut-off stop reasons, and the errors they raise.

    A subclass sets `provider`, `cut_off_stop_reasons`, the features it declares when `supports=` is not given
    (`_DEFAULT_SUPPORTS`) and the prefixes its model names may come with (`_NAME_PREFIXES`), calls `_set_up_model` in `__init__`, implements
    `_wire_message` (one message in the provider's wire form), `_request_body` and `respond` (and `arespond` when
    it has an async transport).
    """

    cut_off_stop_reasons: ClassVar[frozenset[str]] = frozenset()
    """The provider's stop reasons meaning its output limit cut the reply off (counted by `Reply.cut_off`)."""
    _DEFAULT_SUPPORTS: ClassVar[frozenset[str]] = frozenset()
    """The features an adapter declares when it is given no `supports=`."""
    _NAME_PREFIXES: ClassVar[tuple[str, ...]] = ()
    """The prefixes a model name may start with (`"anthropic/"`): each is taken off once, in this order."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        declare_cut_off(cls.cut_off_stop_reasons)

    def _set_up_model(
        self,
        name: str,
        context_window: int,
        max_tokens: int | None,
        temperature: float | None,
        timeout: float | None,
        retries: int,
        price: Price | None,
        supports: Iterable[str] | None,
    ) -> None:
        """Store the settings every adapter takes: `name` without the adapter's `_NAME_PREFIXES`, and `supports` (or
        the adapter's `_DEFAULT_SUPPORTS` when it is `None`)."""
        for prefix in self._NAME_PREFIXES:
            name = name.removeprefix(prefix)
        self.name = name
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.retries = retries
        self.price = price
        self.supports = self._DEFAULT_SUPPORTS if supports is None else frozenset(supports)
        self._context_window = context_window
        self._mapped = MappedMessages()
        """The wire form of the messages of recent requests, reused for the unchanged start of the next one."""
        self._prepare_transport()

    def _prepare_transport(self) -> None:
        """Prepare what requests go through, at the end of `_set_up_model`: an adapter over an SDK sets up its
        clients here (made later, on first use). Nothing by default."""

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (the `context_window=` given)."""
        return self._context_window

    # -- the request ---------------------------------------------------------------------------------------------

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a run of same-role messages, merged) as the provider's wire items."""
        raise NotImplementedError

    def _wire_settings(self) -> Hashable:
        """What `_wire_message` reads of the adapter besides the message (its provider id, by default): the kept
        wire form is forgotten when it changes."""
        return self.provider

    def _conversation(self, messages: Iterable[Message]) -> WireList:
        """The wire items of `messages`: same-role runs merged, each run mapped by `_wire_message`, in order; the
        unchanged start of a conversation is reused from an earlier request (see `_request_cache`), and so is each
        item's JSON bytes (see `_json`)."""
        return self._mapped.wire_items(
            tuple(messages), self._wire_settings(), self._wire_message, self._merge_same_role
        )

    def _request_body(self, request: Request) -> dict[str, Any]:
        """The request as the JSON body the provider's API receives."""
        raise NotImplementedError

    def _sampling(self, max_tokens_key: str) -> dict[str, Any]:
        """The output-token cap (under the provider's key for it, `max_tokens_key`) and the temperature, each only
        when it is set: what is not set is left to the provider's default (so a temperature of 0 is sent)."""
        given: dict[str, Any] = {}
        if self.max_tokens is not None:
            given[max_tokens_key] = self.max_tokens
        if self.temperature is not None:
            given["temperature"] = self.temperature
        return given

    def _truncate_if_cut_off(self, blocks: list[Any], stop_reason: str | None) -> None:
        """When `stop_reason` is one of the provider's cut-off reasons and the last block is a tool call, mark
        that call's arguments incomplete."""
        truncate_last_call(blocks, stop_reason, self.cut_off_stop_reasons)

    # -- errors --------------------------------------------------------------------------------------------------

    def _configured_secrets(self) -> tuple[str | None, ...]:
        """The credentials the adapter was given (an adapter with an `api_key=` returns it)."""
        return ()

    def _known_secrets(self) -> list[str | None]:
        """Every credential the adapter knows of (an SDK adapter adds those of its clients)."""
        return list(self._configured_secrets())

    def _provider_error(self, wrapped: _P, cause: BaseException | None) -> _P:
        """`wrapped`, the error about to be raised from `cause`, with the HTTP status `cause` carries and with
        every credential taken out of its text and of `cause`'s: the known ones and those in the failed request's
        headers."""
        status = wrapped.status_code if wrapped.status_code is not None else status_of(cause)
        clean = redacted_error(wrapped, cause, self._known_secrets())
        clean.status_code = status
        return clean
