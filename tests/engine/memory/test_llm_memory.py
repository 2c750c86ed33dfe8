"""LLM memory operations through the real ``openai`` client: memorize (extract -> classify -> evolve summaries),
reflection, skill mining (proposals only, accepted with provenance) and ``reason`` on working memory. Malformed
output gives the documented defaults or drops; failures fall back or refuse, and never write half a result."""

from __future__ import annotations

import json

import pytest

from engine import InvalidInput, LLMUnavailable, MemoryEngine, Settings, SkillProposal, to_plain
from tests.support.openai_server import Reply

U = "mina"
FAIL3 = (Reply(status=500), Reply(status=500), Reply(status=500))


@pytest.fixture(scope="module")
def engine(llm_engine) -> MemoryEngine:
    return llm_engine


@pytest.fixture(scope="module")
def offline(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("llm-memory-offline") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)


@pytest.fixture(autouse=True)
def fresh(server, engine, offline):
    """One store per module; every test starts with user U erased from both."""
    server.reset()
    yield
    engine.admin.delete_user(U)
    offline.admin.delete_user(U)
    assert server.pending("chat") == 0, "a scripted reply was never requested"


def ops(server) -> list[str]:
    return [r.prompt.split("\n")[0][:40] for r in server.captured("chat")]


# -- memorize --------------------------------------------------------------------------------------------------------
def test_memorize_extracts_classifies_and_evolves_each_touched_category(engine, server):
    engine.items.set_category_summary(U, "preferences", "- likes coffee")
    server.script(
        "chat",
        '[{"content": "Mina prefers tea over coffee", "importance": 0.9}, '
        '{"content": "Mina lives in Porto", "importance": 0.6}]',
        "Preferences",
        "home life",
        "- prefers tea over coffee",
        "- lives in Porto",
    )
    report = engine.items.memorize_report(U, "Mina: I switched to tea, coffee is over. I live in Porto now.")
    assert report.strategy == "fact_extraction" and report.llm_calls == 5
    assert [(i.content, i.category, i.importance) for i in report.items] == [
        ("Mina prefers tea over coffee", "preferences", 0.9),
        ("Mina lives in Porto", "home_life", 0.6),
    ]
    assert all(i.provenance["method"] == "fact_extraction" for i in report.items)
    cats = {c.name: c for c in engine.items.categories(U)}
    assert cats["preferences"].summary == "- prefers tea over coffee"
    assert cats["home_life"].summary == "- lives in Porto"
    reqs = server.captured("chat")
    assert "I switched to tea" in reqs[0].prompt
    assert "Mina prefers tea over coffee" in reqs[1].prompt
    assert "- likes coffee" in reqs[3].prompt  # the summary evolution sees the old profile
    assert "No existing profile." in reqs[4].prompt
    assert {r["operation"] for r in engine.admin.usage(U)} == {
        "memorize_extract",
        "memorize_classify",
        "memorize_summary",
    }
    assert [i.id for i in engine.retrieval.search(U, "Porto", kind="semantic", limit=1)] == [report.items[1].id]


def test_memorize_defaults_bad_importance_to_0_7_and_empty_categories_to_general(engine, server):
    server.script(
        "chat",
        '["a bare string fact", {"content": "fact two", "importance": 7}, '
        '{"content": "fact three", "importance": "high"}, {"content": "  "}, 42]',
        "",
        "`Work Life.`",
        "!!!",
        "summary general",
        "summary work",
    )
    report = engine.items.memorize_report(U, "some conversation text")
    assert [(i.content, i.importance, i.category) for i in report.items] == [
        ("a bare string fact", 0.7, "general"),
        ("fact two", 0.7, "work_life"),
        ("fact three", 0.7, "general"),
    ]
    assert report.dropped == 2


def test_memorize_removes_nul_characters_from_model_output_instead_of_failing(engine, server):
    server.script(
        "chat",
        '[{"content": "clean fact", "importance": 0.5}, {"content": "nul\\u0000fact"}]',
        "general",
        "general",
        "summary\u0000text",
    )
    report = engine.items.memorize_report(U, "text")
    assert [i.content for i in report.items] == ["clean fact", "nulfact"]
    assert engine.items.categories(U)[0].summary == "summarytext"


def test_reflect_and_mining_remove_nul_characters_from_model_output(engine, server):
    _episodes(engine)
    server.script(
        "chat",
        '[{"content": "an\\u0000insight", "confidence": 0.5}, "bare\\u0000one"]',
        '[{"name": "n", "body": "b\\u0000ody", "description": "d\\u0000"}]',
    )
    items, strategy = engine.items.reflect(U)
    assert strategy == "reflection" and [i.content for i in items] == ["aninsight", "bareone"]
    [p] = engine.skills.mine(U).proposals
    assert (p.body, p.description) == ("body", "d")
    assert engine.skills.accept_proposal(U, p).body == "body"


@pytest.mark.parametrize(
    "answer", ["I cannot do that", '{"content": "not a list"}', "[unclosed"], ids=["prose", "object", "broken"]
)
def test_memorize_with_non_json_output_stores_no_facts(engine, server, answer):
    server.script("chat", answer)
    report = engine.items.memorize_report(U, "some conversation text")
    assert report.items == () and report.strategy == "fact_extraction"
    assert "malformed" in report.notes[0]
    assert engine.items.list_items(U).total == 0 and engine.items.categories(U) == []


def test_memorize_with_a_failing_server_falls_back_to_one_offline_item(engine, server):
    server.script("chat", *FAIL3)
    report = engine.items.memorize_report(U, "Mina likes long walks.")
    assert report.strategy == "memorize_offline"
    assert "LLM failed" in report.notes[0]
    [item] = report.items
    assert (item.content, item.category, item.provenance["method"]) == (
        "Mina likes long walks.",
        "general",
        "memorize_offline",
    )


def test_memorize_keeps_the_old_summary_when_its_evolution_call_fails(engine, server):
    engine.items.set_category_summary(U, "pets", "- has a cat")
    server.script("chat", '[{"content": "Mina adopted a dog", "importance": 0.8}]', "pets", *FAIL3)
    report = engine.items.memorize_report(U, "We adopted a dog.")
    assert [i.content for i in report.items] == ["Mina adopted a dog"]
    assert "summary of pets not updated" in report.notes[0]
    assert {c.name: c.summary for c in engine.items.categories(U)}["pets"] == "- has a cat"


def test_memorize_with_a_given_category_skips_classification(engine, server):
    server.script("chat", '[{"content": "Flight at 7:40", "importance": 0.5}]', "- flight at 7:40")
    [item] = engine.items.memorize(U, "My flight leaves at 7:40.", category="travel")
    assert item.category == "travel" and len(server.captured("chat")) == 2


def test_memorize_refuses_bad_input_before_any_llm_call(engine, server):
    for call in (
        lambda: engine.items.memorize(U, "   "),
        lambda: engine.items.memorize("bad'id", "x"),
        lambda: engine.items.memorize(U, "x", category="Bad Cat"),
        lambda: engine.items.memorize(U, "x", importance=float("nan")),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert server.captured() == []


def test_memorize_offline_stores_the_text_as_one_item(offline):
    report = offline.items.memorize_report(U, "Offline text")
    assert report.strategy == "memorize_offline" and len(report.items) == 1 and report.llm_calls == 0


# -- reflection ------------------------------------------------------------------------------------------------------
def _episodes(e: MemoryEngine, n: int = 3) -> list[str]:
    out = []
    for k in range(n):
        ep = e.episodes.record(
            U,
            [{"action": "open the ticket"}, {"action": "run the tests"}, {"action": f"fix bug {k}"}],
            outcome="success" if k else "failure",
        )
        out.append(ep.id)
    return out


def test_reflect_stores_llm_insights_with_provenance_to_every_episode(engine, server):
    ids = _episodes(engine)
    server.script(
        "chat",
        '[{"content": "Running tests first avoids rework", "confidence": 0.8}, '
        '{"content": "no confidence given"}, {"content": ""}, {"content": "bad", "confidence": 9}]',
    )
    items, strategy = engine.items.reflect(U, window=10)
    assert strategy == "reflection"
    assert [(i.content, i.importance) for i in items] == [
        ("Running tests first avoids rework", 0.8),
        ("no confidence given", 0.6),
        ("bad", 0.6),
    ]
    assert all(i.category == "insights" for i in items)
    assert {s["id"] for s in items[0].provenance["sources"]} == set(ids)
    assert "Episode 1 (outcome:" in server.captured("chat")[0].prompt


@pytest.mark.parametrize("reply", ["no json here", Reply(status=500)], ids=["garbage", "server-error"])
def test_reflect_falls_back_to_offline_insights_on_garbage_or_failure(engine, server, reply):
    _episodes(engine)
    server.script("chat", *([reply] if isinstance(reply, str) else FAIL3))
    items, strategy = engine.items.reflect(U)
    assert strategy.startswith("reflection_offline (LLM failed")
    assert items and all(i.provenance["method"] == "reflection_offline" for i in items)


# -- skill mining ----------------------------------------------------------------------------------------------------
def test_mining_proposes_skills_and_writes_nothing(engine, server):
    ids = _episodes(engine)
    server.script(
        "chat",
        json.dumps(
            [
                {
                    "name": "Test First Fix",
                    "kind": "prompt",
                    "body": "1. open the ticket\n2. run the tests",
                    "description": "When fixing a bug.",
                    "confidence": 0.85,
                },
                {"name": "odd kind", "kind": "shell", "body": "do it", "description": "  ", "confidence": 3},
                {"name": "", "body": "no name"},
                {"name": "no_body", "body": "  "},
                "just a string",
            ]
        ),
    )
    result = engine.skills.mine(U, window=20)
    assert result.strategy == "skill_mining" and result.dropped == 3
    first, second = result.proposals
    assert (first.name, first.kind, first.confidence, first.description) == (
        "test_first_fix",
        "prompt",
        0.85,
        "When fixing a bug.",
    )
    assert (second.name, second.kind, second.confidence, second.description) == ("odd_kind", "prompt", 0.5, None)
    assert set(first.source_episode_ids) == set(ids)
    assert engine.skills.rank(U) == []  # proposals only
    assert "successful pattern that recurs" in server.captured("chat")[0].prompt


def test_accepting_a_proposal_registers_it_with_mining_provenance(engine, server):
    ids = _episodes(engine)
    server.script(
        "chat",
        '[{"name": "triage", "kind": "template", "body": "Triage {{ticket}}", '
        '"description": "On a new ticket.", "confidence": 0.7}]',
    )
    [proposal] = engine.skills.mine(U).proposals
    skill = engine.skills.accept_proposal(U, proposal)
    assert (skill.name, skill.kind, skill.body, skill.version) == ("triage", "template", "Triage {{ticket}}", 1)
    assert skill.provenance["method"] == "skill_mining" and skill.provenance["confidence"] == 0.7
    assert {s["id"] for s in skill.provenance["sources"]} == set(ids)
    edited = engine.skills.accept_proposal(U, to_plain(proposal), body="Triage carefully")
    assert (edited.version, edited.body) == (2, "Triage carefully")


def test_accepting_a_bad_proposal_is_refused_and_writes_nothing(engine):
    bad = SkillProposal("ok_name", "prompt", "body", None, 0.5, ("x'; DROP TABLE skills; --",))
    with pytest.raises(InvalidInput):
        engine.skills.accept_proposal(U, bad)
    with pytest.raises(InvalidInput):
        engine.skills.accept_proposal(U, SkillProposal("Not A Name!!", "prompt", "", None, 0.5, ()), name="???")
    assert engine.skills.rank(U) == []


@pytest.mark.parametrize("answer", ["sorry, no", '{"name": "x"}'], ids=["prose", "object"])
def test_mining_with_non_json_output_proposes_nothing(engine, server, answer):
    _episodes(engine)
    server.script("chat", answer)
    result = engine.skills.mine(U)
    assert result.proposals == () and "malformed" in result.strategy


def test_mining_falls_back_to_recurring_successful_sequences_when_the_llm_fails(engine, server):
    for _ in range(2):
        engine.episodes.record(U, [{"action": "pull"}, {"action": "build"}], outcome="success")
    engine.episodes.record(U, [{"action": "pull"}, {"action": "build"}], outcome="failure")
    server.script("chat", *FAIL3)
    result = engine.skills.mine(U)
    assert result.strategy.startswith("skill_mining_offline (LLM failed")
    [p] = result.proposals
    assert (p.name, p.body, p.method) == ("pull_then_build", "1. pull\n2. build", "skill_mining_offline")
    assert len(p.source_episode_ids) == 2


def test_mining_outcome_filter_and_empty_window(engine, server, offline):
    _episodes(engine)
    assert engine.skills.mine(U, outcomes=["partial"]).strategy == "none (no episodes)"
    assert offline.skills.mine(U).proposals == ()
    with pytest.raises(InvalidInput):
        engine.skills.mine(U, window=0)
    assert server.captured() == []


# -- reason ----------------------------------------------------------------------------------------------------------
def test_reason_renders_slots_calls_the_llm_and_writes_the_slot_with_source_llm(engine, server):
    engine.working.update(U, "s1", {"goals": "book a trip", "budget": {"eur": 500}})
    server.script("chat", "Go to Porto by train.")
    result = engine.working.reason(U, "s1", "Goal: {{goals}}. Budget: {{ budget }}. Unknown: [{{nope}}]")
    [req] = server.captured("chat")
    assert req.prompt == 'Goal: book a trip. Budget: {"eur": 500}. Unknown: []'
    assert result.value == "Go to Porto by train." and result.slot == "intermediate_reasoning"
    assert engine.working.get(U, "s1")["intermediate_reasoning"] == "Go to Porto by train."
    [edit] = engine.working.history(U, "s1", "intermediate_reasoning")
    assert edit.source == "llm"
    assert engine.items.list_items(U).total == 0  # never touches long-term memory


def test_reason_parses_json_into_a_custom_slot(engine, server):
    server.script("chat", '```json\n{"steps": ["a", "b"]}\n```')
    result = engine.working.reason(U, "s1", "plan", into="plan", parse="json")
    assert result.value == {"steps": ["a", "b"]}
    assert engine.working.get(U, "s1")["plan"] == {"steps": ["a", "b"]}


def test_reason_with_unparseable_output_writes_nothing(engine, server):
    server.script("chat", "not json")
    with pytest.raises(InvalidInput):
        engine.working.reason(U, "s1", "plan", into="plan", parse="json")
    assert "plan" not in engine.working.get(U, "s1")


def test_reason_with_a_failing_server_raises_llm_unavailable_and_writes_nothing(engine, server):
    server.script("chat", *FAIL3)
    with pytest.raises(LLMUnavailable, match="nothing was written"):
        engine.working.reason(U, "s1", "think")
    assert engine.working.get(U, "s1")["intermediate_reasoning"] is None


def test_reason_without_an_llm_raises_a_clear_error(offline):
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        offline.working.reason(U, "s1", "think about {{goals}}")
    assert offline.working.history(U, "s1") == []


def test_reason_refuses_a_bad_slot_or_template_before_calling(engine, server):
    for call in (
        lambda: engine.working.reason(U, "s1", "x", into="Bad Slot"),
        lambda: engine.working.reason(U, "s1", "  "),
        lambda: engine.working.reason(U, "s1", "x", parse="yaml"),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert server.captured() == []


def test_reflecting_twice_over_the_same_episodes_stores_each_insight_once(engine, server):
    _episodes(engine)
    answer = (
        '[{"content": "Running tests first avoids rework", "confidence": 0.8}, '
        '{"content": "running tests first avoids rework  "}]'
    )
    server.script("chat", answer, answer)
    first, _ = engine.items.reflect(U)
    second, strategy = engine.items.reflect(U)
    assert strategy == "reflection"
    assert [i.content for i in first] == ["Running tests first avoids rework"]
    assert [i.id for i in second] == [i.id for i in first], "the stored insight is returned, not a copy"
    assert engine.items.list_items(U, category="insights").total == 1


def test_offline_reflection_twice_stores_nothing_new(offline):
    _episodes(offline)
    first, _ = offline.items.reflect(U)
    second, _ = offline.items.reflect(U)
    assert first and sorted(i.id for i in second) == sorted(i.id for i in first)
    assert offline.items.list_items(U, category="insights").total == len(first)
