"""MCP servers as tools: the Agent connects for each run and offers the server's tools as {name}__{tool}."""

import sys
from pathlib import Path

from alpineagents import MCP, Agent
from alpineagents.testing import FakeModel, tool_call

server_file = Path(__file__).with_name("mcp_server.py")
calculator = MCP(f"{sys.executable} {server_file}", name="calc")  # a command that starts a stdio server
# MCP(url="https://example.com/mcp", name="docs", headers={"Authorization": "Bearer ..."})  # Streamable HTTP

model = FakeModel([tool_call("calc__multiply", a=6, b=7), "6 times 7 is 42."])
agent = Agent(model, tools=[calculator])
agent.run("What is 6 times 7?")

print("the model saw:", [spec.name for spec in model.requests[0].tools])
