"""Stores: every run is saved as it goes; load it back, list the runs, fork a copy."""

import tempfile
from pathlib import Path

from alpineagents import Agent, FileStore, Message, SQLiteStore, State
from alpineagents.testing import FakeModel

folder = Path(tempfile.mkdtemp())
for store in [FileStore(folder / "runs"), SQLiteStore(folder / "runs.db")]:
    agent = Agent(FakeModel(["Paris.", "About 2.1 million people.", "Lyon."]), store=store, reporter=None)

    state = State(id="capital-1", messages=[Message.user("What is the capital of France?")])
    agent.run(state)  # saved at each save point: nothing else to do

    loaded = store.load("capital-1")  # in this process or any other
    print(type(store).__name__, "loaded:", loaded.answer, "- same history:", loaded.history == state.history)

    loaded.add_message(Message.user("How many people live there?"))
    agent.run(loaded)  # goes on where it was; the new entries are appended

    branch = loaded.fork()  # an independent copy with a new random id, not bound to any store
    branch.add_message(Message.user("And the second largest city?"))
    agent.run(branch)  # the Agent's store saves it, under its own id

    for info in store.list():  # one StateInfo per saved State, newest first, read without loading the States
        name = "the fork" if info.id == branch.id else info.id
        print(f"  {name}: {info.turn} turns, first message {info.first_message!r}")
