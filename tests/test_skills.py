"""Skills: real skill folders read when the Agent is built, the catalogue, the two built-in tools, load_skill."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, FileStore, Message, State, tool
from alpineagents._tokens import estimate_overhead_tokens
from alpineagents._turn.program import PROGRAM
from alpineagents.errors import ToolError
from alpineagents.permissions import AllowByReadOnly, DenyByName
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import Image, ModelReplyEntry, Request, ToolOutcomeKind, ToolResultBlock, ToolResultEntry
from conftest import results, task

SRC = Path(__file__).resolve().parent.parent / "src"

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def write_skill(
    root: Path,
    name: str,
    description: str = "Fill in PDF forms. Use it when the user gives a PDF form to fill.",
    body: str = "# Filling forms\n\nRead references/fields.md first, then fill each field.\n",
    *,
    folder: str | None = None,
    front: str | None = None,
    files: dict[str, str | bytes] | None = None,
) -> Path:
    """A skill folder under `root` with a SKILL.md (front matter `front`, or name and description) and `files`."""
    path = root / (folder or name)
    path.mkdir(parents=True, exist_ok=True)
    if front is None:
        front = f"name: {name}\ndescription: {json.dumps(description)}\n"
    (path / "SKILL.md").write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    for relative, content in (files or {}).items():
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    """A folder of two well-formed skills: pdf-forms (with references, a script and an image) and release-notes."""
    root = tmp_path / "skills"
    write_skill(
        root,
        "pdf-forms",
        files={
            "references/fields.md": "Field names: name, date, signature.\n",
            "scripts/fill.py": "open('SCRIPT_RAN', 'w').write('yes')\n",
            "assets/logo.png": PNG,
        },
    )
    write_skill(
        root,
        "release-notes",
        front=(
            "name: release-notes\n"
            "description: >\n  Write release notes from a list of merged changes.\n  Use it before a release.\n"
            "license: MIT\nmetadata:\n  author: team\n  version: '1.0'\n"
        ),
        body="Group the changes as Added, Changed, Fixed.\n",
    )
    return root


def agent_with(skills: list[Any], replies: list[Any] | None = None, **settings: Any) -> Agent:
    return Agent(FakeModel(replies or []), skills=skills, reporter=None, **settings)


def problem(error: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(error.value)
    assert "\nFix: " in text, text
    return text.splitlines()[0]


# --- reading skill folders -------------------------------------------------------------------------------------


def test_a_folder_of_skills_and_a_skill_folder_are_both_read(skills: Path, tmp_path: Path) -> None:
    agent = agent_with([str(skills)])
    assert agent.skills == ("pdf-forms", "release-notes")
    assert list(agent.tool_map) == ["load_skill", "read_skill_resource"]
    assert agent.tool_map["load_skill"].read_only is True and agent.tool_map["load_skill"].open_world is False
    one = agent_with([skills / "pdf-forms"])  # a Path works too
    assert one.skills == ("pdf-forms",)
    single = Agent(FakeModel([]), skills=str(skills / "release-notes"), reporter=None)  # a string is one item
    assert single.skills == ("release-notes",)
    other = write_skill(tmp_path / "more", "code-review", "Review a diff.")
    both = agent_with([skills / "pdf-forms", other])
    assert both.skills == ("pdf-forms", "code-review")
    assert agent_with([]).skills == ()
    assert "load_skill" not in agent_with([]).tool_map


def test_copy_changes_skills_like_any_setting(skills: Path) -> None:
    agent = agent_with([skills], system="Be brief.")
    assert agent.copy(skills=[]).skills == ()
    assert agent.copy(skills=[skills / "pdf-forms"]).skills == ("pdf-forms",)
    assert agent.copy().skills == agent.skills
    assert agent.copy(skills=[]).tool_map.get("load_skill") is None
    assert agent.system == "Be brief." and agent.copy(skills=[]).system == "Be brief."


def test_hidden_and_underscore_folders_are_skipped(skills: Path) -> None:
    (skills / ".git").mkdir()
    (skills / "_drafts").mkdir()
    (skills / "README.md").write_text("not a skill")
    assert agent_with([skills]).skills == ("pdf-forms", "release-notes")


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("description: x\n", "has no name:"),
        ("name: [a, b]\ndescription: x\n", "which is not a text"),
        ("name: Bad-Name\ndescription: x\n", "is not allowed: a name is 1-64 characters of lowercase"),
        ("name: -lead\ndescription: x\n", "is not allowed"),
        ("name: trail-\ndescription: x\n", "is not allowed"),
        ("name: two--hyphens\ndescription: x\n", "is not allowed"),
        ("name: under_score\ndescription: x\n", "is not allowed"),
        (f"name: {'a' * 65}\ndescription: x\n", "is not allowed"),
        ("name: other-name\ndescription: x\n", "differs from its folder's name 'the-skill'"),
        ("name: the-skill\n", "has no description:"),
        ("name: the-skill\ndescription: '   '\n", "a skill needs a description of 1-1024 characters"),
        (f"name: the-skill\ndescription: {'d' * 1025}\n", "has 1025 characters, more than 1024"),
        ("name: the-skill\ndescription: a: b: c\n", "is not valid YAML"),
        ("- just\n- a list\n", "is not a set of key: value lines (got: list)"),
    ],
)
def test_bad_front_matter_is_refused_naming_the_file(tmp_path: Path, front: str, expected: str) -> None:
    folder = write_skill(tmp_path, "the-skill", front=front)
    with pytest.raises(ValueError) as error:
        agent_with([folder])
    line = problem(error)
    assert expected in line
    assert str(folder / "SKILL.md") in line


def test_a_name_of_64_characters_and_a_description_of_1024_are_allowed(tmp_path: Path) -> None:
    name = "a" * 64
    folder = write_skill(tmp_path, name, "d" * 1024)
    assert agent_with([folder]).skills == (name,)


def test_a_skill_md_without_front_matter_or_its_end_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "SKILL.md").write_text("# Just instructions\n")
    with pytest.raises(ValueError) as error:
        agent_with([folder])
    assert problem(error) == f"{folder / 'SKILL.md'} does not start with front matter"
    (folder / "SKILL.md").write_text("---\nname: plain\ndescription: x\n# no end\n")
    with pytest.raises(ValueError) as error:
        agent_with([folder])
    assert problem(error) == f"the front matter of {folder / 'SKILL.md'} has no closing line ---"
    (folder / "SKILL.md").write_bytes(b"---\nname: plain\ndescription: \xff\n---\n")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        agent_with([folder])


def test_missing_skill_md_and_bad_paths_are_refused(tmp_path: Path, skills: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError) as error:
        agent_with([empty])
    assert problem(error) == f"{empty / 'SKILL.md'} is missing, and {str(empty)!r} has no skill folders in it"
    (skills / "notes").mkdir()
    with pytest.raises(ValueError) as error:
        agent_with([skills])
    assert problem(error).startswith(f"{skills / 'notes' / 'SKILL.md'} is missing: every folder inside")
    with pytest.raises(ValueError) as error:
        agent_with([tmp_path / "nowhere"])
    assert problem(error) == f"skills= got {str(tmp_path / 'nowhere')!r}, which does not exist"
    with pytest.raises(ValueError) as error:
        agent_with([skills / "pdf-forms" / "SKILL.md"])
    assert "which is a file, not a folder" in problem(error)
    with pytest.raises(TypeError, match=r"skills= takes paths of skill folders \(got: 3\)"):
        agent_with([3])
    with pytest.raises(TypeError, match="skills= takes a list"):
        Agent(FakeModel([]), skills=None)  # type: ignore[arg-type]


def test_two_skills_with_one_name_are_refused(tmp_path: Path) -> None:
    first = write_skill(tmp_path / "a", "same")
    second = write_skill(tmp_path / "b", "same")
    with pytest.raises(ValueError) as error:
        agent_with([first, second])
    assert problem(error) == f"Two skills are named 'same': {first} and {second}"
    with pytest.raises(ValueError, match="Two skills are named 'same'"):
        agent_with([first, first])


def test_a_tool_with_a_built_in_name_is_refused_only_with_skills(skills: Path) -> None:
    @tool
    def load_skill(name: str) -> str:
        """Load a template."""
        return name

    Agent(FakeModel([]), tools=[load_skill], reporter=None)  # no skills: the name is free
    with pytest.raises(ValueError) as error:
        Agent(FakeModel([]), tools=[load_skill], skills=[skills], reporter=None)
    assert problem(error).startswith("The tool 'load_skill' in tools= has the name of a built-in skill tool")


def test_tool_checks_come_before_skill_checks(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="does not have @tool"):
        Agent(FakeModel([]), tools=[print], skills=[tmp_path / "nowhere"], reporter=None)
    with pytest.raises(ValueError, match="does not exist"):
        Agent(FakeModel([]), skills=[tmp_path / "nowhere"], loop=3, reporter=None)


# --- the catalogue and the run ---------------------------------------------------------------------------------


def test_the_model_reads_the_catalogue_loads_a_skill_reads_a_resource_and_finishes(skills: Path) -> None:
    def first(request: Request) -> Any:
        assert request.system is not None
        assert request.system.startswith("You fill forms.\n\n# Skills\n")
        assert "- pdf-forms: Fill in PDF forms. Use it when the user gives a PDF form to fill." in request.system
        assert "- release-notes: Write release notes from a list of merged changes. Use it before a release." in (
            request.system
        )
        assert "Group the changes" not in request.system  # only names and descriptions
        assert [spec.name for spec in request.tools] == ["load_skill", "read_skill_resource"]
        return tool_call("load_skill", name="pdf-forms")

    fake = FakeModel(
        [
            first,
            tool_call("read_skill_resource", name="pdf-forms", path="references/fields.md"),
            "Filled: name, date, signature.",
        ]
    )
    agent = Agent(fake, system="You fill forms.", skills=[skills], reporter=None)
    state = task("Fill in this form")
    assert agent.run(state) == "Filled: name, date, signature."
    systems = {request.system for request in fake.requests}
    assert len(systems) == 1  # the same system text on every request: the prompt cache keeps working
    loaded = results(state)
    assert [entry.call.name for entry in loaded] == ["load_skill", "read_skill_resource"]
    assert all(entry.outcome is ToolOutcomeKind.DONE for entry in loaded)
    instructions = loaded[0].content
    assert isinstance(instructions, str)
    assert instructions.startswith('Instructions of the skill "pdf-forms":\n\n# Filling forms')
    assert f"Skill folder: {os.path.realpath(skills / 'pdf-forms')}" in instructions
    assert "assets/logo.png, references/fields.md, scripts/fill.py" in instructions
    assert loaded[1].content == "Field names: name, date, signature.\n"
    block = fake.requests[2].messages[-1].content[0]
    assert isinstance(block, ToolResultBlock) and block.content == "Field names: name, date, signature.\n"
    assert not Path("SCRIPT_RAN").exists()


def test_the_catalogue_alone_without_a_system_prompt_and_the_hash_covers_it(skills: Path) -> None:
    fake = FakeModel(["ok"])
    agent = Agent(fake, skills=[skills / "pdf-forms"], reporter=None)
    state = task()
    agent.run(state)
    system = fake.requests[0].system
    assert system is not None and system.startswith("# Skills\n")
    info = state.history[1].content
    assert info.system_sha256 == hashlib.sha256(system.encode()).hexdigest()
    assert info.tools == ("load_skill", "read_skill_resource")
    assert agent.system is None
    bare = Agent(FakeModel([]), reporter=None)
    assert agent.context_tokens(task()) > bare.context_tokens(task())
    same_tools = Agent(FakeModel([]), tools=list(agent.tool_map.values()), reporter=None)
    catalogue = agent.context_tokens(task()) - same_tools.context_tokens(task())
    assert catalogue == estimate_overhead_tokens(system, ()) - estimate_overhead_tokens(None, ())  # counted


def test_resources_text_images_folders_and_missing_files(skills: Path) -> None:
    tools = agent_with([skills]).tool_map
    read = tools["read_skill_resource"]
    image = read.run({"name": "pdf-forms", "path": "assets/logo.png"}, task())
    assert isinstance(image, Image) and image.media_type == "image/png"
    assert read.run({"name": "pdf-forms", "path": "SKILL.md"}, task()).startswith("---\nname: pdf-forms")
    assert read.run({"name": "pdf-forms", "path": "./references//fields.md"}, task()).startswith("Field names")
    with pytest.raises(ToolError, match=r"'references' is a folder of the skill 'pdf-forms'; its files: references/"):
        read.run({"name": "pdf-forms", "path": "references"}, task())
    with pytest.raises(ToolError, match=r"'.' is a folder of the skill 'pdf-forms'; its files: assets/logo.png, ref"):
        read.run({"name": "pdf-forms", "path": "."}, task())
    with pytest.raises(ToolError, match=r"has no file 'nope.md'. Its files: assets/logo.png, references/fields.md"):
        read.run({"name": "pdf-forms", "path": "nope.md"}, task())
    with pytest.raises(ToolError, match=r"There is no skill named 'pdf'. Skills: pdf-forms, release-notes"):
        read.run({"name": "pdf", "path": "x"}, task())
    with pytest.raises(ToolError, match="path is empty"):
        read.run({"name": "pdf-forms", "path": " "}, task())
    (skills / "pdf-forms" / "assets" / "data.bin").write_bytes(b"\x00\xff\xfe\x00")
    with pytest.raises(ToolError, match="is a binary file"):
        read.run({"name": "pdf-forms", "path": "assets/data.bin"}, task())
    (skills / "pdf-forms" / "references" / "long.md").write_text("x" * 100_050)
    long = read.run({"name": "pdf-forms", "path": "references/long.md"}, task())
    assert long.startswith("x" * 100_000) and long.endswith(
        "(cut: the file has 100050 characters; only the first 100000 are shown)"
    )
    with pytest.raises(ToolError, match="There is no skill named 'zzz'"):
        tools["load_skill"].run({"name": "zzz"}, task())


def test_paths_that_leave_the_skill_folder_are_refused(skills: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the password")
    folder = skills / "pdf-forms"
    (folder / "link.txt").symlink_to(secret)
    (folder / "outside").symlink_to(tmp_path)
    (folder / "inside.md").symlink_to(folder / "references" / "fields.md")
    fake = FakeModel(
        [
            [
                tool_call("read_skill_resource", name="pdf-forms", path=path)
                for path in (
                    "../release-notes/SKILL.md",
                    "references/../../release-notes/SKILL.md",
                    str(secret),
                    "/etc/passwd",
                    "..\\release-notes\\SKILL.md",
                    "C:\\Windows\\win.ini",
                    "link.txt",
                    "outside/secret.txt",
                    "inside.md",
                )
            ],
            "Done.",
        ]
    )
    agent = Agent(fake, skills=[skills], reporter=None)
    state = task()
    agent.run(state)
    by_path = {entry.call.args["path"]: entry for entry in results(state)}  # the calls ran in parallel
    inside = by_path.pop("inside.md")
    assert len(by_path) == 8
    for entry in by_path.values():
        assert entry.outcome is ToolOutcomeKind.ERROR
        assert "is outside the skill 'pdf-forms'" in str(entry.content)
        assert "the password" not in str(entry.content)
    assert inside.outcome is ToolOutcomeKind.DONE  # a symlink that stays inside is fine
    assert inside.content == "Field names: name, date, signature.\n"


def test_permissions_see_the_skill_tools_as_tools(skills: Path) -> None:
    fake = FakeModel(
        [
            [
                tool_call("load_skill", name="pdf-forms"),
                tool_call("read_skill_resource", name="pdf-forms", path="references/fields.md"),
            ],
            "Done.",
        ]
    )
    agent = Agent(
        fake,
        skills=[skills],
        permissions=[DenyByName(["read_skill_resource"], reason="No files today."), AllowByReadOnly()],
        reporter=None,
    )
    state = task()
    agent.run(state)
    read, loaded = results(state)  # a denial is recorded before any tool runs
    assert loaded.outcome is ToolOutcomeKind.DONE
    assert read.outcome is ToolOutcomeKind.DENIED and read.content == "No files today."


def test_clearing_and_compacting_treat_skill_results_like_other_results(skills: Path) -> None:
    fake = FakeModel([tool_call("load_skill", name="pdf-forms"), "Done.", "A summary."])
    agent = Agent(fake, skills=[skills], reporter=None)
    state = task()
    agent.run(state)
    assert "Filling forms" in str(state.messages[2].content[0].content)
    state.clear_tool_results(keep_last=0)
    assert state.messages[2].content[0].content == "(cleared: kept in history)"
    agent.compact(state)
    assert [m.text for m in state.messages][-1].endswith("A summary.")


def test_subagents_have_the_skills_of_their_own_agent(skills: Path, tmp_path: Path) -> None:
    own = write_skill(tmp_path / "helper-skills", "code-review", "Review a diff for bugs.")
    helper_model = FakeModel([tool_call("load_skill", name="code-review"), "Reviewed."])
    helper = Agent(helper_model, name="reviewer", description="Reviews code", skills=[own], reporter=None)
    lead_model = FakeModel([tool_call("reviewer", prompt="Review it"), "All good."])
    lead = Agent(lead_model, tools=[helper], skills=[skills], reporter=None)
    assert lead.run("Check the change") == "All good."
    lead_system = lead_model.requests[0].system or ""
    helper_system = helper_model.requests[0].system or ""
    assert "- pdf-forms:" in lead_system and "code-review" not in lead_system
    assert "- code-review: Review a diff for bugs." in helper_system and "pdf-forms" not in helper_system
    assert 'Instructions of the skill "code-review"' in str(helper_model.requests[1].messages[-1].content[0].content)


# --- load_skill from the program -------------------------------------------------------------------------------


def test_load_skill_records_the_instructions_for_the_next_request(skills: Path) -> None:
    fake = FakeModel(["Notes written."])
    agent = Agent(fake, skills=[skills], permissions=[], reporter=None)  # nothing allowed: not asked for this
    state = task("Write the release notes")
    text = agent.load_skill(state, "release-notes")
    assert text.startswith('Instructions of the skill "release-notes":\n\nGroup the changes as Added')
    reply_entry, result = state.history[-2:]
    assert isinstance(reply_entry, ModelReplyEntry) and reply_entry.content.model == PROGRAM
    (call,) = reply_entry.content.tool_calls
    assert call.name == "load_skill" and call.args == {"name": "release-notes"}
    assert isinstance(result, ToolResultEntry) and result.content == text and result.call is call
    assert state.turn == 1 and state.answer is None and state.usage.requests == 0
    agent.run(state)
    sent = fake.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert sent[2].content[0].content == text  # type: ignore[union-attr]


def test_load_skill_refuses_unknown_names_and_wrong_arguments(skills: Path) -> None:
    agent = agent_with([skills])
    state = task()
    with pytest.raises(ValueError) as error:
        agent.load_skill(state, "pdf")
    assert problem(error) == (
        "load_skill() got 'pdf', which is not a skill of this Agent (its skills: pdf-forms, release-notes)"
    )
    with pytest.raises(TypeError, match="load_skill\\(\\) takes a skill name"):
        agent.load_skill(state, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a State"):
        agent.load_skill("state", "pdf-forms")  # type: ignore[arg-type]
    assert len(state.history) == 1  # nothing recorded


def test_aload_skill_is_the_async_twin(skills: Path) -> None:
    agent = agent_with([skills])
    state = task()
    text = asyncio.run(agent.aload_skill(state, "pdf-forms"))
    assert "Filling forms" in text and state.history[-1].content == text


# --- a run saved and resumed in another process ----------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys
    from alpineagents import Agent, FileStore, Message
    from alpineagents.testing import FakeModel

    store = FileStore(sys.argv[1])
    state = store.load(sys.argv[2])
    texts = [str(block.content) for m in state.messages for block in m.content if hasattr(block, "call_id")]
    assert any("Filling forms" in text for text in texts), texts
    assert any("Group the changes" in text for text in texts), texts

    def reply(request):
        sent = [str(b.content) for m in request.messages for b in m.content if hasattr(b, "call_id")]
        assert any("Filling forms" in text for text in sent)
        assert "# Skills" in request.system
        return "Resumed with the skill."

    agent = Agent(FakeModel([reply]), skills=[sys.argv[3]], store=store, reporter=None)
    state.add_message(Message.user("Go on"))
    print(agent.run(state))
    """
)


def test_a_saved_run_resumes_in_another_process_with_the_loaded_instructions(skills: Path, tmp_path: Path) -> None:
    store = FileStore(tmp_path / "states")
    fake = FakeModel([tool_call("load_skill", name="pdf-forms"), "Form filled."])
    agent = Agent(fake, skills=[skills], store=store, reporter=None)
    state = State(id="forms", messages=[Message.user("Fill in the form")])
    agent.run(state)
    agent.load_skill(state, "release-notes")
    record = store.read("forms")
    assert record is not None
    assert [line["kind"] for line in record.entries][-3:] == ["model_request", "model_reply", "tool_result"]
    assert record.entries[-2]["content"]["model"] == PROGRAM
    assert record.info["v"] == 5
    del state  # this process lets go of the State (and its writer lock), as a process that ended would
    gc.collect()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "states"), "forms", str(skills)],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Resumed with the skill."
    again = store.load("forms")
    assert again.answer == "Resumed with the skill."
    programs = [e for e in again.history if isinstance(e, ModelReplyEntry) and e.content.model == PROGRAM]
    assert len(programs) == 1


def test_a_nul_byte_or_an_over_long_path_is_an_input_error_the_model_reads(skills: Path) -> None:
    paths = ("references/fields.md\x00.png", "references/" + "x" * 5_000, "references/" + "y" * 300 + ".md")
    fake = FakeModel([[tool_call("read_skill_resource", name="pdf-forms", path=path) for path in paths], "Done."])
    agent = Agent(fake, skills=[skills], reporter=None)
    state = task()
    assert agent.run(state) == "Done.", "the run goes on"
    by_path = {entry.call.args["path"]: entry for entry in results(state)}
    assert set(by_path) == set(paths)
    for entry in by_path.values():
        assert entry.outcome is ToolOutcomeKind.INPUT_ERROR
        assert str(entry.content).startswith("(input error: ")
    assert "NUL character" in str(by_path[paths[0]].content)
    assert "5011 characters, more than the 1024" in str(by_path[paths[1]].content)
    assert "cannot name a file (OSError: File name too long)" in str(by_path[paths[2]].content)
    assert len(fake.requests) == 2, "the model read the three errors"


def test_a_skill_md_is_held_to_the_limits_of_the_other_skill_files(tmp_path: Path) -> None:
    long = write_skill(tmp_path / "a", "long-one", body="y" * 150_000)
    agent = agent_with([long])
    text = agent.tool_map["load_skill"].run({"name": "long-one"}, task())
    assert "y" * 100_000 in text and "y" * 100_001 not in text
    assert "(cut: the file has 150000 characters; only the first 100000 are shown)" in text

    huge = write_skill(tmp_path / "b", "huge-one", body="z" * 10_000_001)
    with pytest.raises(ValueError, match=r"huge-one/SKILL.md has 10000\d{3} bytes, more than the 10000000"):
        agent_with([huge])

    elsewhere = write_skill(tmp_path / "c", "linked", body="the instructions of another folder")
    linked = tmp_path / "d" / "linked"
    linked.mkdir(parents=True)
    (linked / "SKILL.md").symlink_to(elsewhere / "SKILL.md")
    with pytest.raises(ValueError, match=r"linked/SKILL.md is a link to .*c/linked/SKILL.md, outside the skill's"):
        agent_with([linked])
    inner = write_skill(tmp_path / "e", "inner-link", files={"real.md": "---\nname: inner-link\ndescription: d\n---\n"})
    (inner / "SKILL.md").unlink()
    (inner / "SKILL.md").symlink_to(inner / "real.md")
    assert agent_with([inner]).skills == ("inner-link",), "a link that stays inside the folder is fine"
