"""A small MCP server with one tool, for the MCP page. Started by mcp_agent.py over stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("calculator")


@server.tool()
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


if __name__ == "__main__":
    server.run()  # stdio: the client talks to it over stdin and stdout
