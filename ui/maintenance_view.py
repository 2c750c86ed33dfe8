"""Drawing a maintenance report (a preview or an applied run) and the maintenance audit log, for pages/maintenance.py.

Stored text (a planned memory, an insight, a skill body) is shown inertly (``st.text`` or escaped markdown); a planned
memory links to the messages it comes from and an insight to its episodes (ui/memory_sources.py).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine import MaintenanceChange, MaintenanceLogEntry, MaintenanceReport

from .memory_sources import show_links, source_links
from .text import counted, md_escape, when

STEP_TITLES = {
    "consolidate": "1 · Consolidate sessions",
    "reflect": "2 · Reflect on recent episodes",
    "mine_skills": "3 · Mine skills",
    "expire": "4 · Expire by TTL",
}
ACTION_WORDS = {
    "memorize": "new memory",
    "consolidated": "messages marked consolidated",
    "summarise": "category summary",
    "clear_session": "session cleared",
    "insight": "new insight",
    "register_skill": "new skill",
    "expire": "soft-forget",
}
SHOWN_CHANGES = 50  # per step; a large first consolidation lists the first ones and counts the rest


def change_sources(user: str, c: MaintenanceChange) -> list[Any]:
    d = c.detail
    if c.action == "memorize":
        return [{"type": "message", "id": k} for k in d.get("messages") or []]
    if c.action in ("insight", "register_skill"):
        return [{"type": "episode", "id": e} for e in d.get("episodes") or []]
    if c.action == "expire":
        return [{"type": c.target_kind, "id": i} for i in c.target_ids]
    return []


def show_change(user: str, c: MaintenanceChange) -> None:
    d = c.detail
    with st.container(border=True):
        ids = ", ".join(c.target_ids[:6]) + (f" (+{len(c.target_ids) - 6})" if len(c.target_ids) > 6 else "")
        st.caption(
            f"**{md_escape(ACTION_WORDS.get(c.action, c.action))}** · {md_escape(c.target_kind)} · {md_escape(ids)}"
        )
        if c.action in ("memorize", "insight"):
            st.text(str(d.get("content", "")))
            st.caption(
                f"category {md_escape(d.get('category', 'insights'))} · importance {d.get('importance')} · "
                f"method {md_escape(d.get('method'))}"
            )
        elif c.action == "register_skill":
            st.text(f"{d.get('name')}: {d.get('description') or ''}")
            st.code(str(d.get("body", "")), language=None, wrap_lines=True)
        elif c.action == "summarise":
            st.text(str(d.get("summary", "")))
        elif c.action == "expire":
            st.caption(f"older than {d.get('ttl_days')} days (before {md_escape(d.get('cutoff', ''))[:16]})")
        else:
            st.text(c.summary)
        show_links(source_links(user, change_sources(user, c)))


def show_report(report: MaintenanceReport) -> None:
    """Each step: its changes (or why it had none) and its error."""
    for step in report.steps:
        title = f"{STEP_TITLES.get(step.name, step.name)} — {counted(len(step.changes), 'change')}"
        with st.expander(title, expanded=bool(step.changes or step.error)):
            if step.note:
                st.caption(md_escape(step.note))
            if step.error is not None:
                st.error(f"This step failed; the others still ran: {md_escape(step.error)}")
            for c in step.changes[:SHOWN_CHANGES]:
                show_change(report.user_id, c)
            if len(step.changes) > SHOWN_CHANGES:
                st.caption(f"… and {len(step.changes) - SHOWN_CHANGES} more changes")


def log_rows(entries: list[MaintenanceLogEntry]) -> list[dict[str, Any]]:
    return [
        {
            "at": when(e.occurred_at),
            "run": e.run_id,
            "step": e.step,
            "action": e.action,
            "kind": e.target_kind or "",
            "ids": ", ".join(e.target_ids),
            "actor": e.actor,
            "what": MaintenanceChange(e.action, e.target_kind or "", e.target_ids, e.detail).summary,
        }
        for e in entries
    ]
