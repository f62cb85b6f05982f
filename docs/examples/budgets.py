"""A budget shared by a run and its subagent: the request that would pass it waits for a raise, across processes."""

from alpineagents import Agent, Budget, SQLiteStore, State, tool
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import Message, Price

PRICE = Price(input=3, output=15)  # dollars per million tokens


def model(replies: list[object]) -> FakeModel:
    found = FakeModel(replies, price=PRICE)
    found.max_tokens = 200  # the largest reply a request may produce: what each request reserves
    return found


@tool
def search(query: str) -> str:
    """Search the notes.

    Args:
        query: What to look for.
    """
    return f"3 notes about {query}"


def make_agent(store: SQLiteStore, replies: list[object], helper_replies: list[object]) -> Agent:
    researcher = Agent(
        model(helper_replies), tools=[search], name="researcher", description="Looks things up in the notes."
    )
    return Agent(
        model(replies),
        tools=[researcher],
        store=store,
        reporter=None,
        budget=Budget(usd=0.004, tool_calls=10),
    )


store = SQLiteStore("runs.db")

# First process: the run goes until its next request would pass $0.004.
agent = make_agent(
    store,
    [tool_call("researcher", prompt="What do the notes say about pricing?"), "Pricing is per seat."],
    [tool_call("search", query="pricing"), tool_call("search", query="seats"), "Per seat, 3 notes agree."],
)
state = State(id="pricing-question", messages=[Message.user("How is the product priced?")])
agent.run(state)
print("stopped:", state.stopped)
for wait in state.awaiting_budget:
    print("waits in:", "a subagent" if len(wait.path) > 1 else "the top State", "| limit:", wait.limit)
    print("question:", wait.question)
print("budget:", state.budget)

# Later, another process: a person raises the budget, and the run goes on where it stopped.
state = store.load("pricing-question")
state.raise_budget(usd=0.01, by="ana", note="worth finishing")
store.save(state)
agent = make_agent(store, ["Pricing is per seat."], ["Per seat, 3 notes agree."])
print("answer:", agent.run(store.load("pricing-question")))
print("budget:", store.load("pricing-question").budget)
