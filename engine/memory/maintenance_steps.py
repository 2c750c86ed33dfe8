"""What each maintenance step WOULD change (llmemory §7.6): planning only, nothing is written here.

A plan is a list of :class:`MaintenanceChange` that carries everything the write needs (a planned memory's id, text,
category and sources), so applying a preview writes exactly what was shown, the LLM's answers included, without
asking the model again (engine/memory/maintenance.py applies them).

- **consolidate**: the session's messages that no earlier consolidation covered become semantic memories whose
  provenance names their messages (``{"type": "message", "id": "<session>#<seq>"}``). With an LLM: memorize's
  extraction and classification prompts (llmemory §3.3) over the transcript, in chunks of at most
  ``CHUNK_CHARS``, and one category-summary update per touched category. Offline: each user or assistant message
  becomes one item in ``general`` (the documented offline memorize, one message at a time, so each memory links to
  the one message it came from), with the message before it as its ``preceding_text``.
- **reflect**: llmemory's reflection over the last ``window`` episodes, skipped when every one of them is already a
  source of a stored insight (so a second pass asks the model nothing and stores nothing); insights already stored
  (same text) are not planned again.
- **mine_skills**: the miner's proposals, registered automatically (llmemory: ``auto_register: true``) unless the
  user already has a skill of that name with that body (archived ones too: a forgotten skill is not brought back).
- **expire**: TTL expiry: episodes created, and skills last updated, before now minus ``episodic_ttl_days`` /
  ``procedural_ttl_days`` (0 = never), soft-forgotten with reason ``ttl_expired``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..clock import utcnow
from ..ids import new_id
from ..providers.llm import LLM
from ..records import MaintenanceChange
from ..store.sql.database import Connection
from .base import Backends, loads
from .episodic import EpisodicMemory
from .memorize import CLASSIFY_PROMPT, EXTRACT_PROMPT, SUMMARY_PROMPT, normalise_category, parse_facts
from .procedural import SkillLibrary
from .reflection import DEFAULT_IMPORTANCE as INSIGHT_IMPORTANCE
from .reflection import PROMPT as REFLECT_PROMPT
from .reflection import offline_insights, parse_insights, render_episodes
from .semantic import SemanticMemory, same_text_key

CHUNK_CHARS = 8000  # transcript characters per extraction call: one prompt stays well inside a model's context
OFFLINE_ROLES = ("user", "assistant")  # system prompts and tool output are not facts about the user
INSIGHTS = "insights"
TTL_REASON = "ttl_expired"


@dataclass(frozen=True)
class Pending:
    """A message no consolidation has covered yet."""

    key: str  # "<session_id>#<seq>", the id of its provenance source
    seq: int
    role: str
    content: str
    created_at: datetime


def aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def message_key(session_id: str, seq: int) -> str:
    return f"{session_id}#{seq}"


def consolidated_marks(conn: Connection, user_id: str) -> tuple[dict[str, datetime], dict[str, set[datetime]]]:
    """What earlier consolidations covered. (1) Memories whose provenance names a message: the message counts as
    covered when it is not newer than the memory (a cleared session's seq numbers start again at 1, and its new
    messages are newer than any memory made from the old ones). (2) The audit log's ``consolidated`` rows, with each
    message's exact time: they cover messages whose memories were forgotten, hard ones included, so a forgotten
    memory is never made again from its message."""
    by_item: dict[str, datetime] = {}
    # A constant pattern narrows the scan; the JSON is read here, not in SQL, the same way on both databases.
    for prov, created in conn.execute(
        "SELECT provenance, created_at FROM items WHERE user_id=? AND CAST(provenance AS VARCHAR) LIKE '%message%'",
        [user_id],
    ).fetchall():
        for s in (loads(prov) or {}).get("sources") or []:
            if isinstance(s, dict) and s.get("type") == "message" and isinstance(s.get("id"), str):
                at = aware(created)
                by_item[s["id"]] = max(at, by_item.get(s["id"], at))
    by_log: dict[str, set[datetime]] = {}
    for (detail,) in conn.execute(
        "SELECT detail FROM maintenance_log WHERE user_id=? AND step='consolidate' AND action='consolidated'",
        [user_id],
    ).fetchall():
        times = (json.loads(detail) if isinstance(detail, str) else detail or {}).get("message_times") or {}
        for key, iso in times.items():
            by_log.setdefault(key, set()).add(aware(datetime.fromisoformat(iso)))
    return by_item, by_log


def pending_messages(conn: Connection, user_id: str, session_id: str | None = None) -> dict[str, list[Pending]]:
    """Messages no earlier consolidation covered, by session (one session's, or every session of the user), oldest
    first; the marks are read once for all of them."""
    by_item, by_log = consolidated_marks(conn, user_id)
    where, params = "user_id=?", [user_id]
    if session_id is not None:
        where, params = "user_id=? AND session_id=?", [user_id, session_id]
    rows = conn.execute(
        f"SELECT session_id, seq, role, content, created_at FROM messages WHERE {where} ORDER BY session_id, seq",
        params,
    ).fetchall()
    out: dict[str, list[Pending]] = {}
    for sid, seq, role, content, created in rows:
        key, at = message_key(sid, seq), aware(created)
        if at in by_log.get(key, ()) or (key in by_item and at <= by_item[key]):
            continue
        out.setdefault(sid, []).append(Pending(key, seq, role, content, at))
    return out


def sessions_with_pending(conn: Connection, user_id: str) -> list[str]:
    """The user's sessions that hold at least one message no consolidation covered, oldest activity first."""
    pending = pending_messages(conn, user_id)
    rows = conn.execute(
        "SELECT session_id FROM sessions WHERE user_id=? ORDER BY last_activity_at NULLS FIRST, session_id", [user_id]
    ).fetchall()
    return [sid for (sid,) in rows if sid in pending]


def chunks(messages: Sequence[Pending], limit: int = CHUNK_CHARS) -> list[list[Pending]]:
    out: list[list[Pending]] = [[]]
    size = 0
    for m in messages:
        line = len(m.role) + len(m.content) + 3
        if out[-1] and size + line > limit:
            out.append([])
            size = 0
        out[-1].append(m)
        size += line
    return [c for c in out if c]


def transcript(messages: Sequence[Pending]) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in messages)


class StepPlanner:
    """Plans the four steps for one user; LLM calls happen here (a preview pays for them), writes never do."""

    def __init__(
        self, b: Backends, llm: LLM, items: SemanticMemory, episodes: EpisodicMemory, skills: SkillLibrary
    ) -> None:
        self.b = b
        self.llm = llm
        self.items = items
        self.episodes = episodes
        self.skills = skills

    # -- consolidate -------------------------------------------------------------------------------------------------
    def consolidate(self, user_id: str, session_id: str, clear_session: bool) -> tuple[list[MaintenanceChange], str]:
        with self.b.db.read() as conn:
            pending = pending_messages(conn, user_id, session_id).get(session_id, [])
            total = conn.execute(
                "SELECT count(*) FROM messages WHERE user_id=? AND session_id=?", [user_id, session_id]
            ).fetchone()
        changes: list[MaintenanceChange] = []
        notes: list[str] = []
        extracted: list[tuple[str, str]] = []  # (fact, category) of the LLM's facts, for the category summaries
        limit = self.b.settings.max_text_chars
        # Chunk by chunk: its memories, then the mark that covers its messages (a mark's row stays small, and a run
        # stopped between chunks has marked only what it wrote).
        for chunk in chunks(pending):
            planned, note = self._facts(user_id, chunk)
            if note:
                notes.append(note)
            item_ids: list[str] = []
            for content, cat, imp, method, msgs, before in planned:
                item_ids.append(new_id("item"))
                detail: dict[str, Any] = {
                    "content": content[:limit],
                    "category": cat,
                    "importance": imp,
                    "method": method,
                    "messages": [m.key for m in msgs],
                    "session_id": session_id,
                }
                if before:
                    detail["preceding_text"] = before[:limit]
                changes.append(MaintenanceChange("memorize", "semantic", (item_ids[-1],), detail))
                if method == "fact_extraction":
                    extracted.append((content, cat))
            times = {m.key: m.created_at.isoformat() for m in chunk}
            detail = {"session_id": session_id, "message_times": times, "items": item_ids}
            changes.append(MaintenanceChange("consolidated", "message", tuple(times), detail))
        if extracted:
            changes += self._summaries(user_id, extracted)
        if clear_session and total is not None and total[0]:
            changes.append(MaintenanceChange("clear_session", "session", (session_id,), {"messages": total[0]}))
        if not pending:
            notes.insert(0, f"no messages to consolidate in session {session_id!r}")
        return changes, "; ".join(dict.fromkeys(notes))

    def _facts(
        self, user_id: str, chunk: Sequence[Pending]
    ) -> tuple[list[tuple[str, str, float, str, list[Pending], str]], str]:
        """Facts of one transcript chunk: the LLM's (each sourced by every message of the chunk, as reflection
        names every episode of its window), or offline one per user/assistant message."""
        if self.llm.available:
            result = self.llm.complete(EXTRACT_PROMPT.format(text=transcript(chunk)), "consolidate_extract", user_id)
            parsed = parse_facts(result.text) if result.ok else None
            if parsed is not None:
                out = []
                for content, imp in parsed[0]:
                    answer = self.llm.complete(
                        CLASSIFY_PROMPT.format(existing=self._category_names(user_id), fact=content),
                        "consolidate_classify",
                        user_id,
                    )
                    cat = normalise_category(answer.text) if answer.ok else "general"
                    out.append((content, cat, imp, "fact_extraction", list(chunk), ""))
                return out, "fact_extraction"
            why = result.error if not result.ok else "malformed output"
            note = f"consolidate_offline (LLM failed: {why})"
        else:
            note = "consolidate_offline"
        out = []
        before = ""
        for m in chunk:
            if m.role in OFFLINE_ROLES and m.content.strip():
                out.append((m.content, "general", 0.7, "consolidate_offline", [m], before))
            before = m.content
        return out, note

    def _category_names(self, user_id: str) -> str:
        return ", ".join(sorted(c.name for c in self.items.categories(user_id))) or "none"

    def _summaries(self, user_id: str, facts: Sequence[tuple[str, str]]) -> list[MaintenanceChange]:
        existing = {c.name: c.summary for c in self.items.categories(user_id)}
        out = []
        for cat in dict.fromkeys(c for _, c in facts):
            bullets = "\n".join(f"- {f}" for f, c in facts if c == cat)
            result = self.llm.complete(
                SUMMARY_PROMPT.format(
                    category=cat, existing=existing.get(cat) or "No existing profile.", items=bullets
                ),
                "consolidate_summary",
                user_id,
            )
            if result.ok and result.text.strip():
                out.append(MaintenanceChange("summarise", "category", (cat,), {"summary": result.text.strip()}))
        return out

    # -- reflect -----------------------------------------------------------------------------------------------------
    def reflect(self, user_id: str, window: int) -> tuple[list[MaintenanceChange], str]:
        episodes = self.episodes.recent(user_id, window)
        if not episodes:
            return [], "no episodes"
        covered = self._insight_sources(user_id)
        if all(e.id in covered for e in episodes):
            return [], "no episodes since the last reflection"
        found: list[tuple[str, float | None]] = []
        method = "reflection_offline"
        note = method
        if self.llm.available:
            result = self.llm.complete(REFLECT_PROMPT.format(episodes=render_episodes(episodes)), "reflect", user_id)
            parsed = parse_insights(result.text) if result.ok else None
            if parsed is not None:
                found, method, note = parsed, "reflection", "reflection"
            else:
                note = f"reflection_offline (LLM failed: {result.error or 'malformed output'})"
        if method == "reflection_offline":
            found = [(c, conf) for c, conf in offline_insights(episodes)]
        limit = self.b.settings.max_text_chars
        stored = self.items.with_contents(user_id, INSIGHTS, [c[:limit] for c, _ in found])
        changes, seen = [], set(stored)
        for content, conf in found:
            content = content[:limit]
            if same_text_key(content) in seen:
                continue
            seen.add(same_text_key(content))
            detail = {
                "content": content,
                "confidence": conf,
                "importance": INSIGHT_IMPORTANCE if conf is None else conf,
                "method": method,
                "episodes": [e.id for e in episodes],
            }
            changes.append(MaintenanceChange("insight", "semantic", (new_id("item"),), detail))
        return changes, note

    def _insight_sources(self, user_id: str) -> set[str]:
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT provenance FROM items WHERE user_id=? AND category=?", [user_id, INSIGHTS]
            ).fetchall()
        return {
            s["id"]
            for (prov,) in rows
            for s in (loads(prov) or {}).get("sources") or []
            if isinstance(s, dict) and s.get("type") == "episode" and isinstance(s.get("id"), str)
        }

    # -- mine skills -------------------------------------------------------------------------------------------------
    def mine_skills(self, user_id: str, window: int) -> tuple[list[MaintenanceChange], str]:
        with self.b.db.read() as conn:
            rows = conn.execute("SELECT name, body, provenance FROM skills WHERE user_id=?", [user_id]).fetchall()
        have = {(name, body) for name, body, _ in rows}
        # A window whose every episode is already a source of a mined skill asks the model nothing again (its
        # answer may be worded differently each time, and would register a near-copy).
        mined = {
            s["id"]
            for _, _, prov in rows
            for s in (loads(prov) or {}).get("sources") or []
            if isinstance(s, dict) and s.get("type") == "episode" and isinstance(s.get("id"), str)
        }
        window_ids = [e.id for e in self.episodes.recent(user_id, window)]
        if window_ids and all(i in mined for i in window_ids):
            return [], "no episodes since the last mining"
        result = self.skills.mine(user_id, window)
        changes = []
        for p in result.proposals:
            if (p.name, p.body) in have:
                continue
            have.add((p.name, p.body))
            detail = {
                "name": p.name,
                "kind": p.kind,
                "body": p.body,
                "description": p.description,
                "confidence": p.confidence,
                "method": p.method,
                "episodes": list(p.source_episode_ids),
            }
            changes.append(MaintenanceChange("register_skill", "procedural", (new_id("skill"),), detail))
        return changes, result.strategy

    # -- expire ------------------------------------------------------------------------------------------------------
    def expire(self, user_id: str, now: datetime | None = None) -> tuple[list[MaintenanceChange], str]:
        s = self.b.settings
        now = now or utcnow()
        changes, notes = [], []
        # Episodes expire by age; skills by the time they were last updated (an outcome report keeps one alive).
        for kind, table, column, days in (
            ("episodic", "episodes", "created_at", s.episodic_ttl_days),
            ("procedural", "skills", "updated_at", s.procedural_ttl_days),
        ):
            if not days or days <= 0:
                notes.append(f"{kind}: no TTL")
                continue
            cutoff = now - timedelta(days=days)
            with self.b.db.read() as conn:
                ids = [
                    r[0]
                    for r in conn.execute(
                        f"SELECT id FROM {table} WHERE user_id=? AND archived_at IS NULL AND {column} < ? "
                        f"ORDER BY {column}, id",
                        [user_id, cutoff],
                    ).fetchall()
                ]
            notes.append(f"{kind}: {len(ids)} older than {days:g} days")
            if ids:
                detail = {"ttl_days": days, "cutoff": cutoff.isoformat(), "reason": TTL_REASON}
                changes.append(MaintenanceChange("expire", kind, tuple(ids), detail))
        return changes, "; ".join(notes)
