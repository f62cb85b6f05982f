"""What a misbehaving provider can put into a State, through each adapter and the real SDK, with a store.

- A provider (or proxy) that echoes the API key in an error body: the key never reaches the error's text, the
  `error` entry, or the store's files; nor anything an error reporter reaches from the raised error (the SDK
  exception behind it, its HTTP request and response, their chains).
- Tool-call arguments that are not strict JSON (`NaN`, `Infinity`, `-Infinity`, as vLLM and Ollama can emit):
  the call is closed as an input error the model can read, and the run goes on and saves.
"""

from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, FileStore, SQLiteStore
from alpineagents.errors import AuthError, ProviderError
from alpineagents.models import OpenAIResponses
from alpineagents.store import Store
from alpineagents.tool import tool
from alpineagents.types import ErrorEntry, Message, Request, ToolResultEntry
from conftest import results, task
from servers.kinds import KEY, KINDS, AdapterKind
from servers.provider import Action, ProviderServer, Recorded, echo_key, status


def make_store(kind: str, folder: Path) -> Store:
    return FileStore(folder / "runs") if kind == "file" else SQLiteStore(folder / "runs.db")


def stored_bytes(folder: Path) -> bytes:
    """Everything the store wrote under `folder` (logs, infos, the database and its WAL)."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


@pytest.mark.parametrize("store_kind", ["file", "sqlite"])
@pytest.mark.parametrize("code", [401, 400, 500])
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_an_api_key_echoed_in_an_error_body_is_kept_out_of_the_error_and_the_store(
    server: ProviderServer,
    tmp_path: Path,
    kind: AdapterKind,
    code: int,
    store_kind: str,
) -> None:
    server.script(echo_key(code))
    store = make_store(store_kind, tmp_path)
    agent = Agent(kind.at(server), store=store, reporter=None)
    with pytest.raises(ProviderError) as info:
        agent.run("hello")
    assert (type(info.value) is AuthError) == (code == 401)
    assert server.posts, "the request reached the server"
    sent = server.posts[-1].headers
    assert KEY in (sent.get("authorization", "") + sent.get("x-api-key", "") + sent.get("x-goog-api-key", ""))
    text = str(info.value)
    assert "Incorrect API key provided" in text and "[REDACTED]" in text
    assert KEY not in text
    assert KEY not in str(info.value.__cause__)
    assert KEY not in repr(getattr(info.value.__cause__, "body", None))
    state_id = next(iter(store.list())).id
    loaded = store.load(state_id)
    errors = [entry for entry in loaded.history if isinstance(entry, ErrorEntry)]
    assert errors and all(KEY not in entry.content for entry in errors)
    assert "Incorrect API key provided" in errors[-1].content
    assert KEY.encode() not in stored_bytes(tmp_path)


@tool
def add(a: float, b: float = 0.0) -> str:
    """Add two numbers."""
    return str(a + b)


@pytest.mark.parametrize("store_kind", ["file", "sqlite", "none"])
@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": Infinity, "b": 1}', '{"a": 1, "b": [-Infinity]}'])
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_non_strict_json_arguments_close_the_call_as_an_input_error_and_the_run_goes_on(
    server: ProviderServer,
    tmp_path: Path,
    kind: AdapterKind,
    raw: str,
    store_kind: str,
) -> None:
    server.script(kind.tool_reply([("add", raw, "call_nan")], None))  # then the server's default reply: text, no call
    store = make_store(store_kind, tmp_path) if store_kind != "none" else None
    agent = Agent(kind.at(server), tools=[add], store=store, reporter=None)
    state = task("add them")
    agent.run(state)
    closed = results(state)
    assert len(closed) == 1
    entry: ToolResultEntry = closed[0]
    assert entry.is_error
    assert raw in str(entry.content), "the model reads back what it sent"
    assert len(server.posts) == 2, "the run went on to a second request"
    second = server.posts[1].body
    json.dumps(second, allow_nan=False)  # the next request is strict JSON
    assert "call_nan" in json.dumps(second)
    assert state.messages[-1].text == "Hello"
    if store is not None:
        loaded = store.load(state.id)
        assert len(loaded.history) == len(state.history)
        assert results(loaded)[0].content == entry.content


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_key_read_from_the_environment_is_kept_out_of_the_error_too(
    server: ProviderServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: AdapterKind,
) -> None:
    monkeypatch.setenv(kind.key_variable, KEY)
    for name, value in kind.environment.items():
        monkeypatch.setenv(name, value)
    model = kind.at(server)
    kind.forget_key(model)
    server.script(echo_key(401))
    store = make_store("sqlite", tmp_path)
    with pytest.raises(AuthError) as info:
        Agent(model, store=store, reporter=None).run("hello")
    assert KEY not in str(info.value) and "[REDACTED]" in str(info.value)
    assert KEY.encode() not in stored_bytes(tmp_path)


def test_a_key_known_only_from_the_request_headers_is_kept_out_of_the_error(server: ProviderServer) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=server.openai_url, api_key=KEY, max_retries=0)
    server.script(echo_key(401))
    with pytest.raises(AuthError) as info:
        asyncio.run(OpenAIResponses("gpt-test", client=client).arespond(Request(None, (Message.user("hi"),))))
    assert "[REDACTED]" in str(info.value) and KEY not in str(info.value)
    assert KEY not in str(info.value.__cause__)


def test_the_redaction_rule_replaces_each_secret_whole_and_ignores_short_values() -> None:
    from alpineagents.models._redact import REDACTED, redact

    text = f"key {KEY} and its prefix {KEY[:12]} and the placeholder k"
    assert redact(text, [KEY[:12], KEY, "k", None]) == f"key {REDACTED} and its prefix {REDACTED} and the placeholder k"
    assert redact("nothing here", [KEY]) == "nothing here"


# -- nothing reachable from a provider error holds the key ---------------------------------------------------------

_LEAVES = (str, bytes, bytearray, int, float, bool, type(None))
_NOT_FOLLOWED = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.FrameType,  # a traceback's frames hold the adapter, which holds its key by design
    types.TracebackType,
    types.CodeType,
)


def holders_of(secret: str, root: object, limit: int = 100_000) -> list[str]:
    """The paths from `root` to every string or bytes holding `secret`, following what an error reporter that
    serialises an exception would: `args`, `__cause__`, `__context__`, `__notes__`, attributes (`__dict__` and
    slots) and the items of containers, down any depth; not tracebacks, modules, classes or functions."""
    found: list[str] = []
    seen: set[int] = set()
    todo: list[tuple[object, str]] = [(root, "error")]
    while todo and len(seen) < limit:
        value, path = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, str):
            found += [path] if secret in value else []
        elif isinstance(value, (bytes, bytearray)):
            found += [path] if secret.encode() in value else []
        elif isinstance(value, _LEAVES + _NOT_FOLLOWED):
            continue
        elif isinstance(value, dict):
            todo += [(key, f"{path}.<key>") for key in value] + [(v, f"{path}[{k!r}]") for k, v in value.items()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            todo += [(item, f"{path}[{i}]") for i, item in enumerate(value)]
        else:
            if isinstance(value, BaseException):
                todo += [(value.args, f"{path}.args"), (value.__cause__, f"{path}.__cause__")]
                todo += [(value.__context__, f"{path}.__context__")]
                todo += [(getattr(value, "__notes__", None), f"{path}.__notes__")]
            todo += [(v, f"{path}.{k}") for k, v in (getattr(value, "__dict__", None) or {}).items()]
            for cls in type(value).__mro__:
                slots = cls.__dict__.get("__slots__", ())
                for name in (slots,) if isinstance(slots, str) else slots:
                    if hasattr(value, name):
                        todo.append((getattr(value, name), f"{path}.{name}"))
    return found


def _echo_key_with_request_id(code: int) -> Action:
    """An error whose body echoes the key the request carried, in the shape of the API it was sent to, with the
    provider's request id in the response headers."""

    def act(handler: Any, request: Recorded) -> None:
        header = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
        key = header.split(" ", 1)[1] if header.lower().startswith("bearer ") else header
        message = f"Incorrect API key provided: {key}."
        kind = "authentication_error" if request.path.endswith("/messages") else "invalid_request_error"
        body: dict[str, Any] = {"error": {"type": kind, "message": message}}
        if request.path.endswith("/messages"):
            body["type"] = "error"
        status(code, body, headers={"request-id": "req_echo_1", "x-request-id": "req_echo_1"})(handler, request)

    return act


SDK_ERRORS = ("anthropic", "openai_compatible", "openai_responses")
"""The kinds whose SDK exception carries the status, the request id and the HTTP response checked below."""


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("code", [401, 400, 500])
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_nothing_reachable_from_a_provider_error_holds_the_key(
    server: ProviderServer,
    kind: AdapterKind,
    code: int,
    mode: str,
) -> None:
    server.script(_echo_key_with_request_id(code) if kind.name in SDK_ERRORS else echo_key(code))
    model = kind.at(server)
    request = Request(None, (Message.user("hi"),))
    with pytest.raises(ProviderError) as info:
        if mode == "sync":
            model.respond(request)
        else:
            asyncio.run(model.arespond(request))
    sent = server.posts[-1].headers
    sent_keys = sent.get("authorization", "") + sent.get("x-api-key", "") + sent.get("x-goog-api-key", "")
    assert KEY in sent_keys, "the server got the key"
    assert holders_of(KEY, info.value) == []
    assert info.value.status_code == code
    if kind.name not in SDK_ERRORS:
        return
    cause = info.value.__cause__
    assert type(cause).__module__.split(".")[0] in ("anthropic", "openai"), "the SDK exception stays the cause"
    assert getattr(cause, "status_code", None) == code
    assert getattr(cause, "request_id", None) == "req_echo_1"
    assert "Incorrect API key provided: [REDACTED]" in str(cause)
    response = getattr(cause, "response", None)
    assert response is not None and response.status_code == code
    assert "[REDACTED]" in response.text and response.headers.get("request-id") == "req_echo_1"
