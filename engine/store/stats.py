"""The store's statistics: counts per memory kind and per user, the backends in use, and warnings.

Behind ``engine.admin.stats`` (the CLI's ``stats``, the dashboard's store page); the warnings come from the orphan
check of upkeep.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..memory.base import Backends
from ..memory.graph import graph_counts
from ..records import StoreStats
from .sql.database import one_row


def _some(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


def store_stats(
    b: Backends, display: str, llm_name: str, find_orphans: Callable[[], dict[str, dict[str, Any]]]
) -> StoreStats:
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
    with b.db.read() as conn:
        counts = {k: one_row(conn.execute(f"SELECT count(*) FROM {t}"))[0] for k, t in tables.items()}
        per_user_rows = conn.execute(
            "SELECT user_id, kind, n FROM (SELECT user_id, 'sessions' kind, count(*) n FROM sessions GROUP BY 1 "
            "UNION ALL SELECT user_id, 'messages', count(*) FROM messages GROUP BY 1 "
            "UNION ALL SELECT user_id, 'items', count(*) FROM items WHERE archived_at IS NULL GROUP BY 1 "
            "UNION ALL SELECT user_id, 'episodes', count(*) FROM episodes WHERE archived_at IS NULL GROUP BY 1 "
            "UNION ALL SELECT user_id, 'skills', count(*) FROM skills WHERE archived_at IS NULL GROUP BY 1 "
            "UNION ALL SELECT user_id, 'traces', count(*) FROM traces GROUP BY 1 "
            "UNION ALL SELECT user_id, 'entities', count(*) FROM entities WHERE archived_at IS NULL GROUP BY 1 "
            "UNION ALL SELECT user_id, 'relations', count(*) FROM relations WHERE archived_at IS NULL "
            "AND valid_to IS NULL GROUP BY 1) ORDER BY 1, 2"
        ).fetchall()
        graph = graph_counts(conn)
    per_user: dict[str, dict[str, int]] = {}
    for user_id, kind, n in per_user_rows:
        per_user.setdefault(user_id, {})[kind] = n
    warnings = []
    others = {n: c for n, c in b.index.other_models().items() if c}
    orphans = find_orphans()
    for kind, found in orphans.items():
        if "unreadable" in found:
            warnings.append(f"{kind}: {found['unreadable']}")
            continue
        if found["without_vector"]:
            hint = f" (vectors exist for other models: {', '.join(others)})" if others else ""
            warnings.append(
                f"{kind}: {len(found['without_vector'])} memories have no {b.embedder.name} "
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
        display,
        f"{b.embedder.name} ({b.embedder.dim}d)",
        b.embedder.dim,
        llm_name,
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
        graph,
    )
