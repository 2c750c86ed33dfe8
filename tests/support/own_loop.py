"""Running a coroutine from a synchronous test whatever the calling thread holds.

``asyncio.run`` refuses to start when the thread already has a running event loop, and a worker that has run the
browser tests has one: Playwright's sync API keeps its loop running in the main thread for the whole session. A
coroutine run on its own thread gets a fresh loop there, as an application calling our async API from its own loop
would."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_on_own_loop(coro: Coroutine[Any, Any, T], timeout: float = 300) -> T:
    """``asyncio.run(coro)`` on a thread of its own; its result returned, its exception raised here."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="own-loop") as pool:
        return pool.submit(asyncio.run, coro).result(timeout)
