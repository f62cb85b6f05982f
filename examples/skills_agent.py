"""An agent with skills: the model sees each skill's name and description, and loads one when the task needs it.

The skills are the folders in `examples/skills/` (each a `SKILL.md` plus its files). Run it with a real model
(needs ANTHROPIC_API_KEY): `python examples/skills_agent.py examples/tool_agent.py`
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from alpineagents import Agent, tool
from alpineagents.permissions import AllowByReadOnly

SKILLS = Path(__file__).resolve().parent / "skills"


@tool(read_only=True, open_world=False)
def read_file(path: str) -> str:
    """Read a text file.

    Args:
        path: The file to read.
    """
    return Path(path).read_text(encoding="utf-8")


def main(path: str, model: Any = "claude-sonnet-5", **settings: Any) -> Any:
    agent = Agent(
        model,
        system="You help a Python team with their code.",
        tools=[read_file],
        skills=[SKILLS],  # a folder of skill folders: code-review, commit-message
        permissions=[AllowByReadOnly()],  # the skill tools are read-only, like read_file
        **settings,
    )
    return agent.run(f"Is {path} safe to ship?")


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else __file__))
