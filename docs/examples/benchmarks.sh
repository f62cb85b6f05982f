.venv/bin/python benchmarks/turns.py        # per-turn cost of a run
.venv/bin/python benchmarks/fold.py         # recording and replaying history entries
.venv/bin/python benchmarks/store.py        # FileStore and SQLiteStore (--quick for a short run)
.venv/bin/python benchmarks/postgres.py     # PostgresStore (starts its own server; --quick)
.venv/bin/python benchmarks/concurrent.py   # 1,000 async runs on one event loop
.venv/bin/python benchmarks/fleet.py        # 1,000 durable runs at once (group commit)
.venv/bin/python benchmarks/models.py       # the model adapters' own cost per request
.venv/bin/python benchmarks/long_context.py # a 5,000-message conversation through each adapter (GC too)
.venv/bin/python benchmarks/otel.py         # tracing off and on (OpenTelemetry)
.venv/bin/python benchmarks/workers.py      # runs over worker processes on DBOS (--quick)
.venv/bin/python benchmarks/many_runs.py    # 10,000 async runs at once: the garbage collector's share
