"""Overview: what is in the store, what happened when, which retrievals ran recently, and the settings in use."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from engine import MemoryEngine, StoreStats
from ui.components import can_edit, confirmed, flash, show_flash
from ui.error_display import engine_errors
from ui.figures import activity_figure
from ui.forget_watch import drop_text_caches
from ui.layout import metric_row
from ui.nav import page_file
from ui.resources import get_engine, load_demo_with_progress
from ui.settings_view import settings_rows
from ui.sidebar import current_user
from ui.text import counted, md_escape, size_text, when
from ui.trace_table_data import origin_words, usual_traces
from ui.url_state import trace_params, trace_url
from ui.wording import compaction_note

COUNTS = [
    ("Users", "users"),
    ("Sessions", "sessions"),
    ("Messages", "messages"),
    ("Working slots", "working_slots"),
    ("Semantic items", "items"),
    ("Categories", "categories"),
    ("Episodes", "episodes"),
    ("Skills", "skills"),
    ("Feedback labels", "feedback_events"),
    ("Retrieval traces", "traces"),
    ("Forget-log entries", "forget_log_entries"),
]
PER_USER_KINDS = ("sessions", "messages", "items", "episodes", "skills", "traces")


def show_counts(stats: StoreStats) -> None:
    row = metric_row()  # as wide as each label and count, wrapping: six equal columns cut "Semantic items" at 820 px
    for name, attr in COUNTS:
        row.metric(name, f"{getattr(stats, attr):,}", width="content")
    for warning in stats.warnings:
        st.warning(md_escape(warning), icon=":material/warning:")


def show_empty_store(engine: MemoryEngine) -> None:
    st.info(
        "The store is empty. Load the bundled demo dataset (three users: a coding agent, a travel assistant "
        "and a research assistant) to explore memlens, or let an agent write memory through the Python API "
        "(`engine.sessions.add_message`, `engine.items.remember`, `engine.episodes.record`...) or the MCP server."
    )
    if can_edit(engine, "loading the demo") and st.button(
        "Load the demo dataset", key="overview_load_demo", type="primary"
    ):
        with engine_errors("Could not load the demo"):
            load_demo_with_progress(engine)
            st.rerun()


def show_per_user(stats: StoreStats) -> None:
    st.subheader("Per user")
    rows = [
        {"user": user, **{kind: counts.get(kind, 0) for kind in PER_USER_KINDS}}
        for user, counts in sorted(stats.per_user.items())
    ]
    st.dataframe(rows, hide_index=True, key="overview_per_user")


def show_activity(engine: MemoryEngine) -> None:
    st.subheader("Activity over time")
    user = current_user()
    options = ["all users"] + ([user] if user else [])
    scope = st.segmented_control(
        "Whose activity",
        options,
        default="all users",
        key="overview_scope",
        persist_state="session",
        required=True,
        format_func=md_escape,
    )
    rows = engine.admin.activity(None if scope in (None, "all users") else scope)
    if not rows:
        st.caption("No activity recorded yet.")
        return
    st.plotly_chart(activity_figure(rows), key="overview_activity_chart")


def show_recent_traces(engine: MemoryEngine) -> None:
    st.subheader("Recent retrieval traces")
    # The Traces page's filter: evaluation runs (a trace per case) are left out unless asked.
    runs = st.toggle("Include evaluation runs", key="overview_trace_runs")
    page = engine.traces.list_traces(limit=10, filters=usual_traces(runs).to_filter())
    if not page.rows and not runs and engine.traces.list_traces(limit=1).total:
        st.caption("Only evaluation runs have traced retrievals so far: include them above to see theirs.")
    elif not page.rows:
        st.caption(
            "No retrievals traced yet. Ask a question on the Retrieval trace page, or let an agent call "
            "`retrieve` / the `memory_retrieve` MCP tool."
        )
    else:
        event = st.dataframe(
            [
                {
                    "open": trace_url(t["trace_id"], t["user_id"]),
                    "when": when(t["created_at"]),
                    "user": t["user_id"],
                    "question": t["question"],
                    "origin": origin_words(t["origin"]),
                    "hops": t["hops"],
                    "stop reason": t["stop_reason"],
                    "memories in context": len(t["context_ids"]),
                    "embedder": t["embedder"],
                    "reasoner": t["reasoner"],
                    "ms": round(t["total_ms"] or 0.0, 1),
                    "trace id": t["trace_id"],
                }
                for t in page.rows
            ],
            hide_index=True,
            key="overview_traces",
            on_select="rerun",
            selection_mode="single-row",
            column_config={"open": st.column_config.LinkColumn("open", display_text="open", pinned=True)},
        )
        st.caption(traces_caption(len(page.rows), page.total) + " Select a row (or click its 'open') to open it.")
        picked = list(event.selection.rows) if event is not None else []
        if picked and picked[0] < len(page.rows):
            t = page.rows[picked[0]]
            st.page_link(
                page_file("retrieval"),
                label=f"Open trace {t['trace_id']} on the Retrieval trace page",
                icon=":material/open_in_new:",
                query_params=trace_params(t["trace_id"], t["user_id"]),
            )
    st.page_link(page_file("retrieval"), label="Open the Retrieval trace page", icon=":material/manage_search:")
    st.page_link(page_file("traces"), label="Search every trace on the Traces page", icon=":material/table_rows:")
    if page.total and can_edit(engine, "deleting old traces"):
        with st.expander("Delete old traces", expanded="overview_prune_plan" in st.session_state):
            prune_traces_section(engine)


def prune_traces_section(engine: MemoryEngine) -> None:
    st.caption(
        "Every retrieval stores its trace (tens of kB each). Preview which traces are older than some days, "
        "then delete them. Feedback labels always stay; the traces they point to are kept unless you untick "
        "the box."
    )
    user = current_user()
    days = st.number_input(
        "Older than (days)", min_value=0.0, max_value=36500.0, value=30.0, step=1.0, key="overview_prune_days"
    )
    scope = st.radio(
        "Whose traces",
        ["all users"] + ([user] if user else []),
        horizontal=True,
        key="overview_prune_scope",
        format_func=md_escape,
    )
    keep = st.checkbox("Keep traces that feedback labels point to", value=True, key="overview_prune_keep")
    who = None if scope == "all users" else scope
    if st.button("Preview what would be deleted", key="overview_prune_preview"):
        with engine_errors("Could not preview"):
            now = datetime.now(UTC)
            st.session_state["overview_prune_plan"] = (
                days,
                who,
                keep,
                now,
                engine.traces.prune(days, who, keep, apply=False, now=now),
            )
    saved = st.session_state.get("overview_prune_plan")
    if not saved or saved[:3] != (days, who, keep):
        return
    now, plan = saved[3], saved[4]
    kept = ""
    if plan.kept_labelled:
        kept = f" {counted(plan.kept_labelled, 'older trace')} with feedback labels will be kept."
    if not plan.count:
        st.success(f"No trace is older than {days:g} days.{kept}")
        return
    st.warning(
        f"{counted(plan.count, 'trace')} ({size_text(plan.bytes)}) created before {when(plan.cutoff)} UTC would "
        f"be deleted.{kept} The newest of them:"
    )
    st.dataframe(
        [
            {"when": when(t["created_at"]), "user": t["user_id"], "question": t["question"], "trace id": t["trace_id"]}
            for t in plan.sample
        ],
        hide_index=True,
        key="overview_prune_table",
    )
    these = "this trace" if plan.count == 1 else f"these {plan.count:,} traces"
    if confirmed(
        "overview_prune_form",
        "overview_prune_sure",
        f"I understand: delete {these} for good",
        f"Delete {counted(plan.count, 'trace')}",
    ):
        with engine_errors("Nothing was deleted"):
            done = engine.traces.prune(days, who, keep, apply=True, now=now)  # the preview's cutoff
            drop_text_caches()  # deleted traces must not live on in this session's caches
            flash("overview", f"Deleted {counted(done.count, 'trace')} ({size_text(done.bytes)}).")
            st.session_state.pop("overview_prune_plan", None)
            st.rerun()


@st.cache_data(ttl=60, show_spinner=False)
def store_size(_engine: MemoryEngine, store: str, counts: tuple[int, ...]) -> int:
    """The store's bytes on disk: a walk over every file (~13 ms for a 100k-item store), so once a minute at most,
    or at once when the store's record counts have changed."""
    return _engine.admin.disk_bytes()


def keys_line(engine: MemoryEngine) -> str:
    """The extra keys this embedder has written, per kind a memory_keys setting searches (a preset such as deep
    finds nothing through keys that were never written)."""
    per_kind = {kind: engine.admin.key_count(kinds=kind) for kind in ("facts", "next", "sentences")}
    if not any(per_kind.values()):
        return "none written (memory_keys_write off; `memlens keys` builds them)"
    return f"{sum(per_kind.values()):,} written (" + " · ".join(f"{k} {n:,}" for k, n in per_kind.items()) + ")"


def show_settings(engine: MemoryEngine, stats: StoreStats) -> None:
    st.subheader("Store and settings in use")
    left, right = st.columns(2)
    with left:
        counts = (stats.messages, stats.items, stats.episodes, stats.skills, stats.traces, stats.feedback_events)
        if engine.path is None:  # a team store: its bytes are on the database and object-store servers
            st.caption("Team store · tables on PostgreSQL, vectors in LanceDB (password masked)")
        else:
            st.caption(f"Store location · {size_text(store_size(engine, stats.store, counts))} on disk")
        st.code(stats.store, language=None, wrap_lines=True)
    with right:
        st.caption("Embedder · LLM · the memories' extra keys")
        llm = stats.llm if stats.llm != "offline" else "offline (no LLM configured: documented offline strategies)"
        st.code(f"embedder: {stats.embedder}\nLLM: {llm}\nkeys: {keys_line(engine)}", language=None, wrap_lines=True)
    with st.expander("All settings (values in use, defaults, meaning)"):
        st.dataframe(settings_rows(engine.settings), hide_index=True, key="overview_settings")
    if can_edit(engine, "compacting the store"):
        compact_section(engine)
    usage = engine.admin.usage()
    if usage:
        st.caption("LLM token usage per user and operation")
        st.dataframe([{**u, "last_at": when(u["last_at"])} for u in usage], hide_index=True, key="overview_usage")


def compact_section(engine: MemoryEngine) -> None:
    compacted = st.session_state.pop("overview_compacted", None)
    with st.expander("Compact the store", expanded=compacted is not None):
        st.caption(
            "Folds new memories into the full-text and user indexes, merges the vector tables' small files and "
            "deletes LanceDB versions replaced more than vector_version_retention_s "
            f"({engine.settings.vector_version_retention_s:g} s) ago. Writes do this every few thousand "
            "memories; `python -m engine optimize` also builds approximate vector indexes for large tables."
        )
        if st.button("Compact now", key="overview_optimize"):
            with engine_errors("Could not compact the store"), st.spinner("Compacting..."):
                before = engine.admin.disk_bytes()
                engine.admin.optimize(vector_index=False)
                store_size.clear()
                # Shown in this section, which stays open: not at the top of the page, far from the button. The
                # store can grow here (the replaced files stay for the retention period): the note says so.
                st.session_state["overview_compacted"] = compaction_note(
                    before, engine.admin.disk_bytes(), engine.settings.vector_version_retention_s, size_text
                )
                st.rerun()
        if compacted:
            st.success(compacted)  # sizes and our own words only: no stored text to escape


def traces_caption(shown: int, total: int) -> str:
    if total == 1:
        return "The only trace so far."
    if shown == total:
        return f"All {total} traces."
    return f"The {shown} newest of {total:,} traces."


def main() -> None:
    engine = get_engine()
    st.title("Overview")
    show_flash("overview")
    with engine_errors("Could not read the store"):
        stats = engine.admin.stats()
        show_counts(stats)
        if stats.users == 0:
            show_empty_store(engine)
        else:
            show_per_user(stats)
            show_activity(engine)
            show_recent_traces(engine)
        show_settings(engine, stats)


main()
