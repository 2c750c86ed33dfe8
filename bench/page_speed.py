"""Dashboard speed: server-side time of one full script run (app frame + page) per page, with AppTest.

    python bench/page_speed.py [--large] [--store PATH] [--runs 3] [--demo PATH] [--pages overview,retrieval,...]

Always measures the demo store; ``--large`` also builds (or reuses, with ``--store``) a store with 100k semantic
items, 5k sessions / 200k messages, 2k episodes, 500 skills and 1k traces. Each page is opened (first run, which
includes the page's first queries) and then rerun ``--runs`` times; the table shows the median rerun and the first
run. The engine and the model load once per process (one ``st.cache_resource``), outside the timings, and so does
Streamlit's scan of installed components (a server does it once at start; AppTest would repeat it per AppTest).
Targets (issue 4): every page <= 1.0 s at the large size; the trace page, excluding the retrieval itself, <= 0.5 s.
Issue 18 adds "retrieval compare" (two 2-hop traces side by side) and "retrieval timings", opened by deep link.
Issue 30 adds the Graph page: the large store gets a synthetic graph on top of what extraction drew (6k entities, 118k
relations with validity timelines, 200k mentions, a hub of 3k relations that the page's cap cuts); "graph" opens the
most mentioned entity (the hub), "graph depth 3" a person three hops deep, "graph timeline" a fact's versions.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _common import ROOT, table
from latency import USER, build
from synthetic import timestamps

from engine import MemoryEngine, Settings
from engine.providers.embedders import LocalMiniLM

PAGES = ["overview", "sessions", "working_memory", "skills", "retrieval", "feedback", "episodes", "memories", "graph"]
PAGES.append("traces")  # issue 32
LINKED = ["retrieval compare", "retrieval timings", "graph depth 3", "graph timeline"]  # by deep link (time_pages)
LINKED.append("retrieval map")  # issue 32: a 2-hop trace's embedding map (its queries embedded again)
LINKED.append("traces filtered")  # issue 32: one user's unlabelled agent traces, slowest first
PAGES.append("store")  # issue 32: store insights, its tabs by deep link below
LINKED += ["store echoes", "store unused", "store empty", "store stale facts", "store blast radius"]
GRAPH_PEOPLE, GRAPH_PROJECTS, GRAPH_CITIES, GRAPH_FACTS = 5_000, 1_000, 100, 100_000
ENTRY = ROOT / "tests" / "ui" / "app_entry.py"  # runs app.py as `streamlit run` does (see its docstring)


def build_large(engine: MemoryEngine) -> None:
    """Top up a store to the issue's size; a store made by bench/latency.py (more episodes and skills) is reused."""
    if USER not in engine.sessions.users():
        build(engine, 100_000, 2_000, 500)
    stats = engine.admin.stats()
    if stats.messages < 200_000:
        add_sessions(engine)
    for i in range(stats.traces, 1_000):
        engine.retrieval.retrieve(USER, f"what about note {i} and the payments service?", hops=1 + i % 2)
    if engine.graph.resolve(USER, "payments team") is None:
        engine.admin.ingest_lines(list(graph_lines()))


def graph_lines():
    """A synthetic graph as ingest records: people working on projects (one fact per note, each naming the message
    it came from), every person's city as a three-version timeline of an exclusive predicate, and a hub (the payments
    team) that owns every project and counts 2,000 people as members: 3,000 relations on one entity."""
    times = timestamps(GRAPH_FACTS)
    start = "2025-01-01T00:00:00+00:00"

    def entity(eid: str, name: str, kind: str) -> str:
        return json.dumps(
            {"kind": "entity", "user_id": USER, "id": eid, "name": name, "type": kind, "created_at": start}
        )

    def relation(rid: str, s: str, p: str, o: str, valid_from: str, **more: object) -> str:
        fields = {"subject_id": s, "predicate": p, "object_id": o, "valid_from": valid_from, "method": "bench"}
        return json.dumps({"kind": "relation", "user_id": USER, "id": rid, **fields, "created_at": valid_from, **more})

    yield entity("ent_hub", "payments team", "organization")
    yield from (entity(f"ent_p{i}", f"person {i}", "person") for i in range(GRAPH_PEOPLE))
    yield from (entity(f"ent_j{i}", f"project {i}", "project") for i in range(GRAPH_PROJECTS))
    yield from (entity(f"ent_c{i}", f"city {i}", "place") for i in range(GRAPH_CITIES))
    for i in range(GRAPH_FACTS):
        person, project = f"ent_p{i % GRAPH_PEOPLE}", f"ent_j{(i * 7) % GRAPH_PROJECTS}"
        source = [{"type": "message", "id": f"s{i % 5_000:05d}#{1 + i % 40}"}]
        yield relation(f"rel_w{i}", person, "works_on", project, times[i].isoformat(), sources=source)
        for entity_id in (person, project):
            mention = {"entity_id": entity_id, "memory_kind": "semantic", "memory_id": f"note-{i}"}
            yield json.dumps({"kind": "mention", "user_id": USER, **mention, "created_at": start})
    for i in range(GRAPH_PEOPLE):
        moves = ["2025-03-01T00:00:00+00:00", "2025-09-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"]
        for v, valid_from in enumerate(moves):
            later = {"valid_to": moves[v + 1], "superseded_by": f"rel_l{i}_{v + 1}"} if v < 2 else {}
            yield relation(
                f"rel_l{i}_{v}", f"ent_p{i}", "lives_in", f"ent_c{(i + v) % GRAPH_CITIES}", valid_from, **later
            )
    for i in range(GRAPH_PROJECTS):
        yield relation(f"rel_o{i}", f"ent_j{i}", "owned_by", "ent_hub", start)
    for i in range(2_000):
        yield relation(f"rel_m{i}", f"ent_p{i}", "member_of", "ent_hub", start)


def add_sessions(engine: MemoryEngine) -> None:
    lines = []
    for s in range(5_000):
        for m in range(40):
            lines.append(
                json.dumps(
                    {
                        "kind": "message",
                        "user_id": USER,
                        "session_id": f"s{s:05d}",
                        "role": "user" if m % 2 == 0 else "assistant",
                        "content": f"message {m} of session {s}: the quick brown fox {s * m % 97}",
                        "created_at": f"2026-{1 + s % 11:02d}-{1 + m % 28:02d}T10:{m % 60:02d}:00+00:00",
                    }
                )
            )
        if len(lines) >= 20_000:
            engine.admin.ingest_lines(lines)
            lines = []
    engine.admin.ingest_lines(lines)
    engine.working.update(USER, "s00000", {"goals": ["benchmark"], "scratchpad": "x"})


def time_pages(store: Path, user: str, runs: int, only: list[str] | None = None) -> dict[str, tuple[float, float]]:
    from streamlit.testing.v1 import AppTest

    from ui.resources import get_engine

    # Streamlit warns of a "missing ScriptRunContext" on every cached call made outside a script run, as the
    # ones here are; it is harmless and would bury the table. (A filter, as Streamlit resets its loggers' levels.)
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage()
    )
    os.environ["MEMLENS_STORE"] = str(store)
    get_engine.clear()  # type: ignore[attr-defined]  # the cache's clear, attached in ui/resources.py
    get_engine()  # the one engine load per process, outside the timings
    components = installed_components()
    out = {}
    # The trace comparison (issue 18): two 2-hop traces of the user, one before and one after labels would differ.
    engine = get_engine()
    a = engine.retrieval.retrieve(user, "Which service does the payments team own, and who is on call for it?", hops=2)
    b = engine.retrieval.retrieve(
        user,
        "Which service does the payments team own, and who is on call for it?",
        hops=2,
        overrides={"mmr_enabled": True},
    )
    links = {
        "retrieval compare": ("retrieval", {"trace": a.trace_id, "trace_b": b.trace_id, "tab": "compare"}),
        "retrieval timings": ("retrieval", {"trace": a.trace_id, "tab": "timings"}),
        "retrieval map": ("retrieval", {"trace": a.trace_id, "tab": "map"}),  # issue 32: the embedding map
        # The trace table (issue 32) filtered to one user's unlabelled agent traces, slowest first.
        "traces filtered": ("traces", {"of": user, "labelled": "unlabelled", "origin": "agent", "sort": "latency"}),
    }
    # The Graph page by deep link: three hops from a person (through projects and the hub), and a fact's timeline
    # (a person's city, an exclusive predicate); on a store without a graph both open the page's "no graph" note.
    person = engine.graph.resolve(user, "person 7") or next(iter(engine.graph.list_entities(user, limit=1).rows), None)
    if person is not None:
        links["graph depth 3"] = ("graph", {"entity": person.id, "depth": "3"})
        links["graph timeline"] = ("graph", {"entity": person.id, "predicate": "lives_in", "tab": "timeline"})
    else:
        links["graph depth 3"] = links["graph timeline"] = ("graph", {})
    # Store insights (issue 32): near-duplicates and echoes are precomputed by a refresh (timed here: the page's
    # "Refresh now"), then each tab by deep link; the blast radius of the memory the first trace ranked first.
    done = engine.insights.refreshed(user) or engine.insights.refresh(user)  # a reused store keeps its refresh
    print(
        f"store insights refresh of {user} ({when_done(done.refreshed_at)}): {done.items:,} memories, "
        f"{done.pairs:,} pairs, {done.echoes:,} echoes in {done.seconds:.1f}s"
    )
    links["store echoes"] = ("store", {"tab": "echoes"})
    links["store unused"] = ("store", {"tab": "unused-memories"})
    links["store empty"] = ("store", {"tab": "empty-questions"})
    links["store stale facts"] = ("store", {"tab": "stale-facts"})
    links["store blast radius"] = ("store", {"memory": a.context_ids[0] if a.context_ids else "none"})
    print(f"graph of {user}: {engine.graph.stats(user)}")
    print(
        f"compared traces: {sum(len(h.candidates) for h in a.hops)} and {sum(len(h.candidates) for h in b.hops)} "
        "candidates over 2 hops"
    )
    for page in only or PAGES + list(links):
        at = AppTest.from_file(str(ENTRY), default_timeout=120)
        if components is not None:
            at._bidi_component_manager = components
        at.session_state["app_demo_checked"] = True
        at.session_state["app_user"] = user
        at.session_state["labeller"] = "bench"  # issue 32: the Feedback page opens on this labeller's queue
        file, params = links.get(page, (page, {}))
        at.query_params.update(params)
        at.switch_page(str(ROOT / "pages" / f"{file}.py"))
        t = time.perf_counter()
        at.run()
        first = time.perf_counter() - t
        if at.exception:
            raise SystemExit(f"{page}: {at.exception[0].value}")
        reruns = []
        for _ in range(runs):
            t = time.perf_counter()
            at.run()
            reruns.append(time.perf_counter() - t)
        out[page] = (statistics.median(reruns), first)
    return out


def when_done(at: object) -> str:
    return str(at)[:19]


def installed_components():
    """Streamlit's registry of installed components, scanned once.

    A server scans every installed package's metadata for components once, at start. AppTest does it again on the
    first run of each AppTest (0.2-0.3 s here), which would be charged to whichever page that AppTest opens; the
    scan is handed to each AppTest instead. None (the scan stays in the timings) if Streamlit changes this part.
    """
    try:
        from streamlit.components.v2.component_manager import BidiComponentManager
    except ImportError:
        return None
    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    return manager


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--store", type=Path, help="where to build/reuse the large store (a bench/latency.py store works)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--demo", type=Path, help="a store with the demo loaded, used as it is (default: load a new one)")
    ap.add_argument("--pages", help=f"only these pages, comma-separated (of: {', '.join(PAGES + LINKED)})")
    args = ap.parse_args()
    only = args.pages.split(",") if args.pages else None
    if only and set(only) - set(PAGES + LINKED):
        ap.error(f"--pages takes names of: {', '.join(PAGES + LINKED)}")
    embedder = LocalMiniLM()
    work = Path(tempfile.mkdtemp(prefix="memlens-pages-"))
    try:
        demo = args.demo or work / "demo"
        if args.demo is None:
            MemoryEngine.open(settings=Settings.from_env({}, store=str(demo)), embedder=embedder).admin.load_demo()
        results = {"demo": time_pages(demo, "ada", args.runs, only)}
        if args.large:
            large = args.store or work / "large"
            engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(large)), embedder=embedder)
            t = time.perf_counter()
            build_large(engine)
            print(f"large store ready in {time.perf_counter() - t:.0f}s at {large}: {engine.admin.stats()}")
            results["large"] = time_pages(large, USER, args.runs, only)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    headers = ["page"] + [f"{name} {kind}" for name in results for kind in ("rerun s", "first s")]
    rows = [[p] + [f"{results[n][p][i]:.2f}" for n in results for i in (0, 1)] for p in results["demo"]]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
