"""The participant stage: a hop whose query names a speaker of the conversation turns its search found searches
again with (1 - w) * v(query) + w * v(query without the names), normalised; full-text search keeps the names.

The expected numbers are computed by hand in the comments, or from the real model's own vectors: a candidate's
cosine to the blend is ((1 - w) * q.v + w * s.v) / |(1 - w) * q + w * s|, where q.v and s.v are its cosines in the
retrievals at weights 0 and 1. On a real store the text blended in is recorded on the hop, kept by the stored trace
and its replay, and named by why-not, the timing span and nothing else when the query names no participant.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from engine import MemoryEngine, Settings
from engine.interop.otel_spans import retrieval_spans
from engine.presets import PRESETS
from engine.providers.embedders import embed_queries
from engine.retrieval.participants import blend, speakers, without_participants
from engine.trace.redaction import REDACTED_QUERY, redact_quotes
from engine.trace.why_not import why_not
from tests.support.stored_trace import empty_trace
from tests.support.stored_turns import remember_turns
from ui.trace_timing import span_io

T = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
USER = "participants"


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        ("What books has John read?", {"John", "Tim"}, "What books has read?"),
        ("What is Caroline's identity?", {"Caroline"}, "What is identity?"),
        ("What is Caroline’s identity?", {"Caroline"}, "What is identity?"),  # a typographic apostrophe too
        ("Did Mary Ann call Mary?", {"Mary", "Mary Ann"}, "Did call ?"),  # the longer name first
        ("What did Johnson tell John?", {"John"}, "What did Johnson tell ?"),  # a whole name only
        ("Where did the team go?", {"John"}, None),  # names none of them
        ("Caroline?", {"Caroline"}, None),  # nothing left to search for
        ("What did John say?", set(), None),  # no conversation found
    ],
)
def test_the_query_without_its_participants_names(query, names, expected):
    assert without_participants(query, names) == expected


def test_the_participants_are_the_speakers_opening_the_turns():
    texts = [
        'Melanie said, "Hey Caroline!"',
        'Mary Ann said, "Hi."',
        "user: what did Melanie say?",  # a role, not a name
        "Caroline painted a lake.",  # a name, but no turn of hers
        'the team said, "ship it"',  # lower case: not a name
    ]
    assert speakers(texts) == {"Melanie", "Mary Ann"}


def test_the_blend_is_the_weighted_sum_scaled_to_unit_length():
    # 0.6 * (1, 0) + 0.4 * (0, 1) = (0.6, 0.4), length sqrt(0.52) = 0.721110: (0.832050, 0.554700)
    got = blend(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.4)
    assert got == pytest.approx([0.832050, 0.554700], abs=1e-6)
    assert got.dtype == np.float32
    # Opposite vectors at 0.5 cancel out: the query's own vector is kept rather than a zero one
    assert blend(np.array([1.0, 0.0]), np.array([-1.0, 0.0]), 0.5) == pytest.approx([1.0, 0.0])


TURNS = [
    'Caroline said, "Hey Melanie! I finished the painting of the lake at sunrise for the art show."',
    'Melanie said, "Wow Caroline, that is beautiful! I took the kids camping by the lake last weekend."',
    'Caroline said, "I also started reading a book about adoption agencies."',
    'Melanie said, "Hey Caroline, the kids loved the pottery class we took together."',
]
QUESTION = "What did Caroline paint for the art show?"


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


@pytest.fixture(scope="module")
def ids(engine: MemoryEngine) -> list[str]:
    return remember_turns(engine, USER, TURNS, T)


def cosines(trace) -> dict[str, float]:
    return {c.id: c.scores.vector_similarity for c in trace.hops[0].candidates}


def test_a_query_naming_a_participant_searches_with_the_blend_and_records_what_it_blended(engine, ids, embedder):
    trace = engine.retrieval.retrieve(USER, QUESTION, now=NOW)
    hop = trace.hops[0]
    assert hop.vector_query == "What did paint for the art show?"
    assert set(cosines(trace)) == set(ids)
    own = engine.retrieval.retrieve(USER, QUESTION, overrides={"participant_weight": 0.0}, now=NOW, save=False)
    alone = engine.retrieval.retrieve(USER, QUESTION, overrides={"participant_weight": 1.0}, now=NOW, save=False)
    assert own.hops[0].vector_query is None and alone.hops[0].vector_query == hop.vector_query
    q, s = embed_queries(embedder, [QUESTION, hop.vector_query])
    length = float(np.linalg.norm(0.6 * q + 0.4 * s))  # sqrt(0.36 + 0.16 + 0.48 q.s)
    assert length == pytest.approx(np.sqrt(0.52 + 0.48 * float(q @ s)), rel=1e-5)
    qv, sv = cosines(own), cosines(alone)
    for item_id, got in cosines(trace).items():
        assert got == pytest.approx((0.6 * qv[item_id] + 0.4 * sv[item_id]) / length, abs=3e-6)
    # Full-text search keeps the names: the BM25 scores are those of the query's own search
    assert {c.id: c.scores.fts_score for c in hop.candidates} == {
        c.id: c.scores.fts_score for c in own.hops[0].candidates
    }
    # The stage took the names' pull away: Caroline's painting leads further ahead of Melanie's greetings
    assert trace.ranking[0].id == ids[0]


def test_the_stored_trace_keeps_the_blended_text_and_replays_exactly(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, now=NOW)
    stored = engine.traces.get(trace.trace_id)
    assert stored.hops[0].vector_query == trace.hops[0].vector_query
    assert cosines(stored) == cosines(trace)
    replayed = engine.retrieval.replay_trace(stored)
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    assert replayed.hops[0].vector_query == trace.hops[0].vector_query
    # A hard forget of a memory the question quoted leaves no part of the quote in the blended text either
    quoted = redact_quotes(trace, {"gone": "Caroline paint for the art show"})
    assert quoted.hops[0].vector_query == REDACTED_QUERY and "paint" not in quoted.question


def test_why_not_and_the_timing_span_name_the_blend(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, now=NOW, save=False)
    said = why_not(trace, ids[3]).rows[0]["what happened"]
    assert "used the query blended with 'What did paint for the art show?' (its participants' names left out)" in said
    inputs, _ = span_io(trace, "hop1.participants")
    assert ("query without the names", "What did paint for the art show?") in inputs
    assert ("its share of the vector", "0.4") in inputs
    assert "participants" in trace.hops[0].timings_ms.as_dict()
    # The OpenTelemetry export lays the stage between the search and the candidates' load
    spans = [s for top in retrieval_spans(trace) for s in top.walk() if s.name.startswith("memlens.stage")]
    names = [s.name for s in spans]
    after = spans[names.index("memlens.stage participants")]
    assert names[names.index("memlens.stage participants") - 1] == "memlens.stage search"
    assert after.start_ns == spans[names.index("memlens.stage search")].end_ns


def test_a_later_hop_searches_with_its_own_vector(engine, ids):
    def next_query(question, accumulated, hop):
        return "Caroline book adoption agencies"  # names a participant too

    trace = engine.retrieval.retrieve(USER, QUESTION, hops=2, reasoner=next_query, now=NOW, save=False)
    assert [h.vector_query for h in trace.hops] == ["What did paint for the art show?", None]
    alone = engine.retrieval.retrieve(
        USER, "Caroline book adoption agencies", overrides={"participant_weight": 0.0}, now=NOW, save=False
    )
    assert cosines(alone) and {c.id: c.scores.vector_similarity for c in trace.hops[1].candidates} == cosines(alone)


def test_a_query_naming_no_participant_searches_with_its_own_vector(engine, ids):
    question = "What did the painter make for the art show?"
    trace = engine.retrieval.retrieve(USER, question, now=NOW, save=False)
    own = engine.retrieval.retrieve(USER, question, overrides={"participant_weight": 0.0}, now=NOW, save=False)
    assert trace.hops[0].candidates and trace.hops[0].vector_query is None
    assert cosines(trace) == cosines(own)
    assert "participants" not in trace.hops[0].timings_ms.as_dict()
    assert "blended" not in why_not(trace, ids[0]).rows[0]["what happened"]


def test_a_name_that_opens_no_stored_turn_is_kept(engine):
    engine.items.remember("participants-notes", "Caroline painted the lake for the art show.")
    trace = engine.retrieval.retrieve("participants-notes", QUESTION, now=NOW, save=False)
    assert trace.hops[0].candidates and trace.hops[0].vector_query is None


def test_traces_from_before_the_stage_and_the_presets_llmemory_without_it():
    settings = empty_trace({"top_k": 10, "now": NOW.isoformat()}, NOW).settings
    assert settings.retrieval.participant_weight == 0.0 and "participant_weight" not in settings.absent
    assert Settings().with_overrides(PRESETS["llmemory"]).participant_weight == 0.0
    assert Settings().with_overrides(PRESETS["deep"]).participant_weight == 0.4
    assert Settings().participant_weight == 0.4
