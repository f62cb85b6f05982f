"""Building an app: show a run as it happens, and let a person approve a tool call later, from another process."""

import asyncio

from alpineagents import Agent, FileStore, tool
from alpineagents.events import (
    ApprovalNeeded,
    ReplyEnded,
    RunEnded,
    TextDelta,
    ToolCallEnded,
    ToolCallStarted,
)
from alpineagents.permissions import AllowByDefault, DeferByName
from alpineagents.testing import FakeModel, tool_call


@tool(read_only=True)
def find_customer(name: str) -> str:
    """Find a customer's e-mail address.

    Args:
        name: The customer's name.
    """
    return f"{name.lower()}@example.com"


@tool
def send_email(to: str, text: str) -> str:
    """Send an e-mail.

    Args:
        to: The address.
        text: The message.
    """
    return f"sent to {to}"


def show(event) -> None:
    """What a web page would draw for each event (a real app sends them to the browser, e.g. as SSE)."""
    match event:
        case TextDelta(text=text):
            print(f"  [{event.position}] text: {text}")
        case ToolCallStarted(call=call):
            print(f"  [{event.position}] calls {call.name}({', '.join(f'{k}={v!r}' for k, v in call.args.items())})")
        case ToolCallEnded(call=call, result=result, outcome=outcome):
            print(f"  [{event.position}] {call.name} {outcome}: {result}")
        case ApprovalNeeded(waiting=waiting):
            print(f"  [{event.position}] waiting for a person: {waiting.question}")
        case ReplyEnded(usage=usage):
            print(f"  [{event.position}] reply used {usage.input_tokens + usage.output_tokens} tokens")
        case RunEnded(stopped=stopped, error=error):
            print(f"  run ended: {error or stopped}")


store = FileStore("runs")
script = [
    tool_call("find_customer", name="Ana"),
    tool_call("send_email", to="ana@example.com", text="Your order shipped."),
    "I told Ana that her order shipped.",
]
agent = Agent(
    FakeModel(script),
    tools=[find_customer, send_email],
    store=store,
    reporter=None,
    permissions=[DeferByName(["send_email"], question="Send this e-mail to the customer?"), AllowByDefault()],
)

# 1. The request handler streams the run to the page. The run stops when the e-mail needs a person.
print("stream:")
stream = agent.stream("Tell Ana her order shipped")
last = -1
for event in stream:
    show(event)
    last = event.position
state_id = stream.state.id

# 2. Later, in another process (a reviewer's page, `alpineagents approvals`): load, decide, save.
state = store.load(state_id)
for waiting in state.awaiting_approval:
    print(f"waiting: {waiting.tool} {dict(waiting.call.args)} asked by {waiting.permission}")
    state.approve(waiting.call.id, by="maria", note="checked the order")
store.save(state)


# 3. Then, in a third process, the page reconnects: it gets what it missed, then the rest of the run.
async def resume() -> None:
    state = store.load(state_id)
    again = agent.astream(state, after=last)
    async for event in again:
        show(event)
    print("answer:", again.state.answer)


print("resume:")
asyncio.run(resume())
