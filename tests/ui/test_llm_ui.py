"""LLM features in the dashboard: Reason on the Working memory page and skill mining review on the Skills page.

Offline (no key) Reason explains that it needs an LLM and writes nothing, and mining uses its offline strategy.
With a key, the real ``openai`` client talks to the local OpenAI-compatible test server (``tests/support``), whose
scripted answers must end up in working memory and in the proposals a person accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest_helpers import app_engine, button, no_errors, open_page, values

from engine import MemoryEngine
from tests.support.openai_server import TEST_KEY, FakeOpenAI, Reply
from ui.text import md_escape

WM = "pages/working_memory.py"
SKILLS = "pages/skills.py"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def llm_app(demo_store_dir: Path, server: FakeOpenAI) -> Iterator[MemoryEngine]:
    """The dashboard on this module's demo store copy, with the LLM pointed at the local test server."""
    server.reset()
    env = {
        "OPENAI_API_KEY": TEST_KEY,
        "OPENAI_BASE_URL": server.base_url,
        "MEMLENS_EMBEDDER": "local",
        "MEMLENS_CHAT_MODEL": "test-chat",
        "MEMLENS_LLM_TIMEOUT": "10",
        "MEMLENS_LLM_RETRIES": "0",
    }
    with app_engine(demo_store_dir, **env) as engine:
        yield engine


def reason(at, template: str, into: str = "intermediate_reasoning", parse: str = "none"):
    at.text_area(key="wm_reason_template").input(template)
    at.text_input(key="wm_reason_into").input(into)
    at.radio(key="wm_reason_parse").set_value(parse)
    button(at, "Reason").click().run()
    return at


def propose(at, window: int = 20, outcomes: str = ""):
    at.number_input(key="skills_mine_window").set_value(window)
    at.text_input(key="skills_mine_outcomes").input(outcomes)
    button(at, "Propose").click().run()
    return at


def mined(at) -> dict:
    return at.session_state["skills_mined"]


# -- offline ---------------------------------------------------------------------------------------------------------
def test_reason_without_an_llm_says_so_and_writes_nothing(demo_app):
    user, session = "tomas", "tomas-s05"
    slots = demo_app.working.get(user, session)
    edits = [e.id for e in demo_app.working.history(user, session)]
    at = open_page(WM, user=user, session=session)
    assert any("No LLM is configured" in v for v in values(at, "caption"))
    reason(at, "Goals: {{goals}}. What next?")
    assert not at.exception
    assert any("Nothing written" in v and "reason needs an LLM" in v for v in values(at, "error"))
    assert demo_app.working.get(user, session) == slots
    assert [e.id for e in demo_app.working.history(user, session)] == edits
    assert "wm_reason_result" not in at.session_state


def test_offline_mining_on_the_demo_says_offline_and_that_there_is_nothing_to_review(demo_app):
    skills = [r.skill.id for r in demo_app.skills.rank("ada", limit=1000)]
    at = propose(open_page(SKILLS, user="ada"))
    no_errors(at)
    assert any("Strategy: offline" in v and "skill\\_mining\\_offline" in v for v in values(at, "caption"))
    assert any("No proposals to review" in v for v in values(at, "info"))
    assert [r.skill.id for r in demo_app.skills.rank("ada", limit=1000)] == skills, "mining writes nothing"


def seed_recurring_episodes(engine: MemoryEngine, user: str) -> None:
    """Two action sequences, each in two successful episodes, plus a failure that must not count."""
    fix = [{"action": "reproduce the failing test"}, {"action": "bisect the commits"}, {"action": "write the fix"}]
    release = [{"action": "bump the version"}, {"action": "tag the release"}]
    for n, steps in enumerate([fix, release, fix, release, fix]):
        engine.episodes.record(
            user, steps, summary=f"episode {n}", outcome="failure" if n == 4 else "success", session_id=f"{user}-s1"
        )


def test_offline_proposals_are_rejected_without_writing_and_accepted_with_provenance(demo_app):
    user = "miner"
    seed_recurring_episodes(demo_app, user)
    expected = demo_app.skills.mine(user)
    assert len(expected.proposals) == 2 and expected.strategy == "skill_mining_offline"
    at = propose(open_page(SKILLS, user=user))
    no_errors(at)
    assert any("Strategy: offline" in v for v in values(at, "caption"))
    shown = mined(at)["proposals"]
    assert [p["name"] for p in shown] == [p.name for p in expected.proposals]
    assert all(p["body"] in values(at, "code") for p in shown), "bodies are shown as code"
    first, second = shown

    at.button(key=f"skills_reject_{first['pid']}").click().run()
    no_errors(at)
    assert demo_app.skills.rank(user) == [], "rejecting writes nothing"
    assert [p["name"] for p in mined(at)["proposals"]] == [second["name"]]
    assert any("nothing was stored" in v for v in values(at, "info"))

    at.button(key=f"skills_accept_{second['pid']}").click().run()
    no_errors(at)
    [skill] = demo_app.skills.versions(user, second["name"])
    assert skill.body == second["body"]
    assert skill.provenance["method"] == "skill_mining"
    assert [s["id"] for s in skill.provenance["sources"]] == second["source_episode_ids"]
    assert any(f"v{skill.version}" in v and md_escape(skill.id) in v for v in values(at, "success"))
    assert mined(at)["proposals"] == []
    assert [r.skill.id for r in demo_app.skills.rank(user)] == [skill.id], "the library shows the new skill"


# -- through the real client against the local OpenAI-compatible server ----------------------------------------------
def test_reason_writes_the_models_answer_into_the_slot_with_source_llm(llm_app, server):
    user, session = "ada", "ada-s06"
    goals = llm_app.working.get(user, session)["goals"]
    server.script("chat", "Check the CSV export before shipping the JPY fix.")
    at = open_page(WM, user=user, session=session)
    reason(at, "Goals: {{goals}}. What next?")
    no_errors(at)
    answer = "Check the CSV export before shipping the JPY fix."
    assert llm_app.working.get(user, session)["intermediate_reasoning"] == answer
    latest = llm_app.working.history(user, session)[0]
    assert (latest.slot, latest.source, latest.new_value) == ("intermediate_reasoning", "llm", answer)
    [request] = server.captured("chat")
    rendered = goals if isinstance(goals, str) else json.dumps(goals, ensure_ascii=False)
    assert f"Goals: {rendered}. What next?" in request.prompt
    codes = values(at, "code")
    assert f"Goals: {rendered}. What next?" in codes and answer in codes, "prompt and answer are shown as text"

    server.script("chat", '```json\n{"next": "ship", "blocked": false}\n```')
    reason(at, "Plan for {{goals}} as JSON", into="plan_next", parse="json")
    no_errors(at)
    assert llm_app.working.get(user, session)["plan_next"] == {"next": "ship", "blocked": False}
    assert llm_app.working.history(user, session)[0].source == "llm"


def test_llm_mining_shows_the_scripted_proposal_and_accepting_registers_it(llm_app, server):
    user = "ada"
    proposal = {
        "name": "Reproduce then bisect",
        "kind": "code",
        "body": "git bisect run pytest -x",
        "description": "When a test started failing after several commits.",
        "confidence": 0.9,
    }
    server.script("chat", json.dumps([proposal, {"name": "", "body": "dropped: no name"}]))
    at = propose(open_page(SKILLS, user=user), window=5)
    no_errors(at)
    assert "mining reusable skills" in server.captured("chat")[0].prompt
    assert any("Strategy: LLM" in v and "1 unusable proposal(s) dropped" in v for v in values(at, "caption"))
    [shown] = mined(at)["proposals"]
    assert (shown["name"], shown["kind"], shown["confidence"]) == ("reproduce_then_bisect", "code", 0.9)
    assert len(shown["source_episode_ids"]) == 5
    assert "git bisect run pytest -x" in values(at, "code")
    assert proposal["description"] in values(at, "text")
    assert llm_app.skills.versions(user, "reproduce_then_bisect") == [], "proposing writes nothing"

    at.button(key=f"skills_accept_{shown['pid']}").click().run()
    no_errors(at)
    [skill] = llm_app.skills.versions(user, "reproduce_then_bisect")
    assert (skill.kind, skill.body, skill.description) == ("code", proposal["body"], proposal["description"])
    assert skill.provenance["method"] == "skill_mining"
    assert [s["id"] for s in skill.provenance["sources"]] == shown["source_episode_ids"]
    assert skill.provenance["confidence"] == 0.9


def test_a_failing_llm_writes_nothing_on_reason_and_mining_falls_back_to_offline(llm_app, server):
    user, session = "ada", "ada-s05"
    edits = [e.id for e in llm_app.working.history(user, session)]
    server.script("chat", Reply(status=500), Reply(status=500))
    at = open_page(WM, user=user, session=session)
    reason(at, "Goals: {{goals}}. What next?")
    assert not at.exception
    assert any("Nothing written" in v and "the LLM call failed" in v for v in values(at, "error"))
    assert [e.id for e in llm_app.working.history(user, session)] == edits

    at = propose(open_page(SKILLS, user=user))
    no_errors(at)
    assert mined(at)["strategy"].startswith("skill_mining_offline (LLM failed")
    assert any("Strategy: offline" in v for v in values(at, "caption"))


# -- the trace page with an LLM --------------------------------------------------------------------------------------
def test_the_trace_page_shows_the_llm_reasoners_hops_when_a_server_is_configured(
    llm_app: MemoryEngine, server: FakeOpenAI
):
    question = "Which timezone does the engineer who owns the refund reconciliation job work in?"
    server.script("chat", "Priya Raman location")  # the model proposes hop 2; with 2 hops it is not asked again
    at = open_page("pages/retrieval.py", user="ada")
    at.text_area(key="trace_question").input(question)
    at.number_input(key="trace_hops").set_value(2)
    button(at, "Retrieve").click().run()
    no_errors(at)
    trace = llm_app.traces.get(at.session_state["trace_current_id"])
    assert [h.proposed_by for h in trace.hops] == ["question", "llm:reasoner"]
    assert trace.hops[1].query == "Priya Raman location"
    assert "Priya Raman location" in values(at, "code")  # hop 2's query, shown as text
    assert any(md_escape("llm:reasoner") in v for v in values(at, "caption"))  # who proposed it
    assert any("Priya Raman" in c.prompt and question in c.prompt for c in server.captured("chat"))
