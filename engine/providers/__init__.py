"""Backends behind small interfaces: embedders and the LLM client. Only ``api.py`` chooses concrete ones."""
