"""Async: one Agent runs several States at once on one event loop.

Each `arun` is its own conversation; `asyncio.gather` runs them together, so the total time is close to the
longest run, not the sum.
"""

from __future__ import annotations

import asyncio
from typing import Any

from alpineagents import Agent, tool


@tool
async def lookup(city: str) -> str:
    """Look up the weather of a city.

    Args:
        city: The city name.
    """
    await asyncio.sleep(0.01)  # a network call
    return f"{city}: sunny, 21 °C"


async def main(model: Any = "claude-sonnet-5", **settings: Any) -> list[Any]:
    agent = Agent(model, tools=[lookup], **settings)
    cities = ["Oslo", "Lima", "Cairo"]
    answers = await asyncio.gather(*(agent.arun(f"What is the weather in {city}?") for city in cities))
    for city, answer in zip(cities, answers, strict=True):
        print(f"{city}: {answer}")
    return answers


if __name__ == "__main__":
    asyncio.run(main())
