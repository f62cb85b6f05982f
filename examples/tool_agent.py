"""A tool-using agent: the model reads files through a tool, then answers.

Run it with a real model (needs ANTHROPIC_API_KEY): `python examples/tool_agent.py`
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alpineagents import Agent, tool


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file.

    Args:
        path: The file to read, relative to the current directory.
    """
    return Path(path).read_text(encoding="utf-8")


@tool(read_only=True)
def list_files(folder: str = ".") -> list[str]:
    """List the Python files in a folder.

    Args:
        folder: The folder to look in.
    """
    return sorted(str(p) for p in Path(folder).glob("*.py"))


def main(model: Any = "claude-sonnet-5", **settings: Any) -> Any:
    agent = Agent(
        model,
        system="You are a careful code reviewer. Read the files before you answer.",
        tools=[read_file, list_files],
        **settings,
    )
    return agent.run("Which example in this folder is the shortest, and what does it do?")


if __name__ == "__main__":
    print(main())
