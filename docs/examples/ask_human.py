"""Asking a person: agent.ask_human(state, prompt, returns=...), answered by a Human of your own."""

from typing import Literal

from alpineagents import Agent, Human, Message, State
from alpineagents.human import parse_answer
from alpineagents.testing import FakeModel


class Chat(Human):
    """Answers from a dict here; a real one would post the question to a chat and wait for the reply."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    def ask(self, state, prompt, returns=str):
        answer = self.answers[prompt]
        print(f"asked {prompt!r}, the person wrote {answer!r}")
        return parse_answer(answer, returns)  # "yes" -> True for bool, checks a Literal's choices


human = Chat({"Which branch?": "release-2", "Deploy it now?": "yes", "Which region?": "eu"})
agent = Agent(FakeModel([]), human=human, reporter=None)
state = State(messages=[Message.user("Deploy the release")])

branch = agent.ask_human(state, "Which branch?")
now = agent.ask_human(state, "Deploy it now?", returns=bool)
region = agent.ask_human(state, "Which region?", returns=Literal["eu", "us"])
print(branch, now, region)
print("history:", [entry.kind for entry in state.history])  # each question and answer is recorded
