"""A chat page for an Agent: `alpineagents.serve` and one static HTML file (`serve_chat.html`, no build step).

Type a message and the answer streams in; when the agent wants to send an email, the page asks you to approve or
deny the call, and the run goes on with your decision. The runs are kept in `chat-runs/`.

Run it with a real model (needs ANTHROPIC_API_KEY): `python examples/serve_chat.py`, then open
http://127.0.0.1:8322/. The page reads the server's own event stream; `alpineagents serve` gives the same API for
AG-UI and AI SDK front ends.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Route

from alpineagents import Agent, FileStore, serve, tool
from alpineagents.permissions import DecidePermission, Deferred
from alpineagents.store import Store

PAGE = Path(__file__).resolve().parent / "serve_chat.html"
OUTBOX: list[dict[str, str]] = []


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email.

    Args:
        to: The address to send it to.
        subject: The subject line.
        body: The text of the email.
    """
    OUTBOX.append({"to": to, "subject": subject, "body": body})
    return f"sent to {to}"


class AskBeforeSending(DecidePermission):
    """Every email waits for a person's decision, taken on the page (minutes or days later)."""

    def check(self, state: Any, call: Any, tool: Any) -> Deferred | None:
        if call.name == "send_email":
            return Deferred(f"Send the email {call.args.get('subject', '')!r} to {call.args.get('to', '')}?")
        return None


def page(request: Request) -> FileResponse:
    return FileResponse(PAGE, media_type="text/html")


def make_app(model: Any = "claude-sonnet-5", store: Store | None = None, **settings: Any) -> Any:
    """The ASGI app: the page at `/`, the API under `/api/`."""
    agent = Agent(
        model,
        system="You help write and send short emails. Send one only when asked to.",
        tools=[send_email],
        permissions=[AskBeforeSending()],
        **settings,
    )
    return serve.app(agent, store=store or FileStore("chat-runs"), routes=[Route("/", page)])


def main(port: int = 8322) -> None:
    sock = serve.listen("127.0.0.1", port, None)
    print(f"open {serve.address(sock)}/  (Ctrl+C stops it)", file=sys.stderr)
    serve.run_server(make_app(), sock)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8322)
