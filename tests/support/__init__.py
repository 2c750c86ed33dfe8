"""Helpers shared by the engine tests: store snapshots and the two-process scripts."""
