"""Which CLI invocations only read the store: they never create one (engine/store/location.require_existing_store).

A command is listed here rather than flagged where it is registered so that the whole rule can be read in one place;
tests/engine/cli/test_read_commands.py runs each listed command on a folder that does not exist.
"""

from __future__ import annotations

import argparse

# Commands that never write (`retrieve` saves its trace and `eval` stores a run: they are writes).
READ_COMMANDS = frozenset(
    {
        "users",
        "sessions",
        "messages",
        "episodes",
        "search",
        "skills",
        "forget-log",
        "maintenance-log",
        "stats",
        "export",
        "trace",
        "traces",
        "export-otel",
        "replay",
        "eval-sets",
        "eval-runs",
    }
)
# Commands that read unless a flag asks them to write.
READ_UNLESS = {
    "working": "set",
    "prune": "apply",
    "prune-traces": "apply",
    "maintain": "apply",  # a preview writes nothing (an LLM step's token use aside)
    "consolidate": "apply",
    "graph": "graph_writes",  # only `graph extract` writes
}


def reads_only(args: argparse.Namespace) -> bool:
    """True when this invocation cannot write to the store."""
    command = getattr(args, "command", None)
    if command in READ_UNLESS:
        return not getattr(args, READ_UNLESS[command], None)
    return command in READ_COMMANDS
