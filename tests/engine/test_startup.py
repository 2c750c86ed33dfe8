"""The cyclic garbage collector is paused while the heavy libraries load (engine/startup.py) and always resumed;
what they created is frozen, so later full collections do not walk it again."""

from __future__ import annotations

import gc
import weakref

import pytest

from engine.startup import collector_paused


def test_the_collector_is_paused_inside_and_resumed_after_the_outermost_block():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still loading
    assert gc.isenabled()


def test_an_error_inside_the_block_still_resumes_the_collector():
    with pytest.raises(ImportError), collector_paused():
        import a_module_that_does_not_exist  # noqa: F401
    assert gc.isenabled()


def test_a_collector_the_application_switched_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loading_the_model_and_connecting_to_lancedb_leave_the_collector_running(empty_engine):
    empty_engine.items.remember("ada", "The collector runs again after the model and LanceDB are loaded.")
    assert empty_engine.retrieval.search("ada", "collector")
    assert gc.isenabled()


def test_what_the_outermost_block_loaded_is_frozen_out_of_later_collections():
    class Loaded:  # stands for a module's objects: tracked by the collector, alive as long as the process
        pass

    with collector_paused():
        loaded = Loaded()
        with collector_paused():
            pass
        assert any(o is loaded for o in gc.get_objects()), "frozen only when the outermost block ends"
    assert not any(o is loaded for o in gc.get_objects())
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_garbage_left_before_the_freeze_is_collected_not_frozen():
    class Node:
        pass

    cycle = Node()
    cycle.me = cycle  # a reference cycle: only the collector frees it
    gone = weakref.ref(cycle)
    del cycle
    with collector_paused():
        pass
    assert gone() is None
