"""What the server answers when a request cannot be served: a JSON body `{"error": {"code", "message"}}` and the
status that says why. The message says what was wrong and how to fix it; it never holds a stack trace, a header or
a key (an unexpected failure is answered with a fixed text, and the details go to the server's log only)."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

log = logging.getLogger("alpineagents.serve")

INTERNAL = "the server failed to answer this request; its log has the details"
"""The only text an unexpected failure shows (its type, message and trace go to the log)."""


class ApiError(Exception):
    """A request the server refuses: the HTTP status, a short code for programs, and a message for people."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def body(code: str, message: str) -> dict[str, dict[str, str]]:
    """The JSON body of an error."""
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """An error as a JSON response (never cached)."""
    return JSONResponse(body(code, message), status_code=status, headers={"Cache-Control": "no-store"})


async def api_error(request: Request, error: Exception) -> Response:
    """Starlette's handler for `ApiError`."""
    assert isinstance(error, ApiError)
    return error_response(error.status, error.code, error.message)


ROUTE_CODES = {404: "no_such_endpoint", 405: "method_not_allowed"}


async def route_error(request: Request, error: Exception) -> Response:
    """Starlette's handler for its own HTTP errors (an unknown path, a method the path does not take), as JSON."""
    assert isinstance(error, HTTPException)
    code = ROUTE_CODES.get(error.status_code, "http_error")
    if error.status_code == 404:
        message = f"no endpoint {request.url.path!r}: the API is under /api/runs, /agui and /vercel"
    elif error.status_code == 405:
        message = f"{request.method} is not one of the methods of {request.url.path!r}"
    else:
        message = str(error.detail)
    return error_response(error.status_code, code, message)


async def unexpected(request: Request, error: Exception) -> Response:
    """Starlette's handler for any other exception: a fixed text in the answer, the details in the log."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=error)
    return error_response(500, "internal", INTERNAL)


def not_found(state_id: str) -> ApiError:
    shown = repr(state_id) if len(state_id) <= 80 else f"{state_id[:60]!r}... ({len(state_id)} characters)"
    return ApiError(404, "unknown_run", f"no run with id {shown}: list the runs with GET /api/runs")


def running(state_id: str) -> ApiError:
    return ApiError(
        409,
        "run_running",
        f"run {state_id!r} is already running: follow it with GET /api/runs/{state_id}/events, "
        f"or cancel it with POST /api/runs/{state_id}/cancel",
    )
