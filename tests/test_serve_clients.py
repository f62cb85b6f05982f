"""Each dialect of `alpineagents serve` driven by its real client: `@ag-ui/client` and the `ai` package under
node (installed by npm into a temporary folder), the `mcp` Python client over stdio and Streamable HTTP, and the
`a2a-sdk` client. The servers are `alpineagents serve` processes or uvicorn in a thread, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alpineagents import SQLiteStore, serve
from helpers.serve_agents import THOUGHT, WAIT, approving, chat_agent, serving, thinker
from test_serve import cli_serve, wait_listening

TESTS = Path(__file__).resolve().parent
NODE_PACKAGES = ("@ag-ui/client@1", "ai@6")
TWENTY = " ".join(f"w{i}" for i in range(20))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the node clients installed and the scripts of tests/helpers/serve_node beside them."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            raise AssertionError("node and npm must be installed in CI (apt-get install nodejs npm)")
        pytest.skip("node and npm are not installed (apt-get install nodejs npm)")
    folder = tmp_path_factory.mktemp("node")
    (folder / "package.json").write_text('{"type": "module", "private": true}')
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *NODE_PACKAGES],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if done.returncode != 0:
        reached = not any(word in done.stderr for word in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT"))
        if not reached:
            pytest.skip(f"npm cannot reach its registry: {done.stderr.strip().splitlines()[-1]}")
        raise AssertionError(f"npm install failed: {done.stderr}")
    for script in (TESTS / "helpers" / "serve_node").glob("*.mjs"):
        shutil.copy(script, folder / script.name)
    return folder


def run_node(node: Path, script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(node / script), *args], cwd=node, capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "runs.db")


@pytest.fixture
def base(store: SQLiteStore) -> Iterator[str]:
    with serving(serve.app(chat_agent(delay=0.01), store=store)) as url:
        yield url


def test_agui_client_runs_the_agent_and_continues_the_thread(node: Path, base: str, store: SQLiteStore) -> None:
    thread = "thread-" + uuid.uuid4().hex[:8]
    seen = run_node(node, "agui_client.mjs", f"{base}/agui", thread, "please add", "hello there")
    assert seen["errors"] == []
    types = seen["seen"]
    assert types[0] == "RUN_STARTED" and types.count("RUN_STARTED") == 2 and types.count("RUN_FINISHED") == 2
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT"} <= set(
        types
    )
    messages = seen["messages"]
    calls = [m for m in messages if m["role"] == "assistant" and m.get("toolCalls")]
    assert calls[0]["toolCalls"][0]["function"] == {"name": "add", "arguments": '{"a":2,"b":3}'}
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["5"]
    texts = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    assert texts == ["The sum is 5.", f"{TWENTY} you said hello there"]
    assert seen["results"][0]["answer"] == "The sum is 5."
    state = store.load(thread)  # one State per thread, continued by the second run
    assert [m.text for m in state.messages if m.role == "user" and m.text][:1] == ["please add"]
    assert state.answer == f"{TWENTY} you said hello there"


def test_agui_client_sees_a_failed_run_as_run_error(node: Path, base: str) -> None:
    seen = run_node(node, "agui_client.mjs", f"{base}/agui", "t-" + uuid.uuid4().hex[:8], "fail please", "again")
    assert seen["errors"][0].startswith("RuntimeError") and "model is down" in seen["errors"][0]


def test_ai_sdk_client_reads_the_ui_message_stream(node: Path, base: str, store: SQLiteStore) -> None:
    chat = "chat-" + uuid.uuid4().hex[:8]
    seen = run_node(node, "vercel_client.mjs", f"{base}/vercel", chat, "please add")
    assert seen["errors"] == []
    parts = seen["last"]["parts"]
    tools = [p for p in parts if p["type"] == "tool-add"]
    assert tools == [
        {
            "type": "tool-add",
            "toolCallId": tools[0]["toolCallId"],
            "state": "output-available",
            "input": {"a": 2, "b": 3},
            "output": "5",
        }
    ]
    assert [p["text"] for p in parts if p["type"] == "text"] == ["The sum is 5."]
    assert store.load(chat).answer == "The sum is 5."
    again = run_node(node, "vercel_client.mjs", f"{base}/vercel", chat, "and now?")
    assert [p["text"] for p in again["last"]["parts"] if p["type"] == "text"] == [f"{TWENTY} you said and now?"]
    assert again["snapshots"] > 5  # the text came in pieces


def test_agui_and_ai_sdk_clients_read_streamed_thinking_and_arguments(node: Path, store: SQLiteStore) -> None:
    with serving(serve.app(thinker(delay=0.01), store=store)) as base:
        seen = run_node(node, "agui_client.mjs", f"{base}/agui", "t-" + uuid.uuid4().hex[:8], "4 + 5?", "again")
        chat = run_node(node, "vercel_client.mjs", f"{base}/vercel", "c-" + uuid.uuid4().hex[:8], "4 + 5?")
    assert seen["errors"] == []
    types = seen["seen"]
    assert types.count("REASONING_MESSAGE_CONTENT") > 3 and types.count("TOOL_CALL_ARGS") > 3  # in pieces
    messages = seen["messages"]
    assert [m["content"] for m in messages if m["role"] == "reasoning"] == [THOUGHT, THOUGHT]
    calls = [call for m in messages if m["role"] == "assistant" for call in m.get("toolCalls") or []]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("add", {"a": 4, "b": 5}),
        ("add", {"a": 4, "b": 5}),
    ]
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["9", "9"]
    assert chat["errors"] == []
    parts = chat["last"]["parts"]
    assert [p["text"] for p in parts if p["type"] == "reasoning"] == [THOUGHT]
    tools = [p for p in parts if p["type"] == "tool-add"]
    assert [(t["state"], t["input"], t["output"]) for t in tools] == [("output-available", {"a": 4, "b": 5}, "9")]
    assert [p["text"] for p in parts if p["type"] == "text"] == ["Adding.", "It is 9."]


# --- MCP -----------------------------------------------------------------------------------------------------


async def mcp_calls(session: Any) -> tuple[list[tuple[float, str | None]], Any, Any]:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    await session.initialize()
    tools = await session.list_tools()
    assert [tool.name for tool in tools.tools] == ["ask_agent"]
    first = await session.call_tool("ask_agent", {"prompt": "please add"}, progress_callback=on_progress)
    conversation = first.structured_content["conversation_id"]
    second = await session.call_tool("ask_agent", {"prompt": "thanks", "conversation_id": conversation})
    return progress, first, second


def check_mcp(progress: list[tuple[float, str | None]], first: Any, second: Any, db: Path) -> None:
    assert not first.is_error and first.structured_content["answer"] == "The sum is 5."
    assert progress == [(1.0, "turn 1"), (2.0, "turn 2")]
    assert second.structured_content["answer"] == f"{TWENTY} you said thanks"
    state = SQLiteStore(db).load(first.structured_content["conversation_id"])
    assert [m.text for m in state.messages if m.role == "user" and m.text] == ["please add", "thanks"]


def test_mcp_client_over_stdio(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = tmp_path / "runs.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "alpineagents", "serve", "--mcp", "serve_agents:chat", "--store", str(db)],
        env={**os.environ, "PYTHONPATH": str(TESTS / "helpers")},
        cwd=str(tmp_path),
    )

    async def main() -> tuple[Any, Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await asyncio.wait_for(mcp_calls(session), WAIT)

    check_mcp(*asyncio.run(main()), db)


def test_mcp_client_over_streamable_http(tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    db = tmp_path / "runs.db"
    process = cli_serve("--mcp", "--http", "serve_agents:chat", "--store", str(db), "--port", "0", cwd=tmp_path)
    try:
        url = wait_listening(process)
        assert url.endswith("/mcp")

        async def main() -> tuple[Any, Any, Any]:
            async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
                return await asyncio.wait_for(mcp_calls(session), WAIT)

        check_mcp(*asyncio.run(main()), db)
        # a web page of another site cannot call the tool through the visitor's browser (a plain-text POST needs
        # no preflight): its Origin is refused before the MCP server reads the body
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "chat", "arguments": {}}}
        refused = httpx.post(
            url, content=json.dumps(call), headers={"Content-Type": "text/plain", "Origin": "https://evil.example"}
        )
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "bad_origin"
    finally:
        process.terminate()
        process.wait(WAIT)


def test_mcp_tool_errors_say_what_went_wrong(tmp_path: Path) -> None:
    from mcp import Client

    from alpineagents.serve.mcp_server import mcp_server

    server = mcp_server(chat_agent(), SQLiteStore(tmp_path / "runs.db"))

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            failed = await client.call_tool("ask_agent", {"prompt": "fail now"})
            unknown = await client.call_tool("ask_agent", {"prompt": "hi", "conversation_id": "nope"})
            return failed, unknown

    failed, unknown = asyncio.run(main())
    assert failed.is_error and "the run ended with an error: RuntimeError: the model is down" in failed.content[0].text
    assert unknown.is_error and "no run with id 'nope'" in unknown.content[0].text


# --- A2A -----------------------------------------------------------------------------------------------------


def test_a2a_client_streams_and_continues_a_context(tmp_path: Path) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types import Message, Part, Role, SendMessageRequest

    db = tmp_path / "runs.db"
    process = cli_serve("--a2a", "serve_agents:chat", "--store", str(db), "--port", "0", cwd=tmp_path)
    try:
        url = wait_listening(process)

        async def send(client: Any, text: str, context_id: str | None) -> list[Any]:
            message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
            if context_id:
                message.context_id = context_id
            return [event async for event in client.send_message(SendMessageRequest(message=message))]

        async def main() -> tuple[Any, list[Any], list[Any]]:
            async with httpx.AsyncClient() as http:
                card = await A2ACardResolver(http, url).get_agent_card()
            client = await create_client(url, client_config=ClientConfig(streaming=True))
            first = await send(client, "please add", None)
            context = first[0].task.context_id
            second = await send(client, "tell me more", context)
            await client.close()
            plain = await create_client(url, client_config=ClientConfig(streaming=False))
            whole = await send(plain, "and the rest", context)  # SendMessage: one task, completed
            await plain.close()
            assert [event.WhichOneof("payload") for event in whole] == ["task"]
            assert whole[0].task.status.state == 3 and whole[0].task.context_id == context
            return card, first, second

        card, first, second = asyncio.run(asyncio.wait_for(main(), WAIT))
    finally:
        process.terminate()
        process.wait(WAIT)
    assert card.capabilities.streaming
    kinds = [event.WhichOneof("payload") for event in first]
    assert kinds[0] == "task" and kinds[-1] == "status_update" and "artifact_update" in kinds
    assert first[-1].status_update.status.state == 3  # TASK_STATE_COMPLETED
    assert first[-1].status_update.status.message.parts[0].text == "The sum is 5."
    chunks = "".join(
        e.artifact_update.artifact.parts[0].text for e in second if e.WhichOneof("payload") == "artifact_update"
    )
    assert chunks == f"{TWENTY} you said tell me more"
    context = first[0].task.context_id
    state = SQLiteStore(db).load(context)
    assert [m.text for m in state.messages if m.role == "user" and m.text] == [
        "please add",
        "tell me more",
        "and the rest",
    ]


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_ai_sdk_client_answers_a_tool_approval(node: Path, store: SQLiteStore, answer: str) -> None:
    chat = "chat-" + uuid.uuid4().hex[:8]
    with serving(serve.app(approving(), store=store)) as url:
        seen = run_node(node, "vercel_approval.mjs", f"{url}/vercel", chat, "please add", answer)
    assert seen["errors"] == []
    asked = [part for part in seen["asked"] if part["type"] == "tool-add"]
    assert asked[0]["state"] == "approval-requested" and asked[0]["input"] == {"a": 2, "b": 3}
    texts = [part["text"] for part in seen["after"] if part["type"] == "text"]
    if answer == "yes":
        assert texts == ["The sum is 5."]
        outputs = [p["output"] for p in seen["after"] if p["type"] == "tool-add" and p["state"] == "output-available"]
        assert outputs == ["5"]
    else:
        assert texts == ["Rested."]  # the model read the denial, not the sum
        denied = [p for p in store.load(chat).history if p.kind == "tool_result"]
        assert [(e.outcome, "not now" in str(e.content)) for e in denied] == [("denied", True)]
