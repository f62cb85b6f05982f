"""The SDK clients of an adapter: created lazily, one sync client and one async client per event loop, closed
with their loop; and the credentials they hold, for keeping them out of error texts. The rest an adapter needs
is in `_adapter.Adapter`, its base."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

from alpineagents._async import run_in_thread
from alpineagents.models._adapter import Adapter
from alpineagents.types import Price

__all__ = ["close_with_loop", "SDKClients"]

_CLIENT_SECRETS = ("api_key", "auth_token", "aws_access_key", "aws_secret_key", "aws_session_token", "access_token")
"""The attributes an SDK client keeps a credential in (the last four: Anthropic's Bedrock and Vertex clients)."""


def close_with_loop(client: Any) -> Any:
    """Arrange for `client.close()` to run when the running event loop shuts down its async generators (as
    `asyncio.run` does before it closes the loop), so a per-loop SDK client leaves no open connections behind.

    Returns the holder (a suspended async generator) that must stay referenced as long as the client, or `None`
    when the client has no `close`. Call it on the loop's thread while the loop runs.
    """
    close = getattr(client, "close", None)
    if not callable(close):
        return None

    async def holder() -> AsyncIterator[None]:
        try:
            yield
        finally:
            result = close()
            if inspect.isawaitable(result):
                await result

    generator = holder()
    step: Any = generator.__anext__()  # registers the generator with the running loop
    try:
        step.send(None)  # run it up to its `yield` (nothing is awaited before it)
    except StopIteration:
        pass
    return generator


class SDKClients(Adapter):
    """An adapter built on a provider's SDK: its clients, created lazily (one sync client, and one async client
    per event loop), and their credentials, kept out of error texts.

    An adapter sets `_SDK` (the SDK's module name), `_SYNC_CLIENT`/`_ASYNC_CLIENT` (the client class names, looked
    up on the module each time a client is made, so tests can replace them), `_WARM_ATTRIBUTES` (client attributes
    whose first use imports slowly) and implements `_client_kwargs()`; `_set_up_model` prepares the clients.
    `_client()`/`_async_client()` are fixed seams: tests replace them on the instance to stand in for the SDK.
    """

    _SDK: str
    _SYNC_CLIENT: str
    _ASYNC_CLIENT: str
    _WARM_ATTRIBUTES: tuple[str, ...] = ()

    def _set_up_model(
        self,
        name: str,
        context_window: int,
        max_tokens: int | None,
        temperature: float | None,
        timeout: float | None,
        retries: int,
        price: Price | None,
    ) -> None:
        """Store the settings every adapter takes and prepare the SDK clients (made later, on first use)."""
        super()._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price)
        self._init_clients()

    def _init_clients(self) -> None:
        self._sdk_client: Any = None
        self._given_client: Any = None
        """A client the caller handed in (its key is redacted from errors like those of the clients made here)."""
        self._client_lock = threading.Lock()
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def _client_kwargs(self) -> dict[str, Any]:
        raise NotImplementedError

    def _known_secrets(self) -> list[str | None]:
        """The configured credentials, and those of the clients made so far (a key read from the environment) or
        handed in."""
        known = super()._known_secrets()
        clients = [self._sdk_client, self._given_client, *(entry[0] for entry in list(self._async_clients.values()))]
        for client in clients:
            if client is not None:
                known.extend(getattr(client, name, None) for name in _CLIENT_SECRETS)
        return known

    def _sdk(self) -> Any:
        """The SDK module (imported on first use: it is slow to import)."""
        return importlib.import_module(self._SDK)

    async def _aload_sdk(self) -> None:
        """Import the SDK on a worker thread the first time, so the slow import never blocks the event loop."""
        if self._SDK not in sys.modules:
            await run_in_thread(self._sdk)

    def _warm(self, client: Any) -> Any:
        """Do the SDK's slow first-use imports (its resources, the async backend, tracing) on `client`."""
        for path in self._WARM_ATTRIBUTES:
            target = client
            for name in path.split("."):
                target = getattr(target, name, None)
        for module in ("anyio._backends._asyncio", "opentelemetry.propagate"):
            try:
                importlib.import_module(module)
            except ImportError:
                pass
        return client

    def _client(self) -> Any:
        """The sync SDK client of this adapter, created on first use (thread-safe) and reused."""
        client = self._sdk_client
        if client is None:
            with self._client_lock:
                if self._sdk_client is None:
                    self._sdk_client = getattr(self._sdk(), self._SYNC_CLIENT)(**self._client_kwargs())
                client = self._sdk_client
        return client

    async def _aprepare_client(self) -> None:
        """Import the SDK and create this loop's client on a worker thread (both are slow), unless a client is
        ready or `_async_client` was replaced on the instance."""
        await self._aload_sdk()
        loop = asyncio.get_running_loop()
        if loop in self._async_clients or "_async_client" in self.__dict__:
            return
        kwargs = self._client_kwargs()
        make = getattr(self._sdk(), self._ASYNC_CLIENT)
        client = await run_in_thread(lambda: self._warm(make(**kwargs)))
        with self._client_lock:
            if loop not in self._async_clients:
                self._async_clients[loop] = (client, close_with_loop(client))

    def _async_client(self) -> Any:
        """The async SDK client for the running event loop (one per loop, created on first use)."""
        loop = asyncio.get_running_loop()
        with self._client_lock:
            entry = self._async_clients.get(loop)
            if entry is None:
                client = getattr(self._sdk(), self._ASYNC_CLIENT)(**self._client_kwargs())
                entry = self._async_clients[loop] = (client, close_with_loop(client))
        return entry[0]
