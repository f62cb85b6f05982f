"""Trace a run with OpenTelemetry: spans in the GenAI semantic conventions, printed as a tree."""

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from alpineagents import Agent, otel, tool
from alpineagents.testing import FakeModel, tool_call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# Your application sets up its providers once (here: spans kept in memory; usually an OTLP exporter).
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
otel.instrument(provider)  # every Agent of the process is traced from now on

checker = Agent(FakeModel(["It is 3."], name="small"), name="checker", description="Checks a sum", reporter=None)
model = FakeModel([[tool_call("add", a=1, b=2), tool_call("checker", prompt="Is 1 + 2 = 3?")], "1 + 2 = 3"])
agent = Agent(model, tools=[add, checker], name="calculator", reporter=None)
print(agent.run("What is 1 + 2?"))

spans = exporter.get_finished_spans()
children: dict[int | None, list] = {}
for span in sorted(spans, key=lambda span: span.start_time or 0):
    children.setdefault(span.parent.span_id if span.parent else None, []).append(span)


def show(parent: int | None, depth: int) -> None:
    for span in children.get(parent, []):
        keys = ("gen_ai.usage.output_tokens", "alpineagents.tool.outcome", "alpineagents.run.stop_reason")
        shown = ", ".join(f"{key}={span.attributes[key]}" for key in keys if key in span.attributes)
        print(f"{'  ' * depth}{span.name} [{span.kind.name}] {shown}")
        show(span.context.span_id, depth + 1)


show(None, 0)
otel.uninstrument()
