"""What the tests run besides themselves: programs started as child processes (MCP servers, crash and group-commit
children, the worker application, the command-line agents) and helper modules (the PostgreSQL server, the script
loader). The tests import them as `helpers.NAME`; a child process gets this folder on its PYTHONPATH when it imports
one by its bare name (`cli_agents:calc`, `worker_app:workers`)."""
