"""Store insights (issue 32, deliver 3): questions asked of a whole store. One small store per module, written in
the order an agent would: memories, questions (traces), a copy of a recalled memory, a copy of the agent's own
reply, a superseded fact, a label, an evaluation run; then the insights are read back from the real DuckDB and
LanceDB tables."""

from __future__ import annotations

import pytest

from engine import FactSource, InvalidInput, MemoryEngine, Settings

USER = "ana"
DARK = "Ana prefers dark mode in every editor she uses."
DEPLOY = "The deploy window is Tuesday at ten in the morning, every week."


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> dict:
    path = tmp_path_factory.mktemp("insights") / "store"
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(path), lock_timeout_s=30, graph_extraction="off"), embedder=embedder
    )
    dark = engine.items.remember(USER, DARK, "preferences")
    lisbon = engine.items.remember(USER, "Ana lives in Lisbon near the river.", "places")
    engine.graph.add_fact(
        USER,
        "Ana",
        "lives_in",
        "Lisbon",
        valid_from="2024-01-01T00:00:00Z",
        sources=[FactSource("semantic", lisbon.id)],
    )
    engine.graph.add_fact(USER, "Ana", "lives_in", "Porto", valid_from="2025-01-01T00:00:00Z")
    engine.items.remember(USER, "The payments service runs on PostgreSQL sixteen.", "systems")
    asked = engine.retrieval.retrieve(USER, "which colour theme does Ana like in her editor?")
    where = engine.retrieval.retrieve(USER, "where does Ana live?")
    # the agent writes back what it was given: an echo of a memory in that context ...
    echo = engine.items.remember(USER, "Ana prefers dark mode in every editor she uses", "preferences")
    # ... and of its own reply
    engine.sessions.add_message(USER, "s1", "assistant", f"Noted. {DEPLOY} I will remind you.")
    reply = engine.items.remember(USER, DEPLOY, "schedule")
    engine.feedback.label(USER, dark.id, "harmful", trace_id=asked.trace_id)
    engine.evals.add_case("prefs", USER, "what theme does Ana like?", [dark.id], create_set=True)
    run = engine.evals.evaluate("prefs")
    unused = engine.items.remember(USER, "Ana's cat is called Miso.", "pets")  # after every question
    empty = engine.retrieval.retrieve("bob", "does anyone remember anything?")
    return {
        "engine": engine,
        "dark": dark.id,
        "echo": echo.id,
        "reply": reply.id,
        "unused": unused.id,
        "lisbon": lisbon.id,
        "asked": asked,
        "where": where,
        "run": run.run_id,
        "empty": empty.trace_id,
    }


def test_a_refresh_finds_the_copied_memory_as_a_near_duplicate_pair(store):
    engine: MemoryEngine = store["engine"]
    assert engine.insights.refreshed(USER) is None
    done = engine.insights.refresh(USER)
    assert done.items == 6 and done.pairs >= 1 and engine.insights.refreshed(USER) == done
    pairs = engine.insights.near_duplicates(USER)
    top = pairs.rows[0]
    assert (top.a.id, top.b.id) == (store["dark"], store["echo"]) and top.similarity > 0.95
    assert top.a.text == DARK  # the older memory first


def test_echoes_name_the_context_and_the_reply_the_memory_repeats(store):
    engine: MemoryEngine = store["engine"]
    echoes = {e.memory.id: e for e in engine.insights.echoes(USER).rows}
    assert set(echoes) == {store["echo"], store["reply"]}
    from_context = echoes[store["echo"]]
    assert (from_context.source, from_context.source_id) == ("context", store["dark"])
    assert from_context.trace_id == store["asked"].trace_id and from_context.source_text == DARK
    from_reply = echoes[store["reply"]]
    assert from_reply.source == "message" and from_reply.source_id == "s1#1"
    assert DEPLOY in from_reply.source_text and from_reply.trace_id is None


def test_memories_in_no_recent_context_and_queries_that_found_nothing(store):
    engine: MemoryEngine = store["engine"]
    unused = engine.insights.never_retrieved(USER, traces=50)
    ids = [m.id for m in unused.rows]
    assert store["unused"] in ids and store["dark"] not in ids
    assert unused.total == len(ids) and unused.traces >= 2
    empty = engine.insights.empty_queries("bob").rows
    assert [(q.trace_id, q.candidates) for q in empty] == [(store["empty"], 0)]
    assert engine.insights.empty_queries(USER).total == 0


def test_a_superseded_fact_whose_source_is_still_recalled(store):
    engine: MemoryEngine = store["engine"]
    if store["lisbon"] not in store["where"].context_ids:
        pytest.fail("the test's question no longer brings the Lisbon memory into its context")
    stale = engine.insights.stale_recalls(USER)
    assert ("Ana lives in Lisbon", store["lisbon"], store["where"].trace_id) in [
        (s.fact, s.memory_id, s.trace_id) for s in stale
    ]
    assert all(s.superseded_by for s in stale)


def test_the_blast_radius_of_a_harmful_memory(store):
    engine: MemoryEngine = store["engine"]
    radius = engine.insights.blast_radius(USER, store["dark"])
    assert (radius.kind, radius.state, radius.text) == ("semantic", "active", DARK)
    traces = {t.trace_id: t for t in radius.traces}
    assert store["asked"].trace_id in traces and traces[store["asked"].trace_id].context_rank is not None
    assert [e.label for e in traces[store["asked"].trace_id].labels] == ["harmful"]
    assert radius.harmful == 1 and radius.traces_total == len(radius.traces) >= 2
    assert radius.contexts_total >= 2  # the question's and the evaluation run's
    (case,) = radius.cases
    assert (case.set_name, case.expected, case.runs) == ("prefs", True, (store["run"],))


def test_forgetting_one_of_a_pair_drops_the_pair_and_is_logged(store):
    engine: MemoryEngine = store["engine"]
    engine.forgetting.forget(USER, "semantic", [store["echo"]], "near-duplicate of " + store["dark"], actor="ui")
    assert all(store["echo"] not in (p.a.id, p.b.id) for p in engine.insights.near_duplicates(USER).rows)
    assert store["echo"] not in [e.memory.id for e in engine.insights.echoes(USER).rows]
    assert engine.forgetting.log(USER)[0].ids == (store["echo"],)
    radius = engine.insights.blast_radius(USER, store["echo"])
    assert radius.state == "forgotten (soft)"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.insights.refresh("bad user"), "invalid user id"),
        (lambda e: e.insights.near_duplicates(USER, min_similarity=1.5), "min_similarity"),
        (lambda e: e.insights.never_retrieved(USER, traces=0), "traces"),
        (lambda e: e.insights.blast_radius(USER, "x' OR 1=1"), "invalid memory id"),
        (lambda e: e.insights.echoes(USER, limit=0), "limit"),
    ],
)
def test_bad_input_is_refused_by_name(store, call, message):
    with pytest.raises(InvalidInput, match=message):
        call(store["engine"])


def test_an_empty_store_answers_every_question_with_nothing(tmp_path, embedder):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "s")), embedder=embedder)
    assert engine.insights.refresh("nobody").items == 0
    assert engine.insights.near_duplicates("nobody").total == 0
    assert engine.insights.echoes("nobody").total == 0
    assert engine.insights.never_retrieved("nobody").total == 0
    assert engine.insights.stale_recalls("nobody") == []
    radius = engine.insights.blast_radius("nobody", "mem_1")
    assert (radius.state, radius.traces, radius.cases, radius.labels) == ("not stored", (), (), ())


@pytest.mark.team_store
def test_a_team_store_refreshes_and_reads_the_same_insights(team_servers, embedder):
    dsn, vectors = team_servers.fresh("insights")
    engine = MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=30), embedder=embedder, vectors=vectors)
    try:
        first = engine.items.remember(USER, DARK)
        engine.retrieval.retrieve(USER, "which theme does Ana like?")
        copy = engine.items.remember(USER, DARK.rstrip("."))
        assert engine.insights.refresh(USER).pairs == 1
        (pair,) = engine.insights.near_duplicates(USER).rows
        assert (pair.a.id, pair.b.id) == (first.id, copy.id)
        assert [e.memory.id for e in engine.insights.echoes(USER).rows] == [copy.id]
        assert engine.insights.blast_radius(USER, first.id).contexts_total == 1
        assert engine.insights.empty_queries(USER).total == 0
        assert engine.insights.never_retrieved(USER).rows[0].id == copy.id
    finally:
        engine.close()
        team_servers.drop(dsn)
