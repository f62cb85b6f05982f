"""The HTTP API (Starlette): start runs, stream their events in three dialects, read, list and cancel them.

| method and path | what it does |
| --- | --- |
| `GET /api/runs` | the runs of the store (those `authorize` allows), newest first |
| `POST /api/runs` | start a run: `{"prompt"}` or `{"messages"}`, `"state_id"` to continue one; 201 with its id, or the stream itself when the request accepts `text/event-stream` |
| `GET /api/runs/{id}` | one run: its summary and its history (the saved JSON form of each entry) |
| `GET /api/runs/{id}/events` | its events as SSE; `?dialect=native|agui|vercel`, resumed after `Last-Event-ID` or `?after=` |
| `POST /api/runs/{id}/cancel` | cancel a run going on (its pending calls are closed, its State saved) |
| `POST /api/runs/{id}/calls/{call}/approve` | approve a call waiting for a person (`by`, `note`), then continue the run |
| `POST /api/runs/{id}/calls/{call}/deny` | deny it (`reason`: what the model reads; `by`, `note`), then continue the run |
| `POST /agui` | an AG-UI run (`@ag-ui/client`'s `HttpAgent`): `threadId` is the State id; answers with the stream |
| `POST /vercel` | an AI SDK chat (`DefaultChatTransport`): the chat `id` is the State id; answers with the stream |
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from alpineagents.agent import Agent
from alpineagents.serve import approvals, inputs
from alpineagents.serve.dialects import DIALECTS, HEARTBEAT, SSE_HEADERS, Encoder
from alpineagents.serve.errors import ApiError, api_error, not_found, route_error, unexpected
from alpineagents.serve.feed import Cursor, items
from alpineagents.serve.guard import LOOPBACK_HOSTS, MAX_BODY, Guard
from alpineagents.serve.runs import Runs
from alpineagents.serve.wire import plain
from alpineagents.state import State, check_id
from alpineagents.store import Store
from alpineagents.viewer.runs import open_run, summarize

if TYPE_CHECKING:
    from alpineagents.workers import Workers

Authorize = Callable[[Request, str], bool | Awaitable[bool]]
"""`authorize(request, state_id)`: may this request see or change the run `state_id`? (True or False, or an
awaitable of one). For a new run it is called with the id the run will get, before anything is saved."""


class Api:
    """The route handlers over one `Runs`."""

    def __init__(self, runs: Runs, authorize: Authorize | None) -> None:
        self.runs = runs
        self._authorize = authorize

    async def allowed(self, request: Request, state_id: str) -> bool:
        if self._authorize is None:
            return True
        verdict = self._authorize(request, state_id)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    async def check(self, request: Request, state_id: str) -> None:
        """Every route that names a run passes here: an id no State can have is an unknown run (404), never a
        failure of the store; then `authorize` decides."""
        try:
            check_id(state_id, "a run id")
        except (TypeError, ValueError):
            raise not_found(state_id) from None
        if not await self.allowed(request, state_id):
            raise ApiError(403, "forbidden", f"this request may not use run {state_id!r}")

    # --- reading --------------------------------------------------------------------------------------------

    async def list_runs(self, request: Request) -> Response:
        store = self.runs.store
        infos = [info for info in await _thread(store.list) if await self.allowed(request, info.id)]
        rows = [await _thread(summarize, store, info) for info in infos]
        shown = []
        for row in rows:
            item = row.to_json()
            item["running"] = row.id in self.runs.live
            shown.append(item)
        return JSONResponse({"runs": shown})

    async def read_run(self, request: Request) -> Response:
        state_id = request.path_params["state_id"]
        await self.check(request, state_id)
        try:
            run = await _thread(open_run, self.runs.store, state_id)
        except LookupError:
            raise not_found(state_id)
        summary = summarize(self.runs.store, run.info).to_json()
        summary["running"] = state_id in self.runs.live
        waiting = plain(approvals.waiting_calls(run.state))
        return JSONResponse({"run": summary, "waiting": waiting, "history": list(run.raw)})

    async def events(self, request: Request) -> Response:
        state_id = request.path_params["state_id"]
        await self.check(request, state_id)
        encoder = _encoder(request, state_id, request.query_params.get("run_id") or state_id)
        given = request.headers.get("last-event-id") or request.query_params.get("after")
        after = Cursor.parse(given)
        source = self.runs.source(state_id) if state_id in self.runs.live else await _thread(self.runs.source, state_id)
        if after.entries > len(source.entries()):
            raise ApiError(
                400,
                "bad_cursor",
                f"event id {given!r} is past the end of run {state_id!r} ({len(source.entries())} entries): "
                "send the id of an event this run gave",
            )
        return stream(encoder, source, after)

    # --- changing -------------------------------------------------------------------------------------------

    async def start_native(self, request: Request) -> Response:
        start = inputs.native(await inputs.json_body(request))
        state, after = await self.begin(request, start)
        if "text/event-stream" in request.headers.get("accept", ""):
            encoder = _encoder(request, state.id, state.id)
            return stream(encoder, self.runs.source(state.id), Cursor(after))
        body = {"id": state.id, "after": after, "events": f"/api/runs/{state.id}/events?after={after}"}
        return JSONResponse(body, status_code=201)

    async def start_agui(self, request: Request) -> Response:
        start = inputs.agui(await inputs.json_body(request))
        state, after = await self.begin(request, start)
        encoder = DIALECTS["agui"](state.id, start.run_id or state.id)
        return stream(encoder, self.runs.source(state.id), Cursor(after))

    async def start_vercel(self, request: Request) -> Response:
        start = inputs.vercel(await inputs.json_body(request))
        state, after = await self.begin(request, start)
        encoder = DIALECTS["vercel"](state.id, f"{state.id}-{after}")
        return stream(encoder, self.runs.source(state.id), Cursor(after))

    async def begin(self, request: Request, start: inputs.Start) -> tuple[State, int]:
        """Load or make the State, add the messages, start the run; the State and where its new events begin."""
        state_id = start.state_id or start.new_id
        if not start.messages and not (start.decisions and state_id):
            raise inputs.shape_error("the request holds no user message to answer")
        if state_id is not None:
            try:
                check_id(state_id, "a run id")
            except (TypeError, ValueError):
                if start.state_id is not None:
                    raise not_found(state_id) from None
                raise inputs.shape_error(
                    "a conversation id (AG-UI threadId, AI SDK chat id) may only have letters, digits, _ and - "
                    "(1 to 128 characters)"
                ) from None
        existing = state_id is not None and (
            state_id in self.runs.live or await _thread(self.runs.store.read, state_id) is not None
        )
        if start.state_id is not None and not existing:
            raise not_found(start.state_id)
        if existing:
            assert state_id is not None
            await self.check(request, state_id)
            state = await self.runs.load(state_id)
            waiting = {w.call.id for w in approvals.waiting_calls(state)}
            for call_id, approved, reason in start.decisions:
                if call_id in waiting:  # a client sends its whole conversation: decisions already taken are left
                    approvals.apply(state, approvals.Decision(call_id, approved, reason))
            for message in inputs.new_messages(start.messages) if start.new_id else start.messages:
                _add(state, message)
        else:
            state = _new_state(state_id, start.messages)
            await self.check(request, state.id)
        after = len(state.history)
        await self.runs.begin(state)
        return state, after

    async def approve(self, request: Request) -> Response:
        return await self._decide(request, approved=True)

    async def deny(self, request: Request) -> Response:
        return await self._decide(request, approved=False)

    async def _decide(self, request: Request, approved: bool) -> Response:
        state_id, call_id = request.path_params["state_id"], request.path_params["call_id"]
        await self.check(request, state_id)
        data = await inputs.json_body(request) if await request.body() else None
        decision = approvals.read_decision(call_id, approved, data)
        go_on = not isinstance(data, dict) or data.get("continue", True) is not False
        state, after = await approvals.decide(self.runs, state_id, [decision], go_on)
        if after is not None and "text/event-stream" in request.headers.get("accept", ""):
            return stream(_encoder(request, state_id, state_id), self.runs.source(state_id), Cursor(after))
        body = {
            "id": state_id,
            "call_id": call_id,
            "approved": approved,
            "waiting": plain(approvals.waiting_calls(state)),
            "continued": after is not None,
            "after": after,
        }
        if after is not None:
            body["events"] = f"/api/runs/{state_id}/events?after={after}"
        return JSONResponse(body)

    async def cancel(self, request: Request) -> Response:
        state_id = request.path_params["state_id"]
        await self.check(request, state_id)
        live = self.runs.cancel(state_id)
        if live.task is not None:
            with contextlib.suppress(BaseException):
                await live.task
        return JSONResponse({"id": state_id, "cancelled": True, "entries": len(live.state.history)})


def _add(state: State, message: Any) -> None:
    try:
        state.add_message(message)
    except (TypeError, ValueError) as error:
        raise inputs.shape_error(str(error).splitlines()[0])


def _new_state(state_id: str | None, messages: Iterable[Any]) -> State:
    try:
        return State(id=state_id, messages=list(messages))
    except (TypeError, ValueError) as error:
        raise inputs.shape_error(str(error).splitlines()[0])


def _encoder(request: Request, state_id: str, run_id: str) -> Encoder:
    name = request.query_params.get("dialect", "native")
    found = DIALECTS.get(name)
    if found is None:
        raise ApiError(400, "bad_dialect", f"dialect={name[:40]!r} is unknown: use one of {', '.join(DIALECTS)}")
    return found(state_id, run_id)


async def _thread(function: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


def stream(encoder: Encoder, source: Any, after: Cursor) -> StreamingResponse:
    """The SSE response of a run's items after `after`, written by `encoder`."""

    async def body() -> AsyncIterator[bytes]:
        for frame in encoder.begin():
            yield frame.encode()
        async for item in items(source, after):
            if item is None:
                yield HEARTBEAT
                continue
            yield b"".join(frame.encode() for frame in encoder.frames(item))
        yield encoder.closing()

    headers = {**SSE_HEADERS, **encoder.headers}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def app(
    agent: Agent,
    *,
    store: Store | None = None,
    token: str | None = None,
    origins: Iterable[str] = (),
    hosts: Iterable[str] = LOOPBACK_HOSTS,
    max_body: int = MAX_BODY,
    authorize: Authorize | None = None,
    routes: Iterable[BaseRoute] = (),
    workers: Workers | None = None,
) -> Starlette:
    """An ASGI app (Starlette) that runs `agent` and streams its runs.

    Args:
        agent: The Agent every run uses. Its Terminal reporter and human (the defaults) are left out: a server
            has no console.
        store: Where the runs are kept (default: the Agent's store; one of the two is needed).
        token: When given, every request must send `Authorization: Bearer <token>`.
        origins: The origins of web pages allowed to call the API from a browser (CORS); none by default.
        hosts: The host names the server answers to (the Host header); `"*"` for any.
        max_body: The largest request body, in bytes.
        authorize: `authorize(request, state_id) -> bool` (or an awaitable): may this request use that run?
            Refused requests get 403; the runs list shows only the allowed runs.
        routes: Starlette routes of your own, served by the same app before the API's (a page, say); they pass
            the same checks (Host header, token, body size).
        workers: `alpineagents.workers.Workers` whose queue takes the runs (`agent` must be one of its Agents;
            the runs are kept in its store). Streams then follow each run through the store, entry by entry.

    Example of `authorize`, for a program whose users each see their own runs::

        owners: dict[str, str] = {}        # state id -> user (keep it in your database)

        def authorize(request, state_id):
            user = request.headers.get("x-user")            # set by your login proxy
            if user is None:
                return False
            return owners.setdefault(state_id, user) == user  # a new run becomes the user's
    """
    chosen = store if store is not None else agent.store if workers is None else workers.store
    if chosen is None:
        raise ValueError("serve.app(agent, store=...) needs a store to keep the runs in (or an Agent with store=)")
    if workers is not None and chosen != workers.store:
        raise ValueError("serve.app(..., workers=) keeps the runs in the Workers' store: leave store= out")
    runs = Runs(agent, chosen, workers)
    api = Api(runs, authorize)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await runs.close()

    middleware = []
    listed = list(origins)
    if listed:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=listed,
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "Accept"],
            )
        )
    middleware.append(Middleware(Guard, hosts=hosts, token=token, max_body=max_body, origins=listed))
    application = Starlette(
        routes=[
            *routes,
            Route("/api/runs", api.list_runs, methods=["GET"]),
            Route("/api/runs", api.start_native, methods=["POST"]),
            Route("/api/runs/{state_id}", api.read_run, methods=["GET"]),
            Route("/api/runs/{state_id}/events", api.events, methods=["GET"]),
            Route("/api/runs/{state_id}/cancel", api.cancel, methods=["POST"]),
            Route("/api/runs/{state_id}/calls/{call_id}/approve", api.approve, methods=["POST"]),
            Route("/api/runs/{state_id}/calls/{call_id}/deny", api.deny, methods=["POST"]),
            Route("/agui", api.start_agui, methods=["POST"]),
            Route("/vercel", api.start_vercel, methods=["POST"]),
        ],
        middleware=middleware,
        exception_handlers={ApiError: api_error, HTTPException: route_error, Exception: unexpected},
        lifespan=lifespan,
    )
    application.state.runs = runs
    return application
