"""The traced retrieval pipeline: candidates, scoring stages, multi-hop reasoners, traces and replay."""
