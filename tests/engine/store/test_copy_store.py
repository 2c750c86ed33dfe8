"""``copy-store``: the demo store (with a trace, a label, a forget, working memory and token usage) copied from a
folder to a team store (real PostgreSQL + moto) and back, through the CLI, with nothing re-embedded."""

from __future__ import annotations

import io

import numpy as np
import pytest

from engine import InvalidInput, MemoryEngine, Settings
from engine.cli import main
from engine.clock import utcnow
from engine.store.copy import copy_store
from engine.store.schema import COPIED as TABLES
from tests.support.storecheck import row_counts

pytestmark = pytest.mark.team_store
U = "ada"
FACTS = [
    "The refunds queue is drained with the drain-queue runbook.",
    "Ada's staging database lives on db-staging-2.",
    "The deploy freeze starts on Fridays at 16:00.",
    "Ada prefers short standups.",
]


def copy_cli(*argv: str):
    out, err = io.StringIO(), io.StringIO()
    code = main(["copy-store", *argv, "--json"], environ={}, stdout=out, stderr=err, raise_unexpected=True)
    return code, out.getvalue(), err.getvalue()


def vectors_of(engine: MemoryEngine) -> dict[str, dict[str, list[float]]]:
    index = engine._b.index
    out = {}
    for name in index.table_names():
        t = index.db.open_table(name).to_arrow()
        out[name] = dict(zip(t.column("id").to_pylist(), t.column("vector").to_pylist(), strict=True))
    return out


class CountingEmbedder:
    """The real model, counting what it is asked to embed (a copy must ask for nothing)."""

    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, 0
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_a_store_goes_to_a_team_store_and_back_with_every_row_and_vector(
    empty_engine, team_servers, tmp_path, embedder
):
    src = empty_engine
    src.items.remember_many([{"user_id": U, "content": t} for t in FACTS])
    src.episodes.record(
        U,
        [{"observation": "queue stuck", "action": "drained it", "result": "ok"}],
        summary="Drained the refunds queue after a stuck deploy",
    )
    src.skills.register(U, "drain-queue", "Pause consumers, drain, resume.", "How to drain the refunds queue")
    src.sessions.add_message(U, "s-copy", "user", "how do I drain the refunds queue?")
    trace = src.retrieval.retrieve(U, "How do I drain the refunds queue?")
    src.feedback.label(U, trace.context_ids[0], "useful", trace_id=trace.trace_id)
    src.working.update(U, "s-copy", {"goal": "copy the store", "note": {"n": 1}})
    victim = src.items.list_items(U).rows[-1].id
    src.forgetting.forget(U, "semantic", [victim], mode="hard", reason="copy test")
    src.admin.record_usage(U, "chat", "m", 10, 5)
    at = utcnow()
    expected = src.retrieval.retrieve(U, "How do I drain the refunds queue?", save=False, now=at)  # after the label
    before_rows, before_vectors = row_counts(src), vectors_of(src)
    src.close()

    dsn, vectors = team_servers.fresh("copy")
    code, out, err = copy_cli(str(src.path), dsn, "--to-vectors", vectors)
    assert code == 0, err
    report = __import__("json").loads(out)
    assert report["rows"]["traces"] == before_rows["traces"] >= 1
    assert report["rows"]["forget_log"] == before_rows["forget_log"] >= 1
    assert report["rows"]["feedback"] == before_rows["feedback"] >= 1

    counting = CountingEmbedder(embedder)
    team = MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=30), embedder=counting, vectors=vectors)
    assert {t: n for t, n in row_counts(team).items() if t in TABLES} == {t: before_rows[t] for t in TABLES}
    assert vectors_of(team).keys() == before_vectors.keys()
    for name, by_id in before_vectors.items():
        got = vectors_of(team)[name]
        assert got.keys() == by_id.keys()
        assert all(np.allclose(got[i], v) for i, v in by_id.items()), "the very same vectors"
    assert counting.texts == 0, "nothing was re-embedded"
    copied = team.traces.get(trace.trace_id)
    assert copied.context_ids == trace.context_ids
    assert team.working.get(U, "s-copy")["goal"] == "copy the store"
    assert [(e.mode, e.ids) for e in team.forgetting.log(U) if victim in e.ids] == [("hard", (victim,))]
    new_edit = team.working.update(U, "s-copy", {"goal": "next"})  # the copied history's ids are not reused
    assert new_edit["goal"] == "next"
    again = team.retrieval.retrieve(U, "How do I drain the refunds queue?", save=False, now=at)
    assert again.context_ids == expected.context_ids, "the same memories, scores and feedback: the same answer"
    team.close()

    back = tmp_path / "back"
    code, out, err = copy_cli(dsn, str(back), "--from-vectors", vectors)
    assert code == 0, err
    home = MemoryEngine.open(settings=Settings.from_env({}, store=str(back), lock_timeout_s=30), embedder=embedder)
    after = row_counts(home)
    assert after["working_history"] == before_rows["working_history"] + 1
    assert {t: after[t] for t in TABLES if t != "working_history"} == {
        t: before_rows[t] for t in TABLES if t != "working_history"
    }
    assert vectors_of(home).keys() == before_vectors.keys()
    team_servers.drop(dsn)


def test_copying_into_a_store_that_holds_anything_is_refused(empty_engine, tmp_path, embedder):
    empty_engine.items.remember(U, "Ada keeps her notes in the wiki.")
    empty_engine.close()
    busy = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "busy")), embedder=embedder)
    busy.items.remember(U, "already here")
    busy.close()
    with pytest.raises(InvalidInput, match="not empty"):
        copy_store(str(empty_engine.path), str(tmp_path / "busy"))
    with pytest.raises(InvalidInput, match="same store"):
        copy_store(str(empty_engine.path), str(empty_engine.path))
