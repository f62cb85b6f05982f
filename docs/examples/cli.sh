# Every command takes --store: a folder (FileStore), a .db file or sqlite:///runs.db (SQLiteStore), or a
# postgresql:// URL (PostgresStore). Without it: $ALPINEAGENTS_STORE, else ./runs.db.
alpineagents run myproject.agents:agent "Fix the failing test"   # runs the Agent `agent` of your module
alpineagents run agents.py:agent "Summarize the logs" --model openai/gpt-5 --id logs-1
alpineagents ls --limit 20 --filter logs          # id, first message, turns, updated, status, cost
alpineagents show logs-1                          # the run as the Terminal printed it, then usage and cost
alpineagents resume logs-1 agents.py:agent "Now only the errors"   # continue it (a crashed run too)
alpineagents fork logs-1 --at 6                   # a copy of its first 6 entries under a new id
alpineagents rm logs-1
alpineagents export logs-1 -o logs-1.html         # one self-contained HTML file: no server, no network
alpineagents view                                 # the viewer on http://127.0.0.1:8321/ (--port 0: any free port)
alpineagents worker workers_app:workers           # serve queued runs (see Workers)
