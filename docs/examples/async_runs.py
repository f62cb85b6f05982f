"""The async twins: arun, athink, ause_tools. Many States run at once on one event loop."""

import asyncio

from alpineagents import Agent, tool
from alpineagents.testing import FakeModel, tool_call


@tool
async def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: The address.
    """
    await asyncio.sleep(0.1)  # an async tool runs as a task on the event loop, not on a thread
    return f"<html>{url}</html>"


def agent_for(n: int) -> Agent:
    return Agent(
        FakeModel([tool_call("fetch", url=f"https://example.com/{n}"), f"Page {n} is fine."]),
        tools=[fetch],
        reporter=None,
    )


async def main() -> None:
    answers = await asyncio.gather(*(agent_for(n).arun(f"Check page {n}") for n in range(1, 4)))
    print(answers)


asyncio.run(main())
