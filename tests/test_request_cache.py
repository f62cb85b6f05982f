"""The adapters keep the wire form of a conversation between requests and map only the new messages.

Random conversations drive a State through appends, tool calls and results (with images), compaction, clearing old
tool results, restores, forks, a save and load through a store, and a change of the adapter's settings; after every
step, the request each long-lived adapter builds must equal the one a fresh adapter builds from scratch, and the
messages must equal the plain definition (same-role runs merged, then each run mapped). Requests sent through the
real SDKs to the local provider server show that nothing on the way changes what the adapters keep. A spy on the
per-message mapping shows that a request after an append maps only the new messages.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alpineagents.models import Model, OpenAIResponses
from alpineagents.models._adapter import Adapter
from alpineagents.models._json import encode
from alpineagents.models._request_cache import ENTRIES
from alpineagents.state import State
from alpineagents.store import FileStore
from alpineagents.types import (
    Image,
    Message,
    RawBlock,
    Reply,
    Request,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolSpec,
    Usage,
)
from servers.kinds import KINDS, AdapterKind
from servers.provider import ProviderServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)
GIF = b"GIF89a" + bytes(40)
SPEC = ToolSpec("search", "Search", {"type": "object", "properties": {"q": {"type": "string"}}})


# -- the requests of the adapters ---------------------------------------------------------------------------------


def body(model: Adapter, request: Request) -> dict[str, Any]:
    return model._request_body(request)


def plain_messages(model: Adapter, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The definition: same-role runs merged, then each run mapped, the items in order."""
    return [item for message in model._merge_same_role(messages) for item in model._wire_message(message)]


def fresh(kind: AdapterKind, model: Adapter) -> Adapter:
    """A new adapter with the settings of `model` (those its mapping reads too)."""
    made = kind.make(model.name)
    if hasattr(model, "store"):
        made.store = model.store  # type: ignore[attr-defined]
    return made


class Adapters:
    """Two long-lived instances of each adapter (two models: the conversation moves between them, so the one it
    comes back to holds an older form of it)."""

    def __init__(self) -> None:
        self.active = 0
        self.kinds = [(kind, [kind.make("model-a"), kind.make("model-b")]) for kind in KINDS]

    def switch(self) -> None:
        """A change of model: the next requests go to the other instance of each adapter."""
        self.active = 1 - self.active

    def flip_store(self) -> None:
        """A change of a setting the mapping of a message reads: `store` of the Responses adapters."""
        for _, models in self.kinds:
            for model in models:
                if hasattr(model, "store"):
                    model.store = not model.store  # type: ignore[attr-defined]

    def check(self, messages: tuple[Message, ...]) -> None:
        for tools in ((SPEC,), ()):
            request = Request("Be brief.", messages, tools)
            for kind, models in self.kinds:
                model = models[self.active]
                built = body(model, request)
                assert built == body(fresh(kind, model), request), kind.name
                assert kind.conversation(built) == plain_messages(fresh(kind, model), messages), kind.name
                assert json.loads(encode(built)) == json.loads(json.dumps(built)), "the kept bytes are the items"


# -- random conversations -----------------------------------------------------------------------------------------

texts = st.sampled_from(["hi", "look", "  ", "ok then", "done", ""])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.tuples(texts, st.integers(0, 2))),
        st.tuples(st.just("reply"), st.tuples(texts, st.integers(0, 3), st.integers(0, 3))),
        st.tuples(st.just("reply"), st.tuples(texts, st.integers(0, 3), st.integers(0, 3))),
        st.tuples(st.just("results"), st.integers(0, 3)),
        st.tuples(st.just("results"), st.integers(0, 3)),
        st.tuples(st.just("compact"), st.just(None)),
        st.tuples(st.just("clear"), st.integers(0, 2)),
        st.tuples(st.just("snapshot"), st.just(None)),
        st.tuples(st.just("restore"), st.integers(0, 9)),
        st.tuples(st.just("fork"), st.just(None)),
        st.tuples(st.just("reload"), st.just(None)),
        st.tuples(st.just("settings"), st.just(None)),
        st.tuples(st.just("other_state"), st.just(None)),
        st.tuples(st.just("model"), st.just(None)),
    ),
    min_size=1,
    max_size=30,
)


def reply_message(text: str, calls: int, raw: int, counter: Iterator[int]) -> Message:
    """An assistant message: provider blocks of each adapter (kept by its own adapter, dropped by the others),
    text, and tool calls."""
    blocks: list[Any] = []
    if raw & 1:
        blocks.append(RawBlock("anthropic", {"type": "thinking", "thinking": "hmm", "signature": "s"}))
        blocks.append(RawBlock("openai_compatible", {"reasoning_content": "hmm"}))
    if raw & 2:
        blocks.append(RawBlock("openai_responses", {"type": "reasoning", "id": "rs_1", "summary": []}))
    if text:
        blocks.append(TextBlock(text))
    ids: dict[str, str] = {}
    for index in range(calls):
        call_id = f"call_{next(counter)}"
        blocks.append(ToolCall("search", {"q": text, "n": index, "flag": index == 1, "x": 1.0}, call_id))
        ids[call_id] = f"fc_{call_id}"
    if raw & 2:
        blocks.append(
            RawBlock(
                "openai_responses",
                {
                    "type": "response_ids",
                    "response_id": f"resp_{next(counter)}",
                    "message_ids": ["m1"],
                    "call_ids": ids,
                },
            )
        )
    return Message("assistant", tuple(blocks))


def result_content(index: int, images: int) -> Any:
    if images == 0:
        return f"result {index}"
    return (TextBlock(f"result {index}"), *(Image(PNG if i % 2 else GIF) for i in range(images)))


class Conversation:
    """Applies operations to a State (refused operations change nothing and are skipped)."""

    def __init__(self, folder: str) -> None:
        self.state = State(messages=[Message.user("start")])
        self.snapshots = [self.state.snapshot()]
        self.others: list[State] = []
        self.store = FileStore(folder)
        self.counter = iter(range(10**6))

    def apply(self, op: str, arg: Any, adapters: Adapters) -> None:
        try:
            self._apply(op, arg, adapters)
        except ValueError:
            pass

    def _apply(self, op: str, arg: Any, adapters: Adapters) -> None:
        state = self.state
        if op == "user":
            text, images = arg
            images_ = tuple(Image(PNG) for _ in range(images))
            state.add_message(Message.user(text or "q", *images_))
        elif op == "reply":
            if state.pending_calls:
                self._apply("results", 3, adapters)
            state._begin_think("fake/fake")
            state._record_reply(Reply(reply_message(*arg, self.counter), Usage(requests=1)))
        elif op == "results":
            for index, call in enumerate(state.pending_calls):
                kind = ToolOutcomeKind.ERROR if index == 1 else ToolOutcomeKind.DONE
                state._tool_result(call, result_content(index, arg if index == 0 else 0), kind)
        elif op == "compact":
            state.compact("the summary")
        elif op == "clear":
            state.clear_tool_results(arg)
        elif op == "snapshot":
            self.snapshots.append(state.snapshot())
        elif op == "restore":
            state.restore(self.snapshots[arg % len(self.snapshots)])
        elif op == "fork":
            self.others.append(state)
            self.state = state.fork()
            self.snapshots = [self.state.snapshot()]
        elif op == "reload":
            self.store.save(state)
            self.state = self.store.load(state.id)
            self.snapshots = [self.state.snapshot()]
        elif op == "settings":
            adapters.flip_store()
        elif op == "model":
            adapters.switch()
        elif op == "other_state" and self.others:
            self.others.append(self.state)
            self.state = self.others.pop(0)
            self.snapshots = [self.state.snapshot()]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_requests_equal_those_built_from_scratch(ops: list[tuple[str, Any]]) -> None:
    adapters = Adapters()
    with tempfile.TemporaryDirectory() as folder:
        conversation = Conversation(folder)
        adapters.check(conversation.state.messages)
        for op, arg in ops:
            conversation.apply(op, arg, adapters)
            messages = conversation.state.messages
            adapters.check(messages)
            adapters.check(messages)  # the same tuple again: all of it from the cache


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_equal_values_that_map_differently_are_not_reused(kind: AdapterKind) -> None:
    """`1 == True` and `{"n": 1} == {"n": True}`, but the JSON sent differs: reuse is by identity only."""
    model = kind.make("x")
    first = (Message.user("q"), Message("assistant", (ToolCall("t", {"n": 1}, "c1"),)))
    second = (first[0], Message("assistant", (ToolCall("t", {"n": True}, "c1"),)))
    assert first[1] == second[1]
    sent = json.dumps(body(model, Request(None, first)))
    again = json.dumps(body(model, Request(None, second)))
    assert sent != again
    assert again == json.dumps(body(kind.make("x"), Request(None, second)))


# -- the cache is used --------------------------------------------------------------------------------------------


def long_conversation(turns: int) -> list[Message]:
    messages = [Message.user("start")]
    for turn in range(turns):
        call = ToolCall("search", {"q": str(turn)}, f"c{turn}")
        messages.append(Message("assistant", (TextBlock("looking"), call)))
        messages.append(Message("user", (ToolResultBlock(call.id, f"found {turn}", "search"),)))
    return messages


def mapping_counter(model: Adapter) -> list[Message]:
    """Spy on the adapter's mapping of one message: each call is recorded, then the real mapping runs."""
    seen: list[Message] = []
    real = model._wire_message

    def counted(message: Message) -> Any:
        seen.append(message)
        return real(message)

    model._wire_message = counted  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_request_after_an_append_maps_only_the_new_messages(kind: AdapterKind) -> None:
    model = kind.make("c")
    seen = mapping_counter(model)
    build = body
    messages = long_conversation(100)
    build(model, Request(None, tuple(messages)))
    assert len(seen) == 201
    seen.clear()
    call = ToolCall("search", {"q": "more"}, "c_new")
    messages += [Message("assistant", (call,)), Message("user", (ToolResultBlock(call.id, "x", "search"),))]
    build(model, Request(None, tuple(messages)))
    assert seen == messages[-3:]  # the last run again (a user message may follow it), then the two new ones
    seen.clear()
    messages.append(Message.user("and now?"))  # joins the run of the tool result before it
    build(model, Request(None, tuple(messages)))
    assert len(seen) == 1 and seen[0].content == messages[-2].content + messages[-1].content
    seen.clear()
    build(model, Request(None, tuple(messages)))
    assert seen == []


def test_memory_is_bounded_and_a_settings_change_starts_over() -> None:
    model = OpenAIResponses("g")
    conversations = [tuple(long_conversation(3)) for _ in range(ENTRIES + 5)]
    for messages in conversations:
        body(model, Request(None, messages))
    assert len(model._mapped._entries) == ENTRIES
    seen = mapping_counter(model)
    body(model, Request(None, conversations[-1]))
    assert seen == []
    model.store = True
    body(model, Request(None, conversations[-1]))
    assert len(seen) == len(conversations[-1])
    assert len(model._mapped._entries) == 1


def test_one_adapter_serves_many_conversations_on_threads() -> None:
    models = [(kind, kind.make("c", max_tokens=10)) for kind in KINDS]
    errors: list[BaseException] = []

    def converse(seed: int) -> None:
        try:
            messages = [Message.user(f"conversation {seed}")]
            for turn in range(40):
                call = ToolCall("search", {"q": f"{seed}-{turn}"}, f"c{seed}-{turn}")
                messages.append(Message("assistant", (TextBlock(f"{seed}"), call)))
                messages.append(Message("user", (ToolResultBlock(call.id, f"r{seed}-{turn}", "search"),)))
                for kind, model in models:
                    request = Request(None, tuple(messages))
                    assert body(model, request) == body(kind.make(model.name, max_tokens=10), request)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=converse, args=(seed,)) for seed in range(ENTRIES * 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []


# -- through the real SDKs ----------------------------------------------------------------------------------------


def test_what_the_sdks_send_equals_a_request_from_scratch(server: ProviderServer) -> None:
    for kind in KINDS:
        model = kind.at(server)
        messages = [Message.user("start", Image(PNG))]
        for turn in range(6):
            request = Request("sys", tuple(messages), (SPEC,))
            reply = model.respond(request)
            kept = server.posts[-1].body
            kind.at(server).respond(request)
            assert kept == server.posts[-1].body, kind.name
            call = ToolCall("search", {"q": str(turn)}, f"c{turn}")
            messages.append(Message("assistant", (*reply.message.content, call)))
            result = (TextBlock(f"r{turn}"), Image(GIF)) if turn % 2 else f"r{turn}"
            messages.append(Message("user", (ToolResultBlock(call.id, result, "search"),)))


def test_concurrent_async_requests_through_one_adapter(server: ProviderServer) -> None:
    async def converse(model: Model, seed: int) -> list[Request]:
        messages = [Message.user(f"conversation {seed}")]
        sent = []
        for turn in range(4):
            request = Request(None, tuple(messages))
            sent.append(request)
            reply = await model.arespond(request)
            messages.append(reply.message)
            messages.append(Message.user(f"{seed}: next {turn}"))
        return sent

    async def main() -> None:
        for kind in KINDS:
            model = kind.at(server)
            requests = await asyncio.gather(*(converse(model, seed) for seed in range(6)))
            for request in (r for batch in requests for r in batch):
                assert body(model, request) == body(kind.at(server), request)

    asyncio.run(main())
