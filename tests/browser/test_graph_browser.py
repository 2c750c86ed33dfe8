"""The Graph page in Chromium (issue 30), on a dashboard of its own over a small hand-made graph: Ada worked at Acme
(Berlin) until March 2026 and at Initech (Munich) since; she knows Bob, who works at Globex. Each fact names the
message of session ``work-s1`` it came from.

- the neighbourhood is drawn as a network (the current employer, not the old one), and clicking a node moves to it;
- "as of" a date in 2025 shows Acme instead of Initech;
- a deep link to Ada's ``works_at`` opens the fact's timeline: Acme superseded by Initech, each version with its
  source message, and that link lands on the Sessions page at the message, marked;
- a deep link by entity id opens that entity; a user without a graph is told what to do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import RUN_IS_OVER, rerun, run_streamlit, settle
from playwright.sync_api import Page, expect

from engine import FactSource, MemoryEngine, Settings

pytestmark = pytest.mark.browser

USER, SESSION = "ada", "work-s1"


@pytest.fixture(scope="module")
def graph_server(tmp_path_factory, embedder) -> Iterator[tuple[str, dict[str, str]]]:
    """A server over a store of this module's own; yields its URL and the entity ids by name."""
    path = tmp_path_factory.mktemp("graph-browser") / "store"
    # Extraction off: the graph is exactly the facts added below, whatever the extractor would draw
    settings = Settings.from_env({"MEMLENS_GRAPH_EXTRACTION": "off"}, store=str(path))
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    for n in range(1, 31):
        text = {3: "I work at Acme in Berlin.", 27: "I now work at Initech."}.get(n, f"small talk number {n}")
        engine.sessions.add_message(USER, SESSION, "user", text)
    msg3, msg27 = FactSource("message", f"{SESSION}#3"), FactSource("message", f"{SESSION}#27")
    fact = engine.graph.add_fact
    fact(USER, "Ada", "works_at", "Acme", valid_from="2025-02-01T09:00:00Z", sources=[msg3], subject_type="person")
    fact(USER, "Acme", "located_in", "Berlin", valid_from="2025-02-01T09:00:00Z", sources=[msg3], object_type="place")
    fact(USER, "Ada", "works_at", "Initech", valid_from="2026-03-01T09:00:00Z", sources=[msg27])
    fact(USER, "Initech", "located_in", "Munich", valid_from="2026-03-01T09:00:00Z", object_type="place")
    fact(USER, "Ada", "knows", "Bob", valid_from="2025-06-01T09:00:00Z", object_type="person")
    fact(USER, "Bob", "works_at", "Globex", valid_from="2025-06-01T09:00:00Z", object_type="organization")
    engine.sessions.add_message("newcomer", "n-s1", "user", "hello")
    ids = {name: engine.graph.resolve(USER, name).id for name in ("Ada", "Bob", "Acme", "Initech")}  # type: ignore[union-attr]
    engine.close()
    with run_streamlit(path, tmp_path_factory.mktemp("graph-log") / "server.log") as url:
        yield url, ids


def open_graph(page: Page, url: str, query: str, heading: str) -> None:
    page.goto(f"{url}/graph?{query}", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Graph", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()


def node_labels(page: Page) -> list[str]:
    """The entity names drawn on the network (plotly's SVG text of the node traces)."""
    page.locator(".js-plotly-plot").first.wait_for()
    return page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot .scatterlayer .trace')]
            .filter(t => t.__data__ && t.__data__[0] && t.__data__[0].trace.customdata?.[0]?.[0] === 'entity')
            .flatMap(t => [...t.querySelectorAll('.textpoint text')].map(x => x.textContent))"""
    )


def node_point(page: Page, entity_id: str) -> tuple[float, float]:
    """Where the node of ``entity_id`` is on the screen, from the figure plotly drew."""
    return tuple(
        page.evaluate(
            """(id) => {
                const gd = document.querySelector('.js-plotly-plot');
                const fl = gd._fullLayout, box = gd.getBoundingClientRect();
                for (const t of gd._fullData) {
                    const i = (t.customdata || []).findIndex(c => c[0] === 'entity' && c[1] === id);
                    if (i >= 0) return [box.left + fl._size.l + fl.xaxis.l2p(t.x[i]),
                                        box.top + fl._size.t + fl.yaxis.l2p(t.y[i])];
                }
                return null;
            }""",
            entity_id,
        )
    )


def test_the_neighbourhood_is_a_network_and_a_click_on_a_node_moves_to_it(page, graph_server, screenshot):
    url, ids = graph_server
    open_graph(page, url, f"user={USER}&entity=Ada", "Ada")
    expect(page.locator(".js-plotly-plot")).to_be_visible()
    assert sorted(node_labels(page)) == ["Ada", "Bob", "Initech"]
    expect(page.get_by_text("3 entities and 2 relations valid now", exact=False)).to_be_visible()
    screenshot("graph_neighbourhood")
    x, y = node_point(page, ids["Bob"])
    with rerun(page):
        page.mouse.click(x, y)
    expect(page.get_by_role("heading", name="Bob", exact=True)).to_be_visible()
    page.wait_for_function(RUN_IS_OVER)
    assert sorted(node_labels(page)) == ["Ada", "Bob", "Globex"]
    assert f"entity={ids['Bob']}" in page.url


def test_an_as_of_date_shows_what_was_valid_then(page, graph_server, screenshot):
    url, _ = graph_server
    open_graph(page, url, f"user={USER}&entity=Ada&depth=2", "Ada")
    assert "Initech" in node_labels(page) and "Acme" not in node_labels(page)
    # Streamlit's date input is three spin buttons (year, month, day) that move on as each is typed
    page.get_by_role("spinbutton", name="year, As of (empty: now)").click()
    page.keyboard.type("20251231")
    with rerun(page):  # the date is sent when the field loses focus
        page.get_by_role("heading", name="Graph", exact=True).click()
    expect(page.get_by_text("valid at the end of 2025-12-31", exact=False)).to_be_visible()
    labels = node_labels(page)
    assert {"Acme", "Berlin", "Bob", "Globex"} <= set(labels) and "Initech" not in labels
    assert "as_of=2025-12-31" in page.url
    screenshot("graph_as_of")


def test_a_fact_timeline_links_each_version_to_its_source_message_on_the_sessions_page(page, graph_server, screenshot):
    url, _ = graph_server
    open_graph(page, url, f"user={USER}&entity=Ada&predicate=works_at", "Ada")
    expect(page.get_by_role("tab", name="Timeline", exact=True)).to_have_attribute("aria-selected", "true")
    expect(page.get_by_text("Acme → Initech", exact=False)).to_be_visible()
    expect(page.get_by_text("v1 · superseded", exact=False)).to_be_visible()
    expect(page.get_by_text("v2 · valid", exact=False)).to_be_visible()
    screenshot("graph_timeline")
    link = page.get_by_role("link", name=f"{SESSION} · message #27").first
    expect(link).to_be_visible()
    link.click()
    page.get_by_role("heading", name="Sessions", exact=True).wait_for()
    settle(page, started=True)
    expect(page.get_by_role("heading", name=f"Messages of {SESSION}")).to_be_visible()
    marked = page.locator(".st-key-sessions_linked_message")
    expect(marked).to_contain_text("I now work at Initech.")
    expect(marked).to_contain_text("linked message")
    expect(marked).to_be_in_viewport()  # scrolled into view
    assert "message=27" in page.url
    screenshot("graph_source_message_on_sessions")


def test_a_deep_link_by_id_opens_that_entity_and_a_user_without_a_graph_is_told_what_to_do(page, graph_server):
    url, ids = graph_server
    open_graph(page, url, f"user={USER}&entity={ids['Acme']}", "Acme")
    assert sorted(node_labels(page)) == ["Acme", "Berlin"]  # Ada's works_at Acme is superseded: not valid now
    page.goto(f"{url}/graph?user=newcomer", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Graph", exact=True).wait_for()
    settle(page, started=True)
    expect(page.get_by_text("has no graph yet", exact=False)).to_be_visible()
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
