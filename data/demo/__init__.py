"""The bundled demo dataset (demo.jsonl, its expectation set and two-hop questions), read through
``importlib.resources`` wherever memlens is installed; ``build_demo.py`` regenerates it."""
