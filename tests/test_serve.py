"""The HTTP API of `alpineagents.serve`: runs started, streamed, resumed, read, listed and cancelled through a real
uvicorn server on 127.0.0.1, and every bad request answered with its status and a JSON message."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from alpineagents import FileStore, SQLiteStore, serve
from alpineagents.serve.guard import host_name
from helpers.serve_agents import THOUGHT, WAIT, chat_agent, free_port, serving, thinker

TESTS = Path(__file__).resolve().parent


def events(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of each SSE event of a body (comments left out)."""
    found = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        event_id = next((line[4:] for line in lines if line.startswith("id: ")), None)
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        found.append((event_id, data))
    return found


def read_until(
    http: httpx.Client, path: str, params: dict[str, Any], enough: Callable[[list[str]], bool]
) -> list[tuple[str | None, str]]:
    """Stream `path` and stop reading (closing the connection) at the first whole events whose datas are `enough`."""
    with http.stream("GET", path, params=params) as response:
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            done = events(buffer.rsplit("\n\n", 1)[0] + "\n\n") if "\n\n" in buffer else []
            if enough([data for _, data in done]):
                return done
    return []


def native(text: str) -> list[dict[str, Any]]:
    return [json.loads(data) for _, data in events(text)]


def text_of(items: list[dict[str, Any]]) -> str:
    """The assistant text a native stream carries (its `TextDelta` events)."""
    return "".join(item["text"] for item in items if item["type"] == "TextDelta")


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "runs")


@pytest.fixture
def base(store: FileStore) -> Any:
    with serving(serve.app(chat_agent(delay=0.02), store=store)) as url:
        yield url


def client(base: str, **kwargs: Any) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=WAIT, **kwargs)


def test_a_run_starts_streams_and_is_kept(base: str, store: FileStore) -> None:
    with client(base) as http:
        started = http.post("/api/runs", json={"prompt": "please add"})
        assert started.status_code == 201
        run_id = started.json()["id"]
        body = http.get(f"/api/runs/{run_id}/events", params={"after": started.json()["after"]}).text
        items = native(body)
        kinds = [item["type"] for item in items]
        assert kinds[0] == "RunStarted" and kinds[-1] == "RunEnded"
        assert kinds.count("ToolCallStarted") == kinds.count("ToolCallEnded") == 1
        assert text_of(items) == "The sum is 5."
        assert items[-1]["stopped"] == {"type": "StoppedByUntil", "name": "waiting_for_user"}
        assert items[-1]["error"] is None and items[-1]["state_id"] == run_id
        read = http.get(f"/api/runs/{run_id}").json()
        assert [entry["kind"] for entry in read["history"]] == [entry.kind for entry in store.load(run_id).history]
        assert read["run"]["running"] is False
        listed = http.get("/api/runs").json()["runs"]
        assert [row["id"] for row in listed] == [run_id]
        again = http.post(
            "/api/runs", json={"prompt": "hello", "state_id": run_id}, headers={"Accept": "text/event-stream"}
        )
        assert again.headers["content-type"].startswith("text/event-stream")
        assert text_of(native(again.text)).endswith("you said hello")
    assert store.load(run_id).answer.endswith("you said hello")


def test_a_stream_cut_and_resumed_with_last_event_id_gives_the_rest_exactly(base: str) -> None:
    with client(base) as http:
        run_id = http.post("/api/runs", json={"prompt": "tell me"}).json()["id"]
        http.get(f"/api/runs/{run_id}/events")  # the first run to its end
        run2 = http.post("/api/runs", json={"prompt": "and more", "state_id": run_id}).json()
        first = read_until(
            http,
            f"/api/runs/{run_id}/events",
            {"after": run2["after"]},
            lambda datas: sum(json.loads(data)["type"] == "TextDelta" for data in datas) >= 3,
        )
        last_id = first[-1][0]
        assert last_id is not None and "." in last_id  # cut in the middle of a reply
        rest = http.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": last_id}).text
        resumed = [json.loads(data) for _, data in first] + native(rest)
        uncut = native(http.get(f"/api/runs/{run_id}/events", params={"after": run2["after"]}).text)
        assert text_of(resumed) == text_of(uncut) == " ".join(f"w{i}" for i in range(20)) + " you said and more"

        def shown(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
            return [(item["type"], item["position"]) for item in items if item["type"] != "TextDelta"]

        assert shown(resumed) == shown(uncut)


def test_cancel_stops_a_run_and_saves_it(base: str, store: FileStore) -> None:
    with client(base) as http:
        run_id = http.post("/api/runs", json={"prompt": "take a nap"}).json()["id"]
        deadline = time.monotonic() + WAIT
        while "tool_result" not in str(http.get(f"/api/runs/{run_id}").json()) and time.monotonic() < deadline:
            if any(e["kind"] == "model_reply" for e in http.get(f"/api/runs/{run_id}").json()["history"]):
                break
            time.sleep(0.05)
        busy = http.post("/api/runs", json={"prompt": "again", "state_id": run_id})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "run_running"
        cancelled = http.post(f"/api/runs/{run_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
        assert http.post(f"/api/runs/{run_id}/cancel").status_code == 409
    saved = store.load(run_id)
    kinds = [entry.kind for entry in saved.history]
    assert kinds[-2:] == ["error", "tool_result"] and saved.history[-1].outcome == "interrupted", kinds


def test_bad_requests_get_their_status_and_a_json_message(base: str, tmp_path: Path) -> None:
    def check(response: httpx.Response, status: int, code: str, words: str) -> None:
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert error["code"] == code and words in error["message"]
        assert "Traceback" not in response.text and "sk-secret" not in response.text

    with client(base) as http:
        check(http.post("/api/runs", content=b"{nope"), 400, "bad_json", "not valid JSON")
        check(http.post("/api/runs", json=["x"]), 422, "bad_request", "JSON object")
        check(http.post("/api/runs", json={"prompt": "a", "messages": []}), 422, "bad_request", "not both")
        check(
            http.post("/api/runs", json={"messages": [{"role": "robot", "content": "x"}]}), 422, "bad_request", "role"
        )
        check(http.post("/api/runs", json={"prompt": "hi", "state_id": "nope"}), 404, "unknown_run", "'nope'")
        check(http.get("/api/runs/nope"), 404, "unknown_run", "'nope'")
        check(http.get("/api/runs/nope/events"), 404, "unknown_run", "'nope'")
        check(http.post("/api/runs", content=b"x" * 1_000_001), 413, "body_too_large", "1000000 bytes")
        chunks = (b"x" * 100_000 for _ in range(11))  # no Content-Length: counted as it arrives
        check(http.post("/api/runs", content=chunks), 413, "body_too_large", "limit")
        check(http.get("/api/runs", headers={"Host": "evil.example:80"}), 421, "bad_host", "host name")
        check(http.get("/api/nothing"), 404, "no_such_endpoint", "/api/runs")
        check(http.delete("/api/runs"), 405, "method_not_allowed", "DELETE")
        run_id = http.post("/api/runs", json={"prompt": "hi"}).json()["id"]
        check(http.get(f"/api/runs/{run_id}/events", params={"dialect": "klingon"}), 400, "bad_dialect", "native")
        check(
            http.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "x1"}), 400, "bad_cursor", "Last-Event-ID"
        )
        past = http.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "999"})
        check(past, 400, "bad_cursor", "past the end")
        failed = http.post("/api/runs", json={"prompt": "fail now"}).json()["id"]
        end = native(http.get(f"/api/runs/{failed}/events").text)[-1]
        assert end["type"] == "RunEnded" and end["error"] == "RuntimeError: the model is down"


def test_an_id_no_run_can_have_is_an_unknown_run_not_a_failure(base: str) -> None:
    with client(base) as http:
        for hostile in ("a.b", "%00", "..%2F..%2Fetc", "x" * 5000):
            for path in (f"/api/runs/{hostile}", f"/api/runs/{hostile}/events", f"/api/runs/{hostile}/cancel"):
                response = http.post(path) if path.endswith("cancel") else http.get(path)
                assert response.status_code == 404, (path[:80], response.text)
                assert len(response.text) < 400 and "Traceback" not in response.text
        started = http.post("/api/runs", json={"prompt": "hi", "state_id": "../evil"})
        assert started.status_code == 404 and started.json()["error"]["code"] == "unknown_run"


def test_a_token_is_required_when_given_and_never_shown(
    store: FileStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "tok-" + os.urandom(8).hex()
    caplog.set_level(logging.DEBUG)
    with serving(serve.app(chat_agent(), store=store, token=secret)) as url, client(url) as http:
        refused = http.get("/api/runs")
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert http.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = {"Authorization": f"Bearer {secret}"}
        run_id = http.post("/api/runs", json={"prompt": "hi"}, headers=good).json()["id"]
        http.get(f"/api/runs/{run_id}/events", headers=good)
    saved = "".join(
        str(path) + path.read_text(errors="replace") for path in (tmp_path / "runs").rglob("*") if path.is_file()
    )
    assert run_id in saved and secret not in saved
    server_lines = [r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert server_lines is not None and not any(secret in line for line in server_lines)


def test_cors_is_off_unless_origins_are_listed(store: FileStore) -> None:
    page = "http://127.0.0.1:9999"
    with serving(serve.app(chat_agent(), store=store)) as url, client(url) as http:
        assert "access-control-allow-origin" not in http.get("/api/runs", headers={"Origin": page}).headers
    with serving(serve.app(chat_agent(), store=store, origins=[page])) as url, client(url) as http:
        assert http.get("/api/runs", headers={"Origin": page}).headers["access-control-allow-origin"] == page
        assert "access-control-allow-origin" not in http.get("/api/runs", headers={"Origin": "http://x.test"}).headers
        preflight = http.options(
            "/api/runs",
            headers={
                "Origin": page,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization",
            },
        )
        assert preflight.status_code == 200


def test_a_page_of_another_origin_cannot_start_a_run_or_decide_a_call(store: FileStore) -> None:
    """A browser sends a form or plain-text POST of another site without a preflight; the Origin it names decides."""
    page = "http://127.0.0.1:9999"
    plain = {"content-type": "text/plain"}  # a "simple" request: no CORS preflight before it
    body = json.dumps({"prompt": "hi"})
    with serving(serve.app(chat_agent(), store=store, origins=[page])) as url, client(url) as http:
        for origin in ("https://evil.example", "null", "http://localhost:1"):
            refused = http.post("/api/runs", content=body, headers={**plain, "Origin": origin})
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "bad_origin"
            assert "--origin" in refused.json()["error"]["message"]
            decided = http.post("/api/runs/x/calls/y/approve", json={}, headers={"Origin": origin})
            assert decided.status_code == 403
        assert http.get("/api/runs").json()["runs"] == []  # nothing was started
        assert http.get("/api/runs", headers={"Origin": "https://evil.example"}).status_code == 200  # reading is
        # harmless: without CORS the page cannot see the answer
        own = url.rstrip("/")
        for origin in (own, page, None):  # the server's own pages, a listed page, a program that is not a browser
            headers = {} if origin is None else {"Origin": origin}
            assert http.post("/api/runs", json={"prompt": "hi"}, headers=headers).status_code == 201
        assert len(http.get("/api/runs").json()["runs"]) == 3


def test_authorize_decides_for_each_run(store: FileStore) -> None:
    owners: dict[str, str] = {}

    def authorize(request: Any, state_id: str) -> bool:
        user = request.headers.get("x-user")
        return user is not None and owners.setdefault(state_id, user) == user

    with serving(serve.app(chat_agent(), store=store, authorize=authorize)) as url, client(url) as http:
        ann = http.post("/api/runs", json={"prompt": "hi"}, headers={"x-user": "ann"}).json()["id"]
        bob = http.post("/api/runs", json={"prompt": "hi"}, headers={"x-user": "bob"}).json()["id"]
        assert [r["id"] for r in http.get("/api/runs", headers={"x-user": "ann"}).json()["runs"]] == [ann]
        refused = http.get(f"/api/runs/{bob}", headers={"x-user": "ann"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        assert (
            http.post("/api/runs", json={"prompt": "x", "state_id": bob}, headers={"x-user": "ann"}).status_code == 403
        )
        assert http.get(f"/api/runs/{ann}/events", headers={"x-user": "ann"}).status_code == 200


def test_host_names_in_a_host_header() -> None:
    assert host_name("127.0.0.1:8000") == "127.0.0.1"
    assert host_name("[::1]:80") == "::1"
    assert host_name("LocalHost") == "localhost"


def test_200_concurrent_streams(store: FileStore) -> None:
    async def main(url: str) -> list[str]:
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
            ids = [(await http.post("/api/runs", json={"prompt": f"run {n}"})).json()["id"] for n in range(20)]

            async def read(n: int) -> str:
                response = await http.get(f"/api/runs/{ids[n % 20]}/events", params={"after": 1})
                assert response.status_code == 200
                return text_of(native(response.text))

            return await asyncio.gather(*(read(n) for n in range(200)))

    with serving(serve.app(chat_agent(delay=0.01), store=store)) as url:
        texts = asyncio.run(main(url))
    assert len(texts) == 200
    for n, text in enumerate(texts):
        assert text.endswith(f"you said run {n % 20}"), text


def cli_serve(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "alpineagents", "serve", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(TESTS / "helpers"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_listening(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    line = process.stderr.readline()
    assert "alpineagents serve:" in line, line + (process.stderr.read() if process.poll() is not None else "")
    return line.split(" at ", 1)[1].split()[0]


def test_the_command_refuses_another_address_without_a_token(tmp_path: Path) -> None:
    process = cli_serve("serve_agents:chat", "--host", "0.0.0.0", "--store", str(tmp_path / "r"), cwd=tmp_path)
    out, err = process.communicate(timeout=WAIT)
    assert process.returncode == 2 and "give a token" in err and "ALPINEAGENTS_SERVE_TOKEN" in err


def test_a_server_killed_mid_run_leaves_a_state_that_resumes(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    port = free_port()
    process = cli_serve("serve_agents:slow", "--store", db, "--port", str(port), cwd=tmp_path)
    try:
        url = wait_listening(process)
        with client(url) as http:
            run_id = http.post("/api/runs", json={"prompt": "take a nap"}).json()["id"]
            deadline = time.monotonic() + WAIT
            while not any(e["kind"] == "model_reply" for e in http.get(f"/api/runs/{run_id}").json()["history"]):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(WAIT)
    finally:
        process.kill()
        process.wait(WAIT)
    second = cli_serve("serve_agents:chat", "--store", db, "--port", "0", cwd=tmp_path)
    try:
        url = wait_listening(second)
        with client(url) as http:
            resumed = http.post(
                "/api/runs", json={"prompt": "please add", "state_id": run_id}, headers={"Accept": "text/event-stream"}
            )
            assert text_of(native(resumed.text)) == "The sum is 5."
    finally:
        second.terminate()
        second.wait(WAIT)
    history = SQLiteStore(db).load(run_id).history
    naps = [e for e in history if e.kind == "tool_result" and e.call.name == "nap"]
    assert len(naps) == 1 and naps[0].outcome == "aborted"  # the unknown result: the tool never ran twice


def test_the_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.scriptload import load_script

    bench = load_script("benchmarks", "serve")
    bench.latency(2, 20)
    bench.held(5)
    out = capsys.readouterr().out
    assert out.count("first event") == 3 and out.count("per word") == 2
    assert "5/5 streams got the new words" in out


@pytest.mark.parametrize("dialect", ["agui", "vercel"])
def test_a_cut_stream_resumes_in_every_dialect(base: str, dialect: str) -> None:
    """The text read before the cut and after it, in AG-UI and AI SDK events, is the reply, once."""

    def deltas(datas: list[str]) -> str:
        key = "delta"
        kinds = {"agui": "TEXT_MESSAGE_CONTENT", "vercel": "text-delta"}
        return "".join(json.loads(d)[key] for d in datas if d != "[DONE]" and json.loads(d)["type"] == kinds[dialect])

    with client(base) as http:
        run = http.post("/api/runs", json={"prompt": "go on"}).json()
        path = f"/api/runs/{run['id']}/events"
        params = {"dialect": dialect, "after": run["after"]}
        first = read_until(http, path, params, lambda datas: len(deltas(datas)) > 10)
        last_id = next(event_id for event_id, _ in reversed(first) if event_id is not None)
        rest = events(http.get(path, params={"dialect": dialect}, headers={"Last-Event-ID": last_id}).text)
        upto = [data for _, data in first[: max(i for i, (event_id, _) in enumerate(first) if event_id) + 1]]
        assert (
            deltas(upto) + deltas([data for _, data in rest])
            == " ".join(f"w{i}" for i in range(20)) + " you said go on"
        )


@pytest.mark.usefixtures("record_all")
def test_an_ag_ui_client_gets_no_system_prompt_tool_specs_or_stack_of_the_server(base: str) -> None:
    """The entries AG-UI sends as custom events leave out a request's recorded input (the tool specs here) and an
    error's stack: they are the server's, for whoever reads its store."""
    with client(base) as http:
        run = http.post("/api/runs", json={"prompt": "go on"}).json()
        text = http.get(f"/api/runs/{run['id']}/events", params={"dialect": "agui"}).text
    sent = [json.loads(data) for _, data in events(text) if data != "[DONE]"]
    requests = [item for item in sent if item.get("name") == "alpineagents.model_request"]
    assert requests and all(set(item["value"]) == {"seq", "kind", "turn", "at", "content"} for item in requests)
    assert "tools_sha256" not in text and "input_schema" not in text and "Traceback" not in text


def pieces_of(dialect: str, datas: list[str]) -> tuple[str, str, list[str]]:
    """The thinking and the arguments (of the one call) a stream in `dialect` carries as pieces, joined, and the
    types of its events about thinking and calls, in order."""
    sent = [json.loads(data) for data in datas if data != "[DONE]"]
    kinds = {
        "native": ("ThinkingDelta", "text", "ToolCallArgsDelta", "delta"),
        "agui": ("REASONING_MESSAGE_CONTENT", "delta", "TOOL_CALL_ARGS", "delta"),
        "vercel": ("reasoning-delta", "delta", "tool-input-delta", "inputTextDelta"),
    }[dialect]
    thinking = "".join(item[kinds[1]] for item in sent if item["type"] == kinds[0])
    arguments = "".join(item[kinds[3]] for item in sent if item["type"] == kinds[2])
    marks = ("Thinking", "ToolCall", "REASONING", "TOOL_CALL", "reasoning", "tool-input")
    return thinking, arguments, [item["type"] for item in sent if item["type"].startswith(marks)]


@pytest.mark.parametrize("dialect", ["native", "agui", "vercel"])
def test_thinking_and_arguments_stream_live_in_every_dialect_and_a_replay_has_them_whole(
    store: FileStore, dialect: str
) -> None:
    with serving(serve.app(thinker(delay=0.03), store=store)) as url, client(url) as http:
        run = http.post("/api/runs", json={"prompt": "what is 4 + 5?"}).json()
        path = f"/api/runs/{run['id']}/events"
        live = [data for _, data in events(http.get(path, params={"dialect": dialect, "after": run["after"]}).text)]
        thinking, arguments, kinds = pieces_of(dialect, live)
        assert thinking == THOUGHT
        assert json.loads(arguments) == {"a": 4, "b": 5}
        if dialect == "agui":
            assert kinds[:3] == ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT"]
            assert kinds[-3:] == ["TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
            assert kinds.count("TOOL_CALL_START") == kinds.count("TOOL_CALL_END") == 1
            assert kinds.count("REASONING_END") == 1
        elif dialect == "vercel":
            assert kinds[0] == "reasoning-start" and kinds.count("reasoning-end") == 1
            assert kinds.count("tool-input-start") == 1 and kinds.index("tool-input-start") < kinds.index(
                "tool-input-delta"
            )
            assert kinds[-2:] == ["tool-input-delta", "tool-input-available"]
        else:
            assert kinds.index("ToolCallArgsDelta") < kinds.index("ToolCallStarted")
        replay = [data for _, data in events(http.get(path, params={"dialect": dialect, "after": run["after"]}).text)]
        thinking, arguments, _ = pieces_of(dialect, replay)
        assert thinking == ""  # thinking is live only: the reply keeps it in its provider's form
        assert (json.loads(arguments) if arguments else None) == ({"a": 4, "b": 5} if dialect == "agui" else None)


@pytest.mark.parametrize("dialect", ["native", "agui", "vercel"])
def test_a_stream_cut_in_the_thinking_resumes_with_no_gap_and_no_repeat(store: FileStore, dialect: str) -> None:
    with serving(serve.app(thinker(delay=0.05), store=store)) as url, client(url) as http:
        run = http.post("/api/runs", json={"prompt": "what is 4 + 5?"}).json()
        path = f"/api/runs/{run['id']}/events"
        params = {"dialect": dialect, "after": run["after"]}
        first = read_until(http, path, params, lambda datas: pieces_of(dialect, datas)[0].count(" ") >= 3)
        cut = max(index for index, (event_id, _) in enumerate(first) if event_id)
        last_id = first[cut][0]
        assert last_id is not None and last_id.count(".") == 2  # cut in the thinking of a reply being written
        rest = events(http.get(path, params={"dialect": dialect}, headers={"Last-Event-ID": last_id}).text)
        before = pieces_of(dialect, [data for _, data in first[: cut + 1]])
        after = pieces_of(dialect, [data for _, data in rest])
        assert before[0] + after[0] == THOUGHT
        assert json.loads(before[1] + after[1]) == {"a": 4, "b": 5}
