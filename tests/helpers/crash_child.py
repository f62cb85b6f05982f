"""The child program of tests/test_crash.py: a real agent run that kills itself (SIGKILL) at a named point.

`python tests/helpers/crash_child.py serve` starts a zygote: it imports the library once, then reads one JSON job per line
on stdin, forks a fresh child for it, waits, and answers one JSON line (`{"signal": n}` or `{"exit": n}`). The
zygote never touches a State, so every child starts without any State in memory.

Jobs:

- `{"do": "run", "kind": "file"|"sqlite"|"postgres", "dir": ..., "point": "think_end:2"}`: run the scripted
  conversation with the store in `dir` (for "postgres": `PostgresStore(job["dsn"], schema=job["schema"])`); when the point is reached for the n-th time, write `recorded.json` (the in-memory history
  at that moment and how many entries the store had acknowledged) and send SIGKILL to itself.
- `{"do": "resume", ...}`: load the State (`loaded.json`), add a message, run it to the end (`final.json`).

Points (`name:n`, the n-th time the name is reached): `respond` (inside a model request), `think_start` (after the
request was saved, before it is sent), `think_end` (between a reply and its save), `tool_pre` / `tool` (inside a
tool, before / after its side effect), `tool_end` (between a tool's result and its save), `context_change`
(between a compaction and its save), `run_start`, `log_write` (FileStore: half of a log write reaches the file),
`info_replace` (FileStore: the log is appended, the info is not), `sqlite_txn` (SQLiteStore: the rows are inserted,
not committed), `pg_txn_open` (PostgresStore: the first round trip of a save point sent, its transaction open, nothing
written, no commit), `pg_committed` (PostgresStore: the save point committed, the State not told yet).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any

from store_kinds import kind_named

from alpineagents import _serial
from alpineagents import store as store_module
from alpineagents._stores import files
from alpineagents.agent import Agent
from alpineagents.loop import loop, waiting_for_user
from alpineagents.postgres import PostgresStore
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message

STATE_ID = "crash"
PROMPT = "Write notes a and b, log x, then note c."
RESUMED = "Resumed and finished"

_job: dict[str, Any] = {}
_counts: dict[str, int] = {}
_state: list[State] = []


def _reached(name: str) -> bool:
    """Count one more arrival at `name`; True when this arrival is the job's kill point."""
    _counts[name] = _counts.get(name, 0) + 1
    return f"{name}:{_counts[name]}" == _job.get("point")


def _die() -> None:
    """Write what the process had recorded, then SIGKILL this process (no cleanup of any kind runs)."""
    if not _state:
        _dump({"history": [], "acked": 0})
    state = _state[0]
    with state._lock:  # pyright: ignore[reportPrivateUsage]  # no thread records anything after this moment
        _dump(
            {
                "history": [_serial.entry_to_dict(entry, i) for i, entry in enumerate(state.history)],
                "acked": state._saved_count,  # pyright: ignore[reportPrivateUsage]
            }
        )


def _dump(recorded: dict[str, Any]) -> None:
    with open(os.path.join(_job["dir"], "recorded.json"), "w") as f:
        json.dump(recorded, f)
    os.kill(os.getpid(), signal.SIGKILL)


def point(name: str) -> None:
    if _reached(name):
        _die()


def _journal(line: str) -> None:
    with open(os.path.join(_job["dir"], "journal.txt"), "a") as f:
        f.write(line + "\n")


@tool
def write_note(text: str) -> str:
    """Write a note (a side effect: one journal line)."""
    point("tool_pre")
    _journal(f"write_note {text}")
    point("tool")
    return f"noted {text}"


@tool(parallel=False)
def append_log(line: str) -> str:
    """Append a line to the log (a side effect: one journal line)."""
    point("tool_pre")
    _journal(f"append_log {line}")
    point("tool")
    return f"logged {line}"


class Killer(Reporter):
    def on_run_start(self, state: State) -> None:
        point("run_start")

    def on_think_start(self, state: State) -> None:
        point("think_start")

    def on_think_end(self, state: State, reply: Any) -> None:
        point("think_end")

    def on_tool_end(self, state: State, call: Any, result: Any, outcome: Any) -> None:
        point("tool_end")

    def on_context_change(self, state: State, change: Any) -> None:
        point("context_change")


def _scripted(item: Any) -> Any:
    def respond(request: Any) -> Any:
        point("respond")
        return item

    return respond


@loop(until=waiting_for_user, limit=10)
def body(agent: Agent, state: State) -> None:
    """One turn; before the third one the conversation is compacted by the model."""
    compacted = any(e.kind == "context_change" and e.content.kind == "compact" for e in state.history)  # pyright: ignore
    if state.turn == 2 and not compacted:
        agent.compact(state)
    agent.think(state)
    if state.pending_calls:
        agent.use_tools(state)


def make_store(job: dict[str, Any]) -> Store:
    return kind_named(job["kind"]).open(job)


def _patch_store() -> None:
    """Hooks inside the stores' writes, for the points in the middle of a write."""
    append_unflushed = files.append_unflushed

    def torn_append(path: Any, data: bytes, size: int) -> int:  # every log write: a new State's log too (flushed after)
        if _reached("log_write"):
            cut = max(1, len(data) // 2)
            with open(path, "ab") as f:
                f.write(data[:cut])
            _die()
        return append_unflushed(path, data, size)

    put_in_place = files.put_in_place

    def replace_info(temp: str, folder: Any, name: str) -> None:  # the info's rename, after the log's flush
        point("info_replace")
        put_in_place(temp, folder, name)

    files.append_unflushed = torn_append
    files.put_in_place = replace_info
    sqlite_store = store_module.SQLiteStore  # pyright: ignore[reportAttributeAccessIssue]
    write_rows = sqlite_store._write_one

    def rows_then_point(self: Any, *args: Any, **kwargs: Any) -> None:
        write_rows(self, *args, **kwargs)  # the save point's rows are in the transaction, not yet committed
        point("sqlite_txn")

    sqlite_store._write_one = rows_then_point  # pyright: ignore[reportAttributeAccessIssue]

    new_entries = PostgresStore._new_entries  # pyright: ignore[reportPrivateUsage]

    def first_trip_then_point(self: Any, *args: Any) -> Any:
        new = new_entries(self, *args)  # runs between the save point's two round trips
        point("pg_txn_open")
        return new

    write_txn = PostgresStore._write  # pyright: ignore[reportPrivateUsage]

    def commit_then_point(self: Any, *args: Any) -> bool:
        done = write_txn(self, *args)
        point("pg_committed")
        return done

    PostgresStore._new_entries = first_trip_then_point  # pyright: ignore[reportAttributeAccessIssue]
    PostgresStore._write = commit_then_point  # pyright: ignore[reportAttributeAccessIssue]


def run(job: dict[str, Any]) -> int:
    _patch_store()
    store = make_store(job)
    replies = [
        [tool_call("write_note", text="a"), tool_call("write_note", text="b")],
        tool_call("append_log", line="x"),
        "Summary: notes a and b written, log x appended.",
        tool_call("write_note", text="c"),
        "All done",
    ]
    model = FakeModel([_scripted(item) for item in replies])
    agent = Agent(model, tools=[write_note, append_log], loop=body, store=store, reporter=Killer(), human=None)
    state = State(id=STATE_ID, messages=[Message.user(PROMPT)])
    _state.append(state)
    agent.run(state)
    return 0


def resume(job: dict[str, Any]) -> int:
    store = make_store(job)
    loaded: dict[str, Any]
    try:
        state = store.load(STATE_ID)
    except LookupError:
        loaded = {"missing": True, "history": [], "saved": 0}
        state = State(id=STATE_ID, messages=[Message.user(PROMPT)])
    else:
        loaded = {
            "missing": False,
            "history": [_serial.entry_to_dict(entry, i) for i, entry in enumerate(state.history)],
            "saved": state._saved_count,  # pyright: ignore[reportPrivateUsage]
        }
        state.add_message(Message.user("Continue"))
    with open(os.path.join(job["dir"], "loaded.json"), "w") as f:
        json.dump(loaded, f)
    agent = Agent(FakeModel([RESUMED]), tools=[write_note, append_log], store=store, reporter=None, human=None)
    answer = agent.run(state)
    final = {
        "answer": answer,
        "history": [_serial.entry_to_dict(entry, i) for i, entry in enumerate(state.history)],
    }
    with open(os.path.join(job["dir"], "final.json"), "w") as f:
        json.dump(final, f)
    return 0


def _child(job: dict[str, Any]) -> int:
    _job.clear()
    _job.update(job)
    try:
        return run(job) if job["do"] == "run" else resume(job)
    except BaseException:
        with open(os.path.join(job["dir"], "error.txt"), "a") as f:
            f.write(traceback.format_exc())
        return 3


def serve() -> None:
    import psycopg  # noqa: F401  # imported once here, so no forked child pays for it

    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 4
            try:
                code = _child(job)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            answer = {"signal": os.WTERMSIG(status)}
        else:
            answer = {"exit": os.WEXITSTATUS(status)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    else:
        job = {
            "do": sys.argv[1],
            "kind": sys.argv[2],
            "dir": sys.argv[3],
            "point": sys.argv[4] if len(sys.argv) > 4 else "",
        }
        sys.exit(_child(job))
