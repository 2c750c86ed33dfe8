"""Removing a user from a store: every per-user row the table registry declares, and the user's vectors.

Behind ``engine.admin.delete_user`` (demo reset, tests); kept apart from the rest of administration because it is
the one operation that spans both stores under a journal note and owes purges afterwards.
"""

from __future__ import annotations

from contextlib import ExitStack

from ..clock import utcnow
from ..errors import StoreCorrupt
from ..ids import check_id, lance_literal
from ..memory.base import Backends
from ..records import KINDS
from .schema import KIND_TABLES, TABLES
from .vectors.purges import VectorPurges


def delete_user(b: Backends, purges: VectorPurges, user_id: str) -> None:
    """Remove every row of ``user_id`` from every per-user table and their vectors from every model's tables (the
    contract is StoreAdmin.delete_user's). The vector tables are read before anything is written, the journal notes
    go down before the rows, the rows go in one transaction, then the vectors; purges are started last."""
    check_id(user_id, "user id")
    b.db.refuse_if_read_only()
    # By user, not only by the rows' ids: an orphan vector of the user's (a crash, a model switch) goes too.
    held: dict[str, set[str]] = {kind: _user_vector_ids(b, kind, user_id) for kind in KINDS}
    now = utcnow()
    # The journal notes go down before the rows do (a full disk refuses the note, not a half-done delete), so
    # the ids are read first, on a connection held through the delete: no other process can add a row between.
    with b.db.hold() as conn, ExitStack() as intents:
        ids = {
            k: sorted(
                held[k].union(r[0] for r in conn.execute(f"SELECT id FROM {t} WHERE user_id=?", [user_id]).fetchall())
            )
            for k, t in KIND_TABLES.items()
        }
        for kind in KINDS:
            intents.enter_context(b.intent(kind, ids[kind]))
        with b.db.write() as wconn:
            for spec in TABLES:
                if spec.user_column is not None:  # names from our own registry, the user id a parameter
                    wconn.execute(f"DELETE FROM {spec.name} WHERE {spec.user_column}=?", [user_id])
            for kind in KINDS:
                if held[kind]:
                    purges.owe(wconn, kind, now)
        for kind in KINDS:
            b.index.delete(kind, ids[kind], every_model=True)
    for kind in KINDS:
        if held[kind]:
            purges.start(kind)


def _user_vector_ids(b: Backends, kind: str, user_id: str) -> set[str]:
    """The ids of the user's vectors in the kind's tables of every embedding model."""
    found: set[str] = set()
    for name in b.index.kind_tables(kind):
        try:
            tb = b.index.db.open_table(name)
            rows = tb.search().where(f"user_id = {lance_literal(user_id)}").select(["id"]).limit(None).to_arrow()
        except Exception as exc:  # whatever LanceDB raises for a table it cannot read: named, nothing written
            raise StoreCorrupt(
                f"LanceDB table {name} is unreadable ({type(exc).__name__}: {str(exc)[:200]}); nothing was "
                "deleted: run `python -m engine repair` first"
            ) from None
        found.update(rows.column("id").to_pylist())
    return found
