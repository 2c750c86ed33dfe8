"""A trace seen as space (issue 32, deliver 4), on the demo store: the question, each hop's query and every candidate
placed by PCA of the real vectors (the candidates' stored ones, the queries embedded again), each candidate with its
verdict and hops, the evaluation case's expected memories marked, and a memory forgotten since named, not drawn."""

from __future__ import annotations

import numpy as np
import pytest

from engine import MemoryEngine, NotFound
from engine.trace.embedding_map import FILTERED, IN_CONTEXT, RANKED, project_2d

QUESTION = "Which timezone does the engineer who owns the refund reconciliation job work in?"


@pytest.fixture(scope="module")
def case_trace(demo: MemoryEngine):
    """A one-case set run with two hops: its trace is an evaluation case's."""
    demo.evals.add_case("map-set", "ada", QUESTION, ["ada-item-026", "ada-item-033"], case_id="c1", create_set=True)
    run = demo.evals.evaluate("map-set", hops=2)
    (result,) = demo.evals.results(run.run_id)
    return demo.traces.get(result.trace_id)


def test_pca_keeps_the_main_direction_and_draws_the_same_map_every_time():
    line = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    coords, (first, second) = project_2d(line)
    assert first == pytest.approx(1.0) and second == pytest.approx(0.0)
    assert coords[:, 0] == pytest.approx([-4 / 3, -1 / 3, 5 / 3])  # centred, distances kept, largest loading +
    again, _ = project_2d(line * 1.0)
    assert np.array_equal(coords, again)
    assert project_2d(np.zeros((0, 4)))[0].shape == (0, 2)
    assert project_2d(np.ones((1, 4)))[0].tolist() == [[0.0, 0.0]]


def test_a_two_hop_case_trace_maps_its_question_queries_and_candidates(demo, case_trace):
    m = demo.traces.embedding_map(case_trace.trace_id)
    assert len(case_trace.hops) == 2 and m.note == "" and m.without_vector == ()
    assert (m.case, m.gold) == ("map-set · c1", ("ada-item-026", "ada-item-033"))
    question = [p for p in m.points if p.role == "question"]
    queries = [p for p in m.points if p.role == "query"]
    assert len(question) == 1 and question[0].text == QUESTION
    assert {h for p in (*question, *queries) for h in p.hops} == {1, 2}  # hop 1 asked the question itself
    assert [p.text for p in queries] == [h.query for h in case_trace.hops if h.query != QUESTION]
    cands = {p.id: p for p in m.points if p.role == "candidate"}
    seen = {c.id for h in case_trace.hops for c in h.candidates}
    assert set(cands) == seen
    for memory_id, p in cands.items():
        assert p.hops == tuple(h.hop for h in case_trace.hops if any(c.id == memory_id for c in h.candidates))
        ranked = any(r.id == memory_id and r.rank is not None for r in case_trace.ranking)
        want = IN_CONTEXT if memory_id in case_trace.context_ids else RANKED if ranked else FILTERED
        assert p.verdict == want
        assert p.gold == (memory_id in m.gold)
    assert sum(p.gold for p in cands.values()) == len(set(m.gold) & seen) and m.gold_unseen == tuple(
        g for g in m.gold if g not in seen
    )
    assert 0 < m.explained[1] <= m.explained[0] < 1
    # The map is PCA of the real vectors: a gold memory sits nearer the question than the average candidate.
    q = np.array([question[0].x, question[0].y])
    dist = {i: float(np.hypot(p.x - q[0], p.y - q[1])) for i, p in cands.items()}
    assert min(dist[g] for g in m.gold if g in dist) < np.mean(list(dist.values()))


def test_a_plain_trace_has_no_gold_and_a_forgotten_candidate_is_named_not_drawn(demo):
    trace = demo.retrieval.retrieve("ada", "Which tool does Ada use for linting and formatting?", hops=1)
    before = demo.traces.embedding_map(trace)
    assert before.gold == () and before.case is None
    victim = next(p.id for p in before.points if p.role == "candidate" and p.verdict == IN_CONTEXT)
    demo.forgetting.forget("ada", "semantic", [victim], "map test", mode="hard", actor="test")
    after = demo.traces.embedding_map(trace.trace_id)  # the stored trace now carries the tombstone
    assert victim not in {p.id for p in after.points}
    (why,) = [w for i, w in after.without_vector if i == victim]
    assert why.startswith("forgotten since the trace ran") and "map test" in why
    with pytest.raises(NotFound):
        demo.traces.embedding_map("tr_nosuchtrace")
