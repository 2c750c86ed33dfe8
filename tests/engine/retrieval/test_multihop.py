"""Multi-hop retrieval: stop rules, merge of the hops, callable and offline reasoners (llmemory §6.8 + [memlens])."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from engine import (
    CallableReasoner,
    InvalidInput,
    MemoryEngine,
    OfflineBridgeReasoner,
    Proposal,
    ProposalDetails,
    Settings,
)
from engine.clock import utcnow

USER = "hop-user"
FACT_A = "The refund reconciliation job is owned by Priya Raman."
FACT_B = "Priya Raman is based in Bangalore and keeps IST hours."
OTHERS = [
    "The checkout service retries failed payments three times.",
    "Daniel Osei leads the Kestrel squad and approves every merge.",
    "The payout fee service runs in eu-central-1.",
    "Lunch on Fridays is pizza from the place around the corner.",
    "The staging cluster is rebuilt from scratch every Monday.",
    "Quarterly planning happens in the big meeting room.",
    "The refund dashboard shows totals per merchant and day.",
]
QUESTION = "Which timezone does the engineer who owns the refund reconciliation job work in?"


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder):
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path_factory.mktemp("multihop")), lock_timeout_s=30),
        embedder=embedder,
    )
    t0 = utcnow()
    items = engine.items.remember_many(
        [
            {"user_id": USER, "content": text, "created_at": t0 - timedelta(days=n + 1)}
            for n, text in enumerate([FACT_A, FACT_B, *OTHERS])
        ]
    )
    ids = {"a": items[0].id, "b": items[1].id}
    return engine, ids, utcnow() + timedelta(minutes=1)


def run(world, question: str = QUESTION, **kw):
    """Multi-hop under llmemory's rules (the `llmemory` preset: no later-hop discount) unless a test says otherwise."""
    engine, _, now = world
    kw.setdefault("preset", "llmemory")
    return engine.retrieval.retrieve(USER, question, now=now, save=False, **kw)


class Recorder:
    """A callable reasoner that answers from a script and remembers what it was given."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls: list[tuple] = []

    def __call__(self, question, accumulated, hop):
        self.calls.append((question, list(accumulated), hop))
        return self.answers[min(len(self.calls), len(self.answers)) - 1]


# --- stop rules ---------------------------------------------------------------------------------------------------


def test_default_is_one_hop_without_asking_the_reasoner(world):
    reasoner = Recorder("Priya Raman")
    trace = run(world, reasoner=reasoner)
    assert len(trace.hops) == 1 and trace.stop_reason == "max_hops"
    assert reasoner.calls == []
    assert trace.strategies.reasoner == "none (1 hop)"


def test_stops_at_max_hops_after_asking_the_reasoner_between_hops(world):
    reasoner = Recorder("Priya Raman", "Kestrel squad")
    trace = run(world, hops=3, reasoner=reasoner)
    assert [h.query for h in trace.hops] == [QUESTION, "Priya Raman", "Kestrel squad"]
    assert trace.stop_reason == "max_hops"
    assert [c[2] for c in reasoner.calls] == [1, 2]  # never asked after the last hop


@pytest.mark.parametrize("answer", ["DONE", "done", "  Done \n"])
def test_done_from_a_callable_reasoner_stops(world, answer):
    trace = run(world, hops=3, reasoner=Recorder(answer))
    assert len(trace.hops) == 1
    assert trace.stop_reason == "done"


@pytest.mark.parametrize("answer", ["", "   ", None])
def test_a_blank_query_stops(world, answer):
    trace = run(world, hops=2, reasoner=Recorder(answer))
    assert len(trace.hops) == 1
    assert trace.stop_reason == "blank_query"


def test_a_repeated_query_stops(world):
    assert run(world, hops=2, reasoner=Recorder(QUESTION)).stop_reason == "repeated_query"
    trace = run(world, hops=3, reasoner=Recorder("Priya Raman"))
    assert [h.query for h in trace.hops] == [QUESTION, "Priya Raman"]
    assert trace.stop_reason == "repeated_query"


def test_the_llm_reasoner_without_an_llm_means_done(world):
    trace = run(world, hops=2, overrides={"reasoner": "llm"})
    assert trace.strategies.reasoner == "llm:reasoner"
    assert len(trace.hops) == 1 and trace.stop_reason == "done"


# --- reasoners ----------------------------------------------------------------------------------------------------


def test_a_callable_reasoner_gets_the_question_the_accumulated_texts_and_the_hop(world):
    def my_reasoner(question, accumulated, hop):
        seen.append((question, list(accumulated), hop))
        return "Priya Raman" if hop == 1 else "Kestrel squad"

    seen: list[tuple] = []
    trace = run(world, hops=3, reasoner=my_reasoner)
    assert [s[0] for s in seen] == [QUESTION, QUESTION]
    assert [s[2] for s in seen] == [1, 2]
    hop1_kept = sorted(
        (c for c in trace.hops[0].candidates if c.verdicts.relevance == "kept"), key=lambda c: -c.scores.final
    )
    assert seen[0][1] == [c.text for c in hop1_kept]
    assert all(isinstance(t, str) for t in seen[1][1])
    assert set(seen[0][1]) <= set(seen[1][1])  # accumulated grows with hop 2's results
    assert trace.hops[1].proposed_by == "my_reasoner"
    assert trace.strategies.reasoner == "my_reasoner"


def test_a_reasoner_object_with_propose_is_used_as_is(world):
    class Fixed:
        name = "fixed"

        def propose(self, question, accumulated, hop, previous):
            assert previous == [QUESTION]
            return Proposal("Kestrel squad", "fixed", {"why": "test"})

    trace = run(world, hops=2, reasoner=Fixed())
    assert (trace.hops[1].query, trace.hops[1].proposed_by, trace.hops[1].proposal) == (
        "Kestrel squad",
        "fixed",
        ProposalDetails(why="test"),
    )


def test_something_that_is_not_a_reasoner_is_refused(world):
    with pytest.raises(InvalidInput):
        run(world, hops=2, reasoner=42)


def test_callable_reasoner_wrapper_strips_and_names():
    proposal = CallableReasoner(lambda q, acc, hop: "  next query \n", "mine").propose("q", ["a"], 1, ["q"])
    assert (proposal.query, proposal.proposed_by) == ("next query", "mine")


def test_offline_bridge_reasoner_proposes_a_name_from_the_top_result_absent_from_the_question():
    proposal = OfflineBridgeReasoner().propose(QUESTION, [FACT_A], 1, [QUESTION])
    assert proposal.query == "Priya Raman"
    assert proposal.proposed_by == "offline:bridge_entities"


def test_offline_bridge_reasoner_skips_names_already_in_the_question_or_earlier_queries():
    question = "Where is Priya Raman based?"
    first = OfflineBridgeReasoner().propose(question, [FACT_B], 1, [question])
    assert "Priya" not in first.query and "Raman" not in first.query
    assert "Bangalore" in first.query
    later = OfflineBridgeReasoner().propose(question, [FACT_B], 2, [question, first.query])
    known = {w.lower() for w in f"{question} {first.query}".replace("?", "").split()}
    assert later.query == "DONE" or not {w.lower() for w in later.query.split()} & known


def test_offline_bridge_reasoner_prefers_the_best_result_and_finds_identifiers():
    texts = ["The release is blocked by PR-482.", "Daniel Osei leads the Kestrel squad."]
    proposal = OfflineBridgeReasoner(max_terms=1).propose("What blocks the release?", texts, 1, [])
    assert proposal.query == "PR-482"


def test_offline_bridge_reasoner_ignores_names_present_in_most_results():
    texts = [
        "Ada reviewed the Kestrel design.",
        "Ada fixed the flaky test.",
        "Ada wrote the runbook.",
        "Ada met the auditors.",
    ]
    proposal = OfflineBridgeReasoner().propose("What did the team do?", texts, 1, [])
    assert proposal.query == "Kestrel"


def test_chat_filler_is_not_taken_for_a_name():
    # A chat turn is quoted speech: its first word is a sentence start, "I'm" is the pronoun, a greeting's capital
    # is the sentence's; only the name inside the reply is a bridge.
    turn = "Melanie said, \"That's great news! I'm so proud of you, Caroline.\""
    assert OfflineBridgeReasoner().terms(turn, set()) == ["Caroline"]
    greeting = 'Caroline said, "Hey Melanie! I went to the LGBTQ support group yesterday."'
    assert OfflineBridgeReasoner().terms(greeting, set()) == ["Melanie", "LGBTQ"]


def test_a_quoted_title_is_a_term_but_quoted_speech_is_not():
    turn = 'Melanie said, "I just finished reading "Charlotte\'s Web" to the kids."'
    assert OfflineBridgeReasoner().terms(turn, set()) == ["Charlotte's Web"]
    assert "The Night Circus" in OfflineBridgeReasoner().terms('We read "The Night Circus" at last.', set())
    assert OfflineBridgeReasoner().terms('He wrote "see you soon" and left.', set()) == []
    assert OfflineBridgeReasoner().terms('He wrote "    " and left.', set()) == []  # blank quotes: no title, no error


def test_a_full_name_opening_a_reply_stays_whole():
    turn = 'Caroline said, "Jonas Weber showed me the Hotel Almirante."'
    assert OfflineBridgeReasoner().terms(turn, set()) == ["Jonas Weber", "Hotel Almirante"]


def test_a_speaker_named_in_every_result_does_not_bridge_even_opening_each_line():
    texts = [
        'Melanie said, "Caroline, we went camping at Lake Tahoe."',
        'Caroline said, "Melanie, how was the pottery class?"',
        'Melanie said, "Thanks Caroline, pottery with Priya was fun."',
        'Caroline said, "Melanie, send me photos."',
    ]
    proposal = OfflineBridgeReasoner(mode="terms").propose("Where did Melanie go camping?", texts, 1, [])
    assert "Caroline" not in proposal.query
    assert "Lake Tahoe" in proposal.query


def test_question_plus_terms_adds_a_bridge_name_and_key_terms_to_the_question():
    texts = ["The release is blocked by the Kestrel migration.", "Kestrel migration waits on the schema freeze."]
    proposal = OfflineBridgeReasoner(mode="question+terms").propose("What blocks the release?", texts, 1, [])
    assert proposal.query.startswith("blocks release Kestrel")
    assert proposal.details.names == ("Kestrel",)


def test_question_plus_terms_stops_when_the_results_name_nothing_new():
    # Key terms alone would repeat the question's own search: DONE saves the hop.
    texts = ["the release is blocked by the migration", "the migration waits on the schema freeze"]
    proposal = OfflineBridgeReasoner(mode="question+terms").propose("What blocks the release?", texts, 1, [])
    assert proposal.query == "DONE"
    assert "no new names" in proposal.details.why


def test_a_sentence_opening_word_seen_in_lower_case_is_not_part_of_the_name_after_it():
    assert OfflineBridgeReasoner().terms("Remember Jon from the gym?", set(), frozenset({"remember"})) == ["Jon"]


def test_the_speakers_of_a_conversation_and_its_chat_filler_never_bridge():
    # Turns as the benchmark importer writes them; both speakers are named in the replies, "awesome" everywhere.
    texts = [
        'Gina said, "Awesome, Jon! I visited Rome last spring, awesome trip."',
        'Jon said, "Gina, awesome, Paris was awesome too."',
        'Gina said, "Jon, the studio looks awesome."',
        'Jon said, "Thanks Gina, awesome."',
    ]
    proposal = OfflineBridgeReasoner(mode="question+terms").propose("Which city has Gina visited?", texts, 1, [])
    assert "Rome" in proposal.details.names
    assert not {"jon", "gina"} & {w.lower() for w in proposal.details.terms}
    assert "awesome" not in proposal.details.terms


def test_offline_bridge_reasoner_says_done_when_the_results_hold_nothing_new():
    assert OfflineBridgeReasoner().propose("q", [], 1, ["q"]).query == "DONE"
    question = "Who owns the refund reconciliation job?"
    texts = ["the refund reconciliation job", "Refund reconciliation: who owns the job?"]
    assert OfflineBridgeReasoner().propose(question, texts, 1, [question]).query == "DONE"


def test_offline_reasoner_bridges_to_the_second_fact_on_hop_two(world):
    _, ids, _ = world
    trace = run(world, hops=2)
    assert trace.strategies.reasoner == "offline:bridge_entities"
    hop1 = {c.id: c for c in trace.hops[0].candidates}
    hop2 = {c.id: c for c in trace.hops[1].candidates}
    assert hop1[ids["a"]].in_context or hop2[ids["a"]].in_context
    assert ids["b"] not in hop1 or not hop1[ids["b"]].in_context
    assert trace.hops[1].proposed_by == "offline:bridge_entities"
    assert "Priya Raman" in trace.hops[1].query
    assert trace.hops[1].relevance_text == trace.hops[1].query  # parity: later hops filter against their query
    assert hop2[ids["b"]].in_context
    assert ids["a"] in trace.context_ids and ids["b"] in trace.context_ids
    assert trace.stop_reason == "max_hops"


# --- merge --------------------------------------------------------------------------------------------------------


def test_hops_merge_by_id_keeping_the_higher_final_score(world):
    _, ids, _ = world
    # Hop 2 searches for fact A's exact words, so its hop-2 copy outscores the hop-1 copy.
    trace = run(world, hops=2, reasoner=Recorder(FACT_A))
    h1 = {c.id: c for c in trace.hops[0].candidates}
    h2 = {c.id: c for c in trace.hops[1].candidates}
    assert h2[ids["a"]].scores.final > h1[ids["a"]].scores.final
    assert h1[ids["a"]].context_reason == "merged" and not h1[ids["a"]].in_context
    assert h2[ids["a"]].in_context
    entry = next(r for r in trace.ranking if r.id == ids["a"])
    assert (entry.hop, entry.final) == (2, h2[ids["a"]].scores.final)


def test_every_memory_appears_once_in_the_ranking_from_its_best_hop(world):
    trace = run(world, hops=2, reasoner=Recorder("refund dashboard merchant"))
    ranking_ids = [r.id for r in trace.ranking]
    assert len(ranking_ids) == len(set(ranking_ids))
    copies: dict[str, list] = {}
    for hop in trace.hops:
        for c in hop.candidates:
            if c.verdicts.relevance == "kept":
                copies.setdefault(c.id, []).append(c)
    both = {i: cs for i, cs in copies.items() if len(cs) == 2}
    assert both, "the two hops should share some memories"
    assert any(cs[0].scores.final > cs[1].scores.final for cs in both.values())  # hop 1 wins sometimes
    for i, cs in both.items():
        best = max(cs, key=lambda c: c.scores.final)
        entry = next(r for r in trace.ranking if r.id == i)
        assert entry.final == best.scores.final
        assert [c.context_reason for c in cs if c is not best] == ["merged"]
    assert set(ranking_ids) == set(copies)


def test_in_a_conversation_a_lowercase_hyphenated_word_is_a_word_but_in_notes_it_names_a_thing():
    turn = "Dance is my go-to for stress relief, and well-being matters."
    assert OfflineBridgeReasoner().terms(turn, set(), conversation=True) == []
    notes = "The payments-service pages the on-call engineer."
    assert OfflineBridgeReasoner().terms(notes, set()) == ["payments-service", "on-call"]


def test_chat_turns_with_only_hyphenated_words_new_give_done_while_notes_bridge_on_them():
    chat = ["user: My go-to snack is a well-being bar.", "assistant: A self-care routine helps.", "user: ok", "user: ?"]
    reasoner = OfflineBridgeReasoner(mode="question+terms")
    assert reasoner.propose("What is my favourite snack?", chat, 1, []).query == "DONE"
    notes = ["The snack-bar team ships the well-being app.", "a", "b", "c"]
    proposal = reasoner.propose("What snack do I eat?", notes, 1, [])
    assert proposal.details.names == ("snack-bar", "well-being")


def test_a_question_about_two_people_bridges_from_the_best_result_of_each():
    # Rome is in the best-matching turn, Paris in the second: a question about both needs both.
    texts = [
        'Gina said, "Hey Jon, I took a short trip to Rome last week."',
        'Jon said, "Gina, I went to Paris for my studio."',
        'Gina said, "Jon, the studio looks great."',
        'Jon said, "Thanks Gina."',
    ]
    proposal = OfflineBridgeReasoner(mode="question+terms").propose(
        "Which city have both Gina and Jon visited?", texts, 1, []
    )
    assert proposal.details.names == ("Rome", "Paris")
    assert proposal.details.also_from == ('"Gina, I went to Paris for my studio."',)
    assert proposal.query.startswith("city Gina Jon visited Rome Paris")
    one_text = OfflineBridgeReasoner(mode="question+terms", bridge_texts=1).propose(
        "Which city have both Gina and Jon visited?", texts, 1, []
    )
    assert one_text.details.names == ("Rome",)


def test_hard_forgetting_a_result_the_second_hop_took_names_from_redacts_that_hop(empty_engine):
    engine = empty_engine
    turns = [
        'Gina said, "Hey Jon, I took a short trip to Rome last week."',
        'Jon said, "Gina, I went to Paris for my studio."',
        'Gina said, "Jon, the studio looks great."',
        'Jon said, "Thanks Gina."',
    ]
    items = [engine.items.remember("gj", t) for t in turns]
    trace = engine.retrieval.retrieve("gj", "Which city have both Gina and Jon visited?", hops=2)
    hop2 = trace.hops[1]
    assert hop2.proposal.also_from and "Paris" in hop2.query
    second = next(i for i in items if hop2.proposal.also_from[0] in i.content)
    engine.forgetting.forget("gj", "semantic", [second.id], reason="test", mode="hard")
    stored = engine.traces.get(trace.trace_id)
    assert second.content not in json.dumps(stored.to_dict())
    assert "Paris" not in stored.hops[1].query
