"""Episodic memory: agent trajectories (steps of observation, action, result) and their outcomes (llmemory §4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_text, check_unit, new_id
from ..records import Episode, Page, Step
from ..store.sql.database import Connection, Row, one_row
from .base import Backends, dumps, insert_rows, like_pattern, loads, page_args
from .semantic import normalise_provenance

EPISODE_COLUMNS = "id, user_id, session_id, steps, summary, outcome, importance, provenance, created_at, archived_at"
EPISODE_TYPES = (
    ("id", "str"),
    ("user_id", "str"),
    ("session_id", "str"),
    ("steps", "str"),
    ("summary", "str"),
    ("outcome", "str"),
    ("importance", "float"),
    ("provenance", "str"),
    ("created_at", "ts"),
    ("archived_at", "ts"),
)
MAX_STEPS = 500


def derive_summary(steps: Sequence[Step]) -> str:
    """llmemory's non-LLM summary: ``Episode with N step(s): a1 -> a2 -> ...``."""
    actions = [s.action.strip() for s in steps if s.action and s.action.strip()]
    if not actions:
        return f"Episode with {len(steps)} step(s)"
    return f"Episode with {len(steps)} step(s): " + " -> ".join(actions)


def _episode(row: Row) -> Episode:
    steps = tuple(
        Step(s.get("observation") or "", s.get("action") or "", s.get("result") or "", s.get("timestamp") or None)
        for s in loads(row[3]) or []
    )
    return Episode(row[0], row[1], row[2], steps, row[4], row[5], row[6], loads(row[7]) or {}, row[8], row[9])


class EpisodicMemory:
    kind = "episodic"

    def __init__(self, b: Backends) -> None:
        self.b = b

    def prepare(
        self,
        user_id: str,
        steps: Any,
        summary: str | None = None,
        outcome: str | None = None,
        importance: float | None = None,
        session_id: str | None = None,
        created_at: Any = None,
        id: str | None = None,
        provenance: Any = None,
        archived_at: Any = None,
    ) -> Episode:
        check_id(user_id, "user id")
        if session_id is not None:
            check_id(session_id, "session id")
        ep_id = check_id(id, "episode id") if id is not None else new_id("ep")
        if not isinstance(steps, (list, tuple)) or not steps:
            raise InvalidInput("an episode needs a non-empty list of steps")
        if len(steps) > MAX_STEPS:
            raise InvalidInput(f"an episode may have at most {MAX_STEPS} steps")
        limit = self.b.settings.max_text_chars
        clean: list[Step] = []
        for n, s in enumerate(steps, 1):
            if isinstance(s, Step):
                s = {"observation": s.observation, "action": s.action, "result": s.result, "timestamp": s.timestamp}
            if not isinstance(s, dict):
                raise InvalidInput(f"step {n} must be an object with observation, action, result")
            fields = {}
            for key in ("observation", "action", "result"):
                fields[key] = validation.check_optional_text(s.get(key) or None, f"step {n} {key}", limit)
            if not any(v.strip() for v in fields.values()):
                raise InvalidInput(f"step {n} is empty")
            ts = optional_time(s.get("timestamp"), f"step {n} timestamp")
            clean.append(Step(**fields, timestamp=ts.isoformat() if ts else None))
        if summary is None or (isinstance(summary, str) and not summary.strip()):
            summary = derive_summary(clean)
        summary = check_text(summary, "episode summary", limit)
        if outcome is not None and not isinstance(outcome, str):
            raise InvalidInput("outcome must be a short label such as success or failure")
        validation.check_optional_text(outcome, "outcome", 64)
        imp = check_unit(importance, "importance", 0.5)
        at = optional_time(created_at, "created_at") or utcnow()
        prov = normalise_provenance(provenance, "episode_recording", imp, at)
        return Episode(
            ep_id,
            user_id,
            session_id,
            tuple(clean),
            summary,
            outcome or None,
            imp,
            prov,
            at,
            optional_time(archived_at, "archived_at"),
        )

    def record(
        self,
        user_id: str,
        steps: Sequence[Mapping[str, Any]],
        summary: str | None = None,
        outcome: str | None = None,
        importance: float | None = None,
        session_id: str | None = None,
        created_at: datetime | str | None = None,
    ) -> Episode:
        """Record a trajectory; a missing summary is derived from the actions."""
        return self.add([self.prepare(user_id, steps, summary, outcome, importance, session_id, created_at)])[0]

    def add(self, episodes: Sequence[Episode]) -> list[Episode]:
        if not episodes:
            return []
        self.b.check_new_ids("episodes", "episode", [e.id for e in episodes])
        return self.b.store_records(self.kind, episodes, self.index_text, self.insert)

    @staticmethod
    def index_text(episode: Episode) -> str:
        return episode.searchable_text

    def insert(self, conn: Connection, episodes: Sequence[Episode]) -> list[Episode]:
        if not episodes:
            return []
        insert_rows(
            conn,
            "episodes",
            EPISODE_TYPES,
            [
                [
                    e.id,
                    e.user_id,
                    e.session_id,
                    dumps([s.__dict__ for s in e.steps]),
                    e.summary,
                    e.outcome,
                    e.importance,
                    dumps(e.provenance),
                    e.created_at,
                    e.archived_at,
                ]
                for e in episodes
            ],
        )
        return list(episodes)

    def get(self, user_id: str, episode_id: str) -> Episode:
        check_id(user_id, "user id")
        check_id(episode_id, "episode id")
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE user_id=? AND id=?", [user_id, episode_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no episode {episode_id!r} for user {user_id!r}")
        return _episode(row)

    def list_episodes(
        self,
        user_id: str,
        outcome: str | None = None,
        query: str | None = None,
        session_id: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[Episode]:
        """Episodes newest first."""
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        where, params = ["user_id = ?"], [user_id]
        if outcome:
            where.append("outcome = ?")
            params.append(outcome)
        if session_id:
            where.append("session_id = ?")
            params.append(check_id(session_id, "session id"))
        validation.check_optional_text(query, "query", self.b.settings.max_text_chars)
        validation.check_optional_text(outcome, "outcome", 64)
        if query:
            where.append("(summary ILIKE ? ESCAPE '\\' OR CAST(steps AS VARCHAR) ILIKE ? ESCAPE '\\')")
            params += [like_pattern(query)] * 2
        if not include_archived:
            where.append("archived_at IS NULL")
        cond = " AND ".join(where)
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM episodes WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {cond} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                params + [int(limit), int(offset)],
            ).fetchall()
        return Page(tuple(_episode(r) for r in rows), total, int(limit), int(offset))

    def recent(self, user_id: str, window: int) -> list[Episode]:
        return list(self.list_episodes(user_id, limit=max(1, int(window))).rows)
