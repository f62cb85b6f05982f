"""Workers: runs queued in a database and spread over worker processes, on DBOS.
Needs `pip install -e '.[dbos,postgres]'` (in the clone) and a PostgreSQL server that every process reaches."""

import os

from alpineagents import Agent, PostgresStore
from alpineagents.workers import WorkerRunError, Workers

DSN = os.environ.get("DATABASE_URL", "postgresql://app@db.internal/agents")

workers = Workers(
    agents={"support": Agent("anthropic/claude-sonnet-5", system="You answer support tickets.")},
    store=PostgresStore(DSN),  # every run's State, saved as it goes
    database=DSN,  # DBOS keeps its queue and the status of each run here
)

if __name__ == "__main__":
    # In any process: a web handler, a script. Start workers with:  alpineagents worker workers_app:workers
    run = workers.submit("support", "Where is my order 1234?")  # saves the State, queues the run, returns at once
    print(run.state_id, run.status())  # "queued", "running", "done" or "error"
    try:
        print(run.result(timeout=120))  # the answer
    except WorkerRunError as error:
        print("the run failed:", error)
