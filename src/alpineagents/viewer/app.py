"""The viewer's web app (Starlette): the runs list, one run's page, and the JSON a live page polls.

Pages: `/` (the runs list; `q` searches the id, first message and content, `status=`, `agent=`, `model=` and
`since=YYYY-MM-DD` filter, `sort=updated`, `updated_asc`, `cost`, `turns` or `status` orders: see `search`),
`/runs/{id}` (one run), `/compare?a=ID&b=ID` (two runs side by side), `/evals` and `/evals/{id}` (eval reports),
`/api/runs/{id}/entries?after=N` (what a live page adds: the entries after the first N, the header and the charts),
`/api/runs` (the list as JSON). Every response forbids scripts other than the viewer's own, as a second guard
behind the escaping.

A request whose `Host` header is not a name the viewer listens on is refused (403) before any page is made: a web
page on another site that points its own name at 127.0.0.1 (DNS rebinding) could otherwise read every run. By
default the viewer answers to the loopback names and addresses (`localhost`, `127.0.0.1`, `::1`) and to the
address it listens on; `allowed_hosts` adds names (a machine name, for a viewer shared on a network).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from alpineagents.state import check_id
from alpineagents.store import Store
from alpineagents.viewer import page, search
from alpineagents.viewer.compare import compare_endpoint
from alpineagents.viewer.evals import eval_list_endpoint, eval_report_endpoint
from alpineagents.viewer.runs import first_line, stored_runs, summarize, unlisted_summary

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""The names and addresses of this machine every viewer answers to."""

WILDCARDS = frozenset({"", "0.0.0.0", "::"})
"""Listening addresses that are every address of the machine: not a name a browser sends."""


def _headers() -> dict[str, str]:
    return {"Content-Security-Policy": page.policy(live=True), "X-Content-Type-Options": "nosniff"}


def host_name(header: str) -> str:
    """The name in a `Host` header, without its port and IPv6 brackets, in lower case (`[::1]:80` gives `::1`)."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else ""
    return text.rpartition(":")[0] if text.count(":") == 1 else text


def allowed_names(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` names a viewer listening on `listen_host` answers to: the loopback names, that address (unless
    it is every address, 0.0.0.0 or ::) and `extra`."""
    names = {host_name(name) if name.startswith("[") else name.strip().lower() for name in extra}
    listen = listen_host.strip("[]").lower()
    if listen not in WILDCARDS:
        names.add(listen)
    return LOOPBACK_HOSTS | names


class HostCheck:
    """ASGI middleware: answers 403 to an HTTP request whose `Host` header names none of `names`."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host_name(header) not in self.names:
                text = (
                    f"this viewer does not answer to the host {header!r}: open it by the address it printed, "
                    "or start it with --allow-host NAME"
                )
                refused = Response(text, status_code=403, media_type="text/plain; charset=utf-8")
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _valid(state_id: str) -> bool:
    try:
        check_id(state_id, "the viewer")
    except (TypeError, ValueError):
        return False
    return True


def create_app(store: Store, *, allowed_hosts: Iterable[str] = ()) -> Starlette:
    """The viewer app over `store`, answering to the loopback names and to `allowed_hosts`."""

    def runs_list(request: Request) -> Response:
        asked = {key: request.query_params.get(key, "").strip() for key in ("q", "status", "agent", "model", "since")}
        order = request.query_params.get("sort", "updated")
        choice = search.Choice(asked.pop("q"), order=order, **asked)
        runs = stored_runs(store)
        shown, options = search.rows(store, runs, choice)
        return HTMLResponse(page.list_html(shown, choice, options, len(runs)), headers=_headers())

    def run_view(request: Request) -> Response:
        state_id = request.path_params["state_id"]
        try:
            if not _valid(state_id):
                raise LookupError(state_id)
            data = page.run_page(store, state_id)
        except LookupError:
            missing = page.problem_html(f"No run {state_id}", "The store has no run with this id.")
            return HTMLResponse(missing, status_code=404, headers=_headers())
        return HTMLResponse(page.run_html(data), headers=_headers())

    def run_entries(request: Request) -> Response:
        state_id = request.path_params["state_id"]
        given = request.query_params.get("after", "0")
        if not given.isdigit():
            return JSONResponse({"error": "after= takes a number of entries"}, status_code=400)
        try:
            if not _valid(state_id):
                raise LookupError(state_id)
            data = page.run_page(store, state_id)
        except LookupError:
            return JSONResponse({"error": f"no run {state_id}"}, status_code=404)
        return JSONResponse(page.fragments(data, int(given)), headers=_headers())

    def request_input(request: Request) -> Response:
        state_id = request.path_params["state_id"]
        seq = request.path_params["seq"]
        try:
            if not _valid(state_id):
                raise LookupError(state_id)
            shown = page.request_html(store, state_id, seq)
        except LookupError:
            return JSONResponse({"error": f"no run {state_id}"}, status_code=404)
        if shown is None:
            return JSONResponse({"error": f"entry {seq} of {state_id} is not a model request"}, status_code=404)
        return HTMLResponse(shown, headers=_headers())

    def runs_json(request: Request) -> Response:
        runs = stored_runs(store)
        rows = [summarize(store, info) for info in runs.infos] + [unlisted_summary(gone) for gone in runs.unlisted]
        return JSONResponse([row.to_json() for row in rows])

    async def unreadable(request: Request, error: Exception) -> Response:
        """A store or run that cannot be read (damaged, or its disk gone): the reason on a page, status 500."""
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": first_line(error)}, status_code=500)
        shown = page.problem_html("The store cannot be read", first_line(error))
        return HTMLResponse(shown, status_code=500, headers=_headers())

    app = Starlette(
        routes=[
            Route("/", runs_list),
            Route("/runs/{state_id}", run_view),
            Route("/compare", compare_endpoint(store)),
            Route("/evals", eval_list_endpoint(store)),
            Route("/evals/{eval_id}", eval_report_endpoint(store)),
            Route("/api/runs", runs_json),
            Route("/api/runs/{state_id}/entries", run_entries),
            Route("/api/runs/{state_id}/requests/{seq:int}", request_input),
        ],
        exception_handlers={ValueError: unreadable, OSError: unreadable},
    )
    app.add_middleware(HostCheck, names=allowed_names("localhost", allowed_hosts))
    return app


def serve(
    store: Store,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    announce: Callable[[str], None] = print,
    allowed_hosts: Iterable[str] = (),
) -> None:
    """Serve the viewer over `store` until Ctrl+C; `announce` gets the address once the port is open. It answers to
    the loopback names, to `host` and to `allowed_hosts` (see the module's docstring)."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    app = create_app(store, allowed_hosts=allowed_names(host, allowed_hosts))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    announce(f"http://{shown}:{bound}/")
    server.run(sockets=[sock])
