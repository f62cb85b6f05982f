# In a clone of the repository, into a virtual environment of its own:
python3 -m venv .venv
.venv/bin/pip install -e .                  # the core: Agent, State, tools, the Anthropic and OpenAI adapters, stores
.venv/bin/pip install -e '.[mcp]'           # MCP servers as tools
.venv/bin/pip install -e '.[postgres]'      # PostgresStore
.venv/bin/pip install -e '.[dbos]'          # Workers (runs spread over processes)
.venv/bin/pip install -e '.[viewer]'        # the run viewer of the command line
.venv/bin/pip install -e '.[otel]'          # tracing with OpenTelemetry (the API; bring the SDK and an exporter)
.venv/bin/pip install -e '.[docs]'          # this site (mkdocs)

