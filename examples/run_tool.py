"""The program runs tools itself before the model starts: the model reads those calls as if it had made them.

Here the program gives the model the failing test's output and the file under test up front, so the first
request already has what the model would otherwise spend two turns asking for. Run it with a real model (needs
ANTHROPIC_API_KEY): `python examples/run_tool.py`
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from alpineagents import Agent, Message, State, tool


@tool(read_only=True, open_world=False)
def read_file(path: str) -> str:
    """Read a text file.

    Args:
        path: The file to read.
    """
    return Path(path).read_text(encoding="utf-8")


@tool(read_only=True, open_world=False)
def run_python(code: str) -> str:
    """Run a short Python program and return what it printed (and its errors).

    Args:
        code: The program.
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout + done.stderr).strip() or f"(exit {done.returncode}, no output)"


def main(model: Any = "claude-sonnet-5", **settings: Any) -> State:
    agent = Agent(
        model, system="You explain Python errors in two sentences.", tools=[read_file, run_python], **settings
    )
    state = State(messages=[Message.user("Why does this fail, and how do I fix it?")])
    # Two calls the program chooses. Each is recorded as a turn whose reply (model "program") holds the call, then
    # its result, and is saved with a store.
    agent.run_tool(state, run_python, code="print({'a': 1}['b'])")
    agent.run_tool(state, "read_file", path=__file__)
    agent.run(state)
    return state


if __name__ == "__main__":
    print(main().answer)
