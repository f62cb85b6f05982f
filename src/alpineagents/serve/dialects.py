"""The three ways a run's items are written as server-sent events: AG-UI (the event types of the `ag-ui-protocol`
package), the Vercel AI SDK's UI message stream, and this library's own form (the history entries in their saved
JSON form, plus the text deltas of the reply being written).

Each `Encoder` turns the items of `feed.items` into SSE frames. Every frame that ends an item carries the item's
cursor as its event id, so that `Last-Event-ID` picks the stream up after it. The rules shared by the dialects are
written once in `Encoder`: which reply a text belongs to, when a part (text, thinking, a call whose arguments
stream) opens and closes (a stream picked up in the middle of a reply opens it again), and the order of a reply's
text and tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from alpineagents._serial import entry_to_dict
from alpineagents.events import (
    ApprovalNeeded,
    Event,
    RunEnded,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    entry_events,
)
from alpineagents.serve.feed import End, Entry, Item, Piece, Text
from alpineagents.serve.wire import plain
from alpineagents.types import (
    ErrorEntry,
    ExchangeEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    ToolCall,
    ToolOutcomeKind,
    ToolResultEntry,
    WaitingCall,
    result_text,
)

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
"""Headers of every stream: no cache, and no buffering by a proxy in front."""

HEARTBEAT = b": keep-alive\n\n"
"""An SSE comment: sent while a run is quiet, ignored by every client."""

SERVER_ONLY = ("input", "traceback")
"""Keys of an entry's saved form that a served client never gets: a request's system prompt and tool specs, and an
error's stack (they are the server's; the viewer shows them to whoever can read the store)."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class Frame:
    data: str
    id: str | None = None

    def encode(self) -> bytes:
        head = f"id: {self.id}\n" if self.id is not None else ""
        return f"{head}data: {self.data}\n\n".encode()


class Encoder:
    """Turns items into frames; a subclass says how each happening is written in its dialect."""

    name = ""
    headers: dict[str, str] = {}

    def __init__(self, state_id: str, run_id: str) -> None:
        self.state_id = state_id
        self.run_id = run_id
        self.path = (state_id,)
        self.open: tuple[str, str] | None = None  # the part open now: ("text" | "thinking" | "call", its id)
        self.started: set[str] = set()  # the calls whose arguments this stream has begun to send
        self.calls: dict[str, ToolCall] = {}  # the calls of the latest reply, by id (approval records name them)

    def text_id(self, request: int) -> str:
        return f"{self.state_id}-{request}"

    def thinking_id(self, request: int) -> str:
        return f"{self.state_id}-{request}-thinking"

    def frames(self, item: Item) -> Iterator[Frame]:
        """The frames of one item; the last one carries the item's cursor."""
        out = list(self._frames(item))
        cursor = str(item.cursor)
        if not out:
            return iter(())
        out[-1] = Frame(out[-1].data, cursor)
        return iter(out)

    def _frames(self, item: Item) -> Iterator[Frame]:
        if isinstance(item, Text):
            text_id = self.text_id(item.request)
            yield from self._open("text", text_id)
            yield self.text_delta(text_id, item.delta)
        elif isinstance(item, Piece) and item.call_id is None:
            thinking_id = self.thinking_id(item.request)
            yield from self._open("thinking", thinking_id)
            yield self.thinking_delta(thinking_id, item.delta)
        elif isinstance(item, Piece) and item.call_id is not None:
            yield from self._open("call", item.call_id, item.name, self.text_id(item.request))
            self.started.add(item.call_id)
            if item.delta:
                yield self.args_delta(item.call_id, item.delta)
        elif isinstance(item, Entry):
            yield from self.entry(item)
        elif isinstance(item, End):
            yield from self._close()
            yield from self.finish(item)

    def entry(self, item: Entry) -> Iterator[Frame]:
        entry = item.entry
        if isinstance(entry, ModelReplyEntry):
            self.calls = {call.id: call for call in entry.content.message.tool_calls}
            text = entry.content.message.text[item.skip :]
            text_id = self.text_id(item.request)
            if text:
                yield from self._open("text", text_id)
                yield self.text_delta(text_id, text)
            yield from self._close()
            for call in entry.content.message.tool_calls:
                if call.id in self.started:
                    yield from self.args_done(call)
                else:
                    yield from self.tool_call(call, text_id, item.streamed)
            self.started.clear()
            yield from self.reply_end(entry)
        elif isinstance(entry, (ModelRequestEntry, ErrorEntry)):
            yield from self._close()
            yield from self.other(item)
        elif isinstance(entry, ToolResultEntry):
            yield from self.tool_result(entry)
        elif isinstance(entry, ExchangeEntry) and (waiting := self._waiting(item)) is not None:
            yield from self.approval(waiting)
        else:
            yield from self.other(item)

    def _waiting(self, item: Entry) -> WaitingCall | None:
        """The call an approval record says waits, or None for any other exchange."""
        where = {"state_id": self.state_id, "path": self.path, "position": item.position}
        for event in entry_events(item.entry, where, self.calls):
            if isinstance(event, ApprovalNeeded):
                return event.waiting
        return None

    def _open(self, kind: str, part_id: str, name: str = "", parent: str = "") -> Iterator[Frame]:
        if self.open != (kind, part_id):
            yield from self._close()
            self.open = (kind, part_id)
            if kind == "text":
                yield self.text_start(part_id)
            elif kind == "thinking":
                yield from self.thinking_start(part_id)
            elif part_id not in self.started:
                yield from self.args_start(part_id, name, parent)

    def _close(self) -> Iterator[Frame]:
        if self.open is not None:
            (kind, part_id), self.open = self.open, None
            if kind == "text":
                yield self.text_end(part_id)
            elif kind == "thinking":
                yield from self.thinking_end(part_id)
            else:
                yield from self.args_end(part_id)

    # what a dialect writes
    def begin(self) -> Iterator[Frame]:
        return iter(())

    def text_start(self, text_id: str) -> Frame:
        raise NotImplementedError

    def text_delta(self, text_id: str, delta: str) -> Frame:
        raise NotImplementedError

    def text_end(self, text_id: str) -> Frame:
        raise NotImplementedError

    def thinking_start(self, thinking_id: str) -> Iterator[Frame]:
        return iter(())

    def thinking_delta(self, thinking_id: str, delta: str) -> Frame:
        raise NotImplementedError

    def thinking_end(self, thinking_id: str) -> Iterator[Frame]:
        return iter(())

    def args_start(self, call_id: str, name: str, text_id: str) -> Iterator[Frame]:
        """A call whose arguments stream begins (`text_id`: the text part of its reply)."""
        return iter(())

    def args_delta(self, call_id: str, delta: str) -> Frame:
        raise NotImplementedError

    def args_end(self, call_id: str) -> Iterator[Frame]:
        """The arguments of a call were all sent (another part began)."""
        return iter(())

    def args_done(self, call: ToolCall) -> Iterator[Frame]:
        """A call whose arguments this stream sent as pieces is recorded, with them parsed."""
        return iter(())

    def tool_call(self, call: ToolCall, text_id: str, streamed: frozenset[str]) -> Iterator[Frame]:
        """A recorded call whose arguments this stream did not send as pieces (`streamed`: the calls the reader
        has the pieces of from an earlier stream)."""
        return iter(())

    def reply_end(self, entry: ModelReplyEntry) -> Iterator[Frame]:
        return iter(())

    def approval(self, waiting: WaitingCall) -> Iterator[Frame]:
        return iter(())

    def tool_result(self, entry: ToolResultEntry) -> Iterator[Frame]:
        return iter(())

    def other(self, item: Entry) -> Iterator[Frame]:
        return iter(())

    def finish(self, end: End) -> Iterator[Frame]:
        return iter(())

    def closing(self) -> bytes:
        """What the stream ends with after its last frame."""
        return b""


class Native(Encoder):
    """This library's own events (`alpineagents.events`) in their JSON form (`serve.wire`): the events of each
    history entry, `TextDelta`, `ThinkingDelta` and `ToolCallArgsDelta` while a reply is written, and `RunEnded`
    last. Each event's `position` is its
    place in the history, as `agent.stream` gives it."""

    name = "native"

    def _event(self, event: Event) -> Frame:
        return Frame(_json(plain(event)))

    def _frames(self, item: Item) -> Iterator[Frame]:
        if isinstance(item, Text):
            where = {"state_id": self.state_id, "path": self.path, "position": item.cursor.entries - 1}
            yield self._event(TextDelta(text=item.delta, **where))
        elif isinstance(item, Piece):
            where = {"state_id": self.state_id, "path": self.path, "position": item.cursor.entries - 1}
            if item.call_id is None:
                yield self._event(ThinkingDelta(text=item.delta, **where))
            else:
                yield self._event(ToolCallArgsDelta(call_id=item.call_id, name=item.name, delta=item.delta, **where))
        elif isinstance(item, Entry):
            entry = item.entry
            where = {"state_id": self.state_id, "path": self.path, "position": item.position}
            streamed = False
            if isinstance(entry, ModelReplyEntry):
                self.calls = {call.id: call for call in entry.content.message.tool_calls}
                if item.skip:  # part of its text went out as deltas: the rest, then the reply's other events
                    streamed = True
                    rest = entry.content.message.text[item.skip :]
                    if rest:
                        yield self._event(TextDelta(text=rest, **where))
            for event in entry_events(entry, where, self.calls, streamed=streamed):
                yield self._event(event)
        else:
            where = {"state_id": self.state_id, "path": self.path, "position": item.cursor.entries - 1}
            yield self._event(RunEnded(stopped=item.stopped, error=item.error, waiting=item.waiting, **where))


class AGUI(Encoder):
    """AG-UI events, built with the `ag_ui.core` models and written by `ag_ui.encoder.EventEncoder`."""

    name = "agui"

    def __init__(self, state_id: str, run_id: str) -> None:
        super().__init__(state_id, run_id)
        from ag_ui import core
        from ag_ui.encoder import EventEncoder

        self.core = core
        self._encoder = EventEncoder()

    def _frame(self, event: Any) -> Frame:
        text = self._encoder.encode(event)
        return Frame(text[len("data: ") :].rstrip("\n"))

    def begin(self) -> Iterator[Frame]:
        yield self._frame(self.core.RunStartedEvent(thread_id=self.state_id, run_id=self.run_id))

    def text_start(self, text_id: str) -> Frame:
        return self._frame(self.core.TextMessageStartEvent(message_id=text_id, role="assistant"))

    def text_delta(self, text_id: str, delta: str) -> Frame:
        return self._frame(self.core.TextMessageContentEvent(message_id=text_id, delta=delta))

    def text_end(self, text_id: str) -> Frame:
        return self._frame(self.core.TextMessageEndEvent(message_id=text_id))

    def thinking_start(self, thinking_id: str) -> Iterator[Frame]:
        core = self.core
        yield self._frame(core.ReasoningStartEvent(message_id=thinking_id))
        yield self._frame(core.ReasoningMessageStartEvent(message_id=thinking_id, role="reasoning"))

    def thinking_delta(self, thinking_id: str, delta: str) -> Frame:
        return self._frame(self.core.ReasoningMessageContentEvent(message_id=thinking_id, delta=delta))

    def thinking_end(self, thinking_id: str) -> Iterator[Frame]:
        core = self.core
        yield self._frame(core.ReasoningMessageEndEvent(message_id=thinking_id))
        yield self._frame(core.ReasoningEndEvent(message_id=thinking_id))

    def args_start(self, call_id: str, name: str, text_id: str) -> Iterator[Frame]:
        yield self._frame(
            self.core.ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=text_id)
        )

    def args_delta(self, call_id: str, delta: str) -> Frame:
        return self._frame(self.core.ToolCallArgsEvent(tool_call_id=call_id, delta=delta))

    def args_end(self, call_id: str) -> Iterator[Frame]:
        yield self._frame(self.core.ToolCallEndEvent(tool_call_id=call_id))

    def tool_call(self, call: ToolCall, text_id: str, streamed: frozenset[str]) -> Iterator[Frame]:
        yield from self.args_start(call.id, call.name, text_id)
        if call.id not in streamed:  # a reader that has its arguments' pieces from an earlier stream gets none
            yield self.args_delta(call.id, _json(dict(call.args)))
        yield from self.args_end(call.id)

    def tool_result(self, entry: ToolResultEntry) -> Iterator[Frame]:
        yield self._frame(
            self.core.ToolCallResultEvent(
                message_id=f"{entry.call.id}-result",
                tool_call_id=entry.call.id,
                content=result_text(entry.content),
                role="tool",
            )
        )

    def approval(self, waiting: WaitingCall) -> Iterator[Frame]:
        yield self._frame(self.core.CustomEvent(name="alpineagents.approval_needed", value=plain(waiting)))

    def other(self, item: Entry) -> Iterator[Frame]:
        value = entry_to_dict(item.entry, item.position)
        for private in SERVER_ONLY:
            value.pop(private, None)
        yield self._frame(self.core.CustomEvent(name=f"alpineagents.{item.entry.kind}", value=value))

    def finish(self, end: End) -> Iterator[Frame]:
        core = self.core
        if end.failed:
            yield self._frame(core.RunErrorEvent(message=_first_line(end.error)))
        else:
            yield self._frame(
                core.RunFinishedEvent(thread_id=self.state_id, run_id=self.run_id, result=plain(_result(end)))
            )


def _first_line(text: str | None) -> str:
    return text.splitlines()[0] if text else "error"


def _result(end: End) -> dict[str, Any]:
    """What a run ending gives a client: the answer, whether it finished, why it stopped, the waiting calls."""
    stopped = None if end.stopped is None else str(end.stopped)
    return {"answer": end.answer, "finished": end.finished, "stopped": stopped, "waiting": end.waiting}


class Vercel(Encoder):
    """The Vercel AI SDK's UI message stream (protocol v1): one assistant message made of steps, text parts and
    tool parts, then `[DONE]`."""

    name = "vercel"
    headers = {"x-vercel-ai-ui-message-stream": "v1"}

    def begin(self) -> Iterator[Frame]:
        yield Frame(_json({"type": "start", "messageId": self.run_id}))

    def text_start(self, text_id: str) -> Frame:
        return Frame(_json({"type": "text-start", "id": text_id}))

    def text_delta(self, text_id: str, delta: str) -> Frame:
        return Frame(_json({"type": "text-delta", "id": text_id, "delta": delta}))

    def text_end(self, text_id: str) -> Frame:
        return Frame(_json({"type": "text-end", "id": text_id}))

    def __init__(self, state_id: str, run_id: str) -> None:
        super().__init__(state_id, run_id)
        self.announced: set[str] = set()  # the calls this stream has shown (a tool part needs its call first)

    def thinking_start(self, thinking_id: str) -> Iterator[Frame]:
        yield Frame(_json({"type": "reasoning-start", "id": thinking_id}))

    def thinking_delta(self, thinking_id: str, delta: str) -> Frame:
        return Frame(_json({"type": "reasoning-delta", "id": thinking_id, "delta": delta}))

    def thinking_end(self, thinking_id: str) -> Iterator[Frame]:
        yield Frame(_json({"type": "reasoning-end", "id": thinking_id}))

    def args_start(self, call_id: str, name: str, text_id: str) -> Iterator[Frame]:
        self.announced.add(call_id)
        yield Frame(_json({"type": "tool-input-start", "toolCallId": call_id, "toolName": name}))

    def args_delta(self, call_id: str, delta: str) -> Frame:
        return Frame(_json({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta}))

    def args_done(self, call: ToolCall) -> Iterator[Frame]:
        yield Frame(
            _json(
                {"type": "tool-input-available", "toolCallId": call.id, "toolName": call.name, "input": dict(call.args)}
            )
        )

    def tool_call(self, call: ToolCall, text_id: str, streamed: frozenset[str] = frozenset()) -> Iterator[Frame]:
        yield from self.args_start(call.id, call.name, text_id)
        yield from self.args_done(call)

    def reply_end(self, entry: ModelReplyEntry) -> Iterator[Frame]:
        yield Frame(_json({"type": "finish-step"}))

    def approval(self, waiting: WaitingCall) -> Iterator[Frame]:
        call_id = waiting.call.id
        yield Frame(_json({"type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id}))

    def tool_result(self, entry: ToolResultEntry) -> Iterator[Frame]:
        if entry.call.id not in self.announced:  # a stream that begins after the call (an approval, a resume)
            yield from self.tool_call(entry.call, "", frozenset())
        text = result_text(entry.content)
        if entry.outcome == ToolOutcomeKind.DONE:
            yield Frame(_json({"type": "tool-output-available", "toolCallId": entry.call.id, "output": text}))
        else:
            yield Frame(_json({"type": "tool-output-error", "toolCallId": entry.call.id, "errorText": text}))

    def other(self, item: Entry) -> Iterator[Frame]:
        if isinstance(item.entry, ModelRequestEntry):
            yield Frame(_json({"type": "start-step"}))
        elif isinstance(item.entry, ErrorEntry):
            yield Frame(_json({"type": "finish-step"}))

    def finish(self, end: End) -> Iterator[Frame]:
        if end.failed:
            yield Frame(_json({"type": "error", "errorText": _first_line(end.error)}))
            yield Frame(_json({"type": "finish", "finishReason": "error"}))
        else:
            yield Frame(_json({"type": "finish", "finishReason": "stop"}))

    def closing(self) -> bytes:
        return b"data: [DONE]\n\n"


DIALECTS: dict[str, type[Encoder]] = {"native": Native, "agui": AGUI, "vercel": Vercel}
"""The dialects by the name `?dialect=` takes."""
