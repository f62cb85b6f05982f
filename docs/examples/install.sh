pip install alpineagents                 # the core: Agent, State, tools, the Anthropic and OpenAI adapters, stores
pip install 'alpineagents[mcp]'          # MCP servers as tools
pip install 'alpineagents[postgres]'     # PostgresStore
pip install 'alpineagents[dbos]'         # Workers (runs spread over processes)
pip install 'alpineagents[viewer]'       # the run viewer of the command line

# or, from a clone of the repository, everything including the test tools:
bash scripts/test.sh
