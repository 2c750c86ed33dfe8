"""JSONL export of a user's memory, in an order that ingest (transfer.py) reads back: categories, items,
episodes, skills, outcomes, messages, working slots, feedback, the graph (entities, relations, mentions), the forget
log. The tables export carries, and why the others are not, are declared in engine/store/schema.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .graph_transfer import export_graph

if TYPE_CHECKING:
    from .transfer import Transfer


def export_records(t: Transfer, user_id: str) -> Iterator[dict[str, Any]]:
    """Every record of a user as JSON-ready dicts in an order Transfer.plan reads back."""
    for c in t.semantic.categories(user_id):
        if c.summary:
            yield {"kind": "category", "user_id": user_id, "name": c.name, "summary": c.summary}
    for i in t.semantic.list_items(user_id, include_archived=True, limit=10_000_000).rows:
        yield {
            "kind": "item",
            "user_id": user_id,
            "id": i.id,
            "category": i.category,
            "content": i.content,
            "importance": i.importance,
            "evergreen": i.evergreen,
            "provenance": i.provenance,
            "source": i.source,
            "created_at": i.created_at.isoformat(),
            "archived_at": i.archived_at.isoformat() if i.archived_at else None,
            **({"preceding_text": i.preceding_text} if i.preceding_text else {}),
        }
    for e in t.episodic.list_episodes(user_id, include_archived=True, limit=10_000_000).rows:
        yield {
            "kind": "episode",
            "user_id": user_id,
            "id": e.id,
            "session_id": e.session_id,
            "steps": [s.__dict__ for s in e.steps],
            "summary": e.summary,
            "outcome": e.outcome,
            "importance": e.importance,
            "provenance": e.provenance,
            "created_at": e.created_at.isoformat(),
            "archived_at": e.archived_at.isoformat() if e.archived_at else None,
        }
    skills = sorted(
        t.skills.list_skills(user_id, include_archived=True, limit=10_000_000).rows,
        key=lambda s: (s.name, s.version),
    )
    for s in skills:
        yield {
            "kind": "skill",
            "user_id": user_id,
            "id": s.id,
            "name": s.name,
            "skill_kind": s.kind,
            "description": s.description,
            "body": s.body,
            "version": s.version,
            "provenance": s.provenance,
            "created_at": s.created_at.isoformat(),
            "archived_at": s.archived_at.isoformat() if s.archived_at else None,
        }
    for o in t.skills.outcomes(user_id):
        yield {
            "kind": "outcome",
            "user_id": user_id,
            "skill_id": o.skill_id,
            "success": o.success,
            "episode_id": o.episode_id,
            "at": o.at.isoformat(),
        }
    page_size = 1000
    offset = 0
    while True:
        page = t.sessions.list_sessions(user_id, limit=page_size, offset=offset)
        for info in page.rows:
            msg_offset = 0
            while True:
                msgs = t.sessions.messages(user_id, info.session_id, limit=10_000, offset=msg_offset)
                for m in msgs.rows:
                    yield {
                        "kind": "message",
                        "user_id": user_id,
                        "session_id": m.session_id,
                        "role": m.role,
                        "content": m.content,
                        "created_at": m.created_at.isoformat(),
                    }
                msg_offset += len(msgs.rows)
                if msg_offset >= msgs.total or not msgs.rows:
                    break
        offset += len(page.rows)
        if offset >= page.total or not page.rows:
            break
    with t.b.db.read() as conn:
        slots = conn.execute(
            "SELECT session_id, slot, value FROM working_slots WHERE user_id=? ORDER BY session_id, slot", [user_id]
        ).fetchall()
    for session_id, slot, value in slots:
        yield {
            "kind": "working",
            "user_id": user_id,
            "session_id": session_id,
            "slot": slot,
            "value": json.loads(value),
        }
    for f in reversed(t.feedback.events(user_id, limit=10_000_000)):
        yield {
            "kind": "feedback",
            "user_id": user_id,
            "item_id": f.item_id,
            "label": f.label,
            "trace_id": f.trace_id,
            "hop": f.hop,
            "note": f.note,
            "created_at": f.created_at.isoformat(),
            "labeller": f.labeller,
            "replaced_at": f.replaced_at.isoformat() if f.replaced_at else None,
        }
    yield from export_graph(t.b, user_id)  # entities, relations (every version), mentions: graph_transfer.py
    for entry in reversed(t.forgetter.log(user_id, limit=10_000_000)):
        yield {
            "kind": "forget_log",
            "user_id": user_id,
            "memory_type": entry.memory_type,
            "ids": list(entry.ids),
            "count": entry.count,
            "mode": entry.mode,
            "reason": entry.reason,
            "actor": entry.actor,
            "at": entry.at.isoformat(),
        }
