"""Your own Model: implement context_window and respond; everything else has a working default."""

from alpineagents import Agent, Message, Model, Reply, Request, Usage
from alpineagents.types import TextBlock


class Echo(Model):
    """Answers with the last user text, in capitals. A real adapter would call its provider here."""

    name = "echo-1"
    provider = "echo"

    @property
    def context_window(self) -> int:
        return 8_000

    def respond(self, request: Request, on_text=None, on_event=None) -> Reply:
        text = request.messages[-1].text.upper()
        if on_text is not None:  # stream the text to the Reporter as it "arrives"
            on_text(text)
        return Reply(
            message=Message(role="assistant", content=(TextBlock(text),)),
            stop_reason="end_turn",
            usage=Usage(input_tokens=len(request.messages), output_tokens=1),
            model=self.name,
        )


agent = Agent(Echo(), reporter=None)
print(agent.run("hello, model"))
