"""Episodes: trajectories as step timelines with their outcomes, filtered and paginated; reflection over the last N
episodes into insights that link back to their source episodes."""

from __future__ import annotations

import streamlit as st

from engine import Episode, Item, MemoryEngine
from ui.components import can_edit, fetch_page, need_user, pager, reset_page_on_change, show_flash
from ui.error_display import engine_errors
from ui.memory_sources import show_origin
from ui.nav import page_file
from ui.resources import get_engine
from ui.text import counted, label, md_escape, when
from ui.wording import reflection_strategy

ANY = "any outcome"
OUTCOME_ICONS = {
    "success": ":green[:material/check_circle:]",
    "failure": ":red[:material/cancel:]",
    "partial": ":orange[:material/timelapse:]",
    "recovered": ":blue[:material/autorenew:]",
}
STEPS_IN_LIST = 30  # longer trajectories are shown in full when opened by id


def outcome_icon(outcome: str | None) -> str:
    return OUTCOME_ICONS.get(outcome or "", ":gray[:material/radio_button_unchecked:]")


def timeline(ep: Episode, limit: int | None = None) -> None:
    """The steps in order: observation -> action -> result, one bordered row per step."""
    steps = ep.steps if limit is None else ep.steps[:limit]
    for n, step in enumerate(steps, 1):
        with st.container(border=True):
            cols = st.columns([0.6, 3, 3, 3])
            cols[0].caption(f"step {n}" + (f" · {step.timestamp[11:16]}" if step.timestamp else ""))
            for col, name, text in zip(
                cols[1:],
                ("observation", "action", "result"),
                (step.observation, step.action, step.result),
                strict=False,
            ):
                col.caption(name)
                col.text(text or "—")
    if limit is not None and len(ep.steps) > limit:
        st.caption(f"… {len(ep.steps) - limit} more steps: open the episode by id to see them all.")


def episode_header(ep: Episode) -> None:
    session = f" · session {md_escape(ep.session_id)}" if ep.session_id else ""
    st.caption(
        f"{md_escape(ep.id)} · {when(ep.created_at)}{session} · outcome {md_escape(ep.outcome or 'none')} · "
        f"importance {ep.importance:.2f} · {len(ep.steps)} step{'' if len(ep.steps) == 1 else 's'}"
    )
    show_origin(ep.provenance)  # an imported episode: its source system and id (engine.imports)
    st.text(ep.summary)


def focused_episode(engine: MemoryEngine, user: str) -> None:
    """The episode named in the URL (``?episodes_episode=<id>``), e.g. from an insight's source link."""
    episode_id = st.text_input(
        "Open an episode by id",
        key="episodes_episode",
        bind="query-params",
        placeholder="ep-...",
        help="Insights link here with their source episodes' ids.",
    )
    episode_id = (episode_id or "").strip()
    if not episode_id:
        return
    with engine_errors("Cannot open that episode"):
        ep = engine.episodes.get(user, episode_id)
        with st.container(border=True):
            st.markdown(
                f"#### {outcome_icon(ep.outcome)} Episode {md_escape(ep.id)}"
                + (" (archived)" if ep.archived_at else "")
            )
            episode_header(ep)
            timeline(ep)


def filters(engine: MemoryEngine, user: str) -> tuple[str | None, str | None, int]:
    counts = engine.admin.episode_outcomes(user)
    labelled = {o: n for o, n in counts.items() if o}  # episodes without an outcome only count in the total
    options = [ANY, *labelled]
    shown = {
        ANY: f"{ANY} ({sum(counts.values())})",
        **{o: f"{outcome_icon(o)} {md_escape(o)} ({n})" for o, n in labelled.items()},
    }
    if st.session_state.get("episodes_outcome") not in options:
        st.session_state["episodes_outcome"] = ANY
    outcome = st.pills(
        "Outcome", options, key="episodes_outcome", format_func=lambda o: shown.get(o, o), persist_state="session"
    )
    c1, c2 = st.columns([4, 1])
    query = c1.text_input("Search in summaries and steps", key="episodes_query", persist_state="session")
    size = c2.selectbox("Per page", (5, 10, 25, 50), index=1, key="episodes_page_size", persist_state="session")
    return (None if outcome in (None, ANY) else outcome), (query.strip() or None), size


def episode_list(engine: MemoryEngine, user: str) -> None:
    outcome, query, size = filters(engine, user)
    reset_page_on_change("episodes_page", user, outcome, query, size)
    page = fetch_page(
        "episodes_page",
        size,
        lambda limit, offset: engine.episodes.list_episodes(
            user, outcome=outcome, query=query, limit=limit, offset=offset
        ),
    )
    pager("episodes_page", page, "episodes")
    if not page.rows:
        st.info(
            "No episode matches these filters."
            if (outcome or query)
            else f"User {md_escape(user)} has no episodes yet. Agents record trajectories with `record_episode` "
            "(or the `memory_episode_record` MCP tool): steps of observation, action and result."
        )
        return
    for ep in page.rows:
        title = (
            f"{outcome_icon(ep.outcome)} {label(ep.outcome or 'no outcome', 20)} · {when(ep.created_at)} · "
            f"{label(ep.summary, 90)}"
        )
        with st.expander(title):
            episode_header(ep)
            timeline(ep, STEPS_IN_LIST)


def show_insights(items: list[Item], strategy: str) -> None:
    st.caption(
        f"Made by {md_escape(reflection_strategy(strategy))} · {counted(len(items), 'insight')} stored in category "
        "'insights'."
    )
    for item in items:
        with st.container(border=True):
            st.text(item.content)
            sources = [s["id"] for s in item.provenance.get("sources", []) if s.get("type") == "episode"]
            st.caption(
                f"{md_escape(item.id)} · confidence {item.provenance.get('confidence')} · from "
                f"{counted(len(sources), 'episode')}:"
            )
            cols = st.columns(min(6, max(1, len(sources))))
            for n, source in enumerate(sources):
                cols[n % len(cols)].page_link(
                    page_file("episodes"),
                    label=md_escape(source),
                    icon=":material/timeline:",
                    query_params={"episodes_episode": source},
                )


def reflection(engine: MemoryEngine, user: str) -> None:
    st.subheader("Reflect on recent episodes")
    st.caption(
        "Distils durable insights from the last N episodes (with an LLM when one is configured, otherwise "
        "outcome statistics and recurring actions) and stores them as semantic items whose provenance lists "
        "the source episodes."
    )
    if not can_edit(engine, "reflecting (it stores insights)"):
        return
    with st.form("episodes_reflect_form"):
        window = st.number_input(
            "Episodes to reflect on (the most recent)",
            min_value=1,
            max_value=500,
            value=10,
            step=1,
            key="episodes_reflect_window",
        )
        run = st.form_submit_button("Run reflection", type="primary")
    if run:
        with engine_errors("Reflection failed"):
            items, strategy = engine.items.reflect(user, int(window))
            st.session_state["episodes_reflection"] = {"user": user, "items": items, "strategy": strategy}
    result = st.session_state.get("episodes_reflection")
    if result and result["user"] == user:
        if result["items"]:
            show_insights(result["items"], result["strategy"])
        else:
            st.info(f"No insights: {md_escape(result['strategy'])}.")


def main() -> None:
    engine = get_engine()
    st.title("Episodes")
    show_flash("episodes")
    user = need_user("the Episodes page")
    if not user:
        return
    with engine_errors("Could not read episodes"):
        focused_episode(engine, user)
        episode_list(engine, user)
        reflection(engine, user)


main()
