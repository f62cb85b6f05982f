"""Runs spread over worker processes and machines, on DBOS: queued, taken over after a crash, never run twice.

Install the extra: `pip install -e '.[dbos]'` in the library's clone.

```python
# app.py, imported by every process
from alpineagents import Agent, PostgresStore
from alpineagents.workers import Workers

workers = Workers(
    agents={"support": Agent("claude-sonnet-5", tools=[...])},
    store=PostgresStore(DSN),
    database=DSN,                 # DBOS keeps its queue and the runs' status here (PostgreSQL or sqlite:///...)
)

# any process (a web handler, a script)
run = workers.submit("support", "Refund order 1234")     # returns at once
run.status()                                             # "queued", "running", "done" or "error"
run.result(timeout=60)                                   # the answer, or WorkerRunError

# each worker process:  alpineagents worker app:workers   (or workers.serve())
```

How the two halves share the work. The store is the one journal of a run: every model request, reply and tool
result is saved there at the Agent's save points, and a State that was left half-way resumes from it (a finished,
saved tool call never runs again; a call that was running gets an "unknown" result the model reads). DBOS decides
which worker runs which State and keeps the status of each run: `submit` enqueues one DBOS workflow whose id is
derived from the State id and its length, so submitting the same run twice enqueues it once, then saves the State
and lets go of it. A State has one run queued or running at a time: the workflow holds the State's id as its DBOS
deduplication id until it ends, so a second submit learns that the State is taken before it writes anything. The
workflow waits for its submit's save, loads the State from the store and runs the named Agent on it. Model
requests and tool calls are not DBOS steps (a step that DBOS runs again after a crash would run a tool a second
time).

A worker that dies (kill -9, a lost machine) leaves its runs pending. Every live worker looks, once a second, for
pending runs of other workers whose State no process holds any more: the store's one-writer lock is the proof that
the old owner is gone (a worker that is slow, not dead, still holds it). Such a run is put back on the queue and
resumes from its saved State on whichever worker takes it. A worker stopped with SIGTERM takes no new run, lets its
runs finish for `grace` seconds, and leaves the others pending for the live workers to take over.

One machine: `database="sqlite:///runs-queue.sqlite"` and a `SQLiteStore`. Many machines: PostgreSQL for both.
A run that waits for a person ends its workflow (`status()` is "done", the answer is the question); submit the
State again with the person's message to continue it: `workers.submit("support", "yes", state_id=run.state_id)`.
A run whose tool calls wait for approval (a `Deferred` verdict), or whose next step waits for a bigger budget, ends
its workflow as "waiting"; record the decisions (`state.approve`/`state.deny`, or `alpineagents approve`) or the
raise (`state.raise_budget`), then submit the State again: `workers.submit("support", state)` with the State they
were recorded on.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from alpineagents._install import install_hint
from alpineagents._stores.locks import let_go_of
from alpineagents.errors import AlpineAgentsError, fix_message
from alpineagents.state import State
from alpineagents.store import StateLockedError, Store
from alpineagents.types import Message, StopEntry

if TYPE_CHECKING:
    from alpineagents.agent import Agent

__all__ = ["Workers", "Run", "WorkerRunError", "StateBusyError", "WORKFLOW"]

WORKFLOW = "alpineagents.run"
"""The name of the one DBOS workflow every run is."""

_log = logging.getLogger("alpineagents.workers")

_SERVING: Workers | None = None
"""The Workers that this process serves (DBOS runs one application per process)."""


class WorkerRunError(AlpineAgentsError):
    """A run on a worker ended with an exception: its type and message (the State keeps the whole record)."""


class StateBusyError(AlpineAgentsError):
    """The State has a run queued or running (one at a time): submit its next message when that run has ended."""


class _Conflict(Exception):
    """The State changed while this process was submitting it: another submit's run (`run_id`, when known)."""

    def __init__(self, run_id: str | None) -> None:
        super().__init__(run_id)
        self.run_id = run_id


_SUBMIT_WAIT = 10.0
"""How long (seconds) a submit waits for another submit of the same State to save it, and a worker for a submit."""


def _dbos() -> Any:
    try:
        import dbos
    except ImportError:
        raise ImportError(
            fix_message(
                "alpineagents.workers needs DBOS, which is not installed",
                "install the extra",
                install_hint("dbos"),
            )
        ) from None
    return dbos


@dataclass(frozen=True)
class Run:
    """One submitted run: `id` (the DBOS workflow id), `state_id` (the State in the store)."""

    id: str
    state_id: str
    workers: Workers

    def status(self) -> str:
        """One of "queued", "running", "done", "waiting" (the run ended with calls waiting for a person's
        decision, or for a bigger budget: decide them or raise it, then submit the State again), "error" or
        "cancelled"."""
        found = self.workers._client().retrieve_workflow(self.id).get_status()  # pyright: ignore[reportPrivateUsage]
        output = found.output or {}
        if found.status == "SUCCESS" and (output.get("waiting") or output.get("budget_waits")):
            return "waiting"
        return _STATUS.get(found.status) or str(found.status).lower()

    def result(self, timeout: float | None = None) -> Any:
        """The run's answer once it ended (waiting at most `timeout` seconds; TimeoutError after that).

        Raises:
            WorkerRunError: The run ended with an exception.
            TimeoutError: The run did not end in time.
        """
        client = self.workers._client()  # pyright: ignore[reportPrivateUsage]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = client.retrieve_workflow(self.id).get_status()
            if status.status == "SUCCESS":
                return (status.output or {}).get("answer")
            if status.status in _FAILED:
                raise WorkerRunError(f"run {self.id!r} of State {self.state_id!r} ended: {status.error}")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"run {self.id!r} of State {self.state_id!r} did not end within {timeout} s")
            time.sleep(0.05)


_STATUS = {
    "ENQUEUED": "queued",
    "DELAYED": "queued",
    "PENDING": "running",
    "SUCCESS": "done",
    "ERROR": "error",
    "CANCELLED": "cancelled",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "error",
}

_WAITING = frozenset({"ENQUEUED", "DELAYED", "PENDING"})
"""The DBOS statuses of a run that has not ended."""

_FAILED = frozenset({"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
"""The DBOS statuses of a run that ended without an outcome (it may be submitted again)."""


@dataclass(repr=False, eq=False)
class Workers:
    """Named Agents, one store, one DBOS queue: submit runs from any process, serve them in worker processes.

    Args:
        agents: The Agents a run may name, by name. Their settings (tools, permissions, reporter, loop) apply.
        store: Where every run's State is kept (every process must reach the same store).
        database: The DBOS system database: `postgresql://...`, or `sqlite:///path` on one machine.
        queue: The DBOS queue's name.
        concurrency: How many runs one worker process runs at once.
        takeover: How often (seconds) a worker looks for runs of dead workers.
        grace: How long (seconds) a worker stopped with SIGTERM lets its runs finish.
        app_version: The application version every worker shares (DBOS only hands a run to the same version).
    """

    agents: Mapping[str, Agent]
    _: KW_ONLY
    store: Store
    database: str
    queue: str = "alpineagents"
    concurrency: int = 8
    takeover: float = 1.0
    grace: float = 30.0
    app_version: str = "alpineagents-1"
    _client_obj: Any = field(default=None, init=False)
    _migrated: bool = field(default=False, init=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)

    def __post_init__(self) -> None:
        agents = self.agents
        if not isinstance(agents, Mapping) or not agents:
            raise TypeError(
                fix_message(
                    "Workers takes the Agents a run may name, as a dict of names to Agents",
                    "pass agents={name: agent}",
                    'Workers(agents={"support": agent}, store=store, database=dsn)',
                )
            )
        self.agents = {name: _with_store(name, agent, self.store) for name, agent in agents.items()}

    def __repr__(self) -> str:
        return f"Workers(agents={sorted(self.agents)}, store={self.store!r}, queue={self.queue!r})"

    # -- any process --------------------------------------------------------------------------------------------

    def submit(self, agent: str, prompt: str | State, *, state_id: str | None = None) -> Run:
        """Put the run on the queue and save its State to the store; returns at once.

        `prompt` is the user's message (a new State, or the next message of the saved State `state_id`), or a State
        to run as it is. The State is handed over: this process lets go of its writer lock, so that the worker can
        write it (a State object you keep is a copy from then on: load it anew to see the run).

        A State has one run queued or running at a time. A submit while it has one gives that run when it is the
        same submit again (a retry, from this process or another: the same State, or the same message as the one
        that run answers), and raises `StateBusyError` otherwise. A run that ended in error or was cancelled can be
        submitted again: that submit is a new run.

        Raises:
            ValueError: no Agent of that name.
            TypeError: `prompt` is neither a str nor a State.
            StateBusyError: the State has a run queued or running, for another message.
        """
        self._check_agent(agent)
        self._migrate()
        deadline = time.monotonic() + _SUBMIT_WAIT
        while True:
            state = self._state_for(prompt, state_id)
            try:
                return self._submit(agent, prompt, state, deadline)
            except _Conflict as conflict:  # the State changed meanwhile (another submit's run): look again
                if isinstance(prompt, State) or time.monotonic() > deadline:
                    raise StateBusyError(_busy_message(state.id, conflict.run_id)) from None
                time.sleep(0.05)

    def _check_agent(self, agent: str) -> None:
        if agent not in self.agents:
            raise ValueError(
                fix_message(
                    f"no Agent named {agent!r} in these Workers (there are: {', '.join(sorted(self.agents))})",
                    "submit the run to one of the Agents given to Workers(agents=...)",
                    f'workers.submit("{next(iter(self.agents))}", "the task")',
                )
            )

    def _submit(self, agent: str, prompt: str | State, state: State, deadline: float) -> Run:
        """One try of `submit`: claim the State's one run slot on the queue, then save the State.

        The slot is claimed first (DBOS lets one workflow hold a deduplication id, the State's id, while it is
        queued or running), so a second submit learns that the State is taken before it writes anything."""
        state_id, length = state.id, len(state.history)
        run_id = self._new_run_id(state_id, length)
        if run_id is None:  # this very run was queued before and did not fail: the same submit again
            return Run(self._run_id(state_id, length), state_id, self)
        held = self._enqueue(agent, state_id, length, run_id)
        if held is not None:
            if _repeats(held, state, prompt, self.store, deadline):
                return Run(held, state_id, self)
            if not isinstance(prompt, State) and self._changed(state_id, length - 1):
                raise _Conflict(held)
            raise StateBusyError(_busy_message(state_id, held))
        try:
            self.store.save(state)
        except BaseException as error:
            # Its worker waits for the save: cancelled, it ends without running (and if the cancel fails too, the
            # worker gives up waiting and ends the run in error, which frees the State for the next submit).
            with contextlib.suppress(Exception):
                self._client().cancel_workflow(run_id)
            if isinstance(error, (StateLockedError, ValueError)) and not isinstance(prompt, State):
                if self._changed(state_id, length - 1):
                    raise _Conflict(None) from None
            raise
        finally:
            let_go_of(state)  # the worker writes it from now on
        return Run(run_id, state_id, self)

    def _enqueue(self, agent: str, state_id: str, length: int, run_id: str) -> str | None:
        """Queue the run `run_id`; `None` when queued, else the id of the run of the State that is queued or
        running already."""
        from dbos._error import DBOSQueueDeduplicatedError, DBOSWorkflowIDInUseError

        try:
            self._client().enqueue(
                {
                    "queue_name": self.queue,
                    "workflow_name": WORKFLOW,
                    "workflow_id": run_id,
                    "workflow_id_reuse_policy": "reject",
                    "deduplication_id": state_id,
                    "app_version": self.app_version,
                },
                agent,
                state_id,
                length,
            )
        except DBOSWorkflowIDInUseError:
            return run_id  # another submit of the very same run queued it a moment ago
        except DBOSQueueDeduplicatedError:
            return self._pending(state_id) or run_id
        return None

    def _changed(self, state_id: str, length: int) -> bool:
        """Whether the store's State `state_id` has more than `length` entries (someone wrote it meanwhile)."""
        record = self.store.read(state_id)
        return record is not None and len(record.entries) > length

    def run(self, run_id: str, state_id: str) -> Run:
        """The handle of a run submitted earlier (by this process or another)."""
        return Run(run_id, state_id, self)

    def _state_for(self, prompt: str | State, state_id: str | None) -> State:
        if isinstance(prompt, State):
            return prompt
        if not isinstance(prompt, str):
            raise TypeError(
                fix_message(
                    f"submit() takes the user's message as a str, or a State (got: {type(prompt).__name__})",
                    "pass the message text",
                    'workers.submit("support", "Refund order 1234")',
                )
            )
        if state_id is not None and self.store.read(state_id) is not None:
            state = self.store.load(state_id)
            state.add_message(Message.user(prompt))
            return state
        return State(id=state_id, messages=[Message.user(prompt)])

    @staticmethod
    def _run_id(state_id: str, length: int, attempt: int = 1) -> str:
        """The workflow id of the `attempt`-th run that continues `state_id` from a history of `length` entries
        (State ids have no dots, so the id says whose run it is and from which length)."""
        return f"{state_id}.{length}" if attempt == 1 else f"{state_id}.{length}.{attempt}"

    def _new_run_id(self, state_id: str, length: int) -> str | None:
        """The id of a new run of `state_id` from `length` entries: the first attempt, or the one after those that
        ended in error or were cancelled; `None` when an attempt of it exists that did not fail."""
        base = self._run_id(state_id, length)
        found = self._client().list_workflows(workflow_id_prefix=base, load_input=False, load_output=False)
        statuses = {status.workflow_id: status.status for status in found}
        attempt = 1
        while (run_id := self._run_id(state_id, length, attempt)) in statuses:
            if statuses[run_id] not in _FAILED:
                return None
            attempt += 1
        return run_id

    def _pending(self, state_id: str) -> str | None:
        """The id of the run of `state_id` that is queued or running, if any."""
        found = self._client().list_workflows(
            workflow_id_prefix=f"{state_id}.",
            status=sorted(_WAITING),
            name=WORKFLOW,
            load_input=False,
            load_output=False,
        )
        return found[0].workflow_id if found else None

    def _client(self) -> Any:
        with self._guard:
            if self._client_obj is None:
                self._client_obj = _dbos().DBOSClient(system_database_url=self.database)
            return self._client_obj

    def _migrate(self) -> None:
        if not self._migrated:
            _dbos().DBOS.migrate(self.database)
            self._migrated = True

    # -- a worker process ---------------------------------------------------------------------------------------

    def serve(self, *, worker_id: str | None = None) -> None:
        """Run queued runs in this process until SIGTERM, SIGINT or `stop()`; then let running runs finish for
        `grace` seconds and leave the rest to the other workers. `worker_id` names this worker in the queue (each
        live worker needs its own; default: a random one)."""
        global _SERVING
        dbos = _dbos()
        if _SERVING is not None and _SERVING is not self:
            raise RuntimeError("this process already serves other Workers (DBOS runs one application per process)")
        _SERVING = self
        self._stop.clear()
        executor = worker_id or f"alpineagents-{uuid.uuid4().hex[:12]}"
        dbos.DBOS(
            config={
                "name": "alpineagents",
                "system_database_url": self.database,
                "application_version": self.app_version,
                "executor_id": executor,
                "log_level": "WARNING",
            }
        )
        dbos.DBOS.launch()
        dbos.DBOS.register_queue(self.queue, worker_concurrency=self.concurrency, polling_interval_sec=0.2)
        previous = {sig: signal.signal(sig, lambda *_: self._stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            while not self._stop.wait(self.takeover):
                try:
                    self._take_over(dbos.DBOS, executor)
                except Exception as error:  # a passing database error: look again next time
                    _log.warning("looking for runs to take over failed: %s: %s", type(error).__name__, error)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            dbos.DBOS.destroy(workflow_completion_timeout_sec=int(self.grace))
            _SERVING = None

    def stop(self) -> None:
        """Make `serve()` return (as SIGTERM does)."""
        self._stop.set()

    def _take_over(self, dbos: Any, executor: str) -> None:
        """Put back on the queue the pending runs of other workers whose State no process holds any more."""
        pending = dbos.list_workflows(status="PENDING", name=WORKFLOW, queue_name=self.queue, load_output=False)
        now = time.time() * 1000
        for found in pending:
            if found.executor_id == executor or (found.updated_at or now) > now - 1000:
                continue  # ours, or it changed hands less than a second ago
            state_id = _state_id_of(found.input)
            if state_id is not None and self._free(state_id):
                dbos.resume_workflow(found.workflow_id, queue_name=self.queue)

    def _free(self, state_id: str) -> bool:
        """Whether no process holds the State's writer lock (its writer is gone): a write of nothing new takes the
        lock and lets it go at once, or meets `StateLockedError`."""
        record = self.store.read(state_id)
        if record is None:
            return False
        try:
            self.store.write(state_id, [], record.info)
        except StateLockedError:
            return False
        return True

    def execute(self, agent: str, state_id: str, length: int = 0) -> dict[str, Any]:
        """The body of a run on a worker: load the State (once its submit saved its `length` entries), run the
        Agent on it, give back the outcome."""
        self._wait_for_submit(state_id, length)
        state = self._load(state_id)
        if not _waiting_for_a_run(state):
            return _outcome(state)  # a run taken over after it had ended: nothing to do again
        deadline = time.monotonic() + 10
        while True:
            try:
                self.agents[agent].run(state)
                break
            except StateLockedError:
                # The process that submitted the State, or the worker that had it, is letting go of it.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
                state = self._load(state_id)
            except Exception as error:
                raise WorkerRunError(f"{type(error).__name__}: {error}") from None
        return _outcome(state)

    def _wait_for_submit(self, state_id: str, length: int) -> None:
        """Wait until the store holds the State as its submit saves it (the submit queues the run first)."""
        deadline = time.monotonic() + _SUBMIT_WAIT
        while True:
            record = self.store.read(state_id)
            if record is not None and len(record.entries) >= length:
                return
            if time.monotonic() > deadline:
                raise WorkerRunError(
                    f"the submit of this run did not save State {state_id!r} ({length} entries) within "
                    f"{_SUBMIT_WAIT:g} s: nothing was run; submit it again"
                )
            time.sleep(0.05)

    def _load(self, state_id: str) -> State:
        return self.store.load(state_id)


def _with_store(name: str, agent: Agent, store: Store) -> Agent:
    """The Agent, saving its runs to the Workers' store (the one journal every worker reads)."""
    if agent.store is None:
        return agent.copy(store=store)
    if agent.store != store:
        raise ValueError(
            fix_message(
                f"the Agent {name!r} saves to {agent.store!r}, and these Workers keep their runs in {store!r}",
                "give the Agent no store (the Workers' store is used) or the same store",
                f'Workers(agents={{"{name}": agent.copy(store=store)}}, store=store, database=dsn)',
            )
        )
    return agent


def _state_id_of(inputs: Any) -> str | None:
    """The State id a run was enqueued with (its second argument)."""
    args = inputs.get("args") if isinstance(inputs, Mapping) else getattr(inputs, "args", None)
    if isinstance(args, (list, tuple)) and len(args) >= 2 and isinstance(args[1], str):
        return args[1]
    return None


def _repeats(held: str, state: State, prompt: str | State, store: Store, deadline: float) -> bool:
    """Whether a submit of `state` (built from `prompt`) is the submit that queued the run `held` again: the same
    State as it was queued (a State object), or the same message as the one that run answers (which its submit
    saves right after queueing it: waited for until `deadline`)."""
    parts = held.split(".")
    length = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1
    if isinstance(prompt, State):
        return len(state.history) == length
    while True:
        record = store.read(state.id)
        entries = record.entries if record is not None else []
        if len(entries) >= length > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not 0 < length <= len(entries):
        return False
    queued = State(history=store.load(state.id).history[:length]).messages  # the messages that run answers
    return bool(queued) and queued[-1].role == "user" and queued[-1].text == prompt


def _busy_message(state_id: str, pending: str | None) -> str:
    which = f"the run {pending!r}" if pending else "a run another process is queueing"
    return fix_message(
        f"State {state_id!r} has {which} queued or running, and a State has one run at a time",
        "wait for that run to end (run.result()), then submit the next message",
        f'workers.run("{pending or "RUN_ID"}", "{state_id}").result(timeout=60)\n'
        f'workers.submit("support", "the next message", state_id="{state_id}")',
    )


def _waiting_for_a_run(state: State) -> bool:
    """True unless the State's last entry is a stop with nothing after it (its run has ended)."""
    history = state.history
    return not (history and isinstance(history[-1], StopEntry))


def _outcome(state: State) -> dict[str, Any]:
    stopped = state.stopped
    return {
        "answer": state.answer,
        "finished": state.finished,
        "stopped": type(stopped).__name__ if stopped is not None else None,
        "state_id": state.id,
        "waiting": [waiting.call.id for waiting in state.awaiting_approval],  # calls held for a decision
        "budget_waits": [wait.limit for wait in state.awaiting_budget],  # steps held for a bigger budget
    }


def _workflow(agent: str, state_id: str, length: int = 0) -> dict[str, Any]:
    if _SERVING is None:
        raise RuntimeError("a run reached a process that serves no Workers")
    return _SERVING.execute(agent, state_id, length)


def _register() -> None:
    """Declare the one workflow to DBOS (once per process, when this module is imported with DBOS installed)."""
    try:
        from dbos import DBOS
    except ImportError:
        return
    DBOS.workflow(name=WORKFLOW, max_recovery_attempts=100)(_workflow)


_register()
