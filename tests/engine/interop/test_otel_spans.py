"""Traces, writes and forgets as OpenTelemetry span data (engine/interop/otel_spans.py), and the live export hooked
into a real engine writing through the real OpenTelemetry SDK to a JSON-lines file (engine/interop/otel_export.py).
Phoenix itself is in test_otel_phoenix.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings
from engine.interop.otel_export import JsonLinesExporter, LiveExport, SpanEmitter, attach_export, live_export_for
from engine.interop.otel_spans import (
    HOP_DOCUMENTS,
    MemoryWrite,
    SpanData,
    delete_span,
    iso_to_ns,
    retrieval_spans,
    write_span,
)
from engine.trace.codec import trace_from_dict
from engine.trace.records import Tombstone

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def fixture_trace(name: str):
    return trace_from_dict(json.loads((FIXTURES / name).read_text()))


def test_a_two_hop_trace_is_one_search_memory_span_timed_by_its_own_recorded_stages():
    trace = fixture_trace("default_2hop.json")
    (root,) = retrieval_spans(trace)
    ms = 1_000_000
    # the pipeline ended when the trace was made (created_at) and took `pipeline` ms: no clock of the export's
    created = iso_to_ns(trace.created_at)
    assert root.name == "search_memory" and root.client
    assert root.start_ns == created - round(131.158 * ms) and root.end_ns == created
    names = [c.name for c in root.children]
    assert names == [
        "memlens.stage query_generation",
        "memlens.hop 1",
        "memlens.stage reasoner_hop1",
        "memlens.hop 2",
        "memlens.stage merge_and_assembly",
    ]
    hop1, hop2 = root.children[1], root.children[3]
    # a hop lasts as long as its stages, laid end to end in the recorded order, and the next step starts after it
    assert [s.name for s in hop1.children] == [
        "memlens.stage embed_query",
        "memlens.stage search",
        "memlens.stage candidates",
        "memlens.stage scoring",
    ]
    assert hop1.start_ns == root.start_ns + round(0.015 * ms)
    assert hop1.end_ns - hop1.start_ns == sum(round(x * ms) for x in (31.208, 31.366, 9.805, 0.905))
    assert hop1.children[1].start_ns == hop1.children[0].end_ns
    assert root.children[2].start_ns == hop1.end_ns and hop2.start_ns == root.children[2].end_ns
    assert hop2.attributes["memlens.hop"] == 2 and hop2.attributes["memlens.hop.query"] == "Chaiwala tea"
    assert hop1.children[0].attributes["memlens.stage.ms"] == 31.208


def test_the_search_memory_span_carries_the_conventions_openinference_documents_and_memlens_attributes():
    trace = fixture_trace("default_2hop.json")
    (root,) = retrieval_spans(trace)
    a = root.attributes
    assert a["gen_ai.operation.name"] == "search_memory"
    assert a["gen_ai.memory.store.id"] == "fixture-user" and a["gen_ai.memory.query.text"] == trace.question
    in_context = [r for r in trace.ranking if r.in_context]
    records = json.loads(str(a["gen_ai.memory.records"]))
    assert a["gen_ai.memory.record.count"] == len(records) == len(in_context)
    first = records[0]
    texts = {c.id: c.text for h in trace.hops for c in h.candidates}
    assert first["id"] == "item_c48962b44d344c50" and first["score"] == pytest.approx(0.6927477408555124)
    assert first["content"] == texts[first["id"]] and first["metadata"]["rank"] == 1 and first["metadata"]["hop"] == 1
    # per-signal scores: what the conventions have no place for, in the record's metadata
    assert first["metadata"]["scores"]["vector_similarity"] > 0 and "bm25_norm" in first["metadata"]["scores"]
    # the third memory came from hop 2: rank and hop say so
    assert records[2]["metadata"] == {**records[2]["metadata"], "rank": 3, "hop": 2}
    # what Phoenix reads (OpenInference), document by document, in rank order
    assert a["openinference.span.kind"] == "RETRIEVER" and a["input.value"] == trace.question
    assert a["retrieval.documents.0.document.id"] == "item_c48962b44d344c50"
    assert a["retrieval.documents.0.document.score"] == pytest.approx(0.6927477408555124)
    assert a["retrieval.documents.2.document.id"] == "item_949992a428f24680"
    assert f"retrieval.documents.{len(records)}.document.id" not in a
    # memlens.*
    assert a["memlens.trace.id"] == trace.trace_id and a["memlens.preset"] == "default" and a["memlens.hops"] == 2
    ranking = json.loads(str(a["memlens.ranking"]))
    assert len(ranking) == len(trace.ranking) and ranking[0]["rank"] == 1 and "reason" in ranking[0]
    assert json.loads(str(a["memlens.settings"]))["hops"] == 2
    hop1 = root.children[1].attributes
    candidates = json.loads(str(hop1["memlens.candidates"]))
    assert len(candidates) == len(trace.hops[0].candidates) == hop1["memlens.hop.candidate_count"]
    assert {"scores", "ranks", "verdict", "in_context", "context_reason"} <= set(candidates[0])
    assert candidates[0]["verdict"]["relevance"] in ("kept", "dropped")


def test_a_hard_forgotten_memorys_text_never_enters_a_span():
    trace = fixture_trace("default_2hop.json")
    victim = trace.ranking[0].id
    text = next(c.text for h in trace.hops for c in h.candidates if c.id == victim)
    assert text
    # a trace that still holds the text beside a hard tombstone (the store's redaction is not relied on)
    hard = Tombstone("hard", "2026-12-01T00:00:00+00:00", "test", "test")
    marked = dataclasses.replace(
        trace,
        hops=tuple(
            dataclasses.replace(
                h,
                candidates=tuple(dataclasses.replace(c, forgotten=hard) if c.id == victim else c for c in h.candidates),
            )
            for h in trace.hops
        ),
    )
    for spans in (retrieval_spans(marked), retrieval_spans(trace, gone={victim})):
        dumped = json.dumps([dict(s.attributes) for s in spans[0].walk()])
        assert text not in dumped and f"[forgotten memory {victim}]" in dumped
        assert victim in dumped  # its id, scores and rank stay: the trace still explains the retrieval
    # a soft (archived) memory keeps its text, as it does in the store
    soft = dataclasses.replace(marked, hops=trace.hops, forgotten={victim: Tombstone("soft")})
    assert text in json.dumps([dict(s.attributes) for s in retrieval_spans(soft)[0].walk()])


def test_the_stored_hard_forgotten_fixture_exports_a_placeholder_and_no_text():
    trace = fixture_trace("default_1hop_hard_forgotten.json")
    (root,) = retrieval_spans(trace)
    candidates = json.loads(str(root.children[1].attributes["memlens.candidates"]))
    assert {"id": "item_182b1014789b4450", "forgotten": "hard"}.items() <= next(
        c for c in candidates if c["id"] == "item_182b1014789b4450"
    ).items()
    docs = {v: k for k, v in root.children[1].attributes.items() if k.endswith(".document.id") and isinstance(v, str)}
    content_key = docs["item_182b1014789b4450"].replace(".id", ".content")
    assert root.children[1].attributes[content_key] == "[forgotten memory item_182b1014789b4450]"


def test_without_content_capture_no_text_leaves_only_ids_scores_and_ranks():
    trace = fixture_trace("default_2hop.json")
    attrs = [dict(s.attributes) for s in retrieval_spans(trace, capture_content=False)[0].walk()]
    dumped = json.dumps(attrs)
    assert trace.question not in dumped and "Chaiwala tea" not in dumped
    assert all(c.text not in dumped for h in trace.hops for c in h.candidates if c.text)
    assert "item_c48962b44d344c50" in dumped and "gen_ai.memory.query.text" not in attrs[0]


def test_writes_and_forgets_are_create_update_and_delete_memory_spans():
    one = write_span("create_memory", "u1", [MemoryWrite("item_1", "semantic", "likes tea", {"category": "x"})], 5, 9)
    assert one.name == "create_memory" and one.attributes["gen_ai.memory.record.id"] == "item_1"
    assert json.loads(str(one.attributes["gen_ai.memory.records"])) == [
        {"id": "item_1", "content": "likes tea", "metadata": {"category": "x"}}
    ]
    two = write_span("update_memory", "u1", [MemoryWrite("a", "working"), MemoryWrite("b", "working")], 1, 2)
    assert two.attributes["gen_ai.memory.record.count"] == 2 and "gen_ai.memory.record.id" not in two.attributes
    gone = delete_span("u1", "semantic", ["item_1"], "hard", "api", 3, 4)
    assert gone.name == "delete_memory" and gone.attributes["memlens.forget.mode"] == "hard"
    assert "gen_ai.memory.records" not in gone.attributes
    with pytest.raises(ValueError):
        write_span("search_memory", "u1", [], 0, 0)


def test_a_span_keeps_every_attribute_past_the_sdks_default_limit_of_128(tmp_path):
    path = tmp_path / "wide.jsonl"
    with path.open("w", encoding="utf-8") as out:
        emitter = SpanEmitter(JsonLinesExporter(out), batch=False)
        emitter.emit(
            [SpanData("search_memory", 1, 2, {f"retrieval.documents.{n}.document.id": f"m{n}" for n in range(300)})]
        )
        emitter.shutdown()
    (span,) = read_spans(path)
    assert len(span["attributes"]) == 300 and span["attributes"]["retrieval.documents.0.document.id"] == "m0"


def test_the_live_exports_worker_keeps_quiet_while_a_hooked_call_runs_and_a_flush_drains_it(tmp_path):
    import threading

    with (tmp_path / "quiet.jsonl").open("w", encoding="utf-8") as out:
        export = LiveExport(SpanEmitter(JsonLinesExporter(out)))
        export.MAX_DEFER_S = 3600  # only the end of the call (or a flush) may let it run
        ran = threading.Event()

        def build():
            ran.set()
            return (SpanData("create_memory", 1, 2, {}),)

        with export.calling():
            export.submit(build)
            assert not ran.wait(0.3)  # a call is running: the worker waits, whatever the time
        assert export.flush() and ran.is_set() and export.emitter.emitted == 1
        export.close()


@pytest.fixture
def hooked(demo_engine: MemoryEngine, tmp_path: Path):
    path = tmp_path / "spans.jsonl"
    out = path.open("w", encoding="utf-8")
    export = attach_export(demo_engine, LiveExport(SpanEmitter(JsonLinesExporter(out))))
    yield demo_engine, export, path
    export.close()
    out.close()


def read_spans(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_hooked_engine_exports_its_retrievals_writes_and_forgets_through_the_sdk(hooked):
    engine, export, path = hooked
    user = "ada"  # a demo user: her hop finds dozens of candidates
    item = engine.items.remember(user, "The ferry to Hydra leaves at 7:40 from Piraeus gate E8.")
    trace = engine.retrieval.retrieve(user, "When does the Hydra ferry leave?")
    engine.forgetting.forget(user, "semantic", [item.id], "test", mode="hard")
    engine.working.set(user, "s-otel", "goal", "book the ferry")
    skill = engine.skills.register(user, "ferry-booking", "open the site, pick 7:40", "how Ada books ferries")
    engine.skills.report_outcome(user, skill.id, success=True)
    assert export.flush()
    spans = read_spans(path)
    by_name: dict[str, list[dict]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    created = by_name["create_memory"][0]
    assert created["attributes"]["gen_ai.memory.record.id"] == item.id and created["kind"] == "SpanKind.CLIENT"
    (search,) = by_name["search_memory"]
    assert search["attributes"]["memlens.trace.id"] == trace.trace_id
    assert search["attributes"]["retrieval.documents.0.document.id"] == trace.ranking[0].id
    # the hop is the search span's child, in the same OpenTelemetry trace
    (hop,) = by_name["memlens.hop 1"]
    # the hop's best candidates are its documents; every candidate is in memlens.candidates
    documents = [k for k in hop["attributes"] if k.startswith("retrieval.documents.") and k.endswith(".document.id")]
    assert len(trace.hops[0].candidates) > HOP_DOCUMENTS and len(documents) == HOP_DOCUMENTS
    assert len(json.loads(hop["attributes"]["memlens.candidates"])) == len(trace.hops[0].candidates)
    assert (
        hop["parent_id"] == search["context"]["span_id"] and hop["context"]["trace_id"] == search["context"]["trace_id"]
    )
    (deleted,) = by_name["delete_memory"]
    assert deleted["attributes"]["gen_ai.memory.record.id"] == item.id
    assert "Hydra ferry leaves" not in json.dumps(deleted)
    assert json.dumps(deleted["attributes"]).count("7:40") == 0
    slot, outcome = by_name["update_memory"]
    assert (
        slot["attributes"]["gen_ai.memory.record.id"] == "s-otel/goal"
        and slot["attributes"]["memlens.memory.kind"] == "working"
    )
    assert outcome["attributes"]["gen_ai.memory.record.id"] == skill.id
    assert json.loads(outcome["attributes"]["gen_ai.memory.records"])[0]["metadata"]["success_count"] == 1
    assert [s["attributes"]["gen_ai.memory.record.id"] for s in by_name["create_memory"]] == [item.id, skill.id]


def test_the_export_is_off_by_default_and_on_by_its_setting(tmp_path, embedder, monkeypatch):
    assert Settings().otel_export is False
    off = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "a")), embedder=embedder)
    assert off.otel_export is None and not hasattr(off.retrieval.retrieve, "__wrapped__")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: batched, dropped
    settings = Settings.from_env({"MEMLENS_OTEL_EXPORT": "1"}, store=str(tmp_path / "b"))
    on = MemoryEngine.open(settings=settings, embedder=embedder)
    try:
        assert on.otel_export is not None and hasattr(on.retrieval.retrieve, "__wrapped__")
        assert live_export_for(off) is None
    finally:
        on.otel_export.close()


def test_export_otel_writes_stored_traces_and_forgets_as_json_lines_without_forgotten_text(demo_engine, tmp_path):
    from tests.support.cli import cli

    engine = demo_engine
    item = engine.items.remember("ada", "Ada keeps her spare office key under the blue ceramic frog.")
    trace = engine.retrieval.retrieve("ada", "Where does Ada keep her spare office key?")
    assert any(c.id == item.id for c in trace.hops[0].candidates)
    other = engine.retrieval.retrieve("mira", "What does Mira cook?")
    engine.forgetting.forget("ada", "semantic", [item.id], "asked to", mode="hard")
    engine.close()
    out = tmp_path / "spans.jsonl"
    run = cli(engine.path, "--json", "export-otel", "--user", "ada", "--file", str(out))
    assert run.code == 0, run.err
    report = run.json()
    spans = read_spans(out)
    assert report["traces"] == 1 and report["spans"] == len(spans) and report["flushed"]
    assert report["forgets"] == len(engine.forgetting.log("ada")) >= 1  # the demo's own forgets and this one
    roots = [s for s in spans if s["name"] == "search_memory"]
    assert [r["attributes"]["memlens.trace.id"] for r in roots] == [trace.trace_id]  # only ada's; not mira's
    assert other.trace_id not in out.read_text()
    assert "blue ceramic frog" not in out.read_text() and f"[forgotten memory {item.id}]" in out.read_text()
    deleted = [s for s in spans if s["name"] == "delete_memory"]
    assert [d["attributes"]["memlens.memory.ids"] for d in deleted].count([item.id]) == 1
    # --no-content: ids, scores and ranks only
    bare = tmp_path / "bare.jsonl"
    assert cli(engine.path, "export-otel", "--user", "ada", "--file", str(bare), "--no-content").code == 0
    assert trace.question not in bare.read_text() and trace.trace_id in bare.read_text()
