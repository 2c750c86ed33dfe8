"""The memory kinds (CoALA): sessions, working, semantic, episodic, procedural, plus feedback and forgetting."""
