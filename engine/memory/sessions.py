"""Short-term memory: sessions and their messages, and lifecycle pruning (llmemory §1.6).

Working memory, feedback, the forget log and traces live in their own tables, so pruning a session can never touch
them (llmemory needed pseudo-session filtering for this).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .. import validation
from ..clock import optional_time, parse_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_text
from ..records import ROLES, Message, Page, PrunePlan, SessionInfo
from ..store.sql.database import Connection, one_row
from .base import Backends, insert_rows, like_pattern

PRUNE_RULES = ("idle", "stale", "max")
MESSAGE_TYPES = (
    ("user_id", "str"),
    ("session_id", "str"),
    ("seq", "int"),
    ("role", "str"),
    ("content", "str"),
    ("tokens", "int"),
    ("created_at", "ts"),
)


def estimate_tokens(role: str, content: str) -> int:
    """llmemory's estimate: UTF-8 bytes of role and content over 4, rounded up."""
    return math.ceil((len(role.encode()) + len(content.encode())) / 4)


class SessionStore:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def validate(self, user_id: str, session_id: str, role: str, content: str, created_at: Any) -> tuple[Any, ...]:
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        if role not in ROLES:
            raise InvalidInput(f"unknown role {str(role)[:30]!r}; use one of {', '.join(ROLES)}")
        check_text(content, "message content", self.b.settings.max_text_chars)
        return (user_id, session_id, role, content, optional_time(created_at, "created_at") or utcnow())

    def add_message(
        self, user_id: str, session_id: str, role: str, content: str, created_at: datetime | str | None = None
    ) -> Message:
        """Append one message to a session (created on first use)."""
        return self.add_messages([(user_id, session_id, role, content, created_at)])[0]

    def add_messages(self, rows: Sequence[tuple[Any, ...]], conn: Connection | None = None) -> list[Message]:
        """Append messages (user, session, role, content, created_at|None) in one transaction."""
        valid = [self.validate(*r) for r in rows]
        if conn is None:
            with self.b.db.write() as c:
                return self._insert(c, valid)
        return self._insert(conn, valid)

    def _insert(self, conn: Connection, valid: list[tuple[Any, ...]]) -> list[Message]:
        """Bulk append: one query for the sessions' current last seq, one Arrow insert, one session upsert."""
        if not valid:
            return []
        keys = list(dict.fromkeys((v[0], v[1]) for v in valid))
        rows = conn.execute(
            "SELECT k.u, k.s, coalesce(max(m.seq), 0) FROM (SELECT unnest(?) AS u, unnest(?) AS s) k "
            "LEFT JOIN messages m ON m.user_id = k.u AND m.session_id = k.s GROUP BY k.u, k.s",
            [[k[0] for k in keys], [k[1] for k in keys]],
        ).fetchall()
        next_seq = {(u, sid): last + 1 for u, sid, last in rows}
        out: list[Message] = []
        span: dict[tuple[str, str], list[datetime]] = {}  # (user, session) -> [first, last] message time
        for user_id, session_id, role, content, at in valid:
            key = (user_id, session_id)
            seq = next_seq[key]
            next_seq[key] += 1
            out.append(Message(user_id, session_id, seq, role, content, estimate_tokens(role, content), at))
            first_last = span.setdefault(key, [at, at])
            first_last[0], first_last[1] = min(first_last[0], at), max(first_last[1], at)
        insert_rows(
            conn,
            "messages",
            MESSAGE_TYPES,
            [[m.user_id, m.session_id, m.seq, m.role, m.content, m.tokens, m.created_at] for m in out],
        )
        for (user_id, session_id), (first, last) in span.items():
            conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT (user_id, session_id) DO UPDATE SET "
                "created_at = least(coalesce(sessions.created_at, excluded.created_at), excluded.created_at), "
                "last_activity_at = greatest(coalesce(sessions.last_activity_at, excluded.last_activity_at), "
                "excluded.last_activity_at)",
                [user_id, session_id, first, last],
            )
        return out

    def users(self) -> list[str]:
        """Every user with something stored: sessions, memories of any kind, working memory or a graph (facts stated
        by hand or ingested need no memory)."""
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT user_id FROM sessions UNION SELECT user_id FROM items UNION SELECT user_id FROM episodes "
                "UNION SELECT user_id FROM skills UNION SELECT user_id FROM working_slots "
                "UNION SELECT user_id FROM entities ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]

    def list_sessions(
        self,
        user_id: str | None = None,
        search: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[SessionInfo]:
        """Sessions newest first, filtered and paginated in the database; ``user_id=None`` lists every user's."""
        where: list[str] = ["TRUE"]
        params: list[Any] = []
        if user_id is not None:  # "" is a bad id, not "everyone"
            check_id(user_id, "user id")
            where.append("s.user_id = ?")
            params.append(user_id)
        validation.check_optional_text(search, "search", self.b.settings.max_text_chars)
        if search:
            pattern = like_pattern(search)
            where.append(
                "(s.session_id ILIKE ? ESCAPE '\\' OR s.user_id ILIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 "
                "FROM messages m WHERE m.user_id=s.user_id AND m.session_id=s.session_id "
                "AND m.content ILIKE ? ESCAPE '\\'))"
            )
            params += [pattern, pattern, pattern]
        since = parse_time(since, "since") if since else None  # the time rule: ISO text or datetime, 1900-2999
        until = parse_time(until, "until") if until else None
        if since:
            where.append("s.last_activity_at >= ?")
            params.append(since)
        if until:
            where.append("s.last_activity_at <= ?")
            params.append(until)
        cond = " AND ".join(where)
        limit, offset = _page_args(limit, offset)
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM sessions s WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT s.user_id, s.session_id, s.created_at, s.last_activity_at, "
                f"(SELECT count(*) FROM messages m WHERE m.user_id=s.user_id AND m.session_id=s.session_id), "
                f"(SELECT coalesce(sum(tokens),0) FROM messages m WHERE m.user_id=s.user_id "
                f"AND m.session_id=s.session_id) FROM sessions s WHERE {cond} "
                f"ORDER BY s.last_activity_at DESC NULLS LAST, s.user_id, s.session_id LIMIT ? OFFSET ?",
                params + [limit, offset],
            ).fetchall()
        return Page(tuple(SessionInfo(*r) for r in rows), total, limit, offset)

    def get_session(self, user_id: str, session_id: str) -> SessionInfo:
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        with self.b.db.read() as conn:
            r = conn.execute(
                "SELECT s.user_id, s.session_id, s.created_at, s.last_activity_at, count(m.seq), "
                "coalesce(sum(m.tokens),0) FROM sessions s LEFT JOIN messages m USING (user_id, session_id) "
                "WHERE s.user_id=? AND s.session_id=? "
                "GROUP BY s.user_id, s.session_id, s.created_at, s.last_activity_at",
                [user_id, session_id],
            ).fetchone()
        if r is None:
            raise NotFound(f"no session {session_id!r} for user {user_id!r}")
        return SessionInfo(*r)

    def messages(self, user_id: str, session_id: str, limit: int = 200, offset: int = 0) -> Page[Message]:
        self.get_session(user_id, session_id)
        limit, offset = _page_args(limit, offset)
        with self.b.db.read() as conn:
            total = one_row(
                conn.execute("SELECT count(*) FROM messages WHERE user_id=? AND session_id=?", [user_id, session_id])
            )[0]
            rows = conn.execute(
                "SELECT user_id, session_id, seq, role, content, tokens, created_at FROM messages "
                "WHERE user_id=? AND session_id=? ORDER BY seq LIMIT ? OFFSET ?",
                [user_id, session_id, limit, offset],
            ).fetchall()
        return Page(tuple(Message(*r) for r in rows), total, limit, offset)

    def prune(self, user_id: str, rule: str, apply: bool = False, now: datetime | None = None) -> PrunePlan:
        """The sessions a lifecycle rule selects; deleted (with their messages) only when ``apply`` is true."""
        check_id(user_id, "user id")
        if rule not in PRUNE_RULES:
            raise InvalidInput(f"unknown prune rule {str(rule)[:30]!r}; use idle, stale or max")
        s = self.b.settings
        now = parse_time(now, "now") if now is not None else utcnow()
        base = (
            "SELECT s.user_id, s.session_id, s.created_at, s.last_activity_at, "
            "(SELECT count(*) FROM messages m WHERE m.user_id=s.user_id AND m.session_id=s.session_id), "
            "(SELECT coalesce(sum(tokens),0) FROM messages m WHERE m.user_id=s.user_id "
            "AND m.session_id=s.session_id) FROM sessions s WHERE s.user_id = ?"
        )
        with self.b.db.write() as conn:
            if rule in ("idle", "stale"):
                cutoff = now - (
                    timedelta(minutes=s.session_idle_minutes)
                    if rule == "idle"
                    else timedelta(days=s.session_stale_days)
                )
                # A session without a timestamp is never deleted by the idle or stale rule (parity).
                rows = conn.execute(
                    base + " AND s.last_activity_at IS NOT NULL AND s.last_activity_at < ? ORDER BY s.last_activity_at",
                    [user_id, cutoff],
                ).fetchall()
            else:
                total = one_row(conn.execute("SELECT count(*) FROM sessions WHERE user_id=?", [user_id]))[0]
                excess = max(0, total - s.session_max_per_user)
                # Oldest first; sessions without a timestamp count as the epoch, so they go first (parity).
                rows = (
                    conn.execute(
                        base + " ORDER BY s.last_activity_at ASC NULLS FIRST, s.session_id LIMIT ?", [user_id, excess]
                    ).fetchall()
                    if excess
                    else []
                )
            sessions = tuple(SessionInfo(*r) for r in rows)
            if apply and sessions:
                for info in sessions:
                    conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", [user_id, info.session_id])
                    conn.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", [user_id, info.session_id])
        return PrunePlan(user_id, rule, sessions, sum(x.message_count for x in sessions), apply)


def _page_args(limit: int, offset: int) -> tuple[int, int]:
    return validation.check_int(limit, "limit", lo=1, hi=10_000), validation.check_int(offset, "offset", "offset")
