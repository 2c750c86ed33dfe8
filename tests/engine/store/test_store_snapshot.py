"""The yardstick of the hostile-input tests (tests/support/store_snapshot.py) sees every change a hostile call could
make without changing a row count: a rewritten text of the same length, a double changed in its last bit, a JSON
value rewritten with other spacing, a changed vector; and it does not see what is no change: the order a scan returns
rows in, and a new LanceDB version with the same rows (the test_validation_fuzz.py yardstick covers an UPDATE of a
working-memory slot)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import MemoryEngine
from tests.support.store_snapshot import snapshot

USER = "snap"


@pytest.fixture
def engine(empty_engine: MemoryEngine) -> MemoryEngine:
    for text in ["Ada drinks smoked lapsang tea.", "Bob rides a red bicycle.", "Cy reads old maps."]:
        empty_engine.items.remember(USER, text, importance=0.5)
    return empty_engine


def _sql(engine: MemoryEngine, sql: str, params: list | None = None) -> None:
    with engine._b.db.write() as conn:
        conn.execute(sql, params or [])


def _semantic_table(engine: MemoryEngine):
    index = engine._b.index
    (name,) = [n for n in index.table_names() if n.startswith("semantic__")]
    return index.db.open_table(name)


def _first_id(engine: MemoryEngine) -> str:
    with engine._b.db.read() as conn:
        return conn.execute("SELECT min(id) FROM items").fetchone()[0]


def _changed(engine: MemoryEngine, change) -> list[str]:
    before = snapshot(engine)
    change()
    after = snapshot(engine)
    assert {k: v[0] for k, v in after.duckdb.items()} == {k: v[0] for k, v in before.duckdb.items()}
    assert {k: v[0] for k, v in after.lancedb.items()} == {k: v[0] for k, v in before.lancedb.items()}
    return before.diff(after)


def test_the_snapshot_is_the_same_twice(engine):
    assert snapshot(engine) == snapshot(engine)


def test_a_rewritten_text_of_the_same_length_changes_the_snapshot(engine):
    item = _first_id(engine)
    diff = _changed(engine, lambda: _sql(engine, "UPDATE items SET content = upper(content) WHERE id = ?", [item]))
    assert [d.split(":")[0] for d in diff] == ["duckdb.items"]


def test_a_double_changed_in_its_last_bit_changes_the_snapshot(engine):
    item = _first_id(engine)
    nudged = math.nextafter(0.5, 1.0)
    diff = _changed(engine, lambda: _sql(engine, "UPDATE items SET importance = ? WHERE id = ?", [nudged, item]))
    assert [d.split(":")[0] for d in diff] == ["duckdb.items"]


def test_a_json_value_rewritten_with_other_spacing_changes_the_snapshot(engine):
    engine.working.update(USER, "s1", {"goals": ["a", "b"]})

    def respace() -> None:
        _sql(engine, "UPDATE working_slots SET value = replace(CAST(value AS VARCHAR), ',', ' ,  ')")

    assert [d.split(":")[0] for d in _changed(engine, respace)] == ["duckdb.working_slots"]


def test_a_changed_vector_or_vector_text_changes_the_snapshot(engine):
    item = _first_id(engine)
    table = _semantic_table(engine)
    vector = table.to_arrow().column("vector").to_pylist()[0]
    nudged = [float(np.nextafter(np.float32(vector[0]), np.float32(2.0))), *vector[1:]]  # its last float32 bit
    diff = _changed(engine, lambda: table.update(where=f"id = '{item}'", values={"vector": nudged}))
    assert [d.split(":")[0] for d in diff] == [f"lancedb.{table.name}"]
    diff = _changed(engine, lambda: table.update(where=f"id = '{item}'", values={"text": "X" * 5}))
    assert [d.split(":")[0] for d in diff] == [f"lancedb.{table.name}"]


def test_the_order_rows_are_stored_in_does_not_matter(engine):
    """The row a scan returns first, deleted and written again, comes last (LanceDB: in a new fragment, at a new
    version): the same contents, the same snapshot."""
    before = snapshot(engine)
    with engine._b.db.write() as conn:
        (first,) = conn.execute("SELECT id FROM items LIMIT 1").fetchone()
        conn.execute("CREATE TEMP TABLE moved AS SELECT * FROM items WHERE id = ?", [first])
        conn.execute("DELETE FROM items WHERE id = ?", [first])
        conn.execute("INSERT INTO items SELECT * FROM moved")
        conn.execute("DROP TABLE moved")
    with engine._b.db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT id FROM items").fetchall()][-1] == first
    table = _semantic_table(engine)
    version = table.version
    rows = table.to_arrow()
    first = rows.column("id").to_pylist()[0]
    table.delete(f"id = '{first}'")
    table.add(rows.slice(0, 1))
    table.checkout_latest()
    assert table.to_arrow().column("id").to_pylist()[-1] == first and table.version > version
    assert snapshot(engine) == before
