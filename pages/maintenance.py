"""Maintenance: llmemory's maintenance cycle (consolidate -> reflect -> mine skills -> TTL expiry) for one user,
previewed first (what each step would change, nothing written), then applied as previewed; one session's
consolidation; and the audit log of every applied change, filterable by run (``?maintenance_run=<id>``)."""

from __future__ import annotations

import streamlit as st

from engine import MaintenanceReport, MemoryEngine
from ui.components import can_edit, flash, need_user, show_flash
from ui.error_display import engine_errors
from ui.maintenance_view import log_rows, show_report
from ui.resources import get_engine
from ui.text import counted, md_escape

PREVIEW = "maintenance_preview"
LOG_LIMIT = 500


def cycle_form(engine: MemoryEngine, user: str) -> None:
    st.subheader("Maintenance cycle")
    st.caption(
        "Consolidates every session's unconsolidated messages into memories that link back to them, reflects on "
        "recent episodes, mines skills and soft-forgets what is past its TTL "
        f"(episodes: {engine.settings.episodic_ttl_days:g} days, skills: {engine.settings.procedural_ttl_days:g} "
        "days; 0 = never). The preview writes nothing; apply writes exactly what it shows."
    )
    with st.form("maintenance_cycle_form"):
        c = st.columns(4)
        consolidate = c[0].checkbox("Consolidate", value=True, key="maintenance_consolidate")
        reflect = c[1].checkbox("Reflect", value=True, key="maintenance_reflect")
        mine = c[2].checkbox("Mine skills", value=engine.settings.skill_mining_enabled, key="maintenance_mine")
        expire = c[3].checkbox("Expire", value=True, key="maintenance_expire")
        w = st.columns(2)
        reflection_window = w[0].number_input("Reflection window (episodes)", 1, 1000, 10, key="maintenance_rw")
        mining_window = w[1].number_input("Mining window (episodes)", 1, 1000, 20, key="maintenance_mw")
        go = st.form_submit_button("Preview the cycle", type="primary")
    if go:
        with engine_errors("The preview failed"):
            report = engine.maintenance.maintain(
                user,
                consolidate=consolidate,
                reflect=reflect,
                mine_skills=mine,
                expire=expire,
                reflection_window=int(reflection_window),
                mining_window=int(mining_window),
                actor="dashboard",
            )
            st.session_state[PREVIEW] = report


def consolidate_form(engine: MemoryEngine, user: str) -> None:
    sessions = [s.session_id for s in engine.sessions.list_sessions(user, limit=200).rows]
    with st.expander("Consolidate one session"):
        if not sessions:
            st.caption(f"User {md_escape(user)} has no sessions.")
            return
        with st.form("maintenance_consolidate_form"):
            session = st.selectbox("Session", sessions, key="maintenance_session")
            clear = st.checkbox("Then clear the session (delete its messages)", key="maintenance_clear")
            go = st.form_submit_button("Preview the consolidation")
        if go:
            with engine_errors("The preview failed"):
                st.session_state[PREVIEW] = engine.maintenance.consolidate(
                    user, session, clear_session=clear, actor="dashboard"
                )


def preview_panel(engine: MemoryEngine, user: str) -> None:
    report: MaintenanceReport | None = st.session_state.get(PREVIEW)
    if report is None or report.user_id != user:
        return
    with st.container(border=True):
        st.markdown(f"#### Preview · {counted(report.change_count, 'change')}")
        st.caption(f"Run {md_escape(report.run_id)}: nothing has been written yet.")
        show_report(report)
        if not report.change_count:
            st.success("Nothing to do: the memory is maintained.")
            return
        if not can_edit(engine, "applying maintenance"):
            return
        c = st.columns([2, 1])
        if c[0].button(
            f"Apply these {counted(report.change_count, 'change')}", type="primary", key="maintenance_apply"
        ):
            with engine_errors("Applying failed"):
                applied = engine.maintenance.apply(report, actor="dashboard")
                st.session_state.pop(PREVIEW, None)
                errors = "; ".join(f"{k}: {v}" for k, v in applied.errors.items())
                kind = "warning" if errors else "success"
                flash(
                    "maintenance",
                    f"Applied {counted(applied.change_count, 'change')} (run {applied.run_id})."
                    + (f" Errors: {md_escape(errors)}" if errors else ""),
                    kind,
                )
                st.session_state["maintenance_run"] = applied.run_id
                st.rerun()
        if c[1].button("Discard the preview", key="maintenance_discard"):
            st.session_state.pop(PREVIEW, None)
            st.rerun()


def audit_log(engine: MemoryEngine, user: str) -> None:
    st.subheader("Audit log")
    typed = st.text_input(
        "Only the run", key="maintenance_run", bind="query-params", placeholder="run_...", help="A run's id"
    )
    run = (typed or "").strip() or None
    with engine_errors("Cannot read the maintenance log"):
        entries = engine.maintenance.log(user, run_id=run, limit=LOG_LIMIT)
        if not entries:
            st.info(
                "No applied maintenance changes for this run."
                if run
                else f"No maintenance has been applied for {md_escape(user)} yet: preview the cycle above, then apply."
            )
            return
        st.caption(
            f"{counted(len(entries), 'change')}, newest first"
            + (f" (the newest {LOG_LIMIT})" if len(entries) == LOG_LIMIT else "")
        )
        st.dataframe(log_rows(entries), hide_index=True, width="stretch")


def main() -> None:
    engine = get_engine()
    st.title("Maintenance")
    show_flash("maintenance")
    user = need_user("the Maintenance page")
    if not user:
        return
    with engine_errors("Could not read the store"):
        cycle_form(engine, user)
        consolidate_form(engine, user)
        preview_panel(engine, user)
        audit_log(engine, user)


main()
