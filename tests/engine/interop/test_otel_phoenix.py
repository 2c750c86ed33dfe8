"""memlens's OpenTelemetry export against a real Arize Phoenix (the ``arize-phoenix`` package): the module starts
``phoenix serve`` on 127.0.0.1 with free ports and its own working folder (its SQLite database), an engine with the
``otel_export`` setting sends its spans over OTLP/HTTP (the endpoint from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, as a
user would set it), and the spans are read back through Phoenix's REST API with their attributes and document scores.
``memlens export-otel`` sends stored traces the same way; a screenshot of the trace in Phoenix's UI is taken in
headless Chromium (test-artifacts/screenshots/phoenix_trace.png)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import MemoryEngine, Settings
from engine.interop.otel_spans import iso_to_ns
from tests.support.cli import cli
from tests.support.mcp_client import free_port

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
USER = "otel-phoenix"
START_TIMEOUT_S = 240  # Phoenix imports a large stack and migrates its SQLite database: ~30 s on a busy 2-core box
FACTS = [
    "Priya's flight to Lisbon leaves from Frankfurt on the 14th at 09:05.",
    "Priya drinks masala chai every morning before standup.",
    "The Lisbon hotel is the Almirante, booked under Priya's work account.",
]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory) -> Iterator[str]:
    """A Phoenix server of this module's own: its base URL. Killed (its process group) on teardown."""
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # no fonts, WASM binary or docs server from the internet
    }
    log = (work / "phoenix.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "phoenix.server.main", "serve"],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"phoenix exited ({proc.returncode}): {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix not healthy in {START_TIMEOUT_S} s: {(work / 'phoenix.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own process group (start_new_session): whatever it started too
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def phoenix_spans(base: str, want: Any, timeout_s: float = 60) -> list[dict[str, Any]]:
    """The memlens project's spans once ``want(spans)`` holds (Phoenix writes what it received in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            spans = _get(f"{base}/v1/projects/memlens/spans?limit=1000")["data"]
        except OSError:  # the project exists only once its first span arrived
            spans = []
        if want(spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


@pytest.fixture(scope="module")
def live(phoenix, tmp_path_factory, embedder) -> Iterator[tuple[MemoryEngine, Any, Any, Any]]:
    """An engine exporting live to Phoenix: three facts written, a two-hop retrieval, one fact hard-forgotten."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", phoenix + "/v1/traces")
        settings = Settings.from_env({"MEMLENS_OTEL_EXPORT": "true"}, store=str(tmp_path_factory.mktemp("live") / "s"))
        engine = MemoryEngine.open(settings=settings, embedder=embedder)
    assert engine.otel_export is not None
    items = engine.items.remember_many([{"user_id": USER, "content": f} for f in FACTS])
    trace = engine.retrieval.retrieve(USER, "When does Priya fly to Lisbon, and where does she stay?", hops=2)
    forget = engine.forgetting.forget(USER, "semantic", [items[1].id], "asked to", mode="hard")
    assert engine.otel_export.flush()
    yield engine, items, trace, forget
    engine.otel_export.close()


def _by_trace(spans: list[dict[str, Any]], trace_id: str) -> list[dict[str, Any]]:
    roots = [s for s in spans if s["attributes"].get("memlens.trace.id") == trace_id and s["name"] == "search_memory"]
    if not roots:
        return []
    otel_trace = roots[0]["context"]["trace_id"]
    return [s for s in spans if s["context"]["trace_id"] == otel_trace]


def test_a_live_retrieval_arrives_in_phoenix_as_a_retriever_span_with_its_documents_scores_and_memlens_attributes(
    phoenix, live
):
    engine, items, trace, _ = live
    spans = phoenix_spans(phoenix, lambda s: len(_by_trace(s, trace.trace_id)) >= 4)
    tree = _by_trace(spans, trace.trace_id)
    (root,) = [s for s in tree if s["name"] == "search_memory"]
    a = root["attributes"]
    assert root["span_kind"] == "RETRIEVER" and root["parent_id"] is None
    assert a["gen_ai.operation.name"] == "search_memory" and a["gen_ai.memory.store.id"] == USER
    assert a["input.value"] == trace.question and a["gen_ai.memory.query.text"] == trace.question
    assert a["memlens.trace.id"] == trace.trace_id and a["memlens.hops"] == len(trace.hops)
    returned = [r for r in trace.ranking if r.in_context]
    assert returned and a["gen_ai.memory.record.count"] == len(returned)
    for n, r in enumerate(returned):  # Phoenix's documents: ids and scores in rank order, with their rank and hop
        assert a[f"retrieval.documents.{n}.document.id"] == r.id
        assert a[f"retrieval.documents.{n}.document.score"] == pytest.approx(r.final)
        assert a[f"retrieval.documents.{n}.document.metadata.rank"] == r.rank
        assert a[f"retrieval.documents.{n}.document.metadata.hop"] == r.hop
    assert a["retrieval.documents.0.document.metadata.scores.vector_similarity"] > 0
    # hops and stages under it, timed by the trace's own numbers
    hops = sorted((s for s in tree if s["name"].startswith("memlens.hop")), key=lambda s: s["name"])
    assert [h["name"] for h in hops] == [f"memlens.hop {h.hop}" for h in trace.hops]
    assert all(h["parent_id"] == root["context"]["span_id"] and h["span_kind"] == "RETRIEVER" for h in hops)
    stages = [s for s in tree if s["parent_id"] == hops[0]["context"]["span_id"]]
    assert {"memlens.stage embed_query", "memlens.stage search", "memlens.stage scoring"} <= {s["name"] for s in stages}
    start_ns = iso_to_ns(root["start_time"])
    assert start_ns == pytest.approx(iso_to_ns(trace.created_at) - trace.timings_ms.get("pipeline") * 1e6, abs=1000)
    embed = next(s for s in stages if s["name"] == "memlens.stage embed_query")
    assert embed["attributes"]["memlens.stage.ms"] == trace.hops[0].timings_ms.get("embed_query")


def test_writes_and_the_forget_arrive_as_create_and_delete_memory_spans_without_the_forgotten_text(phoenix, live):
    _, items, _, forget = live
    ids = {i.id for i in items}
    spans = phoenix_spans(
        phoenix, lambda s: any(x["name"] == "delete_memory" for x in s) and any(x["name"] == "create_memory" for x in s)
    )
    (created,) = [s for s in spans if s["name"] == "create_memory"]
    assert created["attributes"]["gen_ai.memory.record.count"] == 3
    assert set(created["attributes"]["memlens.memory.ids"]) == ids
    (deleted,) = [s for s in spans if s["name"] == "delete_memory"]
    assert deleted["attributes"]["gen_ai.memory.record.id"] == items[1].id == forget.forgotten[0]
    assert deleted["attributes"]["memlens.forget.mode"] == "hard"
    assert "masala chai" not in json.dumps(deleted)


def test_export_otel_sends_stored_traces_and_a_hard_forgotten_memorys_text_never_leaves(phoenix, tmp_path, embedder):
    store = tmp_path / "stored"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
    assert engine.otel_export is None  # off by default: nothing was sent while this store was written
    items = engine.items.remember_many([{"user_id": "stored-user", "content": f} for f in FACTS])
    trace = engine.retrieval.retrieve("stored-user", "What does Priya drink in the morning?")
    chai = items[1]
    assert any(c.id == chai.id for h in trace.hops for c in h.candidates)
    engine.forgetting.forget("stored-user", "semantic", [chai.id], "asked to", mode="hard")
    engine.close()
    run = cli(store, "--json", "export-otel", "--user", "stored-user", "--endpoint", phoenix + "/v1/traces")
    assert run.code == 0, run.err
    report = run.json()
    assert report["traces"] == 1 and report["forgets"] == 1 and report["flushed"]
    spans = phoenix_spans(phoenix, lambda s: len(_by_trace(s, trace.trace_id)) >= 3)
    tree = _by_trace(spans, trace.trace_id)
    assert len(tree) == report["spans"] - 1  # every span of the trace (the forget's is a trace of its own)
    dumped = json.dumps(tree)
    assert "masala chai" not in dumped and f"[forgotten memory {chai.id}]" in dumped
    assert "Lisbon" in dumped  # the memories that were not forgotten keep their text


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is installed by .ci/run (apt-get install chromium)")
def test_the_trace_opens_in_phoenixs_ui(phoenix, live):
    from playwright.sync_api import sync_playwright

    _, _, trace, _ = live
    spans = phoenix_spans(phoenix, lambda s: len(_by_trace(s, trace.trace_id)) >= 4)
    otel_trace = _by_trace(spans, trace.trace_id)[0]["context"]["trace_id"]
    project = next(p["id"] for p in _get(phoenix + "/v1/projects")["data"] if p["name"] == "memlens")
    shot = ROOT / "test-artifacts" / "screenshots" / "phoenix_trace.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    args += ["--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{phoenix}/projects/{project}/traces/{otel_trace}", timeout=120_000)
            # the retrieval's question and its first document, with its score, in the span's detail
            page.get_by_text(trace.question).first.wait_for(timeout=90_000)
            first = next(r for r in trace.ranking if r.in_context)
            page.get_by_text(f"document {first.id}").first.wait_for(timeout=30_000)
            assert page.get_by_text(f"memlens.hop {len(trace.hops)}").count() >= 1
            page.screenshot(path=str(shot))
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
