"""The `alpineagents` command, run through its real entry point in a subprocess, against FileStore and SQLiteStore.

The agents come from `tests/helpers/cli_agents.py` (scripted FakeModels), imported by the command as `cli_agents:NAME`.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from alpineagents.store import FileStore, SQLiteStore, Store
from helpers.cli_agents import HERE as HELPERS
from helpers.cli_agents import cli, command_env, has_entry, viewer
from helpers.cli_agents import command as command_line

SCRIPT = Path(sys.executable).parent / "alpineagents"
COMMANDS = ["run", "ls", "show", "resume", "fork", "rm", "export", "view"]


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The error the command printed, checked to be exactly one line on stderr and nothing on stdout."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture(params=["file", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store that does not exist yet: a folder for FileStore, a .db file for SQLiteStore."""
    return str(tmp_path / ("runs" if request.param == "file" else "runs.db"))


def open_store(url: str) -> Store:
    return SQLiteStore(url) if url.endswith(".db") else FileStore(url)


@pytest.fixture
def calc_run(store_url: str, tmp_path: Path) -> str:
    """The store after one calc run, id r1: add(2, 3), then "The sum is 5."."""
    result = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return store_url


# -- help and entry points ---------------------------------------------------------------------------------------


def test_every_command_has_help_and_the_console_script_runs(tmp_path: Path) -> None:
    top = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert top.returncode == 0
    for command in COMMANDS:
        assert command in top.stdout
        result = cli(command, "--help", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "--store" in result.stdout
        assert "Usage: alpineagents " + command in result.stdout


def test_an_unknown_command_or_option_is_misuse_with_exit_code_2(tmp_path: Path) -> None:
    assert cli("frobnicate", cwd=tmp_path).returncode == 2
    assert cli("ls", "--bogus", cwd=tmp_path).returncode == 2
    assert cli("ls", "--limit", "0", cwd=tmp_path).returncode == 2
    assert files_under(tmp_path) == []


# -- run ---------------------------------------------------------------------------------------------------------


def test_run_prints_the_terminal_progress_and_saves_the_run(store_url: str, tmp_path: Path) -> None:
    result = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[turn 1] thinking",
        "  tool add(a=2, b=3)",
        "  done 1B",
        "[turn 2] thinking",
        "The sum is 5.",
        "done: stopped by waiting_for_user (2 turns, ~$0.00)",
    ]
    assert "saved as r1" in result.stderr
    state = open_store(store_url).load("r1")
    assert state.answer == "The sum is 5."
    assert state.turn == 2


def test_run_json_prints_the_outcome_and_sends_progress_to_stderr(store_url: str, tmp_path: Path) -> None:
    result = cli("run", "cli_agents:calc", "please add 2 and 3", "--json", "--store", store_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["answer"] == "The sum is 5."
    assert outcome["stopped"] == "stopped by waiting_for_user"
    assert outcome["turn"] == 2 and outcome["finished"] is False
    assert outcome["usage"]["requests"] == 2 and outcome["usage"]["cost"] > 0
    assert "[turn 1] thinking" in result.stderr
    assert open_store(store_url).load(outcome["id"]).answer == "The sum is 5."


def test_run_takes_an_agent_from_a_file_path_or_a_factory_function(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    by_path = cli("run", str(HELPERS / "cli_agents.py") + ":calc", "hi", "--json", "--store", store, cwd=tmp_path)
    assert json.loads(by_path.stdout)["answer"] == "Hello again."
    by_factory = cli("run", "cli_agents:make_calc", "hi", "--json", "--store", store, cwd=tmp_path)
    assert json.loads(by_factory.stdout)["answer"] == "Hello again."


def test_run_model_option_replaces_the_agents_model(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    env = {
        key: value for key, value in command_env(ALPINEAGENTS_STORE=str(store)).items() if not key.startswith("OPENAI")
    }
    result = subprocess.run(
        command_line("run", "cli_agents:calc", "hi", "--model", "openai/gpt-5", "--id", "m1"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("Error: run m1 ended with AuthError")
    first_run = next(entry for entry in SQLiteStore(store).load("m1").history if entry.kind == "run_start")
    assert first_run.content.model.endswith("/gpt-5")  # type: ignore[union-attr]


def test_a_run_that_raises_is_saved_and_exits_with_1(store_url: str, tmp_path: Path) -> None:
    result = cli("run", "cli_agents:broken", "break it", "--id", "b1", "--store", store_url, cwd=tmp_path)
    assert result.returncode == 1
    assert "done: error RuntimeError: boom (1 turn)" in result.stdout
    assert result.stderr.strip() == "Error: run b1 ended with RuntimeError: boom"
    listed = json.loads(cli("ls", "--json", "--store", store_url, cwd=tmp_path).stdout)
    assert listed[0]["status"] == "error: RuntimeError: boom"


def test_run_refuses_an_id_the_store_already_has_and_writes_nothing(calc_run: str, tmp_path: Path) -> None:
    before = open_store(calc_run).read("r1")
    result = cli("run", "cli_agents:calc", "again", "--id", "r1", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 1
    assert "already has a run 'r1'" in one_error_line(result)
    assert open_store(calc_run).read("r1") == before


def test_run_refuses_an_id_that_cannot_be_one(tmp_path: Path) -> None:
    result = cli("run", "cli_agents:calc", "hi", "--id", "no spaces", cwd=tmp_path)
    assert result.returncode == 2
    assert "may only have letters" in one_error_line(result)
    assert files_under(tmp_path) == []


# -- ls ----------------------------------------------------------------------------------------------------------


def test_ls_lists_runs_newest_first_with_status_and_cost(calc_run: str, tmp_path: Path) -> None:
    assert (
        cli(
            "run", "cli_agents:lead", "Survey the project", "--id", "lead1", "--store", calc_run, cwd=tmp_path
        ).returncode
        == 0
    )
    rows = json.loads(cli("ls", "--json", "--store", calc_run, cwd=tmp_path).stdout)
    top = [row for row in rows if row["parent_id"] is None]
    assert [row["id"] for row in top] == ["lead1", "r1"]
    (child,) = [row for row in rows if row["parent_id"] == "lead1"]
    assert child["first_message"] == "List the open issues"
    lead = top[0]
    assert lead["status"] == "finished" and lead["finished"] is True
    assert lead["turns"] == 2 and lead["cost"] > 0 and lead["first_message"] == "Survey the project"
    assert top[1]["status"] == "stopped by waiting_for_user"

    table = cli("ls", "--store", calc_run, cwd=tmp_path).stdout.splitlines()
    assert table[0].split() == ["ID", "FIRST", "MESSAGE", "TURNS", "UPDATED", "STATUS", "COST"]
    assert table[1].startswith("lead1 ") and "finished" in table[1] and "$0.0" in table[1]
    assert len(table) == 4

    def ids(*options: str) -> list[str]:
        return [
            row["id"] for row in json.loads(cli("ls", "--json", *options, "--store", calc_run, cwd=tmp_path).stdout)
        ]

    assert ids("--limit", "1") == ["lead1"]
    assert ids("--filter", "ADD 2") == ["r1"]
    assert ids("--top") == ["lead1", "r1"]
    assert ids("--filter", "nothing like it") == []


def test_the_store_comes_from_the_option_the_environment_or_runs_db(tmp_path: Path) -> None:
    assert cli("run", "cli_agents:calc", "hi", "--id", "d1", cwd=tmp_path).returncode == 0
    assert (tmp_path / "runs.db").is_file()
    assert [row["id"] for row in json.loads(cli("ls", "--json", cwd=tmp_path).stdout)] == ["d1"]
    folder = str(tmp_path / "elsewhere")
    env = {"ALPINEAGENTS_STORE": folder}
    assert cli("run", "cli_agents:calc", "hi", "--id", "e1", cwd=tmp_path, env=env).returncode == 0
    assert FileStore(folder).load("e1").answer == "Hello again."
    assert [row["id"] for row in json.loads(cli("ls", "--json", cwd=tmp_path, env=env).stdout)] == ["e1"]
    before = cli("--store", "sqlite:///runs.db", "ls", "--json", cwd=tmp_path, env=env)
    assert [row["id"] for row in json.loads(before.stdout)] == ["d1"]


# -- show --------------------------------------------------------------------------------------------------------


def test_show_prints_the_run_as_the_terminal_did_with_usage_and_cost(calc_run: str, tmp_path: Path) -> None:
    run_output = [
        "[turn 1] thinking",
        "  tool add(a=2, b=3)",
        "  done 1B",
        "[turn 2] thinking",
        "The sum is 5.",
        "done: stopped by waiting_for_user (2 turns, ~$0.00)",
    ]
    result = cli("show", "r1", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "run r1: please add 2 and 3"
    assert lines[1:-1] == run_output
    assert lines[-1].startswith("usage: ") and "in 2 requests, ~$0.00" in lines[-1]


def test_show_nests_subagent_runs_and_shows_errors_and_compaction(tmp_path: Path) -> None:
    store = str(tmp_path / "runs")
    assert (
        cli("run", "cli_agents:lead", "Survey the project", "--id", "lead1", "--store", store, cwd=tmp_path).returncode
        == 0
    )
    lines = cli("show", "lead1", "--store", store, cwd=tmp_path).stdout.splitlines()
    for line in [
        "  denied rm: rm is not allowed.",
        '  tool scout(prompt="List the open issues")',
        "    scout started",
        "    [scout turn 1] thinking",
        '      tool list_issues(state="open")',
        "    scout done: stopped by waiting_for_user (2 turns, ~$0.00)",
        "  error fetch_page: could not reach http://example.invalid: connection refused",
        "  context compacted: 2k → 51 tokens (cache rebuilds)",
        'Run write_note(title="Findings")? (yes/no) yes',
        "Go on with the summary? (yes/no) yes",
        "done: stopped by finish (2 turns, ~$0.00)",
    ]:
        assert line in lines
    assert lines.index("    scout started") < lines.index("  done 37B")


def test_show_json_prints_the_saved_entries(calc_run: str, tmp_path: Path) -> None:
    result = cli("show", "r1", "--json", "--store", calc_run, cwd=tmp_path)
    entries = json.loads(result.stdout)
    assert [entry["seq"] for entry in entries] == list(range(len(entries)))
    assert [entry["kind"] for entry in entries] == [
        "context_change", "run_start", "model_request", "model_reply", "tool_result", "model_request",
        "model_reply", "stop",
    ]  # fmt: skip
    assert entries == open_store(calc_run).read("r1").entries  # type: ignore[union-attr]


# -- resume ------------------------------------------------------------------------------------------------------


def test_resume_continues_a_run_with_a_new_message(calc_run: str, tmp_path: Path) -> None:
    result = cli("resume", "r1", "cli_agents:calc", "hello", "--json", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["id"] == "r1" and outcome["answer"] == "Hello again." and outcome["turn"] == 3
    state = open_store(calc_run).load("r1")
    assert [entry.kind for entry in state.history].count("run_start") == 2


def test_resume_continues_a_run_whose_process_was_killed(tmp_path: Path) -> None:
    store = str(tmp_path / "runs")
    process = subprocess.Popen(
        command_line("run", "cli_agents:slow", "wait", "--id", "k1", "--store", store),
        cwd=tmp_path,
        env=command_env(CLI_TEST_GATE=str(tmp_path / "never")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (Path(store).exists() and has_entry(FileStore(store), "k1", "model_reply")):
            assert time.monotonic() < deadline, "the run never reached its tool call"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    crashed = cli("ls", "--json", "--store", store, cwd=tmp_path)
    assert json.loads(crashed.stdout)[0]["status"].startswith("unfinished turn")
    result = cli("resume", "k1", "cli_agents:calc", "--json", "--store", store, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] == "The sum is 5."
    outcomes = [entry.outcome for entry in FileStore(store).load("k1").history if entry.kind == "tool_result"]  # type: ignore[attr-defined]
    assert outcomes == ["aborted"]


def test_resume_by_another_agent_warns_in_one_line_without_the_command_lines_code(
    calc_run: str, tmp_path: Path
) -> None:
    result = cli("resume", "r1", "cli_agents:painter", "and now draw", "--json", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "different Agent" in line]
    assert len(warning) == 1, result.stderr
    assert warning[0].startswith("warning: This State was saved by a different Agent (")
    assert "removed add" in warning[0] and "added draw" in warning[0]
    assert "click" not in result.stderr and "ResumeWarning" not in result.stderr  # no file, line or class of ours
    assert json.loads(result.stdout)["answer"] == "A red square."


def test_resume_refuses_a_finished_run_and_writes_nothing(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    assert cli("run", "cli_agents:lead", "Survey", "--id", "lead1", "--store", store, cwd=tmp_path).returncode == 0
    before = SQLiteStore(store).read("lead1")
    result = cli("resume", "lead1", "cli_agents:calc", "more", "--store", store, cwd=tmp_path)
    assert result.returncode == 1
    assert "finish" in one_error_line(result)
    assert SQLiteStore(store).read("lead1") == before


# -- fork and rm -------------------------------------------------------------------------------------------------


def test_fork_copies_a_run_up_to_entry_n_under_a_new_id(calc_run: str, tmp_path: Path) -> None:
    result = cli("fork", "r1", "--at", "4", "--json", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    copy = json.loads(result.stdout)
    assert copy["from"] == "r1" and copy["entries"] == 4 and copy["id"] != "r1"
    store = open_store(calc_run)
    original = store.load("r1")
    assert len(store.read(copy["id"]).entries) == 5  # type: ignore[union-attr]  # the 4 kept, then where they came from
    forked = store.load(copy["id"]).history
    assert forked[:4] == original.history[:4]  # ends with a pending call, closed on load
    assert forked[4].kind == "model_event" and forked[4].content.data == {"from": "r1", "at": 4}  # type: ignore[union-attr]
    named = cli("fork", "r1", "--id", "r1-copy", "--store", calc_run, cwd=tmp_path)
    assert named.stdout.strip() == "r1-copy"
    assert store.load("r1-copy").history[:-1] == original.history
    resumed = cli("resume", "r1-copy", "cli_agents:calc", "hello", "--json", "--store", calc_run, cwd=tmp_path)
    assert json.loads(resumed.stdout)["answer"] == "Hello again."
    assert store.load("r1").history == original.history


def test_fork_refuses_a_cut_past_the_end_or_a_taken_id(calc_run: str, tmp_path: Path) -> None:
    past = cli("fork", "r1", "--at", "99", "--store", calc_run, cwd=tmp_path)
    assert past.returncode == 2 and "past the end: run r1 has 8 entries" in one_error_line(past)
    taken = cli("fork", "r1", "--id", "r1", "--store", calc_run, cwd=tmp_path)
    assert taken.returncode == 1 and "already has a run 'r1'" in one_error_line(taken)
    assert [row["id"] for row in json.loads(cli("ls", "--json", "--store", calc_run, cwd=tmp_path).stdout)] == ["r1"]


def test_rm_removes_a_run(calc_run: str, tmp_path: Path) -> None:
    result = cli("rm", "r1", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0 and "removed r1" in result.stderr
    assert json.loads(cli("ls", "--json", "--store", calc_run, cwd=tmp_path).stdout) == []
    again = cli("rm", "r1", "--store", calc_run, cwd=tmp_path)
    assert again.returncode == 1 and "no saved State with id 'r1'" in one_error_line(again)


# -- export ------------------------------------------------------------------------------------------------------


def test_export_writes_one_self_contained_html_file(calc_run: str, tmp_path: Path) -> None:
    target = tmp_path / "out" / "r1.html"
    target.parent.mkdir()
    result = cli("export", "r1", "-o", str(target), "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = target.read_text(encoding="utf-8")
    assert "please add 2 and 3" in html and "The sum is 5." in html and "add(a=2, b=3)" in html
    assert "<svg" in html and "<style>" in html
    for reference in ("<link", " src=", "@import", "url("):
        assert reference not in html
    to_stdout = cli("export", "r1", "-o", "-", "--store", calc_run, cwd=tmp_path)
    assert to_stdout.stdout == html


def test_export_keeps_an_existing_file_unless_forced_and_never_writes_through_a_link(
    calc_run: str, tmp_path: Path
) -> None:
    kept = tmp_path / "notes.html"
    kept.write_text("my notes", encoding="utf-8")
    refused = cli("export", "r1", "-o", str(kept), "--store", calc_run, cwd=tmp_path)
    assert refused.returncode == 1 and "--force" in one_error_line(refused)
    assert kept.read_text(encoding="utf-8") == "my notes"
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("do not touch", encoding="utf-8")
    link = tmp_path / "link.html"
    link.symlink_to(secret)
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "created-through-the-link.html")
    for target in (link, dangling):
        result = cli("export", "r1", "-o", str(target), "--store", calc_run, cwd=tmp_path)
        assert result.returncode == 1 and "symbolic link" in one_error_line(result)
    assert not (tmp_path / "created-through-the-link.html").exists()
    default = cli("export", "r1", "--store", calc_run, cwd=tmp_path)
    assert default.returncode == 0 and (tmp_path / "r1.html").exists()
    assert cli("export", "r1", "--store", calc_run, cwd=tmp_path).returncode == 1
    for target in (kept, link):
        forced = cli("export", "r1", "-o", str(target), "--force", "--store", calc_run, cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr
        assert not target.is_symlink() and "The sum is 5." in target.read_text(encoding="utf-8")
    assert secret.read_text(encoding="utf-8") == "do not touch"
    assert not [name for name in files_under(tmp_path) if name.endswith(".tmp")]


def test_export_escapes_a_script_in_the_content(tmp_path: Path) -> None:
    assert cli("run", "cli_agents:xss", "show it", "--id", "x1", cwd=tmp_path).returncode == 0
    html = cli("export", "x1", "-o", "-", cwd=tmp_path).stdout
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html  # an exported page runs no script at all
    assert "script-src &#39;none&#39;" in html  # the page's policy forbids scripts


# -- errors: one line, the right exit code, nothing written -------------------------------------------------------


def test_an_unknown_id_is_one_error_line(calc_run: str, tmp_path: Path) -> None:
    before = files_under(tmp_path)
    for command in (["show", "nope"], ["show", "nope", "--json"], ["export", "nope"], ["fork", "nope"], ["rm", "nope"],
                    ["resume", "nope", "cli_agents:calc"]):  # fmt: skip
        result = cli(*command, "--store", calc_run, cwd=tmp_path)
        assert result.returncode == 1, command
        assert "no saved State with id 'nope'" in one_error_line(result)
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("name", ["missing.db", "missing-folder", "sqlite:///missing.db"])
def test_a_store_that_does_not_exist_is_an_error_and_is_not_created(tmp_path: Path, name: str) -> None:
    for command in (["ls"], ["show", "x"], ["rm", "x"], ["fork", "x"], ["export", "x"], ["view"]):
        result = cli(*command, "--store", name, cwd=tmp_path)
        assert result.returncode == 1, command
        assert "no store at" in one_error_line(result)
    assert files_under(tmp_path) == []


def test_a_damaged_store_is_one_error_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    result = cli("ls", "--store", str(garbage), cwd=tmp_path)
    assert result.returncode == 1 and "damaged" in one_error_line(result)
    assert garbage.read_bytes() == b"this is not a database" * 100

    folder = tmp_path / "runs"
    assert cli("run", "cli_agents:calc", "hi", "--id", "x1", "--store", str(folder), cwd=tmp_path).returncode == 0
    (folder / "x1" / "info.json").write_text("{", encoding="utf-8")
    for command in (["show", "x1"], ["export", "x1"], ["fork", "x1"]):
        result = cli(*command, "--store", str(folder), cwd=tmp_path)
        assert result.returncode == 1 and "damaged" in one_error_line(result)


def damage_info(url: str, state_id: str) -> None:
    """Makes the saved info of `state_id` unreadable: not JSON in a FileStore or SQLiteStore, an info without its
    keys in a PostgresStore."""
    if url.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE alpineagents.states SET info = %s WHERE id = %s", ('{"v": 5}', state_id))
    elif url.endswith(".db"):
        with sqlite3.connect(url) as conn:
            conn.execute("UPDATE alpine_states SET info = '{' WHERE id = ?", (state_id,))
        conn.close()
    else:
        (Path(url) / state_id / "info.json").write_text("{", encoding="utf-8")


def check_one_damaged_run_hides_nothing(url: str, tmp_path: Path) -> None:
    for state_id in ("ok1", "bad1", "ok2"):
        made = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", state_id, "--store", url, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    damage_info(url, "bad1")
    listed = cli("ls", "--store", url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["ok2", "ok1", "bad1"]
    assert "cannot load: saved State 'bad1' is damaged" in lines[3] and "waiting_for_user" in lines[1]
    rows = {row["id"]: row for row in json.loads(cli("ls", "--json", "--store", url, cwd=tmp_path).stdout)}
    assert rows["bad1"]["status"].startswith("cannot load: ") and rows["ok1"]["status"] == "stopped by waiting_for_user"
    filtered = cli("ls", "--filter", "bad", "--store", url, cwd=tmp_path).stdout.splitlines()
    assert [line.split()[0] for line in filtered[1:]] == ["bad1"]
    exported = cli("export", "ok1", "-o", "-", "--store", url, cwd=tmp_path)
    assert exported.returncode == 0 and "The sum is 5." in exported.stdout
    assert cli("show", "ok2", "--store", url, cwd=tmp_path).returncode == 0
    with viewer(url, tmp_path) as address:
        with urllib.request.urlopen(address, timeout=30) as response:
            page = response.read().decode("utf-8")
        assert 'data-id="ok1"' in page and 'data-id="ok2"' in page and 'data-id="bad1"' in page
        assert "cannot load: saved State &#39;bad1&#39; is damaged" in page
        with urllib.request.urlopen(address + "api/runs", timeout=30) as response:
            assert {row["id"] for row in json.loads(response.read())} == {"ok1", "ok2", "bad1"}
        with urllib.request.urlopen(address + "runs/ok1", timeout=30) as response:
            assert response.status == 200 and "The sum is 5." in response.read().decode("utf-8")


def test_one_damaged_info_does_not_hide_the_healthy_runs(store_url: str, tmp_path: Path) -> None:
    check_one_damaged_run_hides_nothing(store_url, tmp_path)


def test_one_damaged_info_does_not_hide_the_healthy_runs_of_a_postgres_store(
    tmp_path: Path, postgres_database: str
) -> None:
    check_one_damaged_run_hides_nothing(postgres_database, tmp_path)


def test_a_postgresql_url_is_a_postgres_store(tmp_path: Path, postgres_database: str) -> None:
    schema_url = postgres_database
    missing = cli("ls", "--store", schema_url, cwd=tmp_path)  # no schema yet, and only run creates a store
    assert missing.returncode == 1 and "is at version 0" in one_error_line(missing)
    assert cli("run", "cli_agents:calc", "hi", "--id", "pg1", "--store", schema_url, cwd=tmp_path).returncode == 0
    listed = cli("ls", "--json", "--store", schema_url, cwd=tmp_path)
    assert listed.returncode == 0
    assert "pg1" in [row["id"] for row in json.loads(listed.stdout)]
    assert cli("show", "pg1", "--store", schema_url, cwd=tmp_path).returncode == 0
    assert cli("rm", "pg1", "--store", schema_url, cwd=tmp_path).returncode == 0
    unreachable = cli("ls", "--store", "postgresql://nobody@127.0.0.1:1/runs?connect_timeout=2", cwd=tmp_path)
    assert unreachable.returncode == 1 and "could not reach its database" in one_error_line(unreachable)
    unknown = cli("ls", "--store", "redis://localhost", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown kind of store" in one_error_line(unknown)


@pytest.mark.parametrize(
    ("spec", "code", "text"),
    [
        ("no_such_module:agent", 2, "no module named 'no_such_module'"),
        ("cli_agents:nobody", 2, "cli_agents has no 'nobody'"),
        ("cli_agents:not_an_agent", 2, "is a int, not an Agent"),
        ("cli_agents", 2, "is not MODULE:AGENT"),
        ("bad_agents:agent", 1, "cannot import bad_agents: RuntimeError: no configuration"),
        ("missing.py:agent", 2, "missing.py is not a file"),
    ],
)
def test_an_agent_that_does_not_import_is_one_error_line_and_writes_nothing(
    tmp_path: Path, spec: str, code: int, text: str
) -> None:
    (tmp_path / "bad_agents.py").write_text('raise RuntimeError("no configuration")\n', encoding="utf-8")
    for command in (["run", spec, "hello"], ["resume", "r1", spec]):
        result = cli(*command, cwd=tmp_path)
        assert result.returncode == code, (command, result.stderr)
        assert text in one_error_line(result)
    assert files_under(tmp_path) == ["bad_agents.py"]


def test_view_prints_its_address_on_127_0_0_1_and_serves_the_runs(calc_run: str, tmp_path: Path) -> None:
    with viewer(calc_run, tmp_path) as address:
        assert address.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(address, timeout=30) as response:
            assert response.status == 200
            assert "r1" in response.read().decode("utf-8")


def test_text_from_a_model_a_tool_or_a_store_never_reaches_the_terminal_as_control_characters(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    prompt = "first \x1b]0;title\x07message\x1b[31m"
    ran = cli("run", "cli_agents:hostile", prompt, "--id", "h1", "--store", store, cwd=tmp_path)
    crashed = cli("run", "cli_agents:hostile_crash", prompt, "--id", "h2", "--store", store, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert crashed.returncode == 1 and "RuntimeError: ok\\x1b[2K" in crashed.stderr
    outputs = [ran, crashed]
    for args in (["show", "h1"], ["show", "h2"], ["ls"], ["ls", "--json"], ["show", "h1", "--json"]):
        result = cli(*args, "--store", store, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        outputs.append(result)
    outputs.append(cli("export", "h1", "-o", "/no/such/dir\x1b[2J/x.html", "--store", store, cwd=tmp_path))
    for result in outputs:
        for text in (result.stdout, result.stderr):
            assert not any(char in text for char in ("\x1b", "\x07", "\r", "\x9b")), (result.args, text)
    shown = outputs[2].stdout
    assert "run h1: first \\x1b]0;title\\x07message\\x1b[31m" in shown
    assert "ok\\x1b[2K\\rforged\\x07 \\x1b]8;;http://evil.example" in shown  # the model's text, shown
    assert "error shout: ok\\x1b[2K" in shown and "tool no\\x1b[1Asuch()" in shown
    assert "first \\x1b]0;title\\x07message" in outputs[4].stdout  # ls
    listed = json.loads(outputs[5].stdout)
    assert {row["first_message"] for row in listed} == {prompt}  # the same JSON value, only written safely
    assert "\\u009b31m" in outputs[6].stdout
    assert "\\x1b[2J" in outputs[7].stderr


def check_rm_of_a_run_another_process_writes(url: str, reader: Store, tmp_path: Path) -> None:
    gate = tmp_path / "gate.txt"
    process = subprocess.Popen(
        command_line("run", "cli_agents:slow", "wait", "--id", "busy", "--store", url),
        cwd=tmp_path,
        env=command_env(CLI_TEST_GATE=str(gate)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not has_entry(reader, "busy", "model_reply"):
            assert time.monotonic() < deadline, "the run never reached its tool call"
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.05)
        refused = cli("rm", "busy", "--store", url, cwd=tmp_path)
        assert refused.returncode == 1
        assert "busy" in one_error_line(refused) and "Traceback" not in refused.stderr
        gate.write_text("open", encoding="utf-8")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert reader.read("busy") is not None  # the refused rm removed nothing
    assert cli("rm", "busy", "--store", url, cwd=tmp_path).returncode == 0


def test_rm_of_a_run_another_process_writes_is_one_line_and_exit_1(store_url: str, tmp_path: Path) -> None:
    made = cli("run", "cli_agents:calc", "hi", "--id", "first", "--store", store_url, cwd=tmp_path)
    assert made.returncode == 0
    check_rm_of_a_run_another_process_writes(store_url, open_store(store_url), tmp_path)


def test_rm_of_a_run_another_process_writes_in_postgres_is_one_line(tmp_path: Path, postgres_database: str) -> None:
    from alpineagents.postgres import PostgresStore

    assert (
        cli("run", "cli_agents:calc", "hi", "--id", "first", "--store", postgres_database, cwd=tmp_path).returncode == 0
    )
    reader = PostgresStore(postgres_database, create=False)
    try:
        check_rm_of_a_run_another_process_writes(postgres_database, reader, tmp_path)
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("store", "text"),
    [
        ("postgresql://user:secret@[::1", "not a PostgreSQL URL"),
        ("x" * 5000, "File name too long"),
        ("x" * 5000 + ".db", "File name too long"),
    ],
)
def test_a_store_text_that_cannot_be_opened_is_one_line_of_misuse(tmp_path: Path, store: str, text: str) -> None:
    for command in (["ls"], ["show", "x"], ["run", "cli_agents:calc", "hi"]):
        result = cli(*command, "--store", store, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stderr[-300:])
        line = one_error_line(result)
        assert text in line and "secret" not in line and len(line) < 300
    assert files_under(tmp_path) == []


def test_an_id_that_cannot_be_one_is_misuse_with_exit_code_2_for_every_command(calc_run: str, tmp_path: Path) -> None:
    before = files_under(tmp_path)
    for command in (["fork", "r1", "--id", "../evil"], ["run", "cli_agents:calc", "hi", "--id", "../evil"],
                    ["fork", "../evil"], ["show", "a.b"], ["rm", "../r1"], ["export", "%00"],
                    ["resume", "../r1", "cli_agents:calc"], ["approve", "../r1", "c1"],
                    ["deny", "a.b", "c1", "--reason", "no"], ["raise-budget", "%00", "--usd", "1"]):  # fmt: skip
        result = cli(*command, "--store", calc_run, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stderr)
        assert "may only have letters, digits, _ and -" in one_error_line(result)
    assert files_under(tmp_path) == before


def test_resume_without_a_message_of_a_run_waiting_for_the_user_says_a_message_is_needed(
    calc_run: str, tmp_path: Path
) -> None:
    store = open_store(calc_run)
    before = store.load("r1").history
    result = cli("resume", "r1", "cli_agents:calc", "--store", calc_run, cwd=tmp_path)
    assert result.returncode == 2
    line = one_error_line(result)
    assert "run r1 is waiting for the user: give the message to send" in line
    assert 'alpineagents resume r1 cli_agents:calc "your reply"' in line
    assert store.load("r1").history == before


def test_run_refuses_a_store_in_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    for name in ("no/such/dir/runs.db", "no/such/dir/runs"):
        result = cli("run", "cli_agents:calc", "hi", "--store", str(tmp_path / name), cwd=tmp_path)
        assert result.returncode == 1
        line = one_error_line(result)
        assert f"no folder {tmp_path / 'no' / 'such' / 'dir'}" in line and "mkdir -p" in line, line
    assert files_under(tmp_path) == []
    made = cli("run", "cli_agents:calc", "hi", "--store", str(tmp_path / "new.db"), cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "new.db").exists()
