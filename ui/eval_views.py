"""The Evaluations page's views of one run and of a set's runs (issue 32): per-hop attribution (which hop and strategy
first found each expected memory; what the later hops gained and lost), score calibration (each signal on gold vs
other candidates; the relevance threshold swept by replaying the stored traces) and the set's metric history.

The attribution and the sweep replay stored traces (no search, no embedding), which takes a while on a large run:
each is read once per run and per newest forget (``ui/forget_watch.py``), and only on the tab that shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from engine import SWEEP_THRESHOLDS, Calibration, EvalRun, GoldFinding, HopAttribution, MemoryEngine

from .eval_figures import attribution_bars, history_figure, signal_figure, sweep_figure
from .forget_watch import current_stamp
from .layout import metric_row
from .text import counted, md_escape, when
from .trace_timing import found_by_words, proposer_words

HISTORY_KEYS = ("recall@1", "recall@5", "recall@10", "mrr", "context_recall")


@st.cache_data(max_entries=8, show_spinner="Replaying the run's traces with one hop...")
def _attribution(_engine: MemoryEngine, store: str, run_id: str, forgets: tuple | None) -> HopAttribution:
    return _engine.evals.attribution(run_id)


@st.cache_data(max_entries=8, show_spinner="Reading the run's traces...")
def _calibration(_engine: MemoryEngine, store: str, run_id: str, forgets: tuple | None, sweep: bool) -> Calibration:
    return _engine.evals.calibration(run_id, thresholds=SWEEP_THRESHOLDS if sweep else ())


def strategy_words(strategy: str) -> str:
    """``question · vector`` -> ``the question itself, by vector search``."""
    proposer, _, found_by = strategy.partition(" · ")
    return f"{proposer_words(proposer)}, by {found_by_words(found_by)}" if found_by else proposer_words(proposer)


def strategy_counts(att: HopAttribution) -> dict[str, int]:
    """``hop 2 · offline:bridge_entities · vector`` -> ``hop 2 · names the previous hop found (offline bridge), by
    vector search``, with its count."""
    out: dict[str, int] = {}
    for key, n in att.strategies.items():
        hop, _, how = key.partition(" · ")
        out[f"{hop} · {strategy_words(how)}"] = n
    return out


def finding_rows(findings: Sequence[GoldFinding]) -> list[dict[str, Any]]:
    return [
        {
            "case": f.case_id,
            "expected memory": f.memory_id,
            "first found at hop": f.first_hop,
            "how": strategy_words(f.strategy) if f.strategy else "no hop found it",
            "ranked from hop": f.ranked_hop,
            "in the run's context": "yes" if f.in_context else "no",
            "in hop 1's context alone": "yes" if f.first_hop_context else "no",
        }
        for f in findings
    ]


def sweep_rows(cal: Calibration) -> list[dict[str, Any]]:
    return [
        {
            "threshold": p.threshold,
            "context recall": round(p.context_recall, 3),
            "recall@10": round(p.recall_at_10, 3),
            "memories in the context": round(p.context_memories, 1),
            "context tokens": round(p.context_tokens),
            "the run's": "◀" if cal.run_threshold is not None and abs(p.threshold - cal.run_threshold) < 1e-9 else "",
        }
        for p in cal.sweep
    ]


def history_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "run": f"{n}. {r['label']}",
            "started": when(r["started_at"]),
            "method": r["method"],
            "cases": r["cases"],
            **{k: r.get(k) for k in HISTORY_KEYS},
            "id": r["run_id"],
        }
        for n, r in enumerate(rows, 1)
    ]


def attribution_section(engine: MemoryEngine, run: EvalRun) -> None:
    st.subheader("Which hop found each expected memory")
    if run.method != "memlens":
        st.info("A baseline run (plain vector or full-text ranking) has no hops to attribute.")
        return
    att = _attribution(engine, engine.location.display, run.run_id, current_stamp())
    if not att.findings:
        st.info("None of this run's traces is stored any more.")
        return
    row = metric_row()
    row.metric("Cases read", f"{att.cases} of {att.run_cases}", width="content")
    row.metric("Ran more than one hop", att.multi_hop_cases, width="content")
    row.metric("Gained by later hops", len(att.gained), width="content")
    row.metric("Lost to later hops", len(att.lost), width="content")
    st.caption(
        "Gained: an expected memory in the run's context that the first hop alone (the trace replayed with one hop) "
        "did not bring. Lost: one the first hop alone brought that the run's context no longer holds."
    )
    if att.strategies:
        st.plotly_chart(attribution_bars(strategy_counts(att)), key="ev_attr_bars")
    never = att.first_found.get("never found", 0)
    if never:
        st.caption(f"{counted(never, 'expected memory', 'expected memories')} no hop found.")
    gained, lost = st.columns(2)
    for place, title, found, key in (
        (gained, "Gained by the later hops", att.gained, "ev_attr_gained"),
        (lost, "Lost to the later hops", att.lost, "ev_attr_lost"),
    ):
        place.markdown(f"**{title}** ({len(found)})")
        if found:
            place.dataframe(finding_rows(found), key=key, hide_index=True)
        else:
            place.caption("None.")
    with st.expander("Every expected memory"):
        st.dataframe(finding_rows(att.findings), key="ev_attr_all", hide_index=True)


def calibration_section(engine: MemoryEngine, run: EvalRun) -> None:
    st.subheader("Score calibration")
    if run.method != "memlens":
        st.info("A baseline run has no pipeline scores to calibrate.")
        return
    swept = st.session_state.get("ev_cal_swept") == run.run_id
    cal = _calibration(engine, engine.location.display, run.run_id, current_stamp(), swept)
    if not cal.signals:
        st.info("None of this run's traces is stored any more.")
        return
    by_name = {s.signal: s for s in cal.signals}
    signal = st.selectbox(
        "Signal", list(by_name), index=list(by_name).index("hybrid") if "hybrid" in by_name else 0, key="ev_cal_signal"
    )
    chosen = by_name[signal]
    st.plotly_chart(signal_figure(signal, chosen.gold, chosen.other), key="ev_cal_signal_fig")
    st.caption(
        f"From the run's first {counted(cal.cases, 'traced case')} (of {cal.run_cases}): each candidate counted "
        "once per case, at the first hop that "
        "found it. Where the two shapes overlap, this signal cannot tell the expected memories from the rest."
    )
    if not cal.sweep:
        if st.button(
            f"Sweep the relevance threshold ({len(SWEEP_THRESHOLDS)} values, replaying up to "
            f"{counted(min(cal.cases, 30), 'trace')} at each)",
            key="ev_cal_sweep_go",
        ):
            st.session_state["ev_cal_swept"] = run.run_id
            st.rerun()
        return
    st.plotly_chart(sweep_figure(cal.sweep, cal.run_threshold), key="ev_cal_sweep_fig")
    filt = cal.run_filter or "heuristic"
    st.caption(
        f"The run's first {counted(cal.swept_cases, 'traced case')} (of {cal.run_cases}) re-ranked from their "
        "stored traces with the heuristic relevance filter at each threshold: no new search. The run itself used "
        f"the {md_escape(filt)} filter" + (f" at {cal.run_threshold}." if cal.run_threshold is not None else ".")
    )
    st.dataframe(sweep_rows(cal), key="ev_cal_sweep", hide_index=True)


def history_section(engine: MemoryEngine, set_name: str) -> None:
    rows = engine.evals.history(set_name)
    if not rows:
        st.info("No finished runs of this set yet.")
        return
    keys = st.multiselect("Metrics", list(HISTORY_KEYS), default=["recall@10", "context_recall"], key="ev_hist_keys")
    st.plotly_chart(history_figure(rows, keys or ["recall@10"]), key="ev_hist_fig")
    st.dataframe(history_rows(rows), key="ev_hist_rows", hide_index=True)
