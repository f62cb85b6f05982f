"""Testing an agent: FakeModel plays the model, FakeHuman the person; assert on the history. Run with pytest."""

from alpineagents import Agent, Message, State, tool
from alpineagents.permissions import DecideByHuman
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.types import ToolResultEntry


@tool
def delete_branch(name: str) -> str:
    """Delete a git branch.

    Args:
        name: The branch.
    """
    return f"deleted {name}"


# The agent under test, as your application builds it.
agent = Agent("anthropic/claude-sonnet-5", tools=[delete_branch], permissions=[DecideByHuman()])


def test_the_agent_deletes_a_branch_after_a_yes():
    fake = FakeModel([tool_call("delete_branch", name="old"), "Deleted."])
    state = State(messages=[Message.user("Delete the branch old")])

    answer = agent.copy(model=fake, human=FakeHuman(["yes"]), reporter=None).run(state)

    assert answer == "Deleted."
    assert fake.remaining == 0  # every prepared reply was used
    [result] = [entry for entry in state.history if isinstance(entry, ToolResultEntry)]
    assert result.content == "deleted old"
    assert fake.requests[1].messages[-1].role == "user"  # the model's second request held the tool result


def test_a_no_stops_the_turn_and_the_tool_does_not_run():
    fake = FakeModel([tool_call("delete_branch", name="main")])
    state = State(messages=[Message.user("Delete main")])

    agent.copy(model=fake, human=FakeHuman(["no"]), reporter=None).run(state)

    [result] = [entry for entry in state.history if isinstance(entry, ToolResultEntry)]
    assert result.outcome.value == "denied"
    assert "stopped by permission" in str(state.stopped)


if __name__ == "__main__":  # so that `python testing.py` runs them too
    test_the_agent_deletes_a_branch_after_a_yes()
    test_a_no_stops_the_turn_and_the_tool_does_not_run()
    print("2 passed")
