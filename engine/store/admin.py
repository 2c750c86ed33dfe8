"""Store administration: import/export and the demo, usage and stats, index maintenance.

A composed part of ``MemoryEngine`` (``engine.admin``), not a mixin: it gets exactly what it works on in its
constructor, and callers use its methods directly (``engine.admin.stats()``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

from ..clock import utcnow
from ..config import DEMO_DIR, Settings
from ..errors import StoreCorrupt
from ..evaluation.demo import demo_cases
from ..ids import check_id, lance_literal
from ..memory.base import Backends
from ..memory.episodic import EpisodicMemory
from ..memory.procedural import SkillLibrary
from ..memory.semantic import SemanticMemory
from ..memory.sessions import SessionStore
from ..memory.transfer import Transfer
from ..providers.embedders import Embedder
from ..providers.llm import LLM
from ..records import KINDS, Page, StoreStats
from .schema import KIND_TABLES, TABLES
from .sql.database import one_row
from .vectors.purges import VectorPurges

# Progress of a load: (kind of memory, done, total).
DemoProgress = Callable[[str, int, int], None]


def demo_lines() -> list[str]:
    """The bundled demo dataset's JSONL lines (package data, wherever memlens is installed)."""
    return (DEMO_DIR / "demo.jsonl").read_text(encoding="utf-8").splitlines()


@functools.cache
def demo_users() -> tuple[str, ...]:
    """The users of the demo dataset, sorted (read once per process: the file ships with the code)."""
    return tuple(sorted({json.loads(line)["user_id"] for line in demo_lines() if line.strip()}))


def _some(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


class StoreAdmin:
    def __init__(
        self,
        backends: Backends,
        path: Path | None,
        llm: LLM,
        sessions: SessionStore,
        semantic: SemanticMemory,
        episodic: EpisodicMemory,
        skills: SkillLibrary,
        transfer: Transfer,
        purges: VectorPurges,
        evals: Any = None,
    ) -> None:
        self._b = backends
        self.path = path  # None for a team store
        self.display = str(path)  # where the store is, for people (a team store's DSN masked)
        self.llm = llm
        self.sessions = sessions
        self.transfer = transfer
        self.semantic = semantic
        self.episodic = episodic
        self.skills = skills
        self.purges = purges  # LanceDB purges a forget still owes (a crashed process's are started at open)
        self.evals = evals  # the engine's Evaluations: the demo's expectation set is loaded with the demo

    @property
    def embedder(self) -> Embedder:
        return self._b.embedder

    @property
    def settings(self) -> Settings:
        return self._b.settings

    def users(self) -> list[str]:
        return self.sessions.users()

    # -- import, export, demo -------------------------------------------------------------------------------------
    def ingest_lines(
        self,
        lines: Iterable[str],
        progress: Callable[[str, int, int], None] | None = None,
        skip_existing: bool = False,
    ) -> dict[str, int]:
        """Import JSONL records; a bad line raises InvalidInput naming it, and nothing is written. Records without
        an id that the store already holds are counted as ``already_stored`` (written again) or, with
        ``skip_existing``, left out and counted as ``skipped`` (see engine/memory/ingest_duplicates.py)."""
        return self.transfer.apply(self.transfer.plan(lines), progress, skip_existing)

    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        check_id(user_id, "user id")
        return self.transfer.export(user_id)

    def demo_loaded(self) -> bool:
        """Whether any user of the demo dataset has memories here: what makes ``load_demo`` leave the store as it is
        (the demo is known by its dataset, not by one of its ids)."""
        users = set(self.users())
        return any(u in users for u in demo_users())

    def load_demo(
        self, reset: bool = False, progress: DemoProgress | None = None, evaluation: bool = True
    ) -> dict[str, int]:
        """Load the bundled demo dataset and (``evaluation``, with the engine's Evaluations) its expectation set with
        one stored run of it: the one loading behind the CLI's `demo` and the dashboard's first start, so both leave the
        same store (`eval-sets` lists the demo set after either). Loading twice changes nothing; ``reset`` reloads
        the dataset and the set from scratch (a demo loaded before the set came with it gets it this way). The
        counts say ``eval_case`` when the set was made."""
        name = demo_cases()[0]
        evals = self.evals if evaluation else None
        if reset:
            for u in demo_users():
                self.delete_user(u)
            if evals is not None and name in {s.name for s in evals.sets()}:
                evals.delete_set(name)  # its cases and runs name the memories just deleted
        elif self.demo_loaded():
            return {}
        counts = self.ingest_lines(demo_lines(), progress)
        if evals is not None:
            made = name not in {s.name for s in evals.sets()}
            evals.load_demo()  # the set (when missing) and one run of it (when it has none)
            if made:
                counts["eval_case"] = len(evals.cases(name))
        return counts

    def delete_user(self, user_id: str) -> None:
        """Remove every row of a user from every per-user table the registry declares (evaluation cases and results
        included), and the user's vectors from every embedding model's tables; old LanceDB versions holding them are
        purged as after a hard forget. Used by demo reset and tests.

        All or nothing: a read-only store is refused first; the vector tables are read before anything is written
        (an unreadable one is StoreCorrupt, nothing deleted); the rows go in one transaction, then the vectors, under
        a journal note that the next open repairs from should a vector delete fail."""
        check_id(user_id, "user id")
        self._b.db.refuse_if_read_only()
        # By user, not only by the rows' ids: an orphan vector of the user's (a crash, a model switch) goes too.
        held: dict[str, set[str]] = {kind: self._user_vector_ids(kind, user_id) for kind in KINDS}
        now = utcnow()
        # The journal notes go down before the rows do (a full disk refuses the note, not a half-done delete), so
        # the ids are read first, on a connection held through the delete: no other process can add a row between.
        with self._b.db.hold() as conn, ExitStack() as intents:
            ids = {
                k: sorted(
                    held[k].union(
                        r[0] for r in conn.execute(f"SELECT id FROM {t} WHERE user_id=?", [user_id]).fetchall()
                    )
                )
                for k, t in KIND_TABLES.items()
            }
            for kind in KINDS:
                intents.enter_context(self._b.intent(kind, ids[kind]))
            with self._b.db.write() as wconn:
                for spec in TABLES:
                    if spec.user_column is not None:  # names from our own registry, the user id a parameter
                        wconn.execute(f"DELETE FROM {spec.name} WHERE {spec.user_column}=?", [user_id])
                for kind in KINDS:
                    if held[kind]:
                        self.purges.owe(wconn, kind, now)
            for kind in KINDS:
                self._b.index.delete(kind, ids[kind], every_model=True)
        for kind in KINDS:
            if held[kind]:
                self.purges.start(kind)

    def _user_vector_ids(self, kind: str, user_id: str) -> set[str]:
        """The ids of the user's vectors in the kind's tables of every embedding model."""
        found: set[str] = set()
        for name in self._b.index.kind_tables(kind):
            try:
                tb = self._b.index.db.open_table(name)
                rows = tb.search().where(f"user_id = {lance_literal(user_id)}").select(["id"]).limit(None).to_arrow()
            except Exception as exc:  # whatever LanceDB raises for a table it cannot read: named, nothing written
                raise StoreCorrupt(
                    f"LanceDB table {name} is unreadable ({type(exc).__name__}: {str(exc)[:200]}); nothing was "
                    "deleted: run `python -m engine repair` first"
                ) from None
            found.update(rows.column("id").to_pylist())
        return found

    # -- usage, stats, maintenance ----------------------------------------------------------------------------------
    def record_usage(
        self, user_id: str | None, operation: str, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        with self._b.db.write() as conn:
            conn.execute(
                "INSERT INTO llm_usage VALUES (?,?,?,?,?,?,?)",
                [user_id or "", operation, model, input_tokens, output_tokens, input_tokens + output_tokens, utcnow()],
            )

    def usage(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """Token usage per user and operation (from the API's usage fields)."""
        where, params = "", []
        if user_id is not None:
            where, params = "WHERE user_id = ?", [check_id(user_id, "user id")]
        with self._b.db.read() as conn:
            rows = conn.execute(
                "SELECT user_id, operation, model, count(*), sum(input_tokens), sum(output_tokens), "
                f"sum(total_tokens), max(occurred_at) FROM llm_usage {where} GROUP BY 1, 2, 3 ORDER "
                f"BY 1, 2",
                params,
            ).fetchall()
        keys = ("user_id", "operation", "model", "calls", "input_tokens", "output_tokens", "total_tokens", "last_at")
        return [dict(zip(keys, r)) for r in rows]

    def activity(
        self, user_id: str | None = None, since: datetime | str | None = None, until: datetime | str | None = None
    ) -> list[dict[str, Any]]:
        """Daily counts per kind (messages, items, episodes, outcomes, edits, labels, traces, forgets), in SQL."""
        from ..memory.activity import daily_activity

        return daily_activity(self._b, user_id, since, until)

    def episode_outcomes(self, user_id: str) -> dict[str, int]:
        """Active episodes per outcome label, most frequent first."""
        from ..memory.activity import episode_outcome_counts

        return episode_outcome_counts(self._b, user_id)

    def stats(self) -> StoreStats:
        """Counts per memory kind and per user, the backends in use, and warnings about the store."""
        tables = {
            "sessions": "sessions",
            "messages": "messages",
            "working_slots": "working_slots",
            "items": "items WHERE archived_at IS NULL",
            "categories": "categories",
            "episodes": "episodes WHERE archived_at IS NULL",
            "skills": "skills WHERE archived_at IS NULL",
            "feedback_events": "feedback",
            "forget_log_entries": "forget_log",
            "traces": "traces",
        }
        with self._b.db.read() as conn:
            counts = {k: one_row(conn.execute(f"SELECT count(*) FROM {t}"))[0] for k, t in tables.items()}
            per_user_rows = conn.execute(
                "SELECT user_id, kind, n FROM (SELECT user_id, 'sessions' kind, count(*) n FROM sessions GROUP BY 1 "
                "UNION ALL SELECT user_id, 'messages', count(*) FROM messages GROUP BY 1 "
                "UNION ALL SELECT user_id, 'items', count(*) FROM items WHERE archived_at IS NULL GROUP BY 1 "
                "UNION ALL SELECT user_id, 'episodes', count(*) FROM episodes WHERE archived_at IS NULL GROUP BY 1 "
                "UNION ALL SELECT user_id, 'skills', count(*) FROM skills WHERE archived_at IS NULL GROUP BY 1 "
                "UNION ALL SELECT user_id, 'traces', count(*) FROM traces GROUP BY 1) ORDER BY 1, 2"
            ).fetchall()
        per_user: dict[str, dict[str, int]] = {}
        for user_id, kind, n in per_user_rows:
            per_user.setdefault(user_id, {})[kind] = n
        warnings = []
        others = {n: c for n, c in self._b.index.other_models().items() if c}
        orphans = self.orphans()
        for kind, found in orphans.items():
            if "unreadable" in found:
                warnings.append(f"{kind}: {found['unreadable']}")
                continue
            if found["without_vector"]:
                hint = f" (vectors exist for other models: {', '.join(others)})" if others else ""
                warnings.append(
                    f"{kind}: {len(found['without_vector'])} memories have no {self.embedder.name} "
                    f"vector ({_some(found['without_vector'])}){hint}; run `python -m engine repair` "
                    "(or `reindex`) to build them"
                )
            if found["without_row"]:
                warnings.append(
                    f"{kind}: {len(found['without_row'])} vectors have no active memory "
                    f"({_some(found['without_row'])}), e.g. left by a crash mid-write; run "
                    "`python -m engine repair` to remove them"
                )
            if found["duplicated"]:
                warnings.append(
                    f"{kind}: {len(found['duplicated'])} memories have more than one vector "
                    f"({_some(found['duplicated'])}); run `python -m engine repair`"
                )
        return StoreStats(
            self.display,
            f"{self.embedder.name} ({self.embedder.dim}d)",
            self.embedder.dim,
            self.llm.name,
            len(per_user),
            counts["sessions"],
            counts["messages"],
            counts["working_slots"],
            counts["items"],
            counts["categories"],
            counts["episodes"],
            counts["skills"],
            counts["feedback_events"],
            counts["forget_log_entries"],
            counts["traces"],
            per_user,
            tuple(warnings),
            {k: {n: list(v) if isinstance(v, list) else v for n, v in f.items()} for k, f in orphans.items()},
        )

    def reindex(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """(Re)build this model's vector tables from the active memories in DuckDB."""
        done: dict[str, int] = {}
        active: dict[str, tuple[Any, Callable[[str], Page[Any]]]] = {
            "semantic": (self.semantic, lambda u: self.semantic.list_items(u, limit=10_000_000)),
            "episodic": (self.episodic, lambda u: self.episodic.list_episodes(u, limit=10_000_000)),
            "procedural": (self.skills, lambda u: self.skills.list_skills(u, limit=10_000_000)),
        }
        for kind, (module, list_active) in active.items():
            with self._b.db.read() as conn:
                users = [r[0] for r in conn.execute(f"SELECT DISTINCT user_id FROM {KIND_TABLES[kind]}").fetchall()]
            records = [r for u in users for r in list_active(u).rows]
            with self._b.intent(kind, [r.id for r in records]):
                self._b.index.delete(kind, [r.id for r in records])  # duplicates too; a crash here is journalled
                self._index_records(kind, module, records, progress)
            done[kind] = len(records)
        return done

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
        tables of at least ``vector_index_min_rows`` rows an approximate vector index (HNSW-SQ, tens of seconds per
        100k rows). Returns the tables indexed now."""
        self._b.index.optimize()
        if not vector_index:
            return []
        return self._b.index.build_vector_indexes(self.settings.vector_index_min_rows)

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
