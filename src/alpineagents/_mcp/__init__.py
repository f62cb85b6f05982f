"""Inside the MCP support: one connection to a server on the shared background loop, and the servers an Agent uses."""
