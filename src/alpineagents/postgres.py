"""`PostgresStore`: States kept in PostgreSQL, for many processes on many machines.

Install the extra (psycopg 3 and psycopg-pool): `pip install -e '.[postgres]'` in the library's clone.

```python
from alpineagents import Agent, PostgresStore

store = PostgresStore("postgresql://app@db.internal/agents")
agent = Agent("claude-sonnet-5", store=store)
```

Tables (in their own schema, `alpineagents` by default, created by the first use when `create=True`):

```
states (id TEXT PRIMARY KEY, count INTEGER, info TEXT, updated TIMESTAMPTZ)   one row per State
entries (state_id TEXT, seq INTEGER, line TEXT, PRIMARY KEY (state_id, seq))   one row per history entry
schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)           the migrations applied
```

`line` holds the same compact JSON text a `FileStore` writes as a line of its log, and `info` the same text as its
info file, so a State copied between stores reads back identical. One save point is one transaction in at most two
round trips to the server (psycopg's pipeline mode) and one commit. `load` is one query; `list()` is one query.

One writer per State, enforced by the database: the first write of a State by a process takes a session-level
advisory lock for it on a connection the store keeps for its locks; another process that tries to write the State
meanwhile gets `StateLockedError` before anything is written. The lock goes when the holding process lets the State
go (as with the other stores), or at once when its connection dies: a killed process frees it immediately; a lost
machine frees it when TCP keepalives give up, about 40 s with the defaults set here (`keepalives_idle=10`,
`keepalives_interval=5`, `keepalives_count=6`; a `conninfo` that names its own keepalive settings keeps them).

Behind PgBouncer in transaction mode, the store sends no server-side prepared statements. Session-level advisory
locks do not survive transaction pooling, though: give such a setup a direct address (or a session-mode pool) for
the lock connection with `lock_conninfo=`.

A forked child process is another process: it never uses a connection it inherited (it opens its own, and the
parent's stay the parent's), and it holds none of the parent's locks. A `ConnectionPool` you pass in is yours:
the store borrows connections from it and never closes it (create it after forking).
"""

from alpineagents._stores.postgres import SCHEMA_VERSION, PostgresStore

__all__ = ["PostgresStore", "SCHEMA_VERSION"]
