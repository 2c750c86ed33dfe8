"""A table held in memory answers full-text searches itself, with Lance's BM25: the same scores as Lance's index
over the same rows, tied rows cut by id, and statistics of the rows as they are now (a deleted row stops counting)."""

from __future__ import annotations

import math

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS

from engine.store.vectors import resident_text
from engine.store.vectors.datasets import text_index_coverage
from engine.store.vectors.index import VectorIndex
from tests.support.fts_answers import assert_same_answer

DIM = 384
MODEL = "test-random-384"


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def held_index(uri: str, users: list[str], texts: list[str], ids: list[str] | None = None) -> VectorIndex:
    """An index whose episodic table holds these rows and is held in memory (its version seen twice)."""
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    index.add("episodic", ids or [f"ep-{n}" for n in range(len(texts))], users, texts, unit_rows(len(texts), 0))
    for _ in range(2):
        index.search_vectors("episodic", users[0], unit_rows(1, 1)[0], 3)
    tb = index.table("episodic")
    assert index.resident.owners(tb.name, index.datasets.latest(tb)[1]) is not None
    return index


def bm25(tf: int, length: int, avg_len: float, documents: int, df: int) -> float:
    """One term's BM25 contribution as Lance computes it (k1 1.2, b 0.75)."""
    idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg_len))


TEXTS = [
    "Apple pie with banana",  # apple, pie, banana: 3 terms
    "apples, APPLES and a cherry",  # appl x2, cherri: 3 terms (stemmed, lower-cased)
    "the of and it is",  # stop words only: no document to BM25
    "Bob's cherry orchard",  # bob, cherri, orchard: 3 terms
    "a banana",  # banana: 1 term
]


def test_a_held_search_scores_by_hand_computed_bm25_and_says_it_ran_in_memory(tmp_path):
    index = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    hits, where = index.search_text("episodic", "ann", "apple", 10)
    assert where == "in memory (BM25)"
    # 4 documents (the stop-word row is none), 10 terms: mean length 2.5; "appl" in 2 of them.
    assert [h.id for h in hits] == ["ep-1", "ep-0"]
    assert hits[0].fts_score == pytest.approx(bm25(2, 3, 2.5, 4, 2), rel=1e-6)
    assert hits[1].fts_score == pytest.approx(bm25(1, 3, 2.5, 4, 2), rel=1e-6)
    # A repeated query word counts each time; words of no row add nothing.
    [again], _ = index.search_text("episodic", "ann", "orchard orchard zebra", 1)
    assert again.id == "ep-3" and again.fts_score == pytest.approx(2 * bm25(1, 3, 2.5, 4, 1), rel=1e-6)


def test_a_held_search_gives_what_lances_index_gives(tmp_path):
    users = ["ann", "bob", "ann", "ann", "bob"] * 12
    words = ["harbour", "glacier", "invoice", "lantern", "meadow", "the", "and", "café", "naïve", "running", "runs"]
    rng = np.random.default_rng(3)
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 12)))) for _ in users]
    texts[7] = "x" * 45 + " glacier"  # a token past 40 characters is not indexed
    index = held_index(str(tmp_path / "v"), users, texts)
    reference = VectorIndex(str(tmp_path / "v"), MODEL, DIM, resident_max_rows=0)  # asks Lance's index
    answered = 0
    for query in ["glacier", "harbour invoice cafe", "Naive RUN", "meadow meadow lantern", "the and", "x" * 45]:
        for user in ("ann", "bob"):
            held, where = index.search_text("episodic", user, query, 8)
            lance, lance_where = reference.search_text("episodic", user, query, 8)
            assert (where, lance_where) == ("in memory (BM25)", "LanceDB index")
            assert_same_answer(held, lance)
            answered += bool(lance)
    assert answered == 8  # every query but the stop words and the over-long token found rows for both users


def test_rows_tied_on_a_score_are_cut_by_id(tmp_path):
    ids = [f"guest-{n:02d}" for n in (7, 3, 9, 1, 5, 8, 2)]
    index = held_index(str(tmp_path / "v"), ["ann"] * 7, ["drinks tea"] * 7, ids)
    hits, _ = index.search_text("episodic", "ann", "tea", 3)
    assert [h.id for h in hits] == ["guest-01", "guest-02", "guest-03"]
    assert len({h.fts_score for h in hits}) == 1


def hold_again(index: VectorIndex) -> None:
    """See the table's new version twice, so it is held again."""
    for _ in range(2):
        index.search_vectors("episodic", "ann", unit_rows(1, 1)[0], 3)


def test_after_a_delete_lance_scores_until_its_index_is_rebuilt_then_the_copy_scores_the_rows_left(tmp_path):
    index = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    reference = VectorIndex(str(tmp_path / "v"), MODEL, DIM, resident_max_rows=0)
    index.delete("episodic", ["ep-1"])
    hold_again(index)
    # Lance's index still counts the deleted row: the copy cannot give its scores, so Lance gives them.
    hits, where = index.search_text("episodic", "ann", "apple banana", 10)
    assert where == "LanceDB index"
    assert_same_answer(hits, reference.search_text("episodic", "ann", "apple banana", 10)[0])
    index.optimize()
    hold_again(index)
    hits, where = index.search_text("episodic", "ann", "apple banana", 10)
    assert where == "in memory (BM25)"
    # Left: ep-0 (3 terms), ep-3 (3), ep-4 (1): mean length 7/3; "appl" in 1 document, "banana" in 2.
    scores = {h.id: h.fts_score for h in hits}
    assert scores == pytest.approx(
        {"ep-0": bm25(1, 3, 7 / 3, 3, 1) + bm25(1, 3, 7 / 3, 3, 2), "ep-4": bm25(1, 1, 7 / 3, 3, 2)}, rel=1e-6
    )
    assert_same_answer(hits, reference.search_text("episodic", "ann", "apple banana", 10)[0])


@pytest.mark.parametrize("owners", [["ann"], ["ann", "bob"]], ids=["one owner", "two owners"])
def test_rows_written_since_the_index_was_built_get_lances_scores_too(tmp_path, owners):
    """Lance scores the rows its index holds with the index's counts and the rows written since with those plus the
    rows written since that its search reads: the copy does the same."""
    users = [owners[n % len(owners)] for n in range(40)]
    rng = np.random.default_rng(11)
    words = ["harbour", "glacier", "invoice", "lantern", "meadow", "the", "orbit", "walrus"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in users]
    index = held_index(str(tmp_path / "v"), users, texts)
    for n in range(3):  # three writes: three fragments the index does not cover
        batch = [f"walrus {' '.join(rng.choice(words, size=n + 2))}" for _ in range(4)]
        index.add("episodic", [f"new-{n}-{m}" for m in range(4)], (owners * 4)[:4], batch, unit_rows(4, 20 + n))
    hold_again(index)
    reference = VectorIndex(str(tmp_path / "v"), MODEL, DIM, resident_max_rows=0)
    later_found = 0
    for query in ["walrus", "walrus glacier harbour", "meadow orbit orbit", "invoice"]:
        for user in owners:
            held, where = index.search_text("episodic", user, query, 12)
            assert where == "in memory (BM25)"
            assert_same_answer(held, reference.search_text("episodic", user, query, 12)[0])
            later_found += sum(h.id.startswith("new-") for h in held)
    assert later_found > 0  # rows written since the index was built were among the answers


def test_a_user_without_rows_and_a_query_of_stop_words_find_nothing(tmp_path):
    index = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    assert index.search_text("episodic", "nobody", "apple", 5) == ([], "in memory (BM25)")
    assert index.search_text("episodic", "ann", "the and of", 5) == ([], "in memory (BM25)")


def test_a_reloaded_copy_tokenizes_only_the_texts_it_has_not_seen(tmp_path, monkeypatch):
    index = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    index.search_text("episodic", "ann", "apple", 5)
    seen: list[str] = []
    real = resident_text.tokens

    def counted(text: str) -> tuple[str, ...]:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(resident_text, "tokens", counted)
    index.add("episodic", ["ep-new"], ["ann"], ["walrus apple"], unit_rows(1, 9))
    hold_again(index)
    hits, where = index.search_text("episodic", "ann", "walrus", 5)
    assert where == "in memory (BM25)" and [h.id for h in hits] == ["ep-new"]
    assert seen == ["walrus apple", "walrus"]  # the new row's text, then the query


def test_a_deleted_rows_text_is_no_longer_held_in_memory(tmp_path):
    index = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    index.search_text("episodic", "ann", "cherry", 5)
    name = index.table("episodic").name
    held = index.resident  # noqa: SLF001 - what it keeps is what this test is about
    assert any(text == "Bob's cherry orchard" for text, _ in held._tokens._by_table[name].values())
    index.delete("episodic", ["ep-3"])
    assert all(text != "Bob's cherry orchard" for text, _ in held._tokens._by_table[name].values())
    assert name not in held._copies and name not in held._texts
    assert [h.id for h in index.search_text("episodic", "ann", "cherry orchard", 5)[0]] == ["ep-1"]


def test_an_index_built_on_an_empty_table_gives_no_counts_and_lance_scores(tmp_path):
    """LanceDB reports no counts at all for a full-text index that covers no fragment yet (one created on an empty
    table): the copy cannot know Lance's counts, so it does not score (a KeyError here once made a demo reset fail)."""
    db = lancedb.connect(str(tmp_path / "raw"))
    tb = db.create_table("t", schema=pa.schema([("id", pa.string()), ("text", pa.string())]))
    tb.create_index("text", config=FTS())
    tb.add(pa.table({"id": ["a", "b"], "text": ["harbour walrus", "glacier"]}))
    assert text_index_coverage(tb.to_lance()) is None
    built = held_index(str(tmp_path / "v"), ["ann"] * 5, TEXTS)
    documents, fragments = text_index_coverage(built.datasets.latest(built.table("episodic"))[0])
    assert documents == 4 and len(fragments) == 1  # five rows, one of stop words only
