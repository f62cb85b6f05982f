"""A run survives a crash: a process dies in the middle of a tool call; another process loads the State and goes on.

Run as `python crash_resume.py`: it starts itself a second time as the process that crashes.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from alpineagents import Agent, SQLiteStore, tool
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ToolResultEntry


@tool
def send_report(to: str) -> str:
    """Send the weekly report by email.

    Args:
        to: The address.
    """
    os._exit(9)  # the process dies here: no exception, no clean-up, like a kill -9 or a lost machine


def crashing_process(db: str) -> None:
    agent = Agent(
        FakeModel([tool_call("send_report", to="boss@example.com")]), tools=[send_report], store=SQLiteStore(db)
    )
    agent.run("Send the weekly report to my boss")


def main() -> None:
    db = str(Path(tempfile.mkdtemp()) / "runs.db")
    child = subprocess.run([sys.executable, __file__, "crash", db], capture_output=True, text=True)
    print("the first process died with exit code", child.returncode)

    store = SQLiteStore(db)
    [info] = store.list()
    state = store.load(info.id)  # the call that was running gets a result that says its outcome is unknown
    last = state.history[-1]
    assert isinstance(last, ToolResultEntry)
    print(f"{last.call.name}: {last.outcome.value}: {last.content}")

    model = FakeModel(["The report may not have been sent. Shall I check the outbox before sending it again?"])
    agent = Agent(model, tools=[send_report], store=store)
    agent.run(state)  # the model reads that result and decides; the tool does not run again by itself


if __name__ == "__main__":
    if sys.argv[1:2] == ["crash"]:
        crashing_process(sys.argv[2])
    else:
        main()
