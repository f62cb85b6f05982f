"""An Agent with a skill: the model sees its name and description, loads its instructions, reads one file."""

from pathlib import Path

from alpineagents import Agent, Message, State
from alpineagents.testing import FakeModel, tool_call

# A skill is a folder with a SKILL.md: YAML front matter, then the instructions.
skill = Path("skills/release-notes")
(skill / "references").mkdir(parents=True, exist_ok=True)
(skill / "SKILL.md").write_text(
    "---\n"
    "name: release-notes\n"
    "description: Write release notes from merged changes. Use it when asked for release notes.\n"
    "---\n"
    "# Release notes\n\n"
    "Group the changes under Added, Changed and Fixed. Follow references/style.md.\n"
)
(skill / "references" / "style.md").write_text("One line per change, in the past tense.\n")

model = FakeModel(
    [
        tool_call("load_skill", name="release-notes"),
        tool_call("read_skill_resource", name="release-notes", path="references/style.md"),
        "Added: dark mode.\nFixed: the crash on empty input.",
    ]
)
agent = Agent(model, system="You help with releases.", skills=["skills"], reporter=None)
print("skills:", agent.skills)
print("tools:", list(agent.tool_map))

state = State(messages=[Message.user("Write the release notes for 2.1")])
print(agent.run(state))

system = model.requests[0].system
print(system[system.index("<skills>") :])  # the catalogue, after the Agent's own system text
for entry in state.history:
    if entry.kind == "tool_result":
        print(f"{entry.call.name}: {str(entry.content).splitlines()[0]}")
