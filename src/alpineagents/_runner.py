"""How one turn's tool calls run.

`run_tool_calls(state, tools, context)` and `await arun_tool_calls(state, tools, context)` close every pending
call of `state`: input errors first, then the permission phase (when `context.permissions` is not `None`), then the
parallel group (daemon worker threads, at most 32 at once; under `arun_tool_calls` async tools run as Tasks on the
loop), then the serial group; the first tool exception in completion order is re-raised with a note.

That order is written once, as the generator `_steps`: it yields each thing a turn waits for (the next finished
calls, a save, a permission decision, one pass of the event loop) and the two entry points perform them, one by
blocking and one by awaiting; `_Drive` is the loop both use to hand each answer back to the steps. Besides that, the only difference is that under `arun_tool_calls` a tool whose
`is_async` is true runs as a Task on the loop instead of on a worker thread.

All records and Reporter calls happen on the calling thread (the loop thread for the async twin); worker threads
only run tools and format their results. Each call gets a daemon worker thread of its own; a worker whose call
ended parks for a few seconds and may take a later call (starting a thread costs more than a turn's whole budget).
Names other modules and tests use directly: `_Job`, `_Executor.submit` (looked up on the class at call time, so a
replacement takes effect), `_finish`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
import types
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Mapping
from concurrent.futures import CancelledError as FutureCancelledError
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from alpineagents import _observe as observe
from alpineagents._frozen import thaw
from alpineagents._history.approvals import Hold, has_waits
from alpineagents._history.closing import STOPPED_TURN, closed_outcome, closed_result, is_interrupt
from alpineagents._tools.arrivals import LoopArrivals, ThreadArrivals, yield_once
from alpineagents._tools.scope import RunSettings, enter_call
from alpineagents._turn.approvals import WaitingSubagent, approvals_of, child_hold, hold, settled
from alpineagents._turn.permission_rules import adecide, decide
from alpineagents._turn.workers import WorkerPool
from alpineagents._values.budget import WAITING_STOPS
from alpineagents.errors import ToolError, ToolInputError
from alpineagents.permissions import Allowed, Deferred
from alpineagents.tool import Tool, format_result, invalid_args_message
from alpineagents.types import (
    INVALID_ARGS_KEY,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultContent,
    format_call,
)

if TYPE_CHECKING:
    from alpineagents.permissions import Decision
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.store import Store

__all__ = ["run_tool_calls", "arun_tool_calls", "MAX_WORKERS"]

MAX_WORKERS = 32
"""At most this many tools run on worker threads at once; the others start as slots free up."""

# Module-level copies of the enum members read for every call (an enum member read costs ~0.15 µs each on 3.11).
_DONE = ToolOutcomeKind.DONE
_ERROR = ToolOutcomeKind.ERROR
_INPUT_ERROR = ToolOutcomeKind.INPUT_ERROR
_DONE_OUTCOME = ToolOutcome(_DONE)
_ERROR_OUTCOME = ToolOutcome(_ERROR)
_INPUT_ERROR_OUTCOME = ToolOutcome(_INPUT_ERROR)

_HANDOFF = threading.Lock()
"""Makes "the result arrived" and "the waiter gave up on the call" one atomic decision per job."""

_BACKGROUND: set[asyncio.Task[Any]] = set()
"""Cancelled tool Tasks, kept referenced until they end (never awaited)."""


class _Job:
    """One call being run. `future` is `None` until the job is handed to a worker; `announced` is true once
    `on_tool_start` was called. `outcome`/`error` are the error flags a worker sets for a `ToolError` or
    `ToolInputError` result (a new job has none: a plain value finishes as `done`)."""

    __slots__ = (
        "call",
        "tool",
        "context",
        "future",
        "announced",
        "outcome",
        "error",
        "finished",
        "started",
        "abandoned",
        "dropped",
        "cancel_sent",
        "runner",
        "threaded",
        "handed",
        "notify",
    )

    future: Future[Any] | None
    error: BaseException | None
    runner: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None
    handed: tuple[ToolResultContent | None, BaseException | None] | None
    notify: Callable[[_Job], None] | None

    def __init__(self, call: ToolCall, tool: Tool | None = None, context: RunSettings | None = None) -> None:
        self.call = call
        self.tool = tool
        self.context = context
        self.outcome = _DONE
        self.future = self.error = self.runner = self.handed = self.notify = None
        self.announced = self.finished = self.started = self.abandoned = self.dropped = self.cancel_sent = False
        self.threaded = True

    def __repr__(self) -> str:
        return f"<_Job {format_call(self.call)}>"


# --- running one tool (worker thread or Task) ----------------------------------------------------------------


def _error_result(job: _Job, error: Exception) -> str:
    if isinstance(error, ToolError):
        job.outcome = _ERROR
        job.error = error
        return str(error)
    job.outcome = _INPUT_ERROR
    return f"(input error: {error})"


_COROUTINE = types.CoroutineType
_PLAIN = frozenset({str, type(None), dict, list, tuple, int, float, bool})
"""Types of tool results that are never awaitable (a cheap test before `inspect.isawaitable`)."""


T = TypeVar("T")


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _drive(job: _Job, awaitable: Awaitable[object]) -> object:
    """Run an awaitable to completion on a new event loop in this worker thread."""
    loop = asyncio.new_event_loop()
    try:
        coro = awaitable if asyncio.iscoroutine(awaitable) else _await(awaitable)
        task = loop.create_task(coro)
        with _HANDOFF:
            job.runner = (loop, task)
            cancel = job.abandoned
        if cancel:
            job.cancel_sent = True
            task.cancel()
        return loop.run_until_complete(task)
    finally:
        try:
            leftovers = asyncio.all_tasks(loop)
            for leftover in leftovers:
                leftover.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _begin(job: _Job, state: State) -> Any:
    """Start the call in this thread or Task: set the call scope (so a run started by the tool finds its parent),
    then call the tool with its own copy of the arguments. Returns what `run` returned (maybe an awaitable)."""
    enter_call(state, job.call, job.context)
    return _tool(job).run(thaw(job.call.args), state)


def _caught(job: _Job, error: BaseException) -> tuple[ToolResultContent | None, BaseException | None]:
    """What an exception from a call gives the waiter: a `ToolError` or `ToolInputError` its result text (the
    job's error flags set), any other exception itself."""
    if isinstance(error, (ToolError, ToolInputError)):
        return _error_result(job, error), None
    return None, error


def _work(job: _Job, state: State) -> tuple[ToolResultContent | None, BaseException | None]:
    """Worker-thread body: run the tool (an awaitable on a loop of this thread) and format its result; return
    `(content, error)` for `_complete`."""
    try:
        value = _begin(job, state)
        if type(value) not in _PLAIN and inspect.isawaitable(value):
            value = _drive(job, value)
        return format_result(value), None
    except BaseException as error:  # noqa: BLE001 - handed to the calling thread unchanged
        return _caught(job, error)


async def _task_body(job: _Job, state: State, arrivals: LoopArrivals[_Job]) -> None:
    """Task body for an async tool under `arun_tool_calls` (runs on the loop thread)."""
    try:
        value = _begin(job, state)
        if type(value) is _COROUTINE or inspect.isawaitable(value):  # the exact-type test is the cheap common case
            value = await value
        content, error = format_result(value), None
    except BaseException as caught:  # noqa: BLE001 - handed to the loop unchanged (CancelledError included)
        content, error = _caught(job, caught)
    _settle(job, state, arrivals, content, error)


def _settle(
    job: _Job,
    state: State,
    arrivals: LoopArrivals[_Job],
    content: ToolResultContent | None,
    error: BaseException | None,
) -> None:
    if job.abandoned:  # only ever set on this (the loop) thread
        _record_late(job, state, content, error)
        return
    job.future = _Outcome(content, error)  # type: ignore[assignment]
    arrivals.put(job)


class _Outcome:
    """The completed "future" of a job run as a Task on the loop (same reading methods as a `Future`)."""

    __slots__ = ("value", "error")

    def __init__(self, value: object, error: BaseException | None) -> None:
        self.value = value
        self.error = error

    def done(self) -> bool:
        return True

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return self.error

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _complete(job: _Job, state: State, result: tuple[ToolResultContent | None, BaseException | None]) -> None:
    """Hand a worker's result to the waiter (the job's future, then `job.notify`), or record it as late when the
    waiter gave up on the call."""
    content, error = result
    future = job.future
    with _HANDOFF:
        late = job.abandoned
        if not late and future is not None:
            job.handed = (content, error)  # what the future gets: `_finish` reads it without the future's lock
            if error is None:
                future.set_result(content)
            else:
                future.set_exception(error)
    if late:
        _record_late(job, state, content, error)
    elif job.notify is not None:
        job.notify(job)


def _record_late(job: _Job, state: State, content: ToolResultContent | None, error: BaseException | None) -> None:
    """A call nobody waited for ended: record its result as a late result (or as the call's own result when the
    very same call is still pending). A call dropped before it started, or a coroutine that ended in the cancel it
    was sent, records nothing."""
    if job.dropped:
        return
    if error is None:
        assert content is not None  # a call that returned has its formatted result
        state._late_result(job.call, content, job.outcome, error=job.error)
        return
    if job.cancel_sent and isinstance(error, asyncio.CancelledError):
        return
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    outcome = ToolOutcomeKind.INTERRUPTED if is_interrupt(error) else ToolOutcomeKind.ABORTED
    state._late_result(job.call, f"(exception: {text})", outcome, error=error)


class _Executor:
    """Hands each job to its own daemon worker thread (the caller keeps at most `max_workers` running).

    A worker whose job ended parks for a few seconds and may take the next job (so a turn does not pay for
    starting a thread); a worker still running an abandoned tool is never reused.
    """

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers

    def submit(self, job: _Job, state: State) -> None:
        """Set `job.future`, then run the tool on a daemon worker thread in a copy of the caller's contextvars."""
        job.future = Future()
        _WORKERS.start(contextvars.copy_context(), job, state)


_WORKERS = WorkerPool(_work, _complete)
"""The worker threads of every turn (`_Executor.submit` hands jobs to them)."""

_SUBMIT = _Executor.submit
"""The executor's own `submit`, whose worker notifies the waiter itself (no done-callback on the future)."""

_EXECUTOR = _Executor(MAX_WORKERS)
"""The executor of every turn (it holds no state of its own besides `max_workers`)."""


# --- recording -----------------------------------------------------------------------------------------------


def _finish(state: State, reporter: Reporter | None, job: _Job, failures: list[_Job]) -> None:
    """Record one job whose future is done, on the calling thread.

    A result is recorded only if its call is still pending (one atomic step), then `on_tool_end` follows when the
    job was announced. An exception is recorded as an `error` entry with the call, and the job joins `failures`
    (once); the call stays pending. Finishing a job twice, or one whose future is not done, does nothing.
    """
    if job.finished:
        return
    future = job.future
    content: ToolResultContent | None
    if type(future) is _Outcome:  # a Task's result, already on this thread: no lock to take
        error = future.error
        content = future.value
    elif future is None:
        return
    elif job.handed is not None:  # completed by our worker (its future is done when this job is finished)
        content, error = job.handed
    else:
        try:
            # One locked read instead of done() + cancelled() + exception(): with no wait allowed, exception(0)
            # raises at once for a future that is not done or was cancelled.
            error = future.exception(0)
        except (FutureCancelledError, TimeoutError):
            return
        content = None if error is not None else future.result(0)
    job.finished = True
    call = job.call
    if error is None:
        assert content is not None
        outcome = job.outcome
        recorded = state._tool_result(call, content, outcome, error=job.error, if_pending=True)
        if recorded and job.announced and reporter is not None:
            shown = _DONE_OUTCOME if outcome is _DONE else _ERROR_OUTCOME if outcome is _ERROR else ToolOutcome(outcome)
            reporter.on_tool_end(state, call, content, shown)
        return
    if type(error) is WaitingSubagent:  # the call's subagent stopped for approval: the call waits with it
        state._hold_for_approval([child_hold(call, error.child)])
        return
    state._record_error(error, call)
    if job not in failures:
        failures.append(job)
    if job.announced and reporter is not None:
        reporter.on_tool_end(state, call, closed_result(error), closed_outcome(error))


def _raise_first(failures: list[_Job]) -> None:
    job = failures[0]
    assert job.future is not None
    error = job.future.exception()
    assert error is not None
    error.add_note(f"exception raised in tool {format_call(job.call)}")
    raise error


def _input_errors(
    state: State, tools: Mapping[str, Tool], context: RunSettings, calls: tuple[ToolCall, ...]
) -> list[_Job]:
    """Close the calls to unknown tools and with unreadable arguments; return the jobs of the other calls."""
    reporter = context.reporter
    jobs: list[_Job] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is None:
            names = ", ".join(tools) or "(none)"
            message: str | None = f"unknown tool {call.name!r}. Available tools: {names}"
        elif INVALID_ARGS_KEY not in call.args:  # readable arguments (`invalid_args_message` would be None)
            jobs.append(_Job(call, tool, context))
            continue
        else:
            message = invalid_args_message(call.args)
        text = f"(input error: {message})"
        if reporter is not None:
            reporter.on_tool_start(state, call)
        if state._tool_result(call, text, _INPUT_ERROR, if_pending=True) and reporter is not None:
            reporter.on_tool_end(state, call, text, _INPUT_ERROR_OUTCOME)
    return jobs


def _apply_decision(state: State, reporter: Reporter | None, job: _Job, decision: Decision) -> bool | None:
    """Record one permission decision. True: allowed; False: refused; None: the turn was stopped.

    A refusal is recorded as a `denied` result, then `on_tool_end` follows. A refusal with `stop=True` closes the
    whole turn in one atomic step (this call denied, every other pending call cancelled, the stop recorded), and
    only then are the Reporter's `on_tool_end` calls made, the denied call first.
    """
    if (observer := observe.OBSERVER) is not None:
        observer.decided(state, job.call, decision)
    verdict = decision.verdict
    if isinstance(verdict, Allowed):
        return True
    assert not isinstance(verdict, Deferred)  # the phase holds those
    call = job.call
    decided_by = decision.decided_by
    denied = ToolOutcome(ToolOutcomeKind.DENIED, decision.error, decided_by)
    if verdict.stop:
        assert decided_by is not None  # a stop is always some permission's verdict
        cancelled = state._stop_turn(call, verdict.reason, decided_by)
        if reporter is not None:
            reporter.on_tool_end(state, call, verdict.reason, denied)
            for other in cancelled:
                reporter.on_tool_end(
                    state, other, STOPPED_TURN, ToolOutcome(ToolOutcomeKind.CANCELLED, None, decided_by)
                )
        return None
    recorded = state._tool_result(call, verdict.reason, ToolOutcomeKind.DENIED, error=decision.error, if_pending=True)
    if recorded and reporter is not None:
        reporter.on_tool_end(state, call, verdict.reason, denied)
    return False


# --- one turn, written once ----------------------------------------------------------------------------------
#
# `_steps` yields what the turn waits for; the driver performs it and sends back the answer, or throws in what it
# raised (a save that failed, Ctrl+C, the cancellation of the task). A `_Job` yielded asks for the permission
# decision about its call.

_WAIT = "wait for the next finished calls"  # answer: a non-empty list of jobs
_SAVE = "save the State"  # answer: None
_PASS = "let the event loop run once"  # answer: None (only yielded under arun_tool_calls)

_Action = _Job | str
_Steps = Generator[_Action, Any, None]


def _steps(
    state: State,
    calls: tuple[ToolCall, ...],
    tools: Mapping[str, Tool],
    context: RunSettings,
    arrivals: ThreadArrivals[_Job] | LoopArrivals[_Job],
) -> _Steps:
    """The order of one turn: input errors, the permission phase, the parallel group, then the serial calls one
    at a time (only while no call has raised), and last the first exception in completion order."""
    jobs = _input_errors(state, tools, context, calls)
    if jobs and (context.permissions is not None or has_waits(state._acc)):
        jobs = yield from _permission_phase(state, context, jobs)
    if not jobs:
        return
    failures: list[_Job] = []
    for group in _groups(jobs):
        yield from _run_group(state, context, group, failures, arrivals)
        if failures:
            _raise_first(failures)
        if type(state.stopped) in WAITING_STOPS:  # a subagent waits for a decision or a budget: the turn stops here
            return


def _permission_phase(state: State, context: RunSettings, jobs: list[_Job]) -> Generator[_Action, Any, list[_Job]]:
    """Ask about every call in request order before any tool runs; return the allowed jobs. A phase that recorded
    anything saves before any tool starts. A permission's exception is recorded with its call, then raised.

    A call a person decided about (it waited for approval) is not asked again: the decision stands. Calls held
    for a decision (`Deferred`) stop the turn once every call was asked: no tool of the turn runs."""
    records = approvals_of(state)
    before = state.snapshot()
    allowed: list[_Job] = []
    held: list[Hold] = []
    for job in jobs:
        decision = settled(records, job.call)
        if decision is not None and records.child_of(job.call.id) is not None:
            # Its subagent waited and is run again: the call goes on from the run that held it, where it got its
            # `on_tool_start`; it gets no second one, and its `on_tool_end` when it ends.
            job.announced = True
        if decision is None:
            if context.permissions is None:
                allowed.append(job)
                continue
            try:
                decision = yield job
            except Exception as error:
                state._record_error(error, job.call)
                raise
        if isinstance(decision.verdict, Deferred):
            held.append(hold(job.call, decision))
            continue
        verdict = _apply_decision(state, context.reporter, job, decision)
        if verdict is None:
            allowed, held = [], []
            break
        if verdict:
            allowed.append(job)
    if held:
        state._hold_for_approval(held)
        allowed = []
    if context.store is not None and state.snapshot() is not before:
        yield _SAVE
    return allowed


def _groups(jobs: list[_Job]) -> list[list[_Job]]:
    """The parallel group (calls whose tool has `parallel=True`), then each serial call as a group of its own."""
    if len(jobs) == 1:  # one call: its parallel or serial group is the same group of one
        return [jobs]
    parallel = [job for job in jobs if _tool(job).parallel]
    groups = [parallel] if parallel else []
    groups += [[job] for job in jobs if not _tool(job).parallel]
    return groups


def _tool(job: _Job) -> Tool:
    tool = job.tool
    assert tool is not None  # every job of a turn has its tool
    return tool


def _run_group(
    state: State,
    context: RunSettings,
    jobs: list[_Job],
    failures: list[_Job],
    arrivals: ThreadArrivals[_Job] | LoopArrivals[_Job],
) -> Generator[_Action, Any, None]:
    """Announce and start `jobs`, then record them in completion order, saving after each batch.

    A Reporter's exception does not abandon the group: what runs is waited for and recorded (each announced call
    still gets its `on_tool_end`), calls not yet announced are not started, and the exception is raised at the end.
    Any other exception reaching the group (Ctrl+C, the task's cancellation) is an interrupt: `_give_up`.
    """
    reporter = context.reporter
    store = context.store
    waiting: deque[_Job] = deque()
    broke: Exception | None = None  # the Reporter's first exception
    try:
        announced, tasks, broke = _announce(state, reporter, jobs, arrivals, waiting)
        if tasks:
            # The Tasks just created run their first step before this one resumes, in the same pass of the event
            # loop, so a tool that ends without waiting is recorded without a waiter (one loop pass per turn, not two).
            yield _PASS
        while announced:
            batch: list[_Job] = yield _WAIT
            for job in batch:
                try:
                    _finish(state, reporter, job, failures)
                except Exception as error:  # noqa: BLE001 - raised once the announced calls are recorded
                    broke = broke or error
                announced -= 1
                if job.threaded and waiting:
                    _start(waiting.popleft(), state, arrivals.from_thread)
            if store is not None:
                try:
                    yield _SAVE
                except Exception:  # noqa: BLE001 - a batch save may fail; the save at the end of the turn reports
                    pass
        if broke is not None:
            raise broke
    except BaseException as interrupt:
        if interrupt is not broke:
            _give_up(state, reporter, jobs, arrivals.drain(), failures, interrupt)
        raise


def _announce(
    state: State,
    reporter: Reporter | None,
    jobs: list[_Job],
    arrivals: ThreadArrivals[_Job] | LoopArrivals[_Job],
    waiting: deque[_Job],
) -> tuple[int, bool, Exception | None]:
    """Announce each job (`on_tool_start`; not a resumed call, announced by the run that held it), then start it:
    as a Task when it is async and there is a loop, else on a worker thread while fewer than `MAX_WORKERS` run
    (the rest go to `waiting`). A Reporter's exception stops the announcing. Returns how many jobs were announced, whether a Task was started, and that exception or `None`."""
    free = _EXECUTOR.max_workers
    announced = 0
    tasks = False
    for job in jobs:
        if reporter is not None and not job.announced:  # a resumed call was announced in the run that held it
            try:
                reporter.on_tool_start(state, job.call)
            except Exception as error:  # noqa: BLE001 - raised once the announced calls are recorded
                return announced, tasks, error
        job.announced = True
        announced += 1
        if type(arrivals) is LoopArrivals and _tool(job).is_async:
            _start_task(job, state, arrivals)
            tasks = True
        elif free > 0:
            free -= 1
            _start(job, state, arrivals.from_thread)
        else:
            waiting.append(job)
    return announced, tasks, None


def _start(job: _Job, state: State, notify: Callable[[_Job], None]) -> None:
    """Hand `job` to a worker through `_Executor.submit`; `notify(job)` once its future is done."""
    job.started = True
    own = _Executor.submit is _SUBMIT  # looked up at call time: a replacement may not use our worker
    if own:
        job.notify = notify  # our worker calls it right after completing the future
    _Executor.submit(_EXECUTOR, job, state)
    if not own:
        future = job.future
        assert future is not None
        future.add_done_callback(functools.partial(_notify_done, notify, job))


def _notify_done(notify: Callable[[_Job], None], job: _Job, _future: Future[Any]) -> None:
    notify(job)


def _start_task(job: _Job, state: State, arrivals: LoopArrivals[_Job]) -> None:
    loop = arrivals.loop
    job.started = True
    job.threaded = False
    job.runner = (loop, loop.create_task(_task_body(job, state, arrivals)))


def _give_up(
    state: State,
    reporter: Reporter | None,
    jobs: list[_Job],
    arrived: list[_Job],
    failures: list[_Job],
    interrupt: BaseException,
) -> None:
    """The waiting thread was interrupted: record what finished, let go of the rest (running coroutines are
    cancelled, running sync tools are not waited for, calls not started never run), and pair every
    `on_tool_start` with an `on_tool_end`. Never raises; a failure here becomes a note on `interrupt`."""
    finished: list[_Job] = []
    to_cancel: list[_Job] = []
    with _HANDOFF:
        for job in jobs:
            if job.finished:
                continue
            if not job.started:
                job.dropped = True
                continue
            future = job.future
            if future is not None and future.done():
                finished.append(job)
            else:
                job.abandoned = True
                if job.runner is not None:
                    to_cancel.append(job)
    for job in to_cancel:
        _cancel(job)
    order = [job for job in arrived if job in finished]
    order += [job for job in finished if job not in order]
    for job in order:
        _safely(interrupt, _finish, state, reporter, job, failures)
    text = closed_result(interrupt)
    outcome = closed_outcome(interrupt)
    for job in jobs:
        if job.announced and not job.finished:
            job.finished = True
            if reporter is not None:
                _safely(interrupt, reporter.on_tool_end, state, job.call, text, outcome)


def _cancel(job: _Job) -> None:
    runner = job.runner
    if runner is None:
        return
    loop, task = runner
    job.cancel_sent = True
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        task.cancel()
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)
        return
    try:
        loop.call_soon_threadsafe(task.cancel)
    except RuntimeError:  # the worker's loop already closed: the coroutine ended
        pass


def _safely(interrupt: BaseException, fn: Callable[..., object], *args: object) -> None:
    try:
        fn(*args)
    except BaseException as error:  # noqa: BLE001 - the interrupt is what propagates
        interrupt.add_note(f"while handling it, {fn.__name__} also raised {type(error).__name__}: {error}")


# --- the two drivers ---------------------------------------------------------------------------------------------


def run_tool_calls(state: State, tools: Mapping[str, Tool], context: RunSettings) -> None:
    """Close every pending call of `state`: input errors, permissions (asked with `check`), the parallel group on
    worker threads, the serial calls. Re-raises the first tool exception (in completion order) with the note
    `exception raised in tool ...`; Ctrl+C while waiting is the interrupt."""
    calls = state.pending_calls
    if not calls:
        return
    arrivals: ThreadArrivals[_Job] = ThreadArrivals()
    drive = _Drive(_steps(state, calls, tools, context, arrivals))
    for action in drive:
        try:
            if action is _WAIT:
                drive.answer = arrivals.wait()
            elif action is _SAVE:
                _store(context).save(state)
            elif type(action) is _Job:
                drive.answer = _decide(state, context, action)
        except BaseException as error:  # noqa: BLE001 - thrown into the steps, which decide what propagates
            drive.raised = error


async def arun_tool_calls(state: State, tools: Mapping[str, Tool], context: RunSettings) -> None:
    """Async twin of `run_tool_calls`: async tools run as Tasks on this loop, the others on worker threads;
    permissions are asked with `acheck`, the store saves with `asave`; cancellation is the interrupt."""
    calls = state.pending_calls
    if not calls:
        return
    arrivals: LoopArrivals[_Job] = LoopArrivals(asyncio.get_running_loop())
    drive = _Drive(_steps(state, calls, tools, context, arrivals))
    for action in drive:
        try:
            if action is _WAIT:
                drive.answer = await arrivals.wait()
            elif action is _PASS:
                await yield_once()
            elif action is _SAVE:
                await _store(context).asave(state)
            elif type(action) is _Job:
                drive.answer = await _adecide(state, context, action)
        except BaseException as error:  # noqa: BLE001 - thrown into the steps, which decide what propagates
            drive.raised = error


class _Drive:
    """The steps of one turn as the actions a driver performs, written once for both drivers: iterating gives
    the next action; the driver sets `answer` (what the action gave) or `raised` (what performing it raised)
    before asking for the one after, which sends it (or throws it) into the steps. The iteration ends with the
    turn; what the steps let propagate propagates out of the driver's loop."""

    __slots__ = ("_steps", "answer", "raised")

    def __init__(self, steps: _Steps) -> None:
        self._steps = steps
        self.answer: object = None
        self.raised: BaseException | None = None

    def __iter__(self) -> _Drive:
        return self

    def __next__(self) -> _Action:
        raised = self.raised
        if raised is None:
            action = self._steps.send(self.answer)
        else:
            self.raised = None
            action = self._steps.throw(raised)
        self.answer = None
        return action


def _store(context: RunSettings) -> Store:
    store = context.store
    assert store is not None  # `_SAVE` is yielded only when there is a store
    return store


def _decide(state: State, context: RunSettings, job: _Job) -> Decision:
    assert context.permissions is not None and job.tool is not None
    return decide(context.permissions, state, job.call, job.tool, context.owners or None)


async def _adecide(state: State, context: RunSettings, job: _Job) -> Decision:
    assert context.permissions is not None and job.tool is not None
    return await adecide(context.permissions, state, job.call, job.tool, context.owners or None)
