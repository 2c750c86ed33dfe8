"""What a process pays once, when it first needs the heavy libraries: importing torch, sentence-transformers and
LanceDB, and loading the model.

Those steps create hundreds of thousands of objects that live as long as the process. Python's cyclic collector
walks every surviving object again each time the count grows by a quarter, so during the imports it runs a full
collection over and over and finds nothing to free: ~3-5 s of the ~10-14 s of CPU that `import
sentence_transformers, lancedb` took on a 2-core machine (9.4-11.1 s with the collector paused, 14.1-14.3 s
without). Every model-loading process pays it: the dashboard, each CLI or MCP process, an agent's process.

After the load, the same objects kept costing: with ~570k of them tracked, each later full collection (one every ~50
stored 2-hop retrievals at 100k items) walked them all for 300-400 ms, in the middle of whatever retrieval triggered
it (docs/benchmarks.md). So when the outermost paused block ends, garbage is collected once and everything still
tracked is frozen (``gc.freeze``): full collections skip it. The collection first matters: a cycle that was garbage
already (an engine a program dropped before opening the next) would otherwise be frozen and never freed; after the
first freeze it walks only what is not frozen. Reference counting still frees frozen objects; only a reference cycle
among them that becomes garbage later is kept (the host application's objects that were alive then included).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (reference counting still frees everything else),
    then collect and freeze what is left (see the module's docstring) and resume it if it was running. Nested and
    concurrent blocks freeze and resume only when the last one ends."""
    global _depth, _resume
    with _LOCK:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                gc.collect()
                gc.freeze()
                if _resume:
                    gc.enable()
