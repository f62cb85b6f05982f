"""The viewer's answers at the HTTP level, through real requests to `alpineagents view` on a free 127.0.0.1 port:
which hosts it answers to, and what an id that cannot be one gets."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from helpers.cli_agents import cli, viewer


def get(address: str, path: str, host: str | None = None) -> tuple[int, str]:
    """The status and body of `GET path` on the viewer at `address`, with `host` as the Host header if given."""
    parts = urlsplit(address)
    assert parts.hostname is not None and parts.port is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8")
    finally:
        connection.close()


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> object:
    folder = tmp_path_factory.mktemp("viewer-http")
    store = str(folder / "runs.db")
    made = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store, cwd=folder)
    assert made.returncode == 0, made.stderr
    with viewer(store, folder) as found:
        yield found


def test_the_viewer_refuses_a_host_header_that_is_not_its_own(address: str) -> None:
    port = urlsplit(address).port
    for path in ("/api/runs", "/", "/runs/r1", "/api/runs/r1/entries?after=0"):
        status, body = get(address, path, host="evil.example")
        assert status == 403, (path, status)
        assert "r1" not in body and "add 2 and 3" not in body
        assert get(address, path, host=f"evil.example:{port}")[0] == 403
        assert get(address, path, host="127.0.0.1.evil.example")[0] == 403
    assert get(address, "/api/runs", host="")[0] == 403
    status, body = get(address, "/api/runs", host=f"127.0.0.1:{port}")
    assert status == 200 and json.loads(body)[0]["id"] == "r1"
    assert get(address, "/api/runs", host=f"localhost:{port}")[0] == 200
    assert get(address, "/api/runs", host=f"LOCALHOST:{port}")[0] == 200
    assert get(address, "/api/runs", host=f"[::1]:{port}")[0] == 200
    assert get(address, "/api/runs")[0] == 200  # http.client sends the address it connected to


def test_allow_host_adds_a_name_the_viewer_answers_to(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    assert cli("run", "cli_agents:calc", "hi", "--id", "r1", "--store", store, cwd=tmp_path).returncode == 0
    with viewer(store, tmp_path, extra=["--allow-host", "build-box.lan"]) as found:
        assert get(found, "/api/runs", host="build-box.lan:8321")[0] == 200
        assert get(found, "/api/runs", host="evil.example")[0] == 403


@pytest.mark.parametrize("path", ["/runs/..", "/runs/%00", "/runs/a.b", "/runs/" + "x" * 200, "/runs/%2e%2e"])
def test_an_id_that_cannot_be_one_is_not_found(address: str, path: str) -> None:
    status, body = get(address, path)
    assert status == 404, (path, status, body)
    assert "cannot be read" not in body
    api = "/api" + path + "/entries?after=0"
    assert get(address, api)[0] == 404


def test_a_busy_port_suggests_port_0(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli("view", "--port", str(port), "--store", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].endswith("--port 0 for any free port"), result.stderr
    assert "Traceback" not in result.stderr
