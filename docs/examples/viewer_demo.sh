bash scripts/demo.sh --db runs.db           # runs the demo agent (offline) and keeps its run in runs.db
.venv/bin/pip install -q -e '.[viewer]'
.venv/bin/alpineagents view                 # open the address it prints
