"""A store written before labellers (migration 0008_labels) opens with its labels kept: each gets the labeller ''
(not recorded), and labels that stacked on one (trace, memory) count once: the newest, the earlier ones marked
replaced when the next one came."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb

from engine import MemoryEngine, Settings

U = "ada"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_an_old_store_opens_with_its_stacked_labels_counted_once(tmp_path, embedder):
    settings = Settings.from_env({}, store=str(tmp_path / "store"))
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    item, other = (engine.items.remember(U, f"Fact {n} about the refund job").id for n in range(2))
    trace_id = engine.retrieval.retrieve(U, "What about the refund job?").trace_id
    engine.close()
    with duckdb.connect(str(tmp_path / "store" / "memlens.duckdb")) as conn:  # the store as 0.7 left it
        conn.execute("ALTER TABLE feedback DROP COLUMN labeller")
        conn.execute("ALTER TABLE feedback DROP COLUMN replaced_at")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0008_labels'")
        for n, (memory, label, trace) in enumerate(
            [(item, "useful", trace_id), (item, "useful", trace_id), (item, "harmful", trace_id)]
            + [(other, "useful", None), (other, "useful", None)]
        ):
            conn.execute(
                "INSERT INTO feedback (user_id, item_id, label, delta, trace_id, hop, note, created_at) "
                "VALUES (?, ?, ?, ?, ?, NULL, '', ?)",
                [U, memory, label, 1 if label == "useful" else -1, trace, T0 + timedelta(minutes=n)],
            )
    reopened = MemoryEngine.open(settings=settings, embedder=embedder)
    assert reopened.feedback.net(U, [item, other]) == {item: -1, other: 1}  # was -1+1+1 = 1 and 2
    history = reopened.feedback.events(U, item_id=item)
    assert [(e.label, e.delta, e.labeller, e.replaced_at) for e in history] == [
        ("harmful", -1, "", None),
        ("useful", 0, "", T0 + timedelta(minutes=2)),
        ("useful", 0, "", T0 + timedelta(minutes=1)),
    ]
    assert reopened.traces.get(trace_id).trace_id == trace_id
    # A labeller of today labels on top: their label counts beside the old one, once.
    reopened.feedback.label(U, item, "useful", trace_id=trace_id, labeller="ana")
    reopened.feedback.label(U, item, "useful", trace_id=trace_id, labeller="ana")
    assert reopened.feedback.net(U, [item]) == {item: 0}
