"""Skills: the library ranked by proven utility (Wilson lower bound), versions side by side, outcome history, and
recording an outcome."""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine, RankedSkill, Skill, to_plain
from ui.components import can_edit, flash, need_user, show_flash
from ui.error_display import engine_errors
from ui.figures import cumulative_rate_figure, skill_interval_figure
from ui.memory_sources import show_origin
from ui.resources import get_engine
from ui.text import counted, label, md_escape, one_line, when
from ui.url_state import incoming, write

ANY = "any kind"
KINDS = (ANY, "prompt", "template", "code")
VERSIONS_PER_ROW = 3


def rate_percent(rate: float) -> float:
    """A success rate as the percentage every view of it shows (one decimal: 5 of 8 is 62.5 %, both in the table
    and on the version card; rounding once, here, keeps them from disagreeing as 0.63 and 62 % did)."""
    return round(100 * rate, 1)


def filters() -> tuple[str | None, str | None, int]:
    c1, c2, c3 = st.columns([3, 1, 1])
    query = c1.text_input(
        "Filter by text",
        key="skills_query",
        persist_state="session",
        placeholder="words in the name, description or body",
    )
    kind = c2.selectbox("Kind", KINDS, key="skills_kind", persist_state="session")
    limit = c3.selectbox("Show top", (10, 25, 50, 100), index=1, key="skills_limit", persist_state="session")
    return (query.strip() or None), (None if kind == ANY else kind), limit


def ranked_table(ranked: list[RankedSkill]) -> None:
    st.dataframe(
        [
            {
                "rank": r.rank,
                "name": r.skill.name,
                "version": r.skill.version,
                "kind": r.skill.kind,
                # None before the first outcome (the engine's 0.5 prior is no rate): drawn as "—", with no bar
                "success rate": rate_percent(r.success_rate) if r.trials else None,
                "successes": r.skill.success_count,
                "trials": r.trials,
                "Wilson lower": round(r.wilson_lower, 3),
                "Wilson upper": round(r.wilson_upper, 3),
                "few trials": r.few_trials,
                "id": r.skill.id,
            }
            for r in ranked
        ],
        hide_index=True,
        key="skills_table",
        placeholder="—",
        column_config={
            "success rate": st.column_config.ProgressColumn(min_value=0, max_value=100, format="%.1f%%"),
            "Wilson lower": st.column_config.NumberColumn(format="%.3f"),
            "Wilson upper": st.column_config.NumberColumn(format="%.3f"),
        },
    )
    few = [r for r in ranked if r.few_trials]
    if few:
        st.caption(
            f":material/warning: {len(few)} of these skills have too few trials for their success rate to "
            f"mean much (wide "
            "interval); they rank by the interval's lower bound, so they sit below proven skills."
        )


def version_card(skill: Skill, ranked: RankedSkill | None, selected: bool) -> None:
    with st.container(border=True):
        mark = " (selected)" if selected else ""
        archived = " · archived" if skill.archived_at else ""
        st.markdown(f"**v{skill.version}**{mark} · {skill.kind}{archived}")
        rate = f"{rate_percent(skill.success_rate):.1f}%" if skill.trials else "no trials"
        st.metric("success rate", rate, help="successes / trials; none before the first recorded outcome")
        interval = f" · Wilson 95% {ranked.wilson_lower:.2f}–{ranked.wilson_upper:.2f}" if ranked else ""
        st.caption(
            f"{skill.success_count} of {skill.trials} trials succeeded{interval} · created {when(skill.created_at)}"
        )
        show_origin(skill.provenance)  # an imported skill version: its source system and id (engine.imports)
        if skill.description:
            st.text(skill.description)
        st.code(skill.body, language=None, wrap_lines=True)


def versions_side_by_side(engine: MemoryEngine, user: str, chosen: Skill) -> list[Skill]:
    versions = engine.skills.versions(user, chosen.name)
    ranked = {
        r.skill.id: r for r in engine.skills.rank(user, query=chosen.name, limit=10_000) if r.skill.name == chosen.name
    }
    st.subheader(f"Versions of {label(chosen.name, 60)}")
    for start in range(0, len(versions), VERSIONS_PER_ROW):
        cols = st.columns(VERSIONS_PER_ROW)
        for col, skill in zip(cols, versions[start : start + VERSIONS_PER_ROW], strict=False):
            with col:
                version_card(skill, ranked.get(skill.id), skill.id == chosen.id)
    return versions


def outcome_history(engine: MemoryEngine, user: str, chosen: Skill, versions: list[Skill]) -> None:
    st.subheader("Outcome history")
    outcomes = engine.skills.outcomes(user, name=chosen.name)
    if not outcomes:
        st.caption("No outcomes recorded for this skill yet.")
        return
    labels = {s.id: f"v{s.version}" for s in versions}
    st.plotly_chart(cumulative_rate_figure(outcomes, labels), key="skills_history_chart")
    linked = sum(1 for o in outcomes if o.episode_id)
    st.caption(
        f"{len(outcomes)} outcomes over all versions, {linked} linked to an episode; last on {when(outcomes[-1].at)}."
    )


def record_outcome(engine: MemoryEngine, user: str, chosen: Skill, versions: list[Skill]) -> None:
    st.subheader("Record an outcome")
    if not can_edit(engine, "recording an outcome"):
        return
    live = [s for s in versions if s.archived_at is None] or [chosen]
    ids = [s.id for s in live]
    with st.form("skills_outcome_form"):
        skill_id = st.selectbox(
            "Version",
            ids,
            index=ids.index(chosen.id) if chosen.id in ids else 0,
            format_func=lambda i: next(f"{s.name} v{s.version}" for s in live if s.id == i),
            key="skills_outcome_skill",
        )
        result = st.radio("Outcome", ["success", "failure"], horizontal=True, key="skills_outcome_result")
        episode = st.text_input(
            "Episode id (optional)", key="skills_outcome_episode", placeholder="the episode in which the skill was used"
        )
        submit = st.form_submit_button("Record outcome", type="primary")
    if submit:
        with engine_errors("Outcome not recorded"):
            skill = engine.skills.report_outcome(user, skill_id, result == "success", episode.strip() or None)
            flash(
                "skills",
                f"Recorded a {result} for {md_escape(skill.name)} v{skill.version}: now "
                f"{skill.success_count} of {skill.trials} trials succeeded "
                f"({rate_percent(skill.success_rate):.1f}%).",
            )
            st.rerun()


def strategy_name(strategy: str) -> str:
    if strategy.startswith("skill_mining_offline"):
        return "offline (recurring action sequences)"
    if strategy.startswith("skill_mining"):
        return "LLM"
    return "none"


def mine(engine: MemoryEngine, user: str) -> None:
    """Propose skills from recent episodes; each proposal is accepted (registered) or rejected (forgotten)."""
    st.subheader("Mine skills from recent episodes")
    if not can_edit(engine, "mining and registering skills"):
        return
    st.caption(
        "Proposals only: nothing is stored until you accept one. With an LLM configured the model reads the "
        "episodes; offline, action sequences shared by at least two successful episodes are proposed."
    )
    with st.form("skills_mine_form"):
        c1, c2 = st.columns([1, 3])
        window = c1.number_input(
            "Recent episodes to read", min_value=1, max_value=1000, value=20, step=1, key="skills_mine_window"
        )
        outcomes = c2.text_input(
            "Only episodes with these outcomes (optional)",
            key="skills_mine_outcomes",
            placeholder="comma-separated, e.g. success, solved",
        )
        propose = st.form_submit_button("Propose", type="primary")
    if propose:
        labels = [o.strip() for o in outcomes.split(",") if o.strip()] or None
        with engine_errors("Nothing mined"):
            result = engine.skills.mine(user, int(window), labels)
            # Plain dicts in session state: proposals survive reruns until accepted or rejected.
            st.session_state["skills_mined"] = {
                "user": user,
                "strategy": result.strategy,
                "episodes": len(result.episode_ids),
                "dropped": result.dropped,
                "proposals": [{"pid": n, **to_plain(p)} for n, p in enumerate(result.proposals)],
            }
    mined = st.session_state.get("skills_mined")
    if not mined or mined["user"] != user:
        return
    st.caption(
        f"Strategy: {strategy_name(mined['strategy'])} ({md_escape(mined['strategy'])}) · read "
        f"{mined['episodes']} episode(s)"
        + (f" · {mined['dropped']} unusable proposal(s) dropped" if mined["dropped"] else "")
    )
    if not mined["proposals"]:
        st.info(
            "No proposals to review. Mining proposes only patterns that recur in several successful episodes; "
            "try a larger window or another outcome filter."
        )
        return
    for proposal in list(mined["proposals"]):
        proposal_card(engine, user, mined, proposal)


def proposal_card(engine: MemoryEngine, user: str, mined: dict, proposal: dict) -> None:
    pid = proposal["pid"]
    with st.container(border=True):
        st.markdown(
            f"**{label(proposal['name'], 64)}** · {md_escape(proposal['kind'])} · confidence "
            f"{proposal['confidence']:.2f}"
        )
        if proposal["description"]:
            st.text(proposal["description"])
        st.code(proposal["body"], language=None, wrap_lines=True)
        st.caption("From episodes: " + md_escape(one_line(", ".join(proposal["source_episode_ids"]), 400)))
        accept_col, reject_col = st.columns(2)
        accept = accept_col.button("Accept", key=f"skills_accept_{pid}", type="primary")
        reject = reject_col.button("Reject", key=f"skills_reject_{pid}")
    if accept:
        with engine_errors("Proposal not accepted"):
            plain = {k: v for k, v in proposal.items() if k != "pid"}
            skill = engine.skills.accept_proposal(user, plain)
            mined["proposals"] = [p for p in mined["proposals"] if p["pid"] != pid]
            flash(
                "skills",
                f"Registered {md_escape(skill.name)} v{skill.version} (id {md_escape(skill.id)}) "
                "with provenance to its source episodes.",
            )
            st.rerun()
    if reject:
        mined["proposals"] = [p for p in mined["proposals"] if p["pid"] != pid]
        flash("skills", f"Rejected {md_escape(proposal['name'])}; nothing was stored.", "info")
        st.rerun()


def library(engine: MemoryEngine, user: str) -> None:
    """The ranked library, the chosen skill's versions, its outcome history and the outcome form."""
    query, kind, limit = filters()
    ranked = engine.skills.rank(user, query, kind, limit)
    if not ranked:
        st.info(
            "No skills match."
            if (query or kind)
            else f"User {md_escape(user)} has no skills yet. Agents register them with `register_skill` (or "
            "the `memory_skill_register` MCP tool) and report outcomes with `report_outcome`."
        )
        return
    tried = [r for r in ranked if r.trials]
    if tried:  # a skill without outcomes has no rate to draw (its interval would span 0-1 around a made-up 50 %)
        st.plotly_chart(skill_interval_figure(tried), key="skills_interval_chart")
    untried = len(ranked) - len(tried)
    if untried:
        st.caption(f"{counted(untried, 'skill has', 'skills have')} no recorded outcome yet: no rate, not charted.")
    ranked_table(ranked)
    by_id = {r.skill.id: r for r in ranked}
    linked = incoming("memory")  # ?memory=<skill id>: a link to one skill
    if linked in by_id:
        st.session_state["skills_selected"] = linked
    if st.session_state.get("skills_selected") not in by_id:
        st.session_state["skills_selected"] = ranked[0].skill.id
    chosen_id = st.selectbox(
        "Skill",
        list(by_id),
        key="skills_selected",
        format_func=lambda i: f"#{by_id[i].rank} {by_id[i].skill.name} v{by_id[i].skill.version}",
    )
    write("memory", chosen_id)
    chosen = engine.skills.get(user, chosen_id)
    versions = versions_side_by_side(engine, user, chosen)
    outcome_history(engine, user, chosen, versions)
    record_outcome(engine, user, chosen, versions)


def main() -> None:
    engine = get_engine()
    st.title("Skills")
    show_flash("skills")
    user = need_user("the Skills page")
    if not user:
        return
    st.caption(
        "Ranked by proven utility: the lower bound of the 95% Wilson interval, so 3 successes out of 3 do "
        "not outrank 95 out of 100. The raw success rate and trial count stand beside it."
    )
    with engine_errors("Could not read the skill library"):
        library(engine, user)
    st.divider()
    mine(engine, user)


main()
