"""One retrieval looks each candidate up in the store once: a later hop asks only for the memories no earlier hop
found, and gets the same rows a fresh lookup would (candidates.LookedUp)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.retrieval.candidates import LookedUp

pytestmark = pytest.mark.both_stores

U = "looker"


class RecordingConnection:
    """The store's real connection, with the id lists of every query it ran written down."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.asked: list[list[str]] = []

    def execute(self, sql: str, params: list[Any]) -> Any:
        self.asked.append(sorted(i for ids in params[1:] for i in ids))
        return self.conn.execute(sql, params)


def remembered(engine, texts: list[str]) -> list[str]:
    return [engine.items.remember(U, text).id for text in texts]


def test_rows_are_the_users_active_memories_and_a_second_ask_queries_only_new_ids(empty_engine):
    a, b, gone, c = remembered(empty_engine, ["I play chess", "I bake bread", "I lived in Oslo", "I swim"])
    empty_engine.forgetting.forget(U, "semantic", [gone], reason="moved away")
    episode = empty_engine.episodes.record(U, steps=[{"action": "ran tests"}], outcome="success").id
    looked_up = LookedUp()
    with empty_engine._b.db.hold() as conn:  # as a retrieval does: one connection for every hop
        recording = RecordingConnection(conn)
        first = looked_up.rows(recording, U, [[a, gone, "item_unknown"], [episode], []])
        second = looked_up.rows(recording, U, [[a, b, gone], [episode], []])
        third = looked_up.rows(recording, U, [[b, a], [], []])
        fresh = LookedUp().rows(conn, U, [[a, b, gone, c], [episode], []])
    assert set(first) == {a, episode}  # the forgotten and the unknown id are not active rows
    assert set(second) == {a, b, episode}
    assert set(third) == {a, b}
    # the first ask named every id; the second only b (a, gone and the episode were answered); the third none
    assert recording.asked == [sorted([a, gone, "item_unknown", episode]), [b]]
    assert all(second[i] == fresh[i] for i in second)  # the rows kept are the rows the store gives


def test_a_two_hop_retrieval_asks_for_each_candidate_once(empty_engine, monkeypatch):
    remembered(
        empty_engine,
        [
            "Maria went hiking in the Alps last summer",
            "Maria's favourite mountain is the Matterhorn",
            "The Matterhorn is in Switzerland near Zermatt",
            "John bought a new bike for the commute",
        ],
    )
    asked: list[list[str]] = []
    real = LookedUp.rows

    def counting(self, conn, user_id, wanted):
        asked.append([i for ids in wanted for i in ids if i not in self._rows])
        return real(self, conn, user_id, wanted)

    monkeypatch.setattr(LookedUp, "rows", counting)
    trace = empty_engine.retrieval.retrieve(U, "Which country has the mountain Maria likes?", hops=2)
    assert len(trace.hops) == 2 and len(asked) == 2
    first_hop = {c.id for c in trace.hops[0].candidates}
    second_hop = {c.id for c in trace.hops[1].candidates}
    assert first_hop & second_hop  # the second hop found some of the first hop's memories again ...
    assert set(asked[1]) == second_hop - first_hop  # ... and asked the store only for the others
