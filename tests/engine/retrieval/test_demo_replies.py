"""The demo's chat replies (data/demo/README.md, "Replies stored with what they answer"): each is stored with the
message it answers as its preceding text, and a question about that message brings the reply into the context."""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.config import DEMO_DIR

SECTION = (DEMO_DIR / "README.md").read_text(encoding="utf-8").split("## Replies stored with what they answer")[-1]
ROWS = re.findall(r"^\| ([^|]+\?) \| `([\w-]+)` [^|]*\| [^|]*`([\w-]+)` \|$", SECTION, flags=re.M)


def test_the_readme_lists_three_replies():
    assert len(ROWS) == 3, SECTION


@pytest.mark.parametrize(("question", "reply_id", "asked_id"), ROWS, ids=[r[1] for r in ROWS])
def test_a_reply_is_stored_with_the_message_it_answers_and_reaches_the_context(
    demo, embedder, question, reply_id, asked_id
):
    reply, asked = demo.items.get("mira", reply_id), demo.items.get("mira", asked_id)
    assert reply.preceding_text == asked.content and asked.preceding_text == ""

    trace = demo.retrieval.retrieve("mira", question, save=False)
    found = {c.id: c for c in trace.hops[0].candidates}
    assert reply_id in trace.context_ids, [(c.id, c.context_reason) for c in trace.hops[0].candidates[:8]]
    assert found[reply_id].preceding_text == asked.content

    # It got there through the message it answers: alone, the reply's text is further from the question.
    q, alone = embedder.embed([question, reply.content])
    assert found[reply_id].scores.vector_similarity > float(np.dot(q, alone)) + 0.05
