"""Store upkeep: LanceDB kept in agreement with DuckDB (the truth) by reindex, the orphan check, repair and
recovery at open; index optimization; the store's size and applied migrations.

A layer of ``StoreAdmin`` (admin.py): it works on the attributes the admin's constructor sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, StoreCorrupt
from ..ids import check_id
from ..memory.base import Backends
from ..memory.episodic import EpisodicMemory
from ..memory.memory_keys import KEY_SETTINGS, key_kinds_for
from ..memory.procedural import SkillLibrary
from ..memory.semantic import SemanticMemory
from ..records import KINDS, Page
from .schema import KIND_TABLES
from .vectors.purges import VectorPurges


class StoreUpkeep:
    _b: Backends
    path: Path | None
    semantic: SemanticMemory
    episodic: EpisodicMemory
    skills: SkillLibrary
    purges: VectorPurges

    def reindex(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """(Re)build this model's vector tables from the active memories in DuckDB."""
        done: dict[str, int] = {}
        active: dict[str, tuple[Any, Callable[[str], Page[Any]]]] = {
            "semantic": (self.semantic, lambda u: self.semantic.list_items(u, limit=10_000_000)),
            "episodic": (self.episodic, lambda u: self.episodic.list_episodes(u, limit=10_000_000)),
            "procedural": (self.skills, lambda u: self.skills.list_skills(u, limit=10_000_000)),
        }
        with self.deferred_upkeep():
            for kind, (module, list_active) in active.items():
                with self._b.db.read() as conn:
                    sql = f"SELECT DISTINCT user_id FROM {KIND_TABLES[kind]}"
                    users = [r[0] for r in conn.execute(sql).fetchall()]
                records = [r for u in users for r in list_active(u).rows]
                with self._b.intent(kind, [r.id for r in records]):
                    self._b.index.delete(kind, [r.id for r in records])  # duplicates too; a crash here is journalled
                    self._index_records(kind, module, records, progress)
                done[kind] = len(records)
            if self.semantic.keys.enabled:  # the vectors' delete took the items' keys too (vectors/keys.py)
                self.semantic.keys.rebuild()
        return done

    def deferred_upkeep(self) -> AbstractContextManager[None]:
        """``with engine.admin.deferred_upkeep(): <many writes>``: the vector tables' upkeep after each write
        (indexes, compaction) runs once per table when the block ends, as imports, reindex and `memlens keys` do
        (engine/store/vectors/maintenance.py: faster, and far less disk held by replaced versions)."""
        return self._b.index.deferred_upkeep()

    def build_keys(
        self,
        user_id: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        kinds: str | None = None,
    ) -> dict[str, Any]:
        """Build the semantic memories' extra keys (engine/memory/memory_keys.py) of every user, or one, again from
        DuckDB: a store written before keys existed, or with ``memory_keys_write`` off. ``kinds`` (all, facts,
        next, sentences; default ``memory_keys_write_kinds``) says which. Returns users, items and keys counted."""
        return self.semantic.keys.rebuild(user_id, progress, kinds)

    def key_count(self, user_id: str | None = None, kinds: str = "all") -> int:
        """How many extra keys of the semantic memories this store's embedder has written, for every user or one,
        of the ``kinds`` a ``memory_keys`` setting names (all, facts, next, sentences): 0 when none were, and a
        preset that searches them then finds nothing through them."""
        if user_id is not None:
            check_id(user_id, "user id")
        if kinds not in KEY_SETTINGS:
            raise InvalidInput(f"unknown key kinds {str(kinds)[:30]!r}; use one of {', '.join(KEY_SETTINGS)}")
        return self._b.index.count_keys("semantic", user_id, key_kinds_for(kinds))

    def _index_records(
        self,
        kind: str,
        module: Any,
        records: Sequence[Any],
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        """(Re)write the vectors of ``records``, upserted by id: never two vectors for one memory."""
        for start in range(0, len(records), 512):
            chunk = records[start : start + 512]
            texts, vectors = self._b.record_vectors(module, chunk)
            self._b.index.add(kind, [r.id for r in chunk], [r.user_id for r in chunk], texts, vectors, upsert=True)
            if progress:
                progress(kind, start + len(chunk), len(records))

    # -- crash consistency ------------------------------------------------------------------------------------------
    def orphans(self, kinds: Iterable[str] = KINDS) -> dict[str, dict[str, Any]]:
        """Per memory kind, what the two stores disagree on: ``without_row`` (vector ids with no active memory:
        left by a crash, or by a forget that did not reach LanceDB), ``without_vector`` (active memories with no
        vector for this embedder), ``duplicated`` (memories with more than one vector); or ``unreadable`` (the
        LanceDB table cannot be read, and why). Compares ids, not totals, so one kind of orphan cannot hide
        another. Reads the id columns only (~1 s per million ids)."""
        out: dict[str, dict[str, Any]] = {}
        for kind in kinds:
            table = KIND_TABLES[kind]
            with self._b.db.read() as conn:
                active = {r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE archived_at IS NULL").fetchall()}
            try:
                vector_ids = self._b.index.ids(kind)
            except StoreCorrupt as exc:
                out[kind] = {"unreadable": str(exc)}
                continue
            seen: dict[str, int] = {}
            for i in vector_ids:
                seen[i] = seen.get(i, 0) + 1
            out[kind] = {
                "without_row": sorted(set(seen) - active),
                "without_vector": sorted(active - set(seen)),
                "duplicated": sorted(i for i, n in seen.items() if n > 1 and i in active),
            }
        return out

    def repair(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, dict[str, int]]:
        """Make LanceDB agree with DuckDB (the truth): rebuild an unreadable table from DuckDB, remove vectors with
        no active memory, and give every active memory exactly one vector. Returns per kind what was done."""
        done: dict[str, dict[str, int]] = {}
        for kind in KINDS:
            rebuilt = 0
            try:
                self._b.index.check_readable(kind)
            except StoreCorrupt:
                self._b.index.drop(kind)
                rebuilt = 1
            found = self.orphans([kind])[kind]
            if "unreadable" in found:
                raise StoreCorrupt(found["unreadable"])
            done[kind] = self.repair_ids(
                kind, found["without_row"] + found["without_vector"] + found["duplicated"], progress
            )
            done[kind]["table_rebuilt"] = rebuilt
        if not self._b.index.keys_readable("semantic"):  # the items' keys (vectors/keys.py): built again from DuckDB
            self._b.index.drop_keys("semantic")
            if self.semantic.keys.enabled:
                self.semantic.keys.rebuild()
        return done

    def repair_ids(
        self, kind: str, ids: Sequence[str], progress: Callable[[str, int, int], None] | None = None
    ) -> dict[str, int]:
        """Make the vectors of ``ids`` match DuckDB: none for an id with no active row, exactly one otherwise."""
        ids = sorted(set(ids))
        if not ids:
            return {"vectors_removed": 0, "vectors_written": 0}
        table, module = KIND_TABLES[kind], self._module(kind)
        with self._b.db.read() as conn:
            rows = conn.execute(
                f"SELECT id, user_id FROM {table} WHERE archived_at IS NULL AND id IN (SELECT unnest(?))", [ids]
            ).fetchall()
        active = {r[0]: r[1] for r in rows}
        gone = [i for i in ids if i not in active]
        with self._b.intent(kind, ids):
            self._b.index.delete(kind, gone)
            # An id with several vectors: delete them all, then write one (merge_insert would update each copy).
            self._b.index.delete(kind, list(active))
            records = [module.get(active[i], i) for i in sorted(active)]
            self._index_records(kind, module, records, progress)
        return {"vectors_removed": len(gone), "vectors_written": len(records)}

    def _module(self, kind: str) -> Any:
        return {"semantic": self.semantic, "episodic": self.episodic, "procedural": self.skills}[kind]

    def _recover_at_open(self) -> None:
        """Cheap recovery at open: the ids a crashed process noted in the write journal are repaired (nothing is
        scanned when there are none), and purges a crashed forget still owes are started. A read-only store is
        browsed as it is: its next writable open recovers it."""
        if self._b.db.read_only:
            return
        if self._b.journal is not None:  # a note is removed once its ids are repaired (storage/journal.py)
            self._b.journal.recover(self.repair_ids, tuple(KIND_TABLES))
        self.purges.start_owed()

    def optimize(self, vector_index: bool = True) -> list[str]:
        """Fold new rows into the vector and full-text indexes and compact the tables; with ``vector_index``, give
        tables of at least ``vector_index_min_rows`` rows (the memories' keys tables too) an approximate vector index
        (HNSW-SQ, tens of seconds per 100k rows). Returns the tables indexed now."""
        self._b.index.optimize()
        if not vector_index:
            return []
        return self._b.index.build_vector_indexes(self._b.settings.vector_index_min_rows)

    def disk_bytes(self) -> int:
        if self.path is None:  # a team store's bytes are on its servers
            return 0
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    def check(self) -> list[str]:
        """Applied migrations, for diagnostics."""
        try:
            return [name for name, _ in self._b.db.migrations()]
        except Exception as exc:  # any failure here means the file is not a readable store
            raise StoreCorrupt(f"cannot read the store's migrations: {exc}") from None
