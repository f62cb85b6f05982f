"""Runs spread over worker processes on real DBOS: all finish, each exactly once, taken over after a kill -9,
handed back on SIGTERM; on one machine (SQLite for DBOS and the store) and on PostgreSQL (for both).

The workers are real processes started here with the `alpineagents worker` command, running `tests/helpers/worker_app.py`:
a scripted model that asks for one `note` call per run, whose side effect is a line in a journal file, so a call
that ran twice would show there.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from alpineagents.store import Store
from alpineagents.types import ToolResultEntry

pytestmark = pytest.mark.timeout(400)  # real worker processes over real queues, on a 2-core machine

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@dataclass
class Setup:
    env: dict[str, str]
    journal: Path
    logs: Path

    def workers_module(self):  # noqa: ANN201 - the test application, imported in this process with this setup
        os.environ.update(self.env)
        sys.modules.pop("helpers.worker_app", None)
        return importlib.import_module("helpers.worker_app")

    def start_worker(self, **extra: str) -> subprocess.Popen[bytes]:
        name = f"worker-{len(list(self.logs.iterdir()))}"
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - the child's
        return subprocess.Popen(
            [sys.executable, "-m", "alpineagents", "worker", "worker_app:workers", "--id", name],
            env={**os.environ, **self.env, **extra, "PYTHONPATH": f"{TESTS / 'helpers'}{os.pathsep}{ROOT / 'src'}"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def show_logs(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs.iterdir())

    def notes(self) -> Counter[str]:
        if not self.journal.exists():
            return Counter()
        return Counter(self.journal.read_text(encoding="utf-8").splitlines())


@pytest.fixture(params=["sqlite", "postgres"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    journal = tmp_path / "journal.txt"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"WORKER_JOURNAL": str(journal), "WORKER_MODEL_DELAY": "0.05"}
    if request.param == "sqlite":
        env["WORKER_STORE"] = f"sqlite:{tmp_path / 'runs.db'}"
        env["WORKER_DATABASE"] = f"sqlite:///{tmp_path / 'queue.sqlite'}"
        yield Setup(env, journal, logs)
        return
    url = request.getfixturevalue("postgres_database")
    env["WORKER_STORE"] = url
    env["WORKER_DATABASE"] = url
    yield Setup(env, journal, logs)


def stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)


def mid_run(app, found) -> bool:  # noqa: ANN001 - the test application and a DBOS workflow status
    """Whether the run's State has a tool result saved and no answer yet."""
    record = app.workers.store.read(found.workflow_id.rsplit(".", 1)[0])
    kinds = [entry["kind"] for entry in record.entries] if record else []
    return "tool_result" in kinds and "stop" not in kinds


def note_results(store: Store) -> list[tuple[str, str]]:
    """`(the note's text, how the call ended)` of every `note` call saved in the store (the helpers' States)."""
    found = []
    for info in store.list():
        for entry in store.load(info.id).history:
            if isinstance(entry, ToolResultEntry) and entry.call.name == "note":
                found.append((str(entry.call.args["text"]), entry.outcome.value))
    return found


def wait_all(setup: Setup, runs: list, timeout: float) -> list[str]:  # noqa: ANN001 - Run handles
    deadline = time.monotonic() + timeout
    try:
        return [run.result(timeout=max(0.1, deadline - time.monotonic())) for run in runs]
    except BaseException:
        print(setup.show_logs())
        raise


def test_runs_over_three_workers_all_finish_each_exactly_once(setup: Setup) -> None:
    app = setup.workers_module()
    count = 200
    runs = [app.workers.submit("noter", f"task {n}", state_id=f"task-{n}") for n in range(count)]
    again = app.workers.submit("noter", app.workers.store.load("task-0"))  # the same run again: queued once
    assert again.id == runs[0].id
    workers = [setup.start_worker() for _ in range(3)]
    try:
        answers = wait_all(setup, runs, 240)
    finally:
        stop(workers)
    assert answers[:2] == ["done: task 0", "done: task 1"]
    assert all(answer == f"done: task {n}" for n, answer in enumerate(answers))
    notes = setup.notes()
    assert sorted(notes) == sorted(f"task {n}" for n in range(count))
    assert {note for note, times in notes.items() if times > 1} == set()


def test_a_worker_killed_mid_run_has_its_runs_taken_over_and_no_call_runs_twice(setup: Setup) -> None:
    app = setup.workers_module()
    setup.env["WORKER_MODEL_DELAY"] = "0.5"
    count = 30
    runs = [app.workers.submit("noter", f"task {n}", state_id=f"task-{n}") for n in range(count)]
    workers = [setup.start_worker(WORKER_CONCURRENCY="5") for _ in range(3)]
    try:
        deadline = time.monotonic() + 120
        while True:  # kill a worker while it is in the middle of runs: a tool result saved, the answer not yet
            pending = app.workers._client().list_workflows(status="PENDING")
            holding = Counter(found.executor_id for found in pending)
            victim = max(range(3), key=lambda n: holding[f"worker-{n}"])
            midway = [found for found in pending if found.executor_id == f"worker-{victim}" and mid_run(app, found)]
            if midway:
                break
            assert time.monotonic() < deadline, "no worker was ever in the middle of a run"
            time.sleep(0.02)
        workers[victim].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        print(f"killed worker-{victim} while it held {holding[f'worker-{victim}']} runs of {dict(holding)}")
        answers = wait_all(setup, runs, 180)
        took = time.monotonic() - killed_at
    finally:
        stop(workers)
    print(f"from the kill to the last run's end: {took:.1f} s")
    assert answers == [f"done: task {n}" for n in range(count)]
    notes = setup.notes()
    assert set(notes.values()) == {1}, "a finished tool call ran twice"
    # A `note` call the kill cut short (running, its result not yet saved) is closed when its run resumes, not run
    # again: its note may be missing. Every other call's note is there.
    cut = {text for text, outcome in note_results(app.workers.store) if outcome != "done"}
    done = {text for text, outcome in note_results(app.workers.store) if outcome == "done"}
    assert done <= set(notes) and set(notes) <= done | cut, "a call is missing"
    assert done | cut == {f"task {n}" for n in range(count)}, "a run has no note call"
    assert len(cut) <= holding[f"worker-{victim}"], "more calls were cut than runs the killed worker held"
    resumed = 0
    for n in range(count):  # every history loads: no gap, nothing damaged
        state = app.workers.store.load(f"task-{n}")
        assert state.answer == f"done: task {n}"
        resumed += sum(entry.kind == "run_start" for entry in state.history) > 1
    assert resumed >= 1, "no run was resumed from its saved State"
    client = app.workers._client()
    for found in midway:  # the runs the killed worker was in the middle of ended on the others
        assert client.retrieve_workflow(found.workflow_id).get_status().executor_id != f"worker-{victim}"
    print(f"{resumed} runs were taken over and resumed from their saved State")


def test_a_worker_stopped_with_sigterm_hands_back_its_runs(setup: Setup) -> None:
    app = setup.workers_module()
    setup.env["WORKER_MODEL_DELAY"] = "0.3"
    count = 20
    runs = [app.workers.submit("noter", f"task {n}", state_id=f"task-{n}") for n in range(count)]
    leaving = setup.start_worker(WORKER_GRACE="0.5", WORKER_CONCURRENCY="10")
    staying = setup.start_worker(WORKER_CONCURRENCY="10")
    try:
        deadline = time.monotonic() + 120
        while not any(run.status() == "done" for run in runs):
            assert time.monotonic() < deadline, "the workers did not get going"
            time.sleep(0.05)
        leaving.send_signal(signal.SIGTERM)
        assert leaving.wait(60) is not None
        answers = wait_all(setup, runs, 180)
    finally:
        stop([leaving, staying])
    assert answers == [f"done: task {n}" for n in range(count)]
    assert set(setup.notes().values()) == {1}


def test_a_run_waiting_for_a_person_continues_with_the_next_submit(setup: Setup) -> None:
    app = setup.workers_module()
    first = app.workers.submit("noter", "first", state_id="chat")
    workers = [setup.start_worker()]
    try:
        assert first.result(timeout=60) == "done: first"
        follow_up = app.workers.submit("noter", "second", state_id="chat")
        assert follow_up.id != first.id
        assert follow_up.result(timeout=60) == "done: first"  # the script answers with the first message
    finally:
        stop(workers)
    state = app.workers.store.load("chat")
    assert [m.text for m in state.messages if m.role == "user" and m.text] == ["first", "second"]
    assert setup.notes() == Counter({"first": 1, "second": 1})


def test_a_subagent_runs_inside_its_parents_workflow(setup: Setup) -> None:
    app = setup.workers_module()
    runs = [app.workers.submit("manager", f"job {n}", state_id=f"job-{n}") for n in range(3)]
    workers = [setup.start_worker()]
    try:
        answers = wait_all(setup, runs, 120)
    finally:
        stop(workers)
    assert answers == [f"managed: helped with job {n}" for n in range(3)]
    # one workflow per submitted run: the subagent ran inside it, as a tool call of the parent's run
    flows = app.workers._client().list_workflows(load_input=False, load_output=False)  # noqa: SLF001
    assert sorted(flow.workflow_id for flow in flows) == sorted(run.id for run in runs)
    # the children were saved in the Workers' store, linked to their parents, and each noted its task once
    children = [info for info in app.workers.store.list() if info.parent_id is not None]
    assert sorted(info.parent_id for info in children) == [f"job-{n}" for n in range(3)]
    for info in children:
        child = app.workers.store.load(info.id)
        assert child.answer == f"helped with {child.messages[0].text}"
    assert setup.notes() == Counter({f"helper: job {n}": 1 for n in range(3)})


def test_a_state_submitted_while_the_caller_still_holds_it_runs(setup: Setup) -> None:
    from alpineagents.state import State
    from alpineagents.types import Message

    app = setup.workers_module()
    saved = State(id="held", messages=[Message.user("task held")])
    app.workers.store.save(saved)  # this process writes it, and keeps the State object
    run = app.workers.submit("noter", saved)
    fresh = State(id="held-new", messages=[Message.user("task new")])
    other = app.workers.submit("noter", fresh)  # never saved before: held by the caller too
    workers = [setup.start_worker()]
    try:
        answers = wait_all(setup, [run, other], 60)
    finally:
        stop(workers)
    assert answers == ["done: task held", "done: task new"]
    assert saved.id == "held" and fresh.id == "held-new"  # both were held by the caller all along
    assert app.workers.store.load("held").answer == "done: task held"


def test_a_cancelled_run_can_be_submitted_again(setup: Setup) -> None:
    app = setup.workers_module()
    first = app.workers.submit("noter", "task again", state_id="again")
    app.workers._client().cancel_workflow(first.id)  # noqa: SLF001 - before any worker took it
    assert first.status() == "cancelled"
    retry = app.workers.submit("noter", app.workers.store.load("again"))
    assert retry.id != first.id, "a new run, not the cancelled one"
    workers = [setup.start_worker()]
    try:
        assert wait_all(setup, [retry], 60) == ["done: task again"]
    finally:
        stop(workers)
    assert first.status() == "cancelled" and retry.status() == "done"
    assert setup.notes() == Counter({"task again": 1})


def test_a_retried_submit_queues_one_run_on_its_state(setup: Setup) -> None:
    from alpineagents.workers import StateBusyError

    app = setup.workers_module()
    first = app.workers.submit("noter", "task once", state_id="once")
    again = app.workers.submit("noter", "task once", state_id="once")  # a retry: the same run
    assert again.id == first.id
    with pytest.raises(StateBusyError, match="State 'once' has the run 'once.1' queued or running"):
        app.workers.submit("noter", "another task", state_id="once")
    workers = [setup.start_worker()]
    try:
        assert wait_all(setup, [first], 60) == ["done: task once"]
    finally:
        stop(workers)
    state = app.workers.store.load("once")
    assert [m.text for m in state.messages if m.role == "user" and m.text] == ["task once"]
    assert sum(entry.kind == "run_start" for entry in state.history) == 1
    assert setup.notes() == Counter({"task once": 1})


_SUBMITTER = """
import os, sys, time, json
import worker_app
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
runs = [worker_app.workers.submit("noter", f"task {n}", state_id=f"race-{n}") for n in range(int(sys.argv[2]))]
print(json.dumps([run.id for run in runs]))
"""


def test_submits_of_one_state_from_several_processes_at_once_queue_one_run(setup: Setup) -> None:
    import json

    app = setup.workers_module()
    from alpineagents.state import State
    from alpineagents.types import Message

    app.workers._migrate()  # noqa: SLF001 - the queue's tables, before the submitters race
    app.workers.store.save(State(id="made", messages=[Message.user("the store exists")]))  # and the store's
    states = 5
    start = time.time() + 3  # every submitter imported and ready by then
    env = {**os.environ, **setup.env, "PYTHONPATH": f"{TESTS / 'helpers'}{os.pathsep}{ROOT / 'src'}"}
    submitters = [
        subprocess.Popen(
            [sys.executable, "-c", _SUBMITTER, str(start), str(states)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    outputs = [submitter.communicate(timeout=120) for submitter in submitters]
    for submitter, (_out, err) in zip(submitters, outputs, strict=True):
        assert submitter.returncode == 0, err.decode(errors="replace")[-3000:]
    ids = [json.loads(out) for out, _ in outputs]
    assert ids[0] == ids[1] == ids[2], "every retry got the one run of its State"
    # The workers start once every submit returned: a run that ended before a late retry would make that retry a
    # new message, which is not what this test is about.
    workers = [setup.start_worker()]
    try:
        runs = [app.workers.run(run_id, f"race-{n}") for n, run_id in enumerate(ids[0])]
        assert wait_all(setup, runs, 120) == [f"done: task {n}" for n in range(states)]
    finally:
        stop(workers)
    for n in range(states):
        state = app.workers.store.load(f"race-{n}")
        assert [m.text for m in state.messages if m.role == "user" and m.text] == [f"task {n}"]
        assert sum(entry.kind == "run_start" for entry in state.history) == 1
    assert setup.notes() == Counter({f"task {n}": 1 for n in range(states)})


def test_a_worker_killed_after_a_tools_effect_has_the_call_reconciled_by_the_worker_that_takes_over(
    setup: Setup,
) -> None:
    """The `pay` tool pays into a ledger, then its worker dies (SIGKILL) before the result is saved. The worker
    that takes the run over asks the tool's reconcile, which finds the payment by the call's idempotency key: the
    tool is not called again and the model reads the result reconcile gave."""
    app = setup.workers_module()
    Path(str(setup.journal) + ".kill").touch()
    run = app.workers.submit("payer", "pay 30", state_id="pay-1")
    workers = [setup.start_worker(), setup.start_worker()]
    try:
        answer = wait_all(setup, [run], 240)[0]
    finally:
        stop(workers)
    assert sorted(worker.returncode for worker in workers)[0] == -signal.SIGKILL  # one died in the tool
    assert answer == "model read: paid 30 (found in the ledger)"
    calls = setup.journal.read_text().splitlines()
    assert [line.split()[0] for line in calls] == ["pay", "reconcile"]
    assert calls[0].split()[1] == calls[1].split()[1] == calls[0].split()[1]
    assert len(Path(str(setup.journal) + ".ledger").read_text().splitlines()) == 1
