"""Writing a validated ingest plan: vectors first, then one DuckDB transaction; the vectors are removed again if
the transaction fails, and a write-intent journal note covers a crash in between (the writing half of transfer.py's
import)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, TypeVar

import numpy as np

from ..clock import utcnow
from ..records import Episode, Item, Skill
from ..store.sql.database import Connection
from .base import StoredRecord
from .graph_transfer import insert_graph
from .ingest_duplicates import already_stored
from .ingest_plan import IngestPlan, IngestPlanner
from .working import WorkingMemory

_R = TypeVar("_R", bound=StoredRecord)
PROGRESS_BATCH = 32  # records embedded between two progress reports (the model batches 32 at a time anyway)
Progress = Callable[[str, int, int], None]  # kind, records done, records of that kind
# A memory kind's records being imported and the module that writes them
_Source = tuple[str, Sequence[_R], Any]


def _leave_out(plan: IngestPlan, found: dict[str, list[int]]) -> None:
    """Drop the records at ``found``'s positions from the plan (before anything is written)."""
    names = {
        "message": "messages",
        "item": "items",
        "episode": "episodes",
        "skill": "skills",
        "outcome": "outcomes",
        "feedback": "feedback",
        "forget_log": "forget_log",
    }
    for kind, positions in found.items():
        drop = set(positions)
        records = getattr(plan, names[kind])
        setattr(plan, names[kind], [r for n, r in enumerate(records) if n not in drop])
        plan.keys[kind] = [k for n, k in enumerate(plan.keys[kind]) if n not in drop]


class IngestWriter(IngestPlanner):
    """The writing layer of ``Transfer`` (transfer.py), which sets these attributes."""

    working: WorkingMemory

    def apply(self, plan: IngestPlan, progress: Progress | None = None, skip_existing: bool = False) -> dict[str, int]:
        """Write a validated plan: vectors first, then one DuckDB transaction; vectors are removed if it fails.

        Returns the records written per kind; and ``already_stored``, how many records without an id the store held
        before (ingest_duplicates.py): written again, or with ``skip_existing`` left out (counted as ``skipped``)."""
        with self.b.db.read() as conn:
            found = already_stored(conn, plan.keys)
        repeated = sum(len(v) for v in found.values())
        if skip_existing and repeated:
            _leave_out(plan, found)
        extra = {("skipped" if skip_existing else "already_stored"): repeated} if repeated else {}
        return self._apply_plan(plan, progress) | extra

    def _apply_plan(self, plan: IngestPlan, progress: Progress | None) -> dict[str, int]:
        skills = self.skills.resolve(plan.skills)
        added: list[tuple[str, list[str]]] = []
        sources = (
            ("semantic", plan.items, self.semantic),
            ("episodic", plan.episodes, self.episodic),
            ("procedural", skills, self.skills),
        )
        with ExitStack() as intents:
            # Noted before the first vector: a crash part-way leaves vectors whose rows never committed, and the
            # next open removes exactly those. Vectors are upserted by id, so importing the file again after such a
            # crash can never leave two vectors for one memory.
            for kind, records, _ in sources:
                intents.enter_context(self.b.intent(kind, [r.id for r in records if r.archived_at is None]))
            # one upkeep per table at the end, not one per batch (vectors/maintenance.py)
            with self.b.index.deferred_upkeep():
                return self._apply(plan, sources, added, progress)

    def _apply(
        self,
        plan: IngestPlan,
        sources: tuple[_Source[Item], _Source[Episode], _Source[Skill]],
        added: list[tuple[str, list[str]]],
        progress: Progress | None,
    ) -> dict[str, int]:
        skills = sources[2][1]
        # Drawn before anything is written (LLM calls); an export that carries its graph is not extracted again.
        graph = {} if _carries_graph(plan) else self.semantic.graph_extraction.for_items(plan.items)
        try:
            # The items' extra keys (memory_keys.py), as every item write makes them; undone below with the vectors.
            self.semantic.keys.write(plan.items, graph, replace=True)
            for kind, records, module in sources:
                active = [r for r in records if r.archived_at is None]
                for start in range(0, len(active), 512):
                    chunk = active[start : start + 512]
                    # Embedded in small batches so a progress bar moves every few seconds even on a slow machine
                    # (one 512-record batch was one silent step); written to the index as one batch.
                    texts, parts = [], []
                    for sub in range(0, len(chunk), PROGRESS_BATCH):
                        t, v = self.b.record_vectors(module, chunk[sub : sub + PROGRESS_BATCH])
                        texts += t
                        parts.append(v)
                        if progress:
                            progress(kind, start + min(sub + PROGRESS_BATCH, len(chunk)), len(active))
                    vectors = np.vstack(parts) if len(parts) > 1 else parts[0]
                    self.b.index.add(
                        kind, [r.id for r in chunk], [r.user_id for r in chunk], texts, vectors, upsert=True
                    )
                    added.append((kind, [r.id for r in chunk]))
            with self.b.db.write() as conn:
                self.semantic.insert(conn, plan.items, graph)
                self.episodic.insert(conn, plan.episodes)
                self.skills.insert(conn, skills)
                for user_id, name, summary in plan.categories:
                    self.semantic.set_category_summary(user_id, name, summary, conn=conn)
                self.sessions.add_messages([m for m in plan.messages], conn=conn)
                self._insert_outcomes(conn, plan, skills)
                if plan.feedback:
                    self.feedback.record(
                        plan.feedback, conn=conn, check_traces=False, forgotten=self._hard_forgotten(conn, plan)
                    )
                for (user_id, session_id), slots in plan.working.items():
                    self.working.update(user_id, session_id, slots, source="ingest", conn=conn)
                self.forgetter.insert_entries(conn, plan.forget_log)
                insert_graph(conn, plan.graph)  # the file's own graph records (graph_transfer.py), ids kept
        except BaseException:
            for kind, ids in added:
                self.b.index.delete(kind, ids)
            self.semantic.keys.undo(plan.items)
            raise
        return plan.counts()

    def _insert_outcomes(self, conn: Connection, plan: IngestPlan, skills: Sequence[Skill]) -> None:
        """Count each outcome on its skill; an outcome of a hard-forgotten skill (no row: checked in
        _check_references) is stored as the event alone, as the forget left it."""
        named = sorted({o[1] for o in plan.outcomes})
        stored = {
            (r[0], r[1])
            for r in conn.execute("SELECT user_id, id FROM skills WHERE id IN (SELECT unnest(?))", [named]).fetchall()
        } | {(s.user_id, s.id) for s in skills}
        for user_id, skill_id, success, episode_id, at in plan.outcomes:
            if (user_id, skill_id) in stored:
                self.skills.ingest_outcome(conn, user_id, skill_id, success, episode_id, at)
            else:
                conn.execute(
                    "INSERT INTO skill_outcomes (skill_id, user_id, success, episode_id, occurred_at) "
                    "VALUES (?,?,?,?,?)",
                    [skill_id, user_id, success, episode_id, at or utcnow()],
                )


def _carries_graph(plan: IngestPlan) -> bool:
    """Whether the file brought graph records (entities, relations, mentions) of its own."""
    return any(getattr(plan, name, None) for name in ("entities", "relations", "mentions"))
