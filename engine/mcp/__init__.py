"""memlens as MCP tools: the tools (``server``), and the stdio and streamable-HTTP transports."""
