# From the root of a clone, with the virtual environment's bin folder on PATH (or use .venv/bin/alpineagents):
examples="$PWD/docs/examples"
cd "$(mktemp -d)"                                   # a scratch folder: the store is created here
alpineagents --store runs.db run "$examples/cli_agents.py:agent" "What is 2 + 3?" --id sum-1
alpineagents --store runs.db show sum-1             # the same lines, read back from the store, and the usage
alpineagents --store runs.db show sum-1 --json | python -c "import json, sys; print(len(json.load(sys.stdin)), 'entries')"
