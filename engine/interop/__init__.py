"""memlens where agents already live: OpenTelemetry export, a LangGraph store, importers from mem0, Letta and llmemory.

Each module imports its peer package only when used, so memlens runs without them."""
