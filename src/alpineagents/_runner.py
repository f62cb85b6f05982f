"""How one turn's tool calls run (04 §11–§12, 07 §1.4–§1.6).

`run_tool_calls(state, tools, context)` and `await arun_tool_calls(state, tools, context)` close every pending
call of `state`: input errors first, then the permission phase (when `context.permissions` is not `None`), then the
parallel group (daemon worker threads, at most 32 at once; under `arun_tool_calls` async tools run as Tasks on the
loop), then the serial group; the first tool exception in completion order is re-raised with a note.

All records and Reporter calls happen on the calling thread (the loop thread for the async twin); worker threads
only run tools and format their results. Each call gets a daemon worker thread of its own; a worker whose call
ended parks for a few seconds and may take a later call (starting a thread costs more than a turn's whole budget). Fixed internal names (04 §12): `_Job`, `_Executor.submit` (looked up on
the class at call time), `_finish`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import os
import threading
import types
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelledError
from concurrent.futures import Future
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any

from alpineagents._history.closing import STOPPED_TURN, closed_outcome, closed_result, is_interrupt
from alpineagents._frozen import thaw
from alpineagents._scope import CALL_SCOPE, CallScope
from alpineagents.errors import ToolError, ToolInputError
from alpineagents.tool import Tool, format_result, invalid_args_message
from alpineagents.types import INVALID_ARGS_KEY, ToolCall, ToolOutcome, ToolOutcomeKind, format_call

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["run_tool_calls", "arun_tool_calls", "MAX_WORKERS"]

MAX_WORKERS = 32
"""At most this many tools run on worker threads at once (04 §11.1)."""

_DONE = ToolOutcomeKind.DONE
_ERROR = ToolOutcomeKind.ERROR
_INPUT_ERROR = ToolOutcomeKind.INPUT_ERROR
_ABORTED = ToolOutcomeKind.ABORTED
_INTERRUPTED = ToolOutcomeKind.INTERRUPTED
_DENIED = ToolOutcomeKind.DENIED
_CANCELLED = ToolOutcomeKind.CANCELLED
_INPUT_ERROR_OUTCOME = ToolOutcome(_INPUT_ERROR)
_DONE_OUTCOME = ToolOutcome(_DONE)
_ERROR_OUTCOME = ToolOutcome(_ERROR)

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
    handed: tuple[Any, BaseException | None] | None
    notify: Callable[[_Job], None] | None

    def __init__(self, call: ToolCall, tool: Tool | None = None, context: Any = None) -> None:
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


def _error_result(job: _Job, error: Exception) -> Any:
    if isinstance(error, ToolError):
        job.outcome = _ERROR
        job.error = error
        return str(error)
    job.outcome = _INPUT_ERROR
    return f"(input error: {error})"


_COROUTINE = types.CoroutineType
_PLAIN = frozenset({str, type(None), dict, list, tuple, int, float, bool})
"""Types of tool results that are never awaitable (a cheap test before `inspect.isawaitable`)."""


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _drive(job: _Job, awaitable: Any) -> Any:
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


def _work(job: _Job, state: State) -> tuple[Any, BaseException | None]:
    """Worker-thread body: run the tool and format its result; return `(content, error)` for `_complete`."""
    CALL_SCOPE.set(CallScope(state, job.call, job.context))
    tool = job.tool
    assert tool is not None
    try:
        try:
            value = tool.run(thaw(job.call.args), state)
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                value = _drive(job, value)
            content: Any = format_result(value)
        except (ToolError, ToolInputError) as error:
            content = _error_result(job, error)
    except BaseException as error:  # noqa: BLE001 - handed to the calling thread unchanged
        return None, error
    return content, None


async def _task_body(job: _Job, state: State, arrivals: _Arrivals) -> None:
    """Task body for an async tool under `arun_tool_calls` (runs on the loop thread)."""
    CALL_SCOPE.set(CallScope(state, job.call, job.context))
    tool = job.tool
    assert tool is not None
    try:
        try:
            value = tool.run(thaw(job.call.args), state)
            if type(value) is _COROUTINE or inspect.isawaitable(value):  # the exact-type test is the cheap common case
                value = await value
            content: Any = format_result(value)
        except (ToolError, ToolInputError) as error:
            content = _error_result(job, error)
    except BaseException as error:  # noqa: BLE001 - handed to the loop unchanged (CancelledError included)
        _settle(job, state, arrivals, None, error)
        return
    _settle(job, state, arrivals, content, None)


def _settle(job: _Job, state: State, arrivals: _Arrivals, content: Any, error: BaseException | None) -> None:
    if job.abandoned:  # only ever set on this (the loop) thread
        _record_late(job, state, content, error)
        return
    job.future = _Outcome(content, error)  # type: ignore[assignment]
    arrivals.put(job)


class _Outcome:
    """The completed "future" of a job run as a Task on the loop (same reading methods as a `Future`)."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any, error: BaseException | None) -> None:
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


def _complete(job: _Job, state: State, content: Any, error: BaseException | None) -> None:
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


def _record_late(job: _Job, state: State, content: Any, error: BaseException | None) -> None:
    """A call nobody waited for ended: record its result (04 §11.5 "Late results")."""
    if job.dropped:
        return
    if error is None:
        state._late_result(job.call, content, job.outcome, error=job.error)
        return
    if job.cancel_sent and isinstance(error, asyncio.CancelledError):
        return
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    outcome = _INTERRUPTED if is_interrupt(error) else _ABORTED
    state._late_result(job.call, f"(exception: {text})", outcome, error=error)


class _Worker:
    """A daemon worker thread that runs one job at a time and parks (idle) between jobs for a few seconds."""

    __slots__ = ("wake", "task")

    def __init__(self, task: tuple[contextvars.Context, _Job, State]) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: tuple[contextvars.Context, _Job, State] | None = task


_IDLE: list[_Worker] = []
_IDLE_LOCK = threading.Lock()
_IDLE_SECONDS = 10.0


def _forget_workers() -> None:
    """In a forked child the parked workers do not exist: start afresh."""
    global _IDLE_LOCK
    _IDLE.clear()
    _IDLE_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _worker_main(worker: _Worker) -> None:
    while True:
        task = worker.task
        worker.task = None
        if task is not None:
            context, job, state = task
            content, error = context.run(_work, job, state)
            del task, context
            # Park first, then complete: the waiting thread wakes while this one is about to block, so the two
            # do not contend for the GIL. A submit may take this worker before the completion below; its job is
            # read on the next pass.
            with _IDLE_LOCK:
                _IDLE.append(worker)
            _complete(job, state, content, error)
            del job, state, content, error
        else:
            with _IDLE_LOCK:
                _IDLE.append(worker)
        if worker.wake.acquire(timeout=_IDLE_SECONDS):
            continue
        with _IDLE_LOCK:
            if worker in _IDLE:
                _IDLE.remove(worker)
                return
        worker.wake.acquire()  # taken by a submit right at the timeout: its job is on the way


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
        task = (contextvars.copy_context(), job, state)
        with _IDLE_LOCK:
            worker = _IDLE.pop() if _IDLE else None
        if worker is not None:
            worker.task = task
            worker.wake.release()
            return
        thread = threading.Thread(target=_worker_main, args=(_Worker(task),), name="alpineagents-tool", daemon=True)
        thread.start()


_SUBMIT = _Executor.submit
"""The executor's own `submit`, whose worker notifies the waiter itself (no done-callback on the future)."""

_EXECUTOR = _Executor(MAX_WORKERS)
"""The executor of every turn (it holds no state of its own besides `max_workers`)."""


# --- recording -----------------------------------------------------------------------------------------------


def _finish(state: State, reporter: Any, job: _Job, failures: list[Any]) -> None:
    """Record one job whose future is done, on the calling thread (04 §11.3, §11.4)."""
    if job.finished:
        return
    future = job.future
    content: Any
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
        outcome = job.outcome
        recorded = state._tool_result(call, content, outcome, error=job.error, if_pending=True)
        if recorded and job.announced and reporter is not None:
            shown = _DONE_OUTCOME if outcome is _DONE else _ERROR_OUTCOME if outcome is _ERROR else ToolOutcome(outcome)
            reporter.on_tool_end(state, call, content, shown)
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


def _input_errors(state: State, tools: Any, context: Any, reporter: Any, calls: tuple[ToolCall, ...]) -> list[_Job]:
    """Step 1: close unknown tools and unreadable arguments; return the jobs of the other calls."""
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


def _apply_decision(state: State, reporter: Any, job: _Job, decision: Any) -> bool | None:
    """Record one permission decision (07 §1.5). True: allowed; False: refused; None: the turn was stopped."""
    from alpineagents.permissions import Allowed

    verdict = decision.verdict
    if isinstance(verdict, Allowed):
        return True
    call = job.call
    decided_by = decision.decided_by
    if verdict.stop:
        cancelled = state._stop_turn(call, verdict.reason, decided_by)
        if reporter is not None:
            reporter.on_tool_end(state, call, verdict.reason, ToolOutcome(_DENIED, decision.error, decided_by))
            for other in cancelled:
                reporter.on_tool_end(state, other, STOPPED_TURN, ToolOutcome(_CANCELLED, None, decided_by))
        return None
    recorded = state._tool_result(call, verdict.reason, _DENIED, error=decision.error, if_pending=True)
    if recorded and reporter is not None:
        reporter.on_tool_end(state, call, verdict.reason, ToolOutcome(_DENIED, decision.error, decided_by))
    return False


def _owners(context: Any) -> Any:
    return getattr(context, "owners", None) or None


# --- the sync driver -----------------------------------------------------------------------------------------


def run_tool_calls(state: State, tools: Any, context: Any) -> None:
    """Close every pending call of `state` (04 §11.2 steps 1–6): input errors, permissions, parallel, serial.

    Re-raises the first tool exception (in completion order) with the note `exception raised in tool ...`.
    """
    calls = state.pending_calls
    if not calls:
        return
    reporter = getattr(context, "reporter", None)
    store = getattr(context, "store", None)
    jobs = _input_errors(state, tools, context, reporter, calls)
    permissions = getattr(context, "permissions", None)
    if jobs and permissions is not None:
        from alpineagents.permissions import decide

        owners = _owners(context)
        before = state.snapshot()
        allowed: list[_Job] = []
        for job in jobs:
            assert job.tool is not None
            try:
                decision = decide(permissions, state, job.call, job.tool, owners)
            except Exception as error:
                state._record_error(error, job.call)
                raise
            verdict = _apply_decision(state, reporter, job, decision)
            if verdict is None:
                allowed = []
                break
            if verdict:
                allowed.append(job)
        jobs = allowed
        if store is not None and state.snapshot() is not before:
            store.save(state)
    if not jobs:
        return
    failures: list[_Job] = []
    if len(jobs) == 1:  # one call: its parallel or serial group is the same group of one
        _run_group(state, reporter, store, jobs, failures, _EXECUTOR)
        if failures:
            _raise_first(failures)
        return
    parallel = [job for job in jobs if job.tool is not None and job.tool.parallel]
    if parallel:
        _run_group(state, reporter, store, parallel, failures, _EXECUTOR)
    if not failures and len(parallel) < len(jobs):
        for job in jobs:
            if job.tool is not None and not job.tool.parallel:
                _run_group(state, reporter, store, [job], failures, _EXECUTOR)
                if failures:
                    break
    if failures:
        _raise_first(failures)


def _start(job: _Job, state: State, executor: _Executor, notify: Callable[[_Job], None]) -> None:
    """Hand `job` to a worker through `_Executor.submit`; `notify(job)` once its future is done."""
    job.started = True
    own = _Executor.submit is _SUBMIT  # looked up at call time (04 §12): a replacement may not use our worker
    if own:
        job.notify = notify  # our worker calls it right after completing the future
    _Executor.submit(executor, job, state)
    if not own:
        future = job.future
        assert future is not None
        future.add_done_callback(functools.partial(_notify_done, notify, job))


def _notify_done(notify: Callable[[_Job], None], job: _Job, _future: Future[Any]) -> None:
    notify(job)


def _save_quietly(store: Any, state: State) -> None:
    try:
        store.save(state)
    except Exception:  # noqa: BLE001 - batch saves may fail (03 §2.9); the final save reports
        pass


def _run_group(
    state: State,
    reporter: Any,
    store: Any,
    jobs: list[_Job],
    failures: list[_Job],
    executor: _Executor,
) -> None:
    """Announce and start `jobs`, then record them in completion order, one batch at a time."""
    done: SimpleQueue[_Job] = SimpleQueue()
    waiting: deque[_Job] = deque()
    limit = max(1, executor.max_workers)
    started = 0
    broke = _Broke()
    try:
        for job in jobs:
            if reporter is not None and not broke.call(reporter.on_tool_start, state, job.call):
                break
            job.announced = True
            if started < limit:
                started += 1
                _start(job, state, executor, done.put)
            else:
                waiting.append(job)
        outstanding = sum(1 for job in jobs if job.announced)
        while outstanding:
            try:
                first = done.get(timeout=0.1)
            except Empty:
                continue
            batch = [first]
            while not done.empty():
                batch.append(done.get_nowait())
            for job in batch:
                broke.call(_finish, state, reporter, job, failures)
                outstanding -= 1
                if waiting:
                    _start(waiting.popleft(), state, executor, done.put)
            if store is not None:
                _save_quietly(store, state)
        broke.reraise()
    except BaseException as interrupt:
        if interrupt is not broke.error:
            _give_up(state, reporter, jobs, list(_drain(done)), failures, interrupt)
        raise


class _Broke:
    """The first exception a Reporter raised during a group. The group goes on (what is running is waited for and
    recorded, each announced call still gets its `on_tool_end`); the exception is raised once the group is done."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: Exception | None = None

    def call(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Call `fn(*args)`; False if it raised an `Exception` (kept, if it is the first)."""
        try:
            fn(*args)
        except Exception as error:  # noqa: BLE001 - a Reporter's exception propagates after the group
            if self.error is None:
                self.error = error
            return False
        return True

    def reraise(self) -> None:
        if self.error is not None:
            raise self.error


def _drain(done: SimpleQueue[_Job]) -> list[_Job]:
    items: list[_Job] = []
    while True:
        try:
            items.append(done.get_nowait())
        except Empty:
            return items


def _give_up(
    state: State,
    reporter: Any,
    jobs: list[_Job],
    arrived: list[_Job],
    failures: list[_Job],
    interrupt: BaseException,
) -> None:
    """The waiting thread was interrupted (04 §11.5): record what finished, let go of the rest, pair every
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


def _safely(interrupt: BaseException, fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except BaseException as error:  # noqa: BLE001 - the interrupt is what propagates
        interrupt.add_note(f"while handling it, {fn.__name__} also raised {type(error).__name__}: {error}")


# --- the async driver ----------------------------------------------------------------------------------------


async def arun_tool_calls(state: State, tools: Any, context: Any) -> None:
    """Async twin of `run_tool_calls`: async tools run as Tasks on this loop, the others on worker threads;
    permissions are asked with `acheck`; cancellation is the interrupt."""
    calls = state.pending_calls
    if not calls:
        return
    reporter = getattr(context, "reporter", None)
    store = getattr(context, "store", None)
    jobs = _input_errors(state, tools, context, reporter, calls)
    permissions = getattr(context, "permissions", None)
    if jobs and permissions is not None:
        from alpineagents.permissions import adecide

        owners = _owners(context)
        before = state.snapshot()
        allowed: list[_Job] = []
        for job in jobs:
            assert job.tool is not None
            try:
                decision = await adecide(permissions, state, job.call, job.tool, owners)
            except Exception as error:
                state._record_error(error, job.call)
                raise
            verdict = _apply_decision(state, reporter, job, decision)
            if verdict is None:
                allowed = []
                break
            if verdict:
                allowed.append(job)
        jobs = allowed
        if store is not None and state.snapshot() is not before:
            await store.asave(state)
    if not jobs:
        return
    failures: list[_Job] = []
    if len(jobs) == 1:  # one call: its parallel or serial group is the same group of one
        await _arun_group(state, reporter, store, jobs, failures, _EXECUTOR)
        if failures:
            _raise_first(failures)
        return
    parallel = [job for job in jobs if job.tool is not None and job.tool.parallel]
    if parallel:
        await _arun_group(state, reporter, store, parallel, failures, _EXECUTOR)
    if not failures and len(parallel) < len(jobs):
        for job in jobs:
            if job.tool is not None and not job.tool.parallel:
                await _arun_group(state, reporter, store, [job], failures, _EXECUTOR)
                if failures:
                    break
    if failures:
        _raise_first(failures)


class _Arrivals:
    """Completed jobs delivered to the loop thread, with one waiter to wake."""

    __slots__ = ("loop", "items", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[_Job] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, job: _Job) -> None:
        self.items.append(job)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def put_threadsafe(self, job: _Job) -> None:
        try:
            self.loop.call_soon_threadsafe(self.put, job)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


@types.coroutine
def _yield_once() -> Any:
    """`asyncio.sleep(0)` without its two extra frames: give the event loop one pass."""
    yield


def _start_task(job: _Job, state: State, arrivals: _Arrivals) -> None:
    job.started = True
    job.threaded = False
    job.runner = (arrivals.loop, arrivals.loop.create_task(_task_body(job, state, arrivals)))


async def _arun_group(
    state: State,
    reporter: Any,
    store: Any,
    jobs: list[_Job],
    failures: list[_Job],
    executor: _Executor,
) -> None:
    arrivals = _Arrivals(asyncio.get_running_loop())
    waiting: deque[_Job] = deque()
    limit = max(1, executor.max_workers)
    threads = 0
    tasks = False
    broke = _Broke()
    try:
        for job in jobs:
            if reporter is not None and not broke.call(reporter.on_tool_start, state, job.call):
                break
            job.announced = True
            assert job.tool is not None
            if job.tool.is_async:
                _start_task(job, state, arrivals)
                tasks = True
            elif threads < limit:
                threads += 1
                _start(job, state, executor, arrivals.put_threadsafe)
            else:
                waiting.append(job)
        outstanding = sum(1 for job in jobs if job.announced)
        items = arrivals.items
        create_future = arrivals.loop.create_future
        if tasks:
            # Yield once: the Tasks just created run their first step before this one resumes, in the same pass
            # of the event loop, so a tool that ends without waiting is recorded without a waiter (one loop pass
            # per turn instead of two).
            await _yield_once()
        while outstanding:
            while not items:
                arrivals.waiter = waiter = create_future()
                await waiter
            arrivals.waiter = None
            batch = list(items)
            items.clear()
            for job in batch:
                broke.call(_finish, state, reporter, job, failures)
                outstanding -= 1
                if job.threaded and waiting:
                    _start(waiting.popleft(), state, executor, arrivals.put_threadsafe)
            if store is not None:
                try:
                    await store.asave(state)
                except Exception:  # noqa: BLE001 - batch saves may fail (03 §2.9)
                    pass
        broke.reraise()
    except BaseException as interrupt:
        if interrupt is broke.error:
            raise
        arrived = list(arrivals.items)
        arrivals.items.clear()
        _give_up(state, reporter, jobs, arrived, failures, interrupt)
        raise
