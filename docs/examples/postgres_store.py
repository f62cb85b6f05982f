"""PostgresStore: many processes and machines share one database. Needs a PostgreSQL server and
`pip install 'alpineagents[postgres]'`."""

import os

from alpineagents import Agent, PostgresStore
from alpineagents.store import StateLockedError

DSN = os.environ.get("DATABASE_URL", "postgresql://app@db.internal/agents")

store = PostgresStore(DSN)  # or a psycopg_pool.ConnectionPool; schema="alpineagents", created on first use
# Behind PgBouncer in transaction mode, give the lock connection a direct address:
# store = PostgresStore(POOLED_DSN, lock_conninfo=DIRECT_DSN)

agent = Agent("anthropic/claude-sonnet-5", store=store)
try:
    state = store.load("ticket-4711")  # started by another process, maybe on another machine
    agent.run(state)
except StateLockedError:
    print("another process is running ticket-4711 right now")
