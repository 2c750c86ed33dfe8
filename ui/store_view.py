"""Streamlit pieces of the Store insights page: near-duplicate pairs with their forget actions, echoes, memories
in no recent context, queries that found nothing, stale facts still recalled, and a memory's blast radius."""

from __future__ import annotations

import streamlit as st

from engine import BlastRadius, InsightMemory, MemoryEngine, NearDuplicate, Page, UnusedMemories
from ui.components import can_edit, fetch_page, flash, forget_form, pager, reset_page_on_change
from ui.error_display import engine_errors
from ui.layout import metric_row
from ui.text import counted, md_escape, one_line, when
from ui.url_state import trace_url

PAIRS_PER_PAGE = 10
ROWS_PER_PAGE = 50


def _memory_lines(memory: InsightMemory, label: str) -> None:
    st.caption(f"{label} · {md_escape(memory.id)} · {md_escape(memory.category)} · written {when(memory.created_at)}")
    st.text(memory.text)


def refresh_note(engine: MemoryEngine, user: str) -> float | None:
    """When near-duplicates and echoes were computed, with a button to compute them again; the refresh's lowest
    similarity (None before the first refresh)."""
    done = engine.insights.refreshed(user)
    left, right = st.columns([4, 1], vertical_alignment="center")
    if done is None:
        left.info(
            "Near-duplicates and echoes are computed on demand (every memory's vector against every other's: "
            "seconds at 100k memories), then kept until the next refresh. Not computed yet for this user."
        )
    else:
        left.caption(
            f"Computed {when(done.refreshed_at)} UTC over {counted(done.items, 'memory', 'memories')} in "
            f"{done.seconds:.1f} s: {counted(done.pairs, 'pair')} from similarity {done.min_similarity:.2f} up, "
            f"{counted(done.echoes, 'echo', 'echoes')}. Forgotten memories drop out at once; new ones wait for "
            "the next refresh."
        )
    if not engine.read_only and right.button("Refresh now", key="store_refresh", type="secondary"):
        with engine_errors("Could not compute the insights"), st.spinner("Comparing every memory with every other"):
            result = engine.insights.refresh(user)
            flash(
                "store",
                f"Computed: {counted(result.pairs, 'near-duplicate pair')}, "
                f"{counted(result.echoes, 'echo', 'echoes')} in {result.seconds:.1f} s.",
            )
            st.rerun()
    return None if done is None else done.min_similarity


def _forget_one(engine: MemoryEngine, user: str, gone: InsightMemory, kept: InsightMemory) -> None:
    with engine_errors("Nothing was forgotten"):
        reason = f"near-duplicate of {kept.id} (store insights)"
        result = engine.forgetting.forget(user, "semantic", [gone.id], reason, "soft", actor="ui")
        flash(
            "store",
            f"Forgot {md_escape(', '.join(result.forgotten)) or 'nothing (already forgotten)'} (soft), keeping "
            f"{md_escape(kept.id)}. The forget log has the entry.",
        )
        st.rerun()


def _pair(engine: MemoryEngine, user: str, pair: NearDuplicate, n: int) -> None:
    with st.container(border=True):
        st.markdown(f"**Pair {n}** · similarity {pair.similarity:.3f}")
        left, right = st.columns(2)
        with left:
            _memory_lines(pair.a, "Older")
        with right:
            _memory_lines(pair.b, "Newer")
        if engine.read_only:
            return
        keep_a, keep_b = st.columns(2)
        if keep_a.button("Keep older, forget newer", key=f"store_pair_{pair.a.id}_{pair.b.id}_b"):
            _forget_one(engine, user, pair.b, pair.a)
        if keep_b.button("Keep newer, forget older", key=f"store_pair_{pair.a.id}_{pair.b.id}_a"):
            _forget_one(engine, user, pair.a, pair.b)


def near_duplicates(engine: MemoryEngine, user: str) -> None:
    floor = refresh_note(engine, user)
    if floor is None:
        return
    default = max(floor, float(engine.settings.near_duplicate_similarity))
    threshold = st.slider(
        "Similarity at least",
        min_value=floor,
        max_value=1.0,
        value=min(default, 1.0),
        step=0.01,
        key="store_dup_threshold",
        help="Cosine similarity of the two memories' vectors. 1.00 is the same text; paraphrases sit near 0.9.",
    )
    reset_page_on_change("store_dup_page", user, threshold)
    page = fetch_page(
        "store_dup_page", PAIRS_PER_PAGE, lambda lim, off: engine.insights.near_duplicates(user, threshold, lim, off)
    )
    if not page.rows:
        st.success("No near-duplicate pairs at this similarity.")
    else:
        st.caption(
            "Merging keeps one memory of a pair and forgets the other (soft: archived, never retrieved again, kept "
            "in the forget log with the kept memory named). Hard forgetting is on Memories & forgetting."
        )
        pager("store_dup_page", page, "pairs")
        for n, pair in enumerate(page.rows, start=page.offset + 1):
            _pair(engine, user, pair, n)
    log = engine.forgetting.log(user, limit=10)
    if log:
        with st.expander("Forget log: the last entries", expanded=True):
            st.dataframe(
                [
                    {
                        "when": when(e.at),
                        "mode": e.mode,
                        "forgotten": ", ".join(e.ids),
                        "reason": e.reason,
                        "by": e.actor,
                    }
                    for e in log
                ],
                hide_index=True,
                key="store_forget_log",
            )


def echoes(engine: MemoryEngine, user: str) -> None:
    if engine.insights.refreshed(user) is None:
        st.info("Echoes are computed with the near-duplicates: refresh on the Near-duplicates tab.")
        return
    page = fetch_page("store_echo_page", ROWS_PER_PAGE, lambda lim, off: engine.insights.echoes(user, lim, off))
    if not page.rows:
        st.success("No memory repeats what the agent was given before it was written.")
        return
    st.caption(
        "Memories repeating what the agent had been given before they were written: a memory that sat in an "
        "earlier context, or the agent's own earlier reply. An agent feeding on itself."
    )
    pager("store_echo_page", page, "echoes")
    st.dataframe(
        [
            {
                "memory": one_line(e.memory.text, 90),
                "written": when(e.memory.created_at),
                "repeats": one_line(e.source_text, 90) or "(no longer stored)",
                "given as": "a memory in a context" if e.source == "context" else "an assistant message",
                "given": when(e.given_at),
                "similarity": round(e.similarity, 3),
                "memory id": e.memory.id,
                "open": trace_url(e.trace_id, user, tab="context") if e.trace_id else None,
            }
            for e in page.rows
        ],
        hide_index=True,
        key="store_echo_table",
        column_config={"open": st.column_config.LinkColumn("trace", display_text="open trace")},
    )


def unused(engine: MemoryEngine, user: str) -> None:
    last = st.number_input(
        "Traces to look at (the newest)", min_value=1, max_value=100_000, value=100, step=50, key="store_unused_n"
    )
    reset_page_on_change("store_unused_page", user, last)
    holder: list[UnusedMemories] = []

    def fetch(lim: int, off: int) -> Page[InsightMemory]:
        result = engine.insights.never_retrieved(user, int(last), lim, off)
        holder.append(result)  # how many traces were looked at, for the caption
        return Page(result.rows, result.total, lim, off)

    page = fetch_page("store_unused_page", ROWS_PER_PAGE, fetch)
    looked = holder[-1].traces if holder else 0
    if not page.rows:
        st.success(f"Every active memory was in the context of at least one of the last {counted(looked, 'trace')}.")
        return
    st.caption(
        f"{counted(page.total, 'active memory', 'active memories')} in no context of the last "
        f"{counted(looked, 'trace')}, oldest first."
    )
    pager("store_unused_page", page, "memories")
    st.dataframe(
        [
            {"memory": one_line(m.text, 100), "category": m.category, "written": when(m.created_at), "id": m.id}
            for m in page.rows
        ],
        hide_index=True,
        key="store_unused_table",
    )


def empty_queries(engine: MemoryEngine, user: str) -> None:
    page = fetch_page("store_empty_page", ROWS_PER_PAGE, lambda lim, off: engine.insights.empty_queries(user, lim, off))
    if not page.rows:
        st.success("Every question of this user got a non-empty context.")
        return
    pager("store_empty_page", page, "questions")
    st.dataframe(
        [
            {
                "question": one_line(q.question, 100),
                "asked": when(q.created_at),
                "why empty": "nothing found"
                if q.candidates == 0
                else f"all {counted(q.candidates, 'candidate')} filtered out",
                "open": trace_url(q.trace_id, user),
            }
            for q in page.rows
        ],
        hide_index=True,
        key="store_empty_table",
        column_config={"open": st.column_config.LinkColumn("trace", display_text="open trace")},
    )


def stale_facts(engine: MemoryEngine, user: str) -> None:
    recalls = engine.insights.stale_recalls(user)
    if not recalls:
        st.success("No superseded or ended fact was recalled by the last 200 traces after it stopped being valid.")
        return
    st.caption(
        "Facts of the graph that stopped being valid (a newer value superseded them, or they ended) but whose "
        "source memory still reached a context afterwards, or that the entity stage still brought in."
    )
    st.dataframe(
        [
            {
                "fact": r.fact,
                "valid until": when(r.valid_to),
                "superseded": "yes" if r.superseded_by else "ended",
                "recalled through": "the fact itself" if r.memory_id == r.relation_id else r.memory_id,
                "question": one_line(r.question, 80),
                "asked": when(r.recalled_at),
                "open": trace_url(r.trace_id, user, tab="context"),
            }
            for r in recalls
        ],
        hide_index=True,
        key="store_stale_table",
        column_config={"open": st.column_config.LinkColumn("trace", display_text="open trace")},
    )


def _radius_tables(user: str, radius: BlastRadius) -> None:
    row = metric_row()
    row.metric("Traces", f"{radius.traces_total:,}", width="content")
    row.metric("Contexts entered", f"{radius.contexts_total:,}", width="content")
    row.metric("Evaluation cases", f"{len(radius.cases):,}", width="content")
    row.metric("Harmful labels", f"{radius.harmful:,}", width="content")
    row.metric("Useful labels", f"{radius.useful:,}", width="content")
    if radius.traces:
        st.markdown("**Traces it was a candidate in** (newest first)")
        st.dataframe(
            [
                {
                    "question": one_line(t.question, 90),
                    "asked": when(t.created_at),
                    "in the context": f"at rank {t.context_rank}" if t.context_rank else "no (a candidate only)",
                    "labels": ", ".join(e.label for e in t.labels) or "—",
                    "open": trace_url(t.trace_id, user, tab="context", memory=radius.memory_id),
                }
                for t in radius.traces
            ],
            hide_index=True,
            key="store_radius_traces",
            column_config={"open": st.column_config.LinkColumn("trace", display_text="open trace")},
        )
        if radius.traces_total > len(radius.traces):
            st.caption(f"The newest {len(radius.traces):,} of {radius.traces_total:,} traces are listed.")
    if radius.cases:
        st.markdown("**Evaluation cases it touched**")
        st.dataframe(
            [
                {
                    "set": c.set_name,
                    "case": c.case_id,
                    "question": one_line(c.question, 80),
                    "expects it": "yes" if c.expected else "no",
                    "in the context of": counted(len(c.runs), "run") if c.runs else "no run",
                }
                for c in radius.cases
            ],
            hide_index=True,
            key="store_radius_cases",
        )
    if radius.labels:
        st.markdown("**Labels it received**")
        st.dataframe(
            [
                {
                    "label": e.label,
                    "when": when(e.created_at),
                    "note": e.note,
                    "from a trace": "yes" if e.trace_id else "no",
                }
                for e in radius.labels
            ],
            hide_index=True,
            key="store_radius_labels",
        )


def blast_radius(engine: MemoryEngine, user: str, linked: str | None) -> str | None:
    """The memory picked (typed, linked, or one labelled harmful) and everything it touched; returns its id."""
    current = engine.feedback.events(user, limit=2000, current_only=True)  # a replaced label is history
    harmful = list(dict.fromkeys(e.item_id for e in current if e.label == "harmful"))
    if linked:
        st.session_state["store_radius_id"] = linked
    left, right = st.columns(2, vertical_alignment="bottom")
    if harmful:
        texts = engine.feedback.memory_texts(user, harmful[:200])
        pick = right.selectbox(
            "Or one labelled harmful",
            ["", *harmful[:200]],
            key="store_radius_harmful",
            format_func=lambda i: "—" if not i else f"{i} · {one_line(texts.get(i, ''), 50)}",
        )
        if pick and pick != st.session_state.get("store_radius_last_pick"):
            st.session_state["store_radius_last_pick"] = pick
            st.session_state["store_radius_id"] = pick
    if st.session_state.pop("store_radius_done", False):
        # set, not deleted: the browser keeps (and sends back) a deleted widget's old value
        st.session_state.update({"store_radius_forget_reason": "", "store_radius_forget_sure": False})
    typed = left.text_input("Memory id", key="store_radius_id", placeholder="item_…")
    memory_id = typed.strip()
    if not memory_id:
        st.caption(
            "Give a memory id (or pick a memory labelled harmful) to see every trace, context, evaluation "
            "case and label it touched."
        )
        return None
    with engine_errors("Could not follow that memory"):
        radius = engine.insights.blast_radius(user, memory_id)
        st.markdown(f"**{md_escape(radius.memory_id)}** · {radius.kind or 'unknown kind'} · {radius.state}")
        if radius.text:
            st.text(radius.text)
        _radius_tables(user, radius)
        if radius.state == "active" and can_edit(engine, "forgetting"):
            st.markdown("**Forget it from here**")
            chosen = forget_form(
                "store_radius",
                "soft: archive (kept, fetchable by id, never retrieved)",
                "hard: delete everywhere, its text taken out of every trace above (cannot be undone)",
                "I have checked what it touched above",
                "Forget this memory",
            )
            if chosen is not None:
                mode, reason = chosen
                result = engine.forgetting.forget(user, radius.kind, [radius.memory_id], reason, mode, actor="ui")
                flash(
                    "store",
                    f"Forgot {md_escape(', '.join(result.forgotten)) or 'nothing'} ({mode}); it touched "
                    f"{counted(radius.traces_total, 'trace')}. The forget log has the entry.",
                )
                st.session_state["store_radius_done"] = True  # an empty form for the next memory
                st.rerun()
        return radius.memory_id
    return memory_id
