"""Where an imported memory came from, on the pages that show it (engine.imports; issue 31): "Imported from <system>
· source id ..." on the Memories page's detail, the Episodes page's episode, the Skills page's version cards and
wherever a memory is shown with its sources (the trace pages, through ui/memory_sources.py); "Imported from
<system> · source session ..." on the Sessions page. A memory memlens wrote itself shows no such line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest_helpers import app_engine, no_errors, open_link, open_page, values

from engine import MemoryEngine, Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "interop"
USER = "brad"


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    """Brad's Letta agent file and his llmemory store imported, plus one memory memlens wrote itself."""
    path = tmp_path_factory.mktemp("imported-origin") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.imports.letta(FIXTURES / "letta_memgpt_agent.af", user_id=USER)
    engine.imports.llmemory(FIXTURES / "llmemory_store")
    engine.items.remember(USER, "Brad keeps his life jacket in the car.")
    engine.close()
    return path


@pytest.fixture
def app(store: Path) -> Iterator[MemoryEngine]:
    with app_engine(store) as engine:
        yield engine


def item(engine: MemoryEngine, text: str):
    return next(i for i in engine.items.list_items(USER).rows if i.content.startswith(text))


def test_the_memories_page_says_where_an_imported_fact_came_from(app):
    passage = item(app, "Brad sails a small dinghy on the Berkeley marina")
    at = open_link("pages/memories.py", {"user": USER, "memory": passage.id, "tab": "browse"})
    no_errors(at)
    assert ":material/input: Imported from Letta · source id passage\\-0" in values(at, "caption")
    fact = item(app, "Brad prefers tea")
    at = open_link("pages/memories.py", {"user": USER, "memory": fact.id, "tab": "browse"})
    assert ":material/input: Imported from llmemory · source id item\\_2" in values(at, "caption")


def test_a_memory_memlens_wrote_itself_shows_no_origin(app):
    own = item(app, "Brad keeps his life jacket")
    at = open_link("pages/memories.py", {"user": USER, "memory": own.id, "tab": "browse"})
    no_errors(at)
    assert own.content in values(at, "text")
    assert not any("Imported from" in v for v in values(at, "caption"))


def test_the_sessions_page_says_which_system_a_conversation_was_imported_from(app):
    at = open_page("pages/sessions.py", user=USER, session="letta:memgpt_agent")
    no_errors(at)
    assert ":material/input: Imported from Letta · source session memgpt\\_agent" in values(at, "caption")
    at = open_page("pages/sessions.py", user=USER, session="llmemory:s1")
    assert ":material/input: Imported from llmemory · source session s1" in values(at, "caption")


def test_episodes_and_skill_versions_show_their_origin(app):
    (episode,) = app.episodes.list_episodes(USER).rows
    at = open_link("pages/episodes.py", {"user": USER, "episodes_episode": episode.id})
    no_errors(at)
    assert ":material/input: Imported from llmemory · source id ep\\_1" in values(at, "caption")
    skill = app.skills.versions(USER, "check_wind_before_sailing")[-1]
    at = open_link("pages/skills.py", {"user": USER, "memory": skill.id})
    no_errors(at)
    shown = values(at, "caption")
    assert {":material/input: Imported from llmemory · source id skill\\_1",
            ":material/input: Imported from llmemory · source id skill\\_2"} <= set(shown)  # fmt: skip


def test_a_trace_shows_where_an_imported_memory_it_recalled_came_from(app):
    """The pages that know a memory by its id (the Feedback page's trace rows, the Retrieval trace's label and
    why-not panels) show its sources through ui/memory_sources.py, the origin included."""
    trace = app.retrieval.retrieve(USER, "Where does Brad go sailing on Saturdays?")
    passage = item(app, "Brad sails a small dinghy on the Berkeley marina")
    assert passage.id in {r.id for r in trace.ranking}
    at = open_page("pages/feedback.py", user=USER, state={"trace_current_id": trace.trace_id})
    no_errors(at)
    assert ":material/input: Imported from Letta · source id passage\\-0" in values(at, "caption")
