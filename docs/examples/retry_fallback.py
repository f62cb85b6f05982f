"""Retry and Fallback: wrapper Models that start a failed reply over, or ask another model.

FakeModel stands in for real adapters here: it raises the errors it is given, as an adapter does after the
provider SDK's own retries.
"""

from alpineagents import Agent
from alpineagents.errors import AuthError, ProviderError, RateLimitError
from alpineagents.models import Fallback, Retry
from alpineagents.testing import FakeModel

# The stream broke once: the second attempt answers. backoff=0 waits 0 s between attempts (default 1 s, doubling).
flaky = FakeModel([ProviderError("stream broke mid-reply"), "Hello from the second attempt."], name="flaky")
agent = Agent(Retry(flaky, attempts=3, backoff=0))
print(agent.run("Hi"))

# The primary is rate limited: the next model answers, and the reply names it.
primary = FakeModel([RateLimitError("429 Too Many Requests")], name="primary")
backup = FakeModel(["Hello from the backup."], name="backup")
agent = Agent(Fallback(primary, backup), reporter=None)
print(agent.run("Hi"))

# A rejected key is not retried: another attempt would fail the same way.
agent = Agent(Retry(FakeModel([AuthError("invalid x-api-key")]), attempts=3, backoff=0), reporter=None)
try:
    agent.run("Hi")
except AuthError as error:
    print("AuthError:", error)
