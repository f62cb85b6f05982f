"""Reporters watch a run: subclass Reporter and override the hooks you need. The Terminal is the default one."""

import io

from alpineagents import Agent, Reporter, Terminal, tool
from alpineagents.testing import FakeModel, tool_call


@tool
def lookup(word: str) -> str:
    """Look a word up in the dictionary.

    Args:
        word: The word.
    """
    return "a small mountain lake"


class Log(Reporter):
    """Prints one line per event it cares about; every other hook does nothing."""

    def on_think_start(self, state):
        print(f"-> request {state.turn}")

    def on_tool_end(self, state, call, result, outcome):
        print(f"   {call.name}: {outcome.kind.value} ({len(str(result))} characters)")

    def on_run_end(self, state, error):
        print(f"<- {state.stopped}, error: {error!r}, tokens: {state.usage.input_tokens} in")


def script():
    return FakeModel([tool_call("lookup", word="tarn"), "A tarn is a small mountain lake."])


Agent(script(), tools=[lookup], reporter=Log()).run("What is a tarn?")

# The Terminal, writing to any stream, without the model's text:
out = io.StringIO()
Agent(script(), tools=[lookup], reporter=Terminal(output=out, show_text=False)).run("What is a tarn?")
print(out.getvalue(), end="")

# No reporter at all: a silent run.
print(Agent(script(), tools=[lookup], reporter=None).run("What is a tarn?"))
