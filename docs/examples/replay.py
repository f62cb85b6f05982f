"""Stored runs as tests: replay a run, see a change fail with a diff, compare two runs, continue one with another
model."""

import tempfile
from pathlib import Path

import alpineagents
from alpineagents import Agent, FileStore, Message, State, tool
from alpineagents.testing import FakeModel, Recorder, Replay, ReplayMismatch, tool_call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


store = FileStore(Path(tempfile.mkdtemp()) / "runs")
agent = Agent(FakeModel([]), system="Answer briefly.", tools=[add], store=store, reporter=None)

# 1. A run, recorded: the Recorder keeps the tool specs and settings of each request in the history.
recorded = agent.copy(model=Recorder(FakeModel([tool_call("add", a=2, b=3), "2 + 3 = 5."])))
recorded.run(State(id="sum-1", messages=[Message.user("What is 2 + 3?")]))

# 2. Replayed: the stored run answers every request, after checking it. No model, no network.
replay = Replay(store, "sum-1")
print("replayed:", agent.copy(model=replay, store=None).run("What is 2 + 3?"))

# 3. A change to the agent fails at the first request it alters, naming the place and showing both sides.
changed = agent.copy(model=Replay(store, "sum-1"), tools=[add.copy(description="Add two integers.")], store=None)
try:
    changed.run("What is 2 + 3?")
except ReplayMismatch as mismatch:
    print(str(mismatch).split("\nIf the change")[0].split(") differs from the recorded one in ")[1])

# 4. The same task continued by another model from after the tool result, then the two runs compared.
original = store.load("sum-1")
kept = [entry.kind for entry in original.history].index("tool_result") + 1
fork = State(id="sum-1-other", history=original.history[:kept])
agent.copy(model=FakeModel(["The sum is 5."], name="other")).run(fork)
compared = alpineagents.diff(original, fork)
print("first divergence at step", compared.first_divergence + 1, "of", len(compared.rows))
for row in compared.differences:
    print("  A:", row.a.text, "| B:", row.b.text)
