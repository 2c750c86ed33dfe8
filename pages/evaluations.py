"""Evaluations: expectation sets and their runs. Start a run (a preset, overrides, hops) with a progress bar; read a
run's metrics per category, the loss funnel down to a ranking cut-off (click a bar to filter the cases), the cases
with where each miss was lost, each opening its trace at "Why not?"; compare two runs case by case; see which hop
found each expected memory and how each score separates them from the rest (ui/eval_views.py); follow a set's
metrics across its runs.
"""

from __future__ import annotations

import streamlit as st

from engine import HOPS_RANGE, PRESETS, all_losses
from ui.components import can_edit, confirmed, flash, kept_choice, show_flash
from ui.error_display import engine_errors
from ui.eval_data import FOUND, TABLE_METRICS, case_rows, delta_rows, metric_rows, parse_overrides, run_label
from ui.eval_figures import ab_scatter, category_bars, funnel_figure, loss_bars, loss_label
from ui.eval_views import attribution_section, calibration_section, history_section
from ui.forget_watch import current_stamp, drop_text_caches
from ui.layout import metric_row
from ui.preset_choice import preset_names
from ui.resources import get_engine
from ui.text import counted, md_escape, when
from ui.trace_links import open_trace_page
from ui.url_state import incoming, url_tabs, write
from ui.wording import setting_changes, store_counts_text

engine = get_engine()
st.title("Evaluations")
st.caption(
    "Does a change help across a set of questions, and where are the misses lost? Each case runs through "
    "the normal traced retrieval; every miss is traced to the stage and rule that lost it."
)
show_flash("ev")

sets = {s.name: s for s in engine.evals.sets()}


def offer_demo_set(primary: bool) -> None:
    """The demo's expectation set on request, also once other sets exist (a labeller's set made first must not hide
    it)."""
    if (
        engine.admin.demo_loaded()
        and can_edit(engine, "creating the demo set")
        and st.button(
            "Create the demo expectation set and run it", key="ev_demo", type="primary" if primary else "secondary"
        )
    ):
        with engine_errors("Could not create the demo set"), st.spinner("Running the demo evaluation..."):
            if name := engine.evals.load_demo():
                st.query_params["set"] = name  # opens on it, as a link to it would
            st.rerun()


if not sets:
    st.info(
        'No expectation sets yet. Pin one from a trace on the Retrieval trace page ("Pin as expectation"), '
        "import a benchmark (`python -m engine import-benchmark locomo PATH --set NAME`), or create the demo's."
    )
    offer_demo_set(primary=True)
    st.stop()
if "demo" not in sets:
    offer_demo_set(primary=False)

if (linked_set := incoming("set")) in sets:  # ?set=<name> from a link: that set, its run (?run=) and tab (?tab=)
    st.session_state["ev_set"] = linked_set
set_name = kept_choice(
    st.selectbox,
    "Expectation set",
    list(sets),
    key="ev_set",
    default=next(iter(sets)),
    format_func=lambda n: f"{n} · {counted(sets[n].cases, 'case')} · {counted(sets[n].runs, 'run')}",
)
current = sets[set_name]
write("set", set_name)
linked_run = incoming("run")
st.caption(
    md_escape(current.description or "")
    + (
        "  \nCategories: " + ", ".join(f"{md_escape(c or '(none)')} ({n})" for c, n in current.categories.items())
        if current.categories
        else ""
    )
)


@st.cache_data(max_entries=8, show_spinner=False)
def _results(store: str, run_id: str, forgets: tuple | None):
    """A finished run's results change only when a forget redacts them: read once per run and per newest forget
    (``forgets``, ui/forget_watch.py; a 1,000-case run is ~1,000 rows of JSON)."""
    return engine.evals.results(run_id)


def missing_keys_note(method: str, preset: str, overrides: dict) -> str:
    """A warning to add when the run searched the memories' extra keys and none of that kind were written (the
    run then measured the preset without them)."""
    searched = engine.settings.with_overrides({**PRESETS[preset], **overrides}).memory_keys
    if method != "memlens" or searched == "off" or engine.admin.key_count(kinds=searched) > 0:
        return ""
    return (
        f" It searched the memories' extra keys ({searched}) and this store has none, so it ran as if they were "
        f"off: `memlens keys --kinds {searched}` writes them."
    )


def results_of(run) -> list:
    if run.status != "done":  # a run still going changes with every case
        return engine.evals.results(run.run_id)
    return _results(engine.location.display, run.run_id, current_stamp())


TABS = ["Runs", "Compare two runs", "Hops and scores", "History", "Cases"]
tab_runs, tab_compare, tab_analysis, tab_history, tab_cases = url_tabs(TABS, key="ev_tab")
CUTOFFS = (1, 5, 10, 25)

# -- runs ----------------------------------------------------------------------------------------------------------
with tab_runs:
    start = False
    if can_edit(engine, "starting a run"):
        with st.expander("Start a run", expanded=not current.runs), st.form("ev_start_form"):
            c1, c2, c3 = st.columns(3)
            method = c1.selectbox(
                "Method",
                ["memlens", "vector", "bm25"],
                key="ev_method",
                help="memlens: the traced pipeline; vector / bm25: plain rankings as baselines",
            )
            preset = c2.selectbox(
                "Preset", preset_names(), key="ev_preset", help="A named set of retrieval settings (engine/presets.py)."
            )
            # Empty: the preset's hops (deep runs 2), or the engine's; a number wins over the preset.
            hops = c3.number_input(
                "Hops",
                *HOPS_RANGE,
                None,
                key="ev_hops",
                placeholder="the preset's",
                help="Empty: the preset's hops (deep: 2), else the engine's setting. A number wins over the preset.",
            )
            overrides_text = st.text_area(
                "Overrides (KEY=VALUE, one per line)",
                key="ev_overrides",
                height=80,
                placeholder="top_k=30\nbm25_weight=0.4",
            )
            label = st.text_input("Label", key="ev_label", placeholder="e.g. bm25 weight 0.4")
            start = st.form_submit_button("Run evaluation", type="primary")
    if start:
        bar = st.progress(0.0, text=f"Running {counted(current.cases, 'case')}...")

        def show_progress(n: int, total: int) -> None:
            bar.progress(n / total, text=f"{n}/{total} cases")

        with engine_errors("The run failed"):
            overrides = parse_overrides(overrides_text)
            run = engine.evals.evaluate(
                set_name,
                preset=None if preset == "default" else preset,
                overrides=overrides or None,
                hops=None if hops is None else int(hops),
                label=label.strip() or None,
                method=method,
                progress=show_progress,
            )
            st.session_state["ev_run"] = run.run_id
            missing = missing_keys_note(method, preset, overrides)
            flash("ev", f"Run {run.run_id} finished: {run.cases} cases.{missing}", "warning" if missing else "success")
            st.rerun()
        bar.empty()

    runs = {r.run_id: r for r in engine.evals.runs(set_name)}
    if not runs:
        st.info("No runs of this set yet: start one above.")
    else:
        if linked_run in runs:
            st.session_state["ev_run"] = linked_run
        if st.session_state.get("ev_run") not in runs:
            st.session_state["ev_run"] = next(iter(runs))
        run_id = st.selectbox("Run", list(runs), key="ev_run", format_func=lambda i: run_label(runs[i]))
        if tab_runs.open is not False:
            write("run", run_id)
        run = runs[run_id]
        st.caption(
            f"method {run.method} · preset {run.preset or 'default'} · hops {run.hops or 'as set'} · "
            f"settings changed: {md_escape(setting_changes(run.overrides))} · code {md_escape(run.code_version)} · "
            f"store then: {md_escape(store_counts_text(run.store_counts))}"
        )
        results = results_of(run)
        st.dataframe(
            metric_rows(run.metrics),
            key="ev_metrics",
            hide_index=True,
            column_config={
                k: st.column_config.NumberColumn(format="%.0f" if k.startswith("latency") else "%.3f")
                for k in TABLE_METRICS
            },
        )
        st.plotly_chart(category_bars(run.metrics), key="ev_bars")
        st.session_state.setdefault("ev_cutoff", 10)  # not default=: a link or test may set it first
        cutoff = st.segmented_control(
            "Ranking cut-off k",
            CUTOFFS,
            key="ev_cutoff",
            help="An expected memory in the context but ranked below k counts as lost to ranking.",
        )
        k = int(cutoff or 10)
        losses = engine.evals.losses(run.run_id, k)
        left, right = st.columns(2)
        left.plotly_chart(funnel_figure(losses["funnel"]), key="ev_funnel")
        picked = None
        with right:
            if losses["losses"]:
                event = st.plotly_chart(
                    loss_bars(losses["losses"]), key="ev_losses", on_select="rerun", selection_mode="points"
                )
                points = event.get("selection", {}).get("points", []) if event else []
                if points and points[0].get("customdata"):
                    picked = tuple(points[0]["customdata"])
            else:
                # Not "nothing was lost": below the cut-off, ranking may still lose (recall@1 0.07 beside it).
                st.success(f"Every expected memory reached the context, ranked in the top {k}.")
                r1 = run.metrics.get("overall", {}).get("recall@1")
                if k > 1 and r1 is not None and r1 < 1:
                    st.caption(f"recall@1 is {r1:.2f}: a lower cut-off shows the expected memories ranked below 1.")

        st.subheader("Cases")
        categories = sorted({r.category or "(none)" for r in results})
        stage_options = ["(any)", FOUND, *sorted({x["stage"] for r in results for x in all_losses(r, k).values()})]
        f1, f2 = st.columns(2)
        chosen_cats = f1.multiselect("Category", categories, key="ev_f_cat")
        if picked and st.session_state.get("ev_picked") != picked:
            st.session_state["ev_picked"] = picked
            st.session_state["ev_f_stage"] = picked[0] if picked[0] in stage_options else "(any)"
        stage = f2.selectbox("Where lost", stage_options, key="ev_f_stage")
        rule = None
        if picked and st.session_state.get("ev_f_stage") == picked[0]:
            rule = picked[1]
            st.caption(f"Filtered by the funnel: {md_escape(loss_label(*picked))}")
        rows = case_rows(results, chosen_cats, None if stage == "(any)" else stage, rule, k)
        st.dataframe(
            rows,
            key="ev_cases",
            hide_index=True,
            column_config={"recall@10": st.column_config.NumberColumn(format="%.2f")},
        )
        st.caption(f"{len(rows)} of {len(results)} cases")
        if rows and run.method == "memlens":
            by_case = {r.case_id: r for r in results}
            o1, o2 = st.columns([3, 2], vertical_alignment="bottom")
            case_id = o1.selectbox(
                "Open a case",
                [r["case"] for r in rows],
                key="ev_open_case",
                format_func=lambda c: f"{c} · {by_case[c].question[:80]}",
            )
            case = by_case[case_id]
            memories = [k for k in case.expected if k in case.lost] or list(case.expected)
            memory = o2.selectbox(
                "Expected memory",
                memories,
                key="ev_open_memory",
                format_func=lambda m: f"{m} · {case.lost[m]['stage']}" if m in case.lost else f"{m} · in context",
            )
            # Under the pickers, not in a third column: at 820 px that column cut the label to "Open…".
            if st.button("Open trace at Why not?", key="ev_open_trace") and case.trace_id:
                open_trace_page(case.user_id, case.trace_id, memory)
        if can_edit(engine, "deleting a run"):
            with st.expander("Delete this run"):
                if confirmed(
                    "ev_delete_run_form",
                    "ev_delete_run_sure",
                    f"Delete run {run.run_id} and its {len(results)} traces",
                    "Delete run",
                ):
                    with engine_errors("Could not delete the run"):
                        n = engine.evals.delete_run(run.run_id)
                        drop_text_caches()  # its deleted traces must not live on in this session's caches
                        flash("ev", f"Deleted run {run.run_id} and {n} traces.")
                        st.rerun()

# -- compare -------------------------------------------------------------------------------------------------------
with tab_compare:
    runs = {r.run_id: r for r in engine.evals.runs(set_name) if r.status == "done"}
    if len(runs) < 2:
        st.info("Compare needs two finished runs of this set.")
    else:
        ids = list(runs)
        a1, a2 = st.columns(2)
        a3 = st.container()  # the measure on a row of its own: a fifth of the width cut its label at 820 px
        run_a = a1.selectbox("Run A (before)", ids, index=1, key="ev_cmp_a", format_func=lambda i: run_label(runs[i]))
        run_b = a2.selectbox("Run B (after)", ids, index=0, key="ev_cmp_b", format_func=lambda i: run_label(runs[i]))
        metric = a3.selectbox(
            "Per-case measure", ["recall@10", "recall@5", "recall@25", "all@10", "mrr"], key="ev_cmp_metric"
        )
        if run_a == run_b:
            st.info("Pick two different runs.")
        else:
            with engine_errors("Could not compare the runs"):
                cmp = engine.evals.compare(run_a, run_b, metric)
                sig = cmp.significance
                row = metric_row()
                row.metric("Paired cases", sig["n"], width="content")
                row.metric(f"Mean Δ {metric}", f"{(sig['mean_delta'] or 0):+.3f}", width="content")
                row.metric("Gained / lost", f"{sig['wins']} / {sig['losses']}", width="content")
                row.metric("Sign test p", f"{sig['sign_test_p']:.3g}", width="content")
                if sig["bootstrap_ci95"]:
                    low, high = sig["bootstrap_ci95"]
                    st.caption(
                        f"Paired bootstrap 95 % interval of the mean Δ: [{low:+.3f}, {high:+.3f}] ({sig['ties']} ties)."
                    )
                st.dataframe(delta_rows(cmp.deltas), key="ev_cmp_deltas", hide_index=True)
                st.plotly_chart(ab_scatter(cmp.cases, metric), key="ev_cmp_scatter")
                by_id = {c["case_id"]: c for c in cmp.cases}
                g, lo = st.columns(2)
                with g:
                    st.markdown(f"**Gained in B** ({len(cmp.gained)})")
                    st.dataframe(
                        [
                            {"case": c, "question": by_id[c]["question"], "A": by_id[c]["a"], "B": by_id[c]["b"]}
                            for c in cmp.gained
                        ],
                        key="ev_cmp_gained",
                        hide_index=True,
                    )
                with lo:
                    st.markdown(f"**Lost in B** ({len(cmp.lost)})")
                    st.dataframe(
                        [
                            {"case": c, "question": by_id[c]["question"], "A": by_id[c]["a"], "B": by_id[c]["b"]}
                            for c in cmp.lost
                        ],
                        key="ev_cmp_lost",
                        hide_index=True,
                    )
                both = [c for c in (*cmp.gained, *cmp.lost) if by_id[c]["trace_a"] and by_id[c]["trace_b"]]
                if both:
                    pick = st.selectbox(
                        "Open a changed case",
                        both,
                        key="ev_cmp_case",
                        format_func=lambda c: f"{c} · Δ {by_id[c]['delta']:+.2f} · {by_id[c]['question'][:80]}",
                    )
                    if st.button("Open both traces", key="ev_cmp_open"):  # opens the Compare tab (ui/trace_links.py)
                        c = by_id[pick]
                        open_trace_page(c["user_id"], c["trace_a"], trace_b=c["trace_b"])

# -- one run's hops and scores; the set's history ------------------------------------------------------------------
with tab_analysis:
    done = {r.run_id: r for r in engine.evals.runs(set_name) if r.status == "done"}
    if not done:
        st.info("No finished runs of this set yet: start one on the Runs tab.")
    elif tab_analysis.open is not False:  # replays the run's traces: only on this tab
        if linked_run in done:
            st.session_state["ev_an_run"] = linked_run
        if st.session_state.get("ev_an_run") not in done:
            st.session_state["ev_an_run"] = (
                st.session_state["ev_run"] if st.session_state.get("ev_run") in done else next(iter(done))
            )
        an_id = st.selectbox("Run", list(done), key="ev_an_run", format_func=lambda i: run_label(done[i]))
        write("run", an_id)
        with engine_errors("Could not analyse the run"):
            attribution_section(engine, done[an_id])
            calibration_section(engine, done[an_id])

with tab_history:
    if tab_history.open is not False:
        history_section(engine, set_name)

# -- cases ---------------------------------------------------------------------------------------------------------
with tab_cases:
    cases = engine.evals.cases(set_name)
    st.dataframe(
        [
            {
                "case": c.case_id,
                "user": c.user_id,
                "category": c.category or "",
                "question": c.question,
                "expected": ", ".join(c.expected),
                "session": c.session_id or "",
                "now": when(c.now) if c.now else "",
                "source": c.source,
            }
            for c in cases
        ],
        key="ev_case_table",
        hide_index=True,
    )
    if can_edit(engine, "adding or deleting cases and sets"):
        with st.expander("Add a case"), st.form("ev_add_case_form", clear_on_submit=True):
            u = st.text_input("User", value=st.session_state.get("app_user") or "", key="ev_add_user")
            q = st.text_area("Question", key="ev_add_question", height=68)
            e = st.text_input("Expected memory ids (comma-separated)", key="ev_add_expected")
            cat = st.text_input("Category (optional)", key="ev_add_category")
            if st.form_submit_button("Add case"):
                with engine_errors("Could not add the case"):
                    added = engine.evals.add_case(
                        set_name,
                        u.strip(),
                        q,
                        [x.strip() for x in e.split(",") if x.strip()],
                        category=cat.strip() or None,
                    )
                    flash("ev", f"Added case {added.case_id}.")
                    st.rerun()
        if cases:
            with st.expander("Delete a case"):
                gone = st.selectbox("Case", [c.case_id for c in cases], key="ev_del_case")
                if st.button("Delete case", key="ev_del_case_go"):
                    with engine_errors("Could not delete the case"):
                        engine.evals.delete_case(set_name, gone)
                        flash("ev", f"Deleted case {gone}.")
                        st.rerun()
        with st.expander("Delete this set"):
            if confirmed(
                "ev_delete_set_form",
                "ev_delete_set_sure",
                f"Delete set {set_name}, its {counted(current.cases, 'case')} and {counted(current.runs, 'run')} "
                "(with their traces)",
                "Delete set",
            ):
                with engine_errors("Could not delete the set"):
                    engine.evals.delete_set(set_name)
                    drop_text_caches()  # the runs' deleted traces too
                    st.session_state.pop("ev_set", None)
                    flash("ev", f"Deleted set {set_name}.")
                    st.rerun()
