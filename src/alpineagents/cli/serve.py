"""`alpineagents serve MODULE:AGENT`: the Agent behind an HTTP API (AG-UI, Vercel AI SDK, its own events), or as an
MCP tool (`--mcp`, stdio or `--http`), or as an A2A server (`--a2a`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from alpineagents.agent import Agent
from alpineagents.cli.agents import load_agent, load_object
from alpineagents.cli.stores import Misuse, chosen_store, store_option
from alpineagents.store import Store

if TYPE_CHECKING:
    from alpineagents.workers import Workers

DEFAULT_PORT = 8322
TOKEN_ENV = "ALPINEAGENTS_SERVE_TOKEN"
EXTRA = "alpineagents serve needs its extra: pip install 'alpineagents[serve]'"


@click.command(short_help="Serve an Agent over HTTP (AG-UI, AI SDK), MCP or A2A.")
@click.argument("agent_spec", metavar="MODULE:AGENT")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="0: any free port."
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    help="Every request must send Authorization: Bearer TOKEN (required off 127.0.0.1).",
)
@click.option("--origin", "origins", multiple=True, metavar="URL", help="A web page origin allowed to call (CORS).")
@click.option("--allow-host", "hosts", multiple=True, metavar="NAME", help="Another host name to answer to.")
@click.option("--max-body", default=1_000_000, show_default=True, type=click.IntRange(1), help="Largest body, bytes.")
@click.option("--mcp", is_flag=True, help="Serve the Agent as an MCP tool (stdio; --http for Streamable HTTP).")
@click.option("--http", "over_http", is_flag=True, help="With --mcp: Streamable HTTP at /mcp instead of stdio.")
@click.option("--a2a", is_flag=True, help="Serve the Agent as an A2A server (agent card, send, stream).")
@click.option(
    "--workers",
    "workers_spec",
    metavar="MODULE:WORKERS",
    help="Send the runs to the queue of these Workers (AGENT must be one of theirs); streams follow the store.",
)
@store_option
def serve(
    agent_spec: str,
    host: str,
    port: int,
    token: str | None,
    origins: tuple[str, ...],
    hosts: tuple[str, ...],
    max_body: int,
    mcp: bool,
    over_http: bool,
    a2a: bool,
    workers_spec: str | None,
    store: str | None,
) -> None:
    """Serve the Agent AGENT of module MODULE, its runs kept in the store, until Ctrl+C.

    Listens on 127.0.0.1 unless --host says otherwise; any other address needs a token.
    """
    if mcp and a2a:
        raise Misuse("choose one of --mcp and --a2a")
    if over_http and not mcp:
        raise Misuse("--http goes with --mcp (the HTTP API and A2A are always HTTP)")
    try:
        from alpineagents import serve as serving
        from alpineagents.serve.guard import LOOPBACK_HOSTS, Guard
    except ImportError as error:
        raise click.ClickException(f"{EXTRA} ({error})")
    agent = load_agent(agent_spec)
    workers = _workers(workers_spec, mcp or a2a, store)
    opened = workers.store if workers is not None else chosen_store(store, create=True)
    if mcp and not over_http:
        _mcp_stdio(agent, opened)
        return
    try:
        sock = serving.listen(host, port, token)
    except ValueError as error:
        raise Misuse(str(error))
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}")
    url = serving.address(sock)
    allowed = (*LOOPBACK_HOSTS, *hosts, *([] if host in ("0.0.0.0", "::") else [host]))
    if mcp:
        from alpineagents.serve.mcp_server import mcp_server

        inner = mcp_server(agent, opened).streamable_http_app(host=host)
        application = Guard(inner, hosts=("*",) if "*" in hosts else allowed, token=token, max_body=max_body)
        shown = f"{url}/mcp"
    elif a2a:
        from alpineagents.serve.a2a_server import a2a_app

        inner = a2a_app(agent, opened, url + "/")
        application = Guard(inner, hosts=allowed, token=token, max_body=max_body)
        shown = url
    else:
        application = serving.app(agent, store=opened, token=token, origins=origins, hosts=allowed, max_body=max_body)
        shown = url
    kind = "MCP" if mcp else "A2A" if a2a else "HTTP API"
    click.echo(f"alpineagents serve: {kind} at {shown}  (store {opened!r}; Ctrl+C stops it)", err=True)
    sys.stderr.flush()
    serving.run_server(application, sock)


def _workers(spec: str | None, other_server: bool, store: str | None) -> Workers | None:
    """The Workers that `--workers` names, or None."""
    if spec is None:
        return None
    if other_server or store:
        raise Misuse("--workers goes with the HTTP API only, and keeps the runs in the Workers' store (no --store)")
    try:
        from alpineagents.workers import Workers
    except ImportError as error:
        raise click.ClickException(str(error).splitlines()[0])
    return load_object(spec, Workers)


def _mcp_stdio(agent: Agent, store: Store) -> None:
    from alpineagents.serve.mcp_server import mcp_server

    mcp_server(agent, store).run("stdio")
