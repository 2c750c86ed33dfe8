"""The Retrieval trace page shows a forgotten memory's tombstone, never its text (issue 17)."""

from __future__ import annotations

from apptest_helpers import all_texts, no_errors, open_page, values

from engine import MemoryEngine

PAGE = "pages/retrieval.py"
SECRET = "Quillmore hides the spare key inside the green teapot"


def test_a_hard_forgotten_memory_shows_as_its_tombstone_on_the_trace_page(empty_app: MemoryEngine):
    engine = empty_app
    engine.admin.purges.grace_s = 0.5  # only this process reads the store: purge soon, not after the default 10 s
    secret = engine.items.remember("forgetful", SECRET)
    engine.items.remember("forgetful", "The spare key for the office is with the receptionist")
    trace = engine.retrieval.retrieve("forgetful", "where is the spare key")
    assert secret.id in trace.context_ids
    engine.forgetting.forget(
        "forgetful", "semantic", [secret.id], reason="asked to forget the key", mode="hard", actor="researcher"
    )
    at = open_page(PAGE, user="forgetful", state={"trace_current_id": trace.trace_id})
    no_errors(at)
    shown = all_texts(at)
    assert "Quillmore" not in shown and "green teapot" not in shown
    assert any("forgotten since it was stored" in w for w in values(at, "warning"))
    assert "asked to forget the key" in shown and "researcher" in shown
    assert f"[forgotten memory {secret.id}]" in shown  # the assembled context keeps its place
    engine.admin.purges.wait(60)
