"""Procedural memory: a versioned skill library with outcome events, ranked by proven utility (llmemory §5).

Ranking uses the lower bound of the 95% Wilson score interval [memlens], so a skill with 3/3 successes does not
outrank one with 95/100; the raw ``success_rate`` (parity: s/(s+f), 0.5 with no outcomes) stays beside it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_text, new_id
from ..records import SKILL_KINDS, Page, RankedSkill, Skill, SkillOutcome
from ..store.sql.database import Connection, Row, one_row
from .base import Backends, dumps, insert_rows, like_pattern, loads, page_args
from .semantic import normalise_provenance

if TYPE_CHECKING:
    from ..providers.llm import LLM
    from .episodic import EpisodicMemory
    from .skill_mining import MiningResult, SkillProposal

SKILL_COLUMNS = (
    "id, user_id, name, version, kind, description, body, success_count, failure_count, provenance, "
    "created_at, updated_at, archived_at"
)
SKILL_TYPES = (
    ("id", "str"),
    ("user_id", "str"),
    ("name", "str"),
    ("version", "int"),
    ("kind", "str"),
    ("description", "str"),
    ("body", "str"),
    ("success_count", "int"),
    ("failure_count", "int"),
    ("provenance", "str"),
    ("created_at", "ts"),
    ("updated_at", "ts"),
    ("archived_at", "ts"),
)
Z95 = 1.959963984540054
FEW_TRIALS = 5


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion; (0, 1) with no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = p + z * z / (2 * trials)
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    # Exact ends: rounding would otherwise give 0/3 a lower bound of ~5e-17 and rank it above an untried skill.
    lower = 0.0 if successes <= 0 else max(0.0, (centre - margin) / denom)
    upper = 1.0 if successes >= trials else min(1.0, (centre + margin) / denom)
    return lower, upper


def _skill(row: Row) -> Skill:
    return Skill(*row[:9], loads(row[9]) or {}, *row[10:])  # type: ignore[call-arg]  # row: the columns in order


def rank_skills(skills: Sequence[Skill]) -> list[RankedSkill]:
    """Order by Wilson lower bound, then success rate, then trials, then newest version."""
    scored = []
    for s in skills:
        lo, hi = wilson_interval(s.success_count, s.trials)
        scored.append((s, lo, hi))
    scored.sort(key=lambda t: (-t[1], -t[0].success_rate, -t[0].trials, t[0].name, -t[0].version))
    return [
        RankedSkill(s, n, s.success_rate, s.trials, lo, hi, s.trials < FEW_TRIALS)
        for n, (s, lo, hi) in enumerate(scored, 1)
    ]


class SkillLibrary:
    """``engine.skills``: versioned skills with their outcomes, and skills mined from episodes."""

    kind = "procedural"

    def __init__(self, b: Backends, llm: LLM, episodes: EpisodicMemory) -> None:
        from .skill_mining import SkillMiner  # skill_mining.py builds on this module, so imported here

        self.b = b
        self._miner = SkillMiner(episodes, self, llm)

    def register(
        self,
        user_id: str,
        name: str,
        body: str,
        description: str = "",
        kind: str = "prompt",
        version: int | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> Skill:
        """Register a skill; the same name again becomes the next version with fresh counters."""
        return self.add([self.prepare(user_id, name, body, description, kind, version, provenance)])[0]

    def mine(self, user_id: str, window: int = 20, outcomes: Sequence[str] | None = None) -> MiningResult:
        """Skill PROPOSALS from the last ``window`` episodes; nothing is written until one is accepted."""
        return self._miner.mine(user_id, window, outcomes)

    def accept_proposal(
        self,
        user_id: str,
        proposal: SkillProposal | Mapping[str, Any],
        name: str | None = None,
        body: str | None = None,
        description: str | None = None,
        kind: str | None = None,
    ) -> Skill:
        """Register a (possibly edited) proposal with provenance {method: skill_mining, sources: episodes}.
        Rejecting a proposal needs no call: proposals are never stored."""
        return self._miner.accept(user_id, proposal, name, body, description, kind)

    def prepare(
        self,
        user_id: str,
        name: str,
        body: Any,
        description: str = "",
        kind: str = "prompt",
        version: int | None = None,
        provenance: Any = None,
        created_at: Any = None,
        id: str | None = None,
        archived_at: Any = None,
    ) -> Skill:
        check_id(user_id, "user id")
        skill_id = check_id(id, "skill id") if id is not None else new_id("skill")
        name = check_text(name, "skill name", 200).strip()
        body = check_text(body, "skill body", self.b.settings.max_text_chars)
        description = validation.check_optional_text(description, "skill description", 4000)
        if kind not in SKILL_KINDS:
            raise InvalidInput(f"unknown skill kind {str(kind)[:20]!r}; use prompt, template or code")
        validation.check_optional_int(version, "version", "version")
        at = optional_time(created_at, "created_at") or utcnow()
        prov = normalise_provenance(provenance, "registration", None, at)
        return Skill(
            skill_id,
            user_id,
            name,
            version or 0,
            kind,
            description,
            body,
            0,
            0,
            prov,
            at,
            at,
            optional_time(archived_at, "archived_at"),
        )

    def add(self, skills: Sequence[Skill]) -> list[Skill]:
        """Register skills; a skill without a version gets max(existing versions of its name) + 1 (parity)."""
        if not skills:
            return []
        versionless = [not s.version for s in skills]

        def insert_numbered(conn: Connection, checked: Sequence[Skill]) -> list[Skill]:
            # The next version is read again under the store's write lock: resolve() read it before embedding, and
            # another writer registering the same name meanwhile would otherwise get the same number.
            return self.insert(conn, self.number(conn, checked, versionless))

        return self.b.store_records(self.kind, self.resolve(skills), self.index_text, insert_numbered)

    @staticmethod
    def number(conn: Connection, skills: Sequence[Skill], versionless: Sequence[bool]) -> list[Skill]:
        """Each versionless skill (``versionless``) numbered max(versions of its name in ``conn``) + 1, in order; a
        skill with its own version keeps it. Run inside the write transaction, so the numbers are the store's."""
        top: dict[tuple[str, str], int] = {}
        out = []
        for s, auto in zip(skills, versionless, strict=True):
            key = (s.user_id, s.name)
            if key not in top:
                sql = "SELECT coalesce(max(version), 0) FROM skills WHERE user_id=? AND name=?"
                top[key] = int(conn.execute(sql, [s.user_id, s.name]).fetchall()[0][0])
            version = top[key] + 1 if auto else s.version
            top[key] = max(top[key], version)
            out.append(dataclasses.replace(s, version=version))
        return out

    @staticmethod
    def index_text(skill: Skill) -> str:
        return skill.searchable_text

    def insert(self, conn: Connection, skills: Sequence[Skill]) -> list[Skill]:
        if not skills:
            return []
        insert_rows(
            conn,
            "skills",
            SKILL_TYPES,
            [
                [
                    s.id,
                    s.user_id,
                    s.name,
                    s.version,
                    s.kind,
                    s.description,
                    s.body,
                    0,
                    0,
                    dumps(s.provenance),
                    s.created_at,
                    s.updated_at,
                    s.archived_at,
                ]
                for s in skills
            ],
        )
        return list(skills)

    def resolve(self, skills: Sequence[Skill]) -> list[Skill]:
        """Check ids are new and give each versionless skill the next version of its name."""
        self.b.check_new_ids("skills", "skill", [s.id for s in skills])
        with self.b.db.read() as conn:
            versions: dict[tuple[str, str], int] = {}
            for s in skills:
                key = (s.user_id, s.name)
                if key not in versions:
                    versions[key] = one_row(
                        conn.execute(
                            "SELECT coalesce(max(version), 0) FROM skills WHERE user_id=? AND name=?",
                            [s.user_id, s.name],
                        )
                    )[0]
        final = []
        for s in skills:
            key = (s.user_id, s.name)
            version = s.version or versions[key] + 1
            versions[key] = max(versions[key], version)
            final.append(
                Skill(
                    s.id,
                    s.user_id,
                    s.name,
                    version,
                    s.kind,
                    s.description,
                    s.body,
                    0,
                    0,
                    s.provenance,
                    s.created_at,
                    s.updated_at,
                    s.archived_at,
                )
            )
        return final

    def get(self, user_id: str, skill_id: str) -> Skill:
        check_id(user_id, "user id")
        check_id(skill_id, "skill id")
        with self.b.db.read() as conn:
            return self._get(conn, user_id, skill_id)

    @staticmethod
    def _get(conn: Connection, user_id: str, skill_id: str) -> Skill:
        sql = f"SELECT {SKILL_COLUMNS} FROM skills WHERE user_id=? AND id=?"
        row = conn.execute(sql, [user_id, skill_id]).fetchone()
        if row is None:
            raise NotFound(f"no skill {skill_id!r} for user {user_id!r}")
        return _skill(row)

    def report_outcome(
        self, user_id: str, skill_id: str, success: bool, episode_id: str | None = None, at: Any = None
    ) -> Skill:
        """Count a success or failure and append an outcome event, in one transaction."""
        write = self._outcome_write(user_id, skill_id, success, episode_id, at, None)
        # Read back inside the transaction: a read after the commit could raise StoreBusy about a committed outcome.
        with self.b.db.write() as c:
            write(c)
            return self._get(c, user_id, skill_id)

    def ingest_outcome(
        self, conn: Any, user_id: str, skill_id: str, success: bool, episode_id: str | None = None, at: Any = None
    ) -> None:
        """An outcome as part of an ingest's transaction (``conn``); the caller reads the skill later."""
        self._outcome_write(user_id, skill_id, success, episode_id, at, conn)(conn)

    def _outcome_write(
        self, user_id: str, skill_id: str, success: bool, episode_id: str | None, at: Any, conn: Any
    ) -> Callable[[Any], None]:
        """Check an outcome and return what writes it (into the connection it is given)."""
        if not isinstance(success, bool):
            raise InvalidInput("success must be true or false")
        if episode_id is not None:
            check_id(episode_id, "episode id")
        self.get(user_id, skill_id)
        if episode_id is not None and conn is None:
            # An outcome points at an episode the store can show; ingest (conn given) also takes the id of an episode
            # that was hard-forgotten since, as its export carries it.
            with self.b.db.read() as c:
                known = c.execute("SELECT 1 FROM episodes WHERE user_id=? AND id=?", [user_id, episode_id]).fetchone()
            if known is None:
                raise NotFound(f"no episode {episode_id!r} for user {user_id!r}")
        when = optional_time(at, "at") or utcnow()
        column = "success_count" if success else "failure_count"

        def write(c: Any) -> None:
            c.execute(
                f"UPDATE skills SET {column} = {column} + 1, updated_at = greatest(updated_at, ?) "
                "WHERE user_id=? AND id=?",
                [when, user_id, skill_id],
            )
            c.execute(
                "INSERT INTO skill_outcomes (skill_id, user_id, success, episode_id, occurred_at) VALUES (?,?,?,?,?)",
                [skill_id, user_id, success, episode_id, when],
            )

        return write

    def list_skills(
        self,
        user_id: str,
        query: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        include_archived: bool = False,
        limit: int = 1000,
        offset: int = 0,
    ) -> Page[Skill]:
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        where, params = ["user_id = ?"], [user_id]
        validation.check_optional_text(query, "query", self.b.settings.max_text_chars)
        validation.check_optional_text(name, "skill name", 200)
        if query:
            where.append("(name ILIKE ? ESCAPE '\\' OR description ILIKE ? ESCAPE '\\' OR body ILIKE ? ESCAPE '\\')")
            params += [like_pattern(query)] * 3
        if kind:
            if kind not in SKILL_KINDS:
                raise InvalidInput(f"unknown skill kind {str(kind)[:20]!r}")
            where.append("kind = ?")
            params.append(kind)
        if name:
            where.append("name = ?")
            params.append(name)
        if not include_archived:
            where.append("archived_at IS NULL")
        cond = " AND ".join(where)
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM skills WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT {SKILL_COLUMNS} FROM skills WHERE {cond} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                params + [int(limit), int(offset)],
            ).fetchall()
        return Page(tuple(_skill(r) for r in rows), total, int(limit), int(offset))

    def rank(
        self, user_id: str, query: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[RankedSkill]:
        """Skills ranked by proven utility (Wilson lower bound), with rate and trials beside it."""
        skills = self.list_skills(user_id, query=query, kind=kind, limit=10_000).rows
        limit, _ = page_args(limit)
        return rank_skills(skills)[:limit]

    def versions(self, user_id: str, name: str) -> list[Skill]:
        return sorted(
            self.list_skills(user_id, name=name, include_archived=True, limit=10_000).rows, key=lambda s: s.version
        )

    def outcomes(self, user_id: str, skill_id: str | None = None, name: str | None = None) -> list[SkillOutcome]:
        check_id(user_id, "user id")
        sql = "SELECT o.id, o.skill_id, o.user_id, o.success, o.episode_id, o.occurred_at FROM skill_outcomes o "
        params: list[Any] = [user_id]
        if skill_id is not None:
            sql += "WHERE o.user_id=? AND o.skill_id=?"
            params.append(check_id(skill_id, "skill id"))
        elif name is not None:
            sql += "JOIN skills s ON s.id = o.skill_id WHERE o.user_id=? AND s.name=?"
            params.append(name)
        else:
            sql += "WHERE o.user_id=?"
        with self.b.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY o.occurred_at, o.id", params).fetchall()
        return [SkillOutcome(*r) for r in rows]
