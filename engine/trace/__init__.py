"""The retrieval trace, memlens's artifact: its records, the stored JSON (with older formats), redaction after a
forget, replay with other settings, why-not, and the state of a memory since a trace was taken."""
