"""[memlens] Does a question ask how far apart events were in time, or in what order they came? ("How many days
passed between the day I cancelled my FarmFresh subscription and the day I shopped at Instacart?", "How long had I
been bird watching when I attended the workshop?", "What is the order of the three events: ...?")

Such a question needs a memory for each event, and the events share few words and little meaning with each other.
The embedding of the whole question usually leans to one of them, so its cosine ranking shows a clear head even
though half of the evidence is elsewhere; the words of the other event are what BM25 still finds. The adaptive BM25
weight (lexical_weight.py) reads a clear head as "the meaning has found it" and lowers BM25: for these questions it
keeps the set weight (``adaptive_bm25_events``). The rules are offline and English, matched on the question's own
words; the cue that matched is recorded in the hop's trace.

"Which came first, X or Y?" is left out, by measurement: on 2WikiMultihopQA's comparison questions ("Which film
was released earlier, X or Y?", 31 of its 79 dev questions) keeping the set weight moved 1-hop all@2 from 0.316 to
0.354 but all@5 from 0.620 to 0.608 (below plain vector search), and changed nothing on LongMemEval-S, whose two
such questions were found either way. There each of X and Y is named in the question and the distractors share
those names, which is the case the adaptive weight is for.
"""

from __future__ import annotations

import re

_UNIT = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|months?|years?|times?)"
# A clause joiner that puts a second event beside the first.
_JOIN = r"\b(?:between|since|before|after|when|while|until)\b"

# (cue name, pattern); the first that matches names the cue. Matched case-insensitively on the whole question.
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        # "How many days passed between X and Y", "How many weeks had passed since X when Y",
        # "How many days before X did I Y"
        (
            "time between events",
            rf"\bhow\s+(?:many|much)\s+(?:\w+\s+)?{_UNIT}\b.*{_JOIN}"
            r".*\b(?:and|when|did|was|were|had)\b",
        ),
        # "How long had I been X when I Y", "How long after X did Y"
        ("time between events", rf"\bhow\s+long\b.*{_JOIN}.*\b(?:did|was|were|had|I|we|you|he|she|they)\b"),
        # "What is the order of ...", "in order from first to last", "from earliest to latest"
        (
            "order of events",
            r"\border\s+of\b|\bin\s+(?:the\s+)?order\b(?!\s+to\b)"
            r"|\bfrom\s+(?:first|earliest)\s+to\s+(?:last|latest)\b",
        ),
    )
)


def compared_events(question: str) -> str | None:
    """The cue by which ``question`` compares events in time ("time between events" or "order of events"), or
    None."""
    text = " ".join(question.split())
    for name, pattern in _CUES:
        if pattern.search(text):
            return name
    return None
