"""PostgresStore: many processes and machines share one database. Needs `pip install -e '.[postgres]'` (in the clone)
and a PostgreSQL server: set DATABASE_URL (for example postgresql://app@db.internal/agents)."""

import os

from alpineagents import Agent, Message, PostgresStore, State
from alpineagents.store import StateLockedError
from alpineagents.testing import FakeModel

store = PostgresStore(os.environ["DATABASE_URL"])  # or a psycopg_pool.ConnectionPool; schema="alpineagents"
# Behind PgBouncer in transaction mode, give the lock connection a direct address:
# store = PostgresStore(POOLED_URL, lock_conninfo=DIRECT_URL)

agent = Agent(FakeModel(["Ticket 4711 is answered."]), store=store, reporter=None)
agent.run(State(id="ticket-4711", messages=[Message.user("Answer ticket 4711")]))

try:
    state = store.load("ticket-4711")  # in any process, on any machine that reaches the database
    print(state.answer, "-", len(state.history), "entries")
except StateLockedError:  # raised by a save while another process is writing this State
    print("another process is running ticket-4711 right now")
print([info.id for info in store.list()])
