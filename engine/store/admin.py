"""Store administration: import/export and the demo, usage and stats, index maintenance.

A composed part of ``MemoryEngine`` (``engine.admin``), not a mixin: it gets exactly what it works on in its
constructor, and callers use its methods directly (``engine.admin.stats()``). Its parts live beside it:
demo_dataset.py (the bundled demo), user_removal.py (delete_user), stats.py (stats), and upkeep.py (reindex,
orphans, repair, recovery at open, optimize, disk size, migrations), a layer of this class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ..clock import utcnow
from ..config import Settings
from ..evaluation.demo import demo_cases
from ..ids import check_id
from ..memory.base import Backends
from ..memory.episodic import EpisodicMemory
from ..memory.procedural import SkillLibrary
from ..memory.semantic import SemanticMemory
from ..memory.sessions import SessionStore
from ..memory.transfer import Transfer
from ..providers.embedders import Embedder
from ..providers.llm import LLM
from ..records import StoreStats
from . import stats as _stats
from . import user_removal
from .demo_dataset import DemoProgress, demo_lines, demo_users
from .upkeep import StoreUpkeep
from .vectors.purges import VectorPurges

__all__ = ["DemoProgress", "StoreAdmin", "demo_lines", "demo_users"]


class StoreAdmin(StoreUpkeep):
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
        user_removal.delete_user(self._b, self.purges, user_id)

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
        return _stats.store_stats(self._b, self.display, self.llm.name, self.orphans)
