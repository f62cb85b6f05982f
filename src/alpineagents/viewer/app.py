"""The viewer's web app (Starlette): the runs list, one run's page, and the JSON a live page polls.

Pages: `/` (the runs list; `q` searches the id and first message, `sort=updated` or `updated_asc`),
`/runs/{id}` (one run), `/compare?a=ID&b=ID` (two runs side by side), `/api/runs/{id}/entries?after=N` (what a live page adds: the entries after the first N,
the header and the charts), `/api/runs` (the list as JSON). Every response forbids scripts other than the
viewer's own, as a second guard behind the escaping.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from alpineagents.store import Store
from alpineagents.viewer import page
from alpineagents.viewer.compare import compare_endpoint
from alpineagents.viewer.runs import first_line, matches, summarize


def _headers() -> dict[str, str]:
    return {"Content-Security-Policy": page.policy(live=True), "X-Content-Type-Options": "nosniff"}


def create_app(store: Store) -> Starlette:
    """The viewer app over `store`."""

    def runs_list(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        newest_first = request.query_params.get("sort", "updated") != "updated_asc"
        infos = store.list()
        chosen = [info for info in infos if not query or matches(info, query)]
        chosen.sort(key=lambda info: info.updated_at is None)  # runs never saved with history go last
        if not newest_first:
            chosen.reverse()
        rows = [summarize(store, info) for info in chosen]
        return HTMLResponse(page.list_html(rows, query, newest_first, len(infos)), headers=_headers())

    def run_view(request: Request) -> Response:
        state_id = request.path_params["state_id"]
        try:
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
            data = page.run_page(store, state_id)
        except LookupError:
            return JSONResponse({"error": f"no run {state_id}"}, status_code=404)
        return JSONResponse(page.fragments(data, int(given)), headers=_headers())

    def runs_json(request: Request) -> Response:
        return JSONResponse([summarize(store, info).to_json() for info in store.list()])

    async def unreadable(request: Request, error: Exception) -> Response:
        """A store or run that cannot be read (damaged, or its disk gone): the reason on a page, status 500."""
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": first_line(error)}, status_code=500)
        shown = page.problem_html("The store cannot be read", first_line(error))
        return HTMLResponse(shown, status_code=500, headers=_headers())

    return Starlette(
        routes=[
            Route("/", runs_list),
            Route("/runs/{state_id}", run_view),
            Route("/compare", compare_endpoint(store)),
            Route("/api/runs", runs_json),
            Route("/api/runs/{state_id}/entries", run_entries),
        ],
        exception_handlers={ValueError: unreadable, OSError: unreadable},
    )


def serve(store: Store, *, host: str = "127.0.0.1", port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve the viewer over `store` until Ctrl+C; `announce` gets the address once the port is open."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    server = uvicorn.Server(uvicorn.Config(create_app(store), log_level="warning", access_log=False))
    announce(f"http://{shown}:{bound}/")
    server.run(sockets=[sock])
