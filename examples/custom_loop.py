"""A custom loop with `until=`: keep working until the tests pass, at most 10 turns.

The loop body is one turn; `@loop` checks the stop rules before every turn and records why it stopped.
"""

from __future__ import annotations

from typing import Any

from alpineagents import Agent, Message, State, compact_if_full, loop, tool


@tool
def run_tests(state: State) -> str:
    """Run the test suite and report the result."""
    with state.edit_extra_data() as data:
        data["runs"] = data.get("runs", 0) + 1
        passed = data["runs"] >= 2  # pretend the second run passes
        data["tests"] = "passed" if passed else "failed"
    return "all tests passed" if passed else "1 test failed: test_total"


def tests_pass(state: State) -> bool:
    """Stop once the last test run passed."""
    return state.extra_data.get("tests") == "passed"


@loop(until=tests_pass, limit=10)
def until_green(agent: Agent, state: State) -> None:
    compact_if_full(agent, state)
    agent.think(state)
    if state.pending_calls:
        agent.use_tools(state)
    else:
        state.add_message(Message.notice("Run the tests again until they pass."))


def main(model: Any = "claude-sonnet-5", **settings: Any) -> State:
    agent = Agent(model, tools=[run_tests], loop=until_green, **settings)
    state = State(messages=[Message.user("Fix the failing test, then run the tests.")])
    agent.run(state)
    print(state.stopped)  # stopped by tests_pass
    return state


if __name__ == "__main__":
    main()
