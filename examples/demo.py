"""The demo agent: reads this project's files with tools, answers, and keeps the run in a SQLite store.

Offline (no API key): a scripted FakeModel plays the model, so every step runs for real except the network.
With ANTHROPIC_API_KEY or OPENAI_API_KEY set, the same agent talks to the provider; DEMO_MODEL picks the model.

    python examples/demo.py                 # offline, or real when a key is set
    python examples/demo.py --db runs.db    # keep the run in runs.db (default: a temporary file)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from alpineagents import Agent, Message, Model, SQLiteStore, State, tool
from alpineagents.testing import FakeModel, tool_call

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How many lines does README.md have, and which example files are there?"


@tool(read_only=True)
def count_lines(path: str) -> int:
    """Count the lines of a text file of this project.

    Args:
        path: The file, relative to the project folder (for example "README.md").
    """
    file = (ROOT / path).resolve()
    if ROOT not in file.parents:
        raise ValueError(f"{path} is outside the project")
    return len(file.read_text(encoding="utf-8").splitlines())


@tool(read_only=True)
def list_examples() -> list[str]:
    """List the example programs of this project."""
    return sorted(p.name for p in (ROOT / "examples").glob("*.py"))


def pick_model() -> str | Model:
    """The real model when a key is set, else a scripted one that asks for the same tools a real one would."""
    chosen = os.environ.get("DEMO_MODEL")
    if chosen:
        return chosen
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic/claude-sonnet-5"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/gpt-5"
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    examples = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    return FakeModel(
        [
            [tool_call("count_lines", path="README.md"), tool_call("list_examples")],
            f"README.md has {lines} lines. The examples are: {', '.join(examples)}.",
        ],
        name="scripted",
    )


def main(argv: list[str] | None = None, **settings: Any) -> State:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", help="SQLite file that keeps the run (default: a temporary file)")
    args = parser.parse_args(argv)
    db = args.db or str(Path(tempfile.mkdtemp(prefix="alpineagents-demo-")) / "runs.db")

    store = SQLiteStore(db)
    agent = Agent(
        settings.pop("model", None) or pick_model(),
        system="You answer questions about a software project. Use the tools; do not guess.",
        tools=[count_lines, list_examples],
        store=store,
        **settings,
    )
    state = State(messages=[Message.user(QUESTION)])
    answer = agent.run(state)

    print(EXPLAINED)
    usage = state.usage
    cost = f"~${usage.cost:.4f}" if usage.cost is not None else "cost unknown (this model has no price)"
    print(f"answer: {answer}")
    print(
        f"turns: {state.turn}; {usage.requests} model requests, {usage.input_tokens} input and "
        f"{usage.output_tokens} output tokens, {cost}"
    )
    print(f"history (what the State recorded, in order): {', '.join(entry.kind for entry in state.history)}")
    loaded = store.load(state.id)
    same = loaded.messages == state.messages and len(loaded.history) == len(state.history)
    print(f"saved in {db} as {state.id!r}; loaded back intact: {same}")
    print(f"see it again: .venv/bin/alpineagents show {state.id} --store {db}")
    print(f"or in the browser: .venv/bin/pip install -e '.[viewer]' && .venv/bin/alpineagents view --store {db}")
    return state


EXPLAINED = """
What the lines above mean (the default reporter, the Terminal, printed them as the run went):
  [turn N] thinking          the agent sent request N to the model; its text is printed as it streams
    tool NAME(ARGS)          the model asked for this tool call; the program ran it
    done 3B                  the call ended well and its result (what the model reads next) is 3 bytes long
  done: stopped by waiting_for_user (2 turns)
                             the run ended: the model answered without asking for a tool, so the default loop
                             stopped and it is the person's turn (continue with agent.run(state) after a new message)
"""


if __name__ == "__main__":
    # Keep each request's system prompt and tool specs (and an error's stack) for `alpineagents view`.
    os.environ.setdefault("ALPINEAGENTS_RECORD", "all")
    main()
