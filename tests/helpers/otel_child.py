"""The child program of tests/test_otel.py: another process resumes a State from a FileStore with tracing on.

`python tests/helpers/otel_child.py STORE_DIR STATE_ID` loads the State, adds a message, runs it with tracing on (spans to
an in-memory exporter) and prints one JSON line: the conversation id of its run's span and that span's links.
"""

from __future__ import annotations

import json
import sys

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from alpineagents import otel
from alpineagents.agent import Agent
from alpineagents.store import FileStore
from alpineagents.testing import FakeModel
from alpineagents.types import Message


def main(folder: str, state_id: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(provider)
    store = FileStore(folder)
    state = store.load(state_id)
    state.add_message(Message.user("And now?"))
    Agent(FakeModel(["resumed"]), store=store, reporter=None).run(state)
    (run,) = [span for span in exporter.get_finished_spans() if span.name == "invoke_agent"]
    links = [{"valid": link.context.is_valid, "attributes": dict(link.attributes or {})} for link in run.links]
    print(json.dumps({"conversation": run.attributes["gen_ai.conversation.id"], "links": links}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
