"""A table held in memory answers full-text searches itself, with LanceDB's own BM25 scores, and hands every case it
does not model (non-ASCII words, an index that lags the table) back to LanceDB."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.storage import resident as resident_module
from engine.storage.resident_text import tokens
from engine.storage.vectors import VectorIndex
from tests.support.fts_answers import assert_same_answer

DIM = 384
MODEL = "test-random-384"
DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "demo.jsonl"
# Words LanceDB stems into a stop word ("canned" -> "can"), contractions, digits, underscores, emoji, punctuation,
# and tokens just under and at LanceDB's 40-byte limit.
EDGE_TEXTS = [
    "The canned tomatoes were willing to wait; others mostly didn't.",
    "I'm sure they'd've shipped v2.3.1 by 2024-05-01 (ticket PAY-1234) :)",
    "snake_case_names and CamelCaseNames in foo123bar, foo 123 bar",
    "great party 🎉 at the harbour — we ❤️ it… “quoted” words",
    "x" * 39 + " and " + "y" * 40 + " both here with harbour",
    "Does the underlying ledger own ownership of owned owning downs ups ins?",
    "",
    "!!! ... ???",
]


def demo_texts() -> list[str]:
    texts = []
    for line in DEMO.read_text().splitlines():
        rec = json.loads(line)
        text = rec.get("content") or rec.get("summary") or rec.get("body")
        if isinstance(text, str) and text.strip():
            texts.append(text)
    return texts


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def filled(uri: str, texts: list[str], users: list[str]) -> VectorIndex:
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=5000)
    index.add("episodic", [f"ep-{n}" for n in range(len(texts))], users, texts, vectors(len(texts)))
    return index


def hold(index: VectorIndex) -> None:
    """Two searches at one table version: the second loads the copy."""
    for _ in range(2):
        index.search_vectors("episodic", "ann", vectors(1, 9)[0], 3)


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory) -> tuple[VectorIndex, VectorIndex, list[str]]:
    texts = demo_texts() + EDGE_TEXTS
    users = [("ann", "bob", "cy")[n % 3] for n in range(len(texts))]
    uri = str(tmp_path_factory.mktemp("demo") / "vectors")
    index = filled(uri, texts, users)
    hold(index)
    return index, VectorIndex(uri, MODEL, DIM, resident_max_rows=0), texts


QUESTIONS = ["Which linters does paylane-core run in CI?", "refund webhook retries", "hotel booking in Lisbon",
             "What did the agent decide about the flaky test?", "canned tomatoes", "harbour party 🎉",
             "snake_case foo123bar", "v2.3.1 2024", "ownership of the ledger", "x" * 39, "y" * 40 + " harbour",
             "the and of", "Paylane checkout SDK TypeScript dashboard", "paper citations survey transformer",
             'refund "webhook" AND retries -flaky +test title:ledger (x OR y)*']


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("user", ["ann", "cy"])
def test_a_held_table_scores_like_the_lancedb_index(demo_index, question, user):
    index, lancedb_only, _ = demo_index
    got, mode = index.search_text("episodic", user, question, 20)
    want, want_mode = lancedb_only.search_text("episodic", user, question, 20)
    assert (mode, want_mode) == ("in memory (BM25)", "LanceDB index")
    assert_same_answer(got, want)


def test_the_demo_questions_find_something_in_memory(demo_index):
    index, _, _ = demo_index
    found = [index.search_text("episodic", "ann", q, 5)[0] for q in QUESTIONS[:4]]
    assert all(found)


def test_a_user_without_rows_and_a_stop_word_query_get_nothing(demo_index):
    index, _, _ = demo_index
    assert index.search_text("episodic", "nobody", "refund webhook", 5) == ([], "in memory (BM25)")
    assert index.search_text("episodic", "ann", "the and of", 5) == ([], "in memory (BM25)")


def test_accented_latin_words_are_folded_as_lancedb_folds_them(tmp_path):
    texts = ["un café au lait", "coffee at the cafe", "Zoë's naïve résumé", "the école and the ecole", "thé vert"]
    uri = str(tmp_path / "v")
    index = filled(uri, texts, ["ann"] * len(texts))
    hold(index)
    lancedb_only = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    for query in ["café", "cafe", "zoe naive resume", "école", "ecole", "the", "thé"]:
        got, mode = index.search_text("episodic", "ann", query, 5)
        assert mode == "in memory (BM25)"
        assert_same_answer(got, lancedb_only.search_text("episodic", "ann", query, 5)[0])


def test_a_query_with_words_we_do_not_model_goes_to_lancedb(demo_index):
    index, lancedb_only, _ = demo_index
    got, mode = index.search_text("episodic", "ann", "Straße refund", 10)
    assert mode == "LanceDB index"
    assert_same_answer(got, lancedb_only.search_text("episodic", "ann", "Straße refund", 10)[0])


def test_a_table_with_words_we_do_not_model_is_searched_by_lancedb(tmp_path):
    index = filled(str(tmp_path / "v"), ["東京 coffee", "coffee with milk", "the shop was closed"], ["ann"] * 3)
    hold(index)
    hits, mode = index.search_text("episodic", "ann", "closed coffee", 5)
    assert mode == "LanceDB index" and {h.id for h in hits} == {"ep-0", "ep-1", "ep-2"}


def test_rows_added_since_the_index_was_built_are_scored_as_lancedb_scores_them(tmp_path):
    """LanceDB scores the rows its index covers with the index's statistics and newer rows with statistics over all
    rows; the held copy does the same, before and after the index catches up."""
    texts = demo_texts()[:90]
    uri = str(tmp_path / "v")
    index = filled(uri, texts[:60], [("ann", "bob")[n % 2] for n in range(60)])
    lancedb_only = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    for batch in (range(60, 75), range(75, 90)):  # two later writes, neither indexed yet
        index.add("episodic", [f"new-{n}" for n in batch], [("ann", "bob")[n % 2] for n in batch],
                  [texts[n] for n in batch], vectors(len(batch), batch[0]))
    tb = index.table("episodic")
    assert [ix.num_unindexed_rows for ix in tb.list_indices() if ix.columns == ["text"]] == [30]
    hold(index)
    for query in QUESTIONS[:4] + [texts[80][:60], texts[61][:60]]:
        for user in ("ann", "bob"):
            got, mode = index.search_text("episodic", user, query, 15)
            assert mode == "in memory (BM25)"
            assert_same_answer(got, lancedb_only.search_text("episodic", user, query, 15)[0])
    index.optimize()
    hold(index)
    got, mode = index.search_text("episodic", "ann", texts[80][:60], 15)
    assert mode == "in memory (BM25)"
    assert_same_answer(got, lancedb_only.search_text("episodic", "ann", texts[80][:60], 15)[0])


def test_after_a_delete_the_answer_is_lancedbs_whether_or_not_the_table_was_compacted(tmp_path):
    """Until compaction LanceDB's statistics still count the deleted row: a check at load sees the scores disagree
    and leaves the searches to LanceDB; after compaction the held copy answers again."""
    texts = ["alpha harbour", "beta harbour", "gamma harbour ledger", "delta ledger", "harbour harbour"]
    uri = str(tmp_path / "v")
    index = filled(uri, texts, ["ann"] * 5)
    index.delete("episodic", ["ep-4"])
    hold(index)
    lancedb_only = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    got, mode = index.search_text("episodic", "ann", "harbour ledger", 5)
    assert mode == "LanceDB index" and "ep-4" not in {h.id for h in got}
    assert_same_answer(got, lancedb_only.search_text("episodic", "ann", "harbour ledger", 5)[0])
    index.optimize()
    hold(index)
    got, mode = index.search_text("episodic", "ann", "harbour ledger", 5)
    assert mode == "in memory (BM25)" and "ep-4" not in {h.id for h in got}
    assert_same_answer(got, lancedb_only.search_text("episodic", "ann", "harbour ledger", 5)[0])


def test_tokens_follow_lancedb_rules():
    assert tokens("The canned tomatoes, others' ownership!") == ["tomato", "ownership"]
    assert tokens("snake_case foo123bar") == ["snake", "case", "foo123bar"]
    assert tokens("x" * 39 + " " + "y" * 40) == ["x" * 39]
    assert tokens("party 🎉 — “now”") == ["parti"]
    assert tokens("Un CAFÉ, thé") == ["un", "cafe", "the"]
    assert tokens("Straße") is None and tokens("日本語") is None and tokens("Ⓐ") is None


def test_a_failed_postings_build_leaves_the_searches_to_lancedb(tmp_path, monkeypatch):
    def broken_build(tb, texts, unindexed):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(resident_module, "_build_text", broken_build)
    index = filled(str(tmp_path / "v"), ["alpha harbour", "beta ledger"], ["ann"] * 2)
    hold(index)
    hits, mode = index.search_text("episodic", "ann", "harbour", 5)
    assert mode == "LanceDB index" and [h.id for h in hits] == ["ep-0"]
    assert index.vector_search("episodic", "ann", vectors(1, 0)[0], 1)[0].id == "ep-0"  # vectors still in memory


def test_postings_are_built_once_a_version_has_been_searched_about_once_per_thousand_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(resident_module, "TEXT_BUILD_ROWS_PER_SEARCH", 50)  # 120 rows: the third search builds
    uri = str(tmp_path / "v")
    index = filled(uri, demo_texts()[:120], ["ann"] * 120)
    hold(index)
    lancedb_only = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    modes = []
    for _ in range(4):
        got, mode = index.search_text("episodic", "ann", "refund webhook retries", 10)
        assert_same_answer(got, lancedb_only.search_text("episodic", "ann", "refund webhook retries", 10)[0])
        modes.append(mode)
    assert modes == ["LanceDB index", "LanceDB index", "in memory (BM25)", "in memory (BM25)"]
    index.add("episodic", ["ep-new"], ["ann"], ["refund webhook"], vectors(1, 3))  # a new version starts counting again
    hold(index)
    assert index.search_text("episodic", "ann", "refund webhook retries", 10)[1] == "LanceDB index"
