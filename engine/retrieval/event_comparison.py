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

_UNITS = frozenset(
    "second seconds minute minutes hour hours day days night nights week weeks weekend weekends month months year "
    "years time times".split()
)
# A clause joiner that puts a second event beside the first.
_JOINERS = frozenset("between since before after when while until".split())
# After the joiner, a word that starts or links the second event ("... and the day I", "... when I", "... did I").
_SECOND = {
    "how many": frozenset("and when did was were had".split()),
    "how long": frozenset("did was were had i we you he she they".split()),
}
_WORD = re.compile(r"[a-z0-9']+")
# Local patterns (no unbounded gap between two parts): linear in the question's length.
_ORDER = re.compile(
    r"\border\s+of\b|\bin\s+(?:the\s+)?order\b(?!\s+to\b)|\bfrom\s+(?:first|earliest)\s+to\s+(?:last|latest)\b",
    re.IGNORECASE,
)


def _time_between(words: list[str]) -> bool:
    """ "How many days passed between X and Y", "How many weeks had passed since X when Y", "How many days before X
    did I Y", "How long had I been X when I Y": the lead, then a joiner, then a word of the second event. One pass
    over the words (a regular expression with two open gaps backtracks quadratically on a long question)."""
    state, lead = 0, ""
    for n, w in enumerate(words):
        if state == 0:
            if w == "how" and n + 1 < len(words):
                nxt = words[n + 1]
                if nxt == "long":
                    state, lead = 1, "how long"
                elif nxt in ("many", "much") and _UNITS.intersection(words[n + 2 : n + 4]):  # "how many (more) days"
                    state, lead = 1, "how many"
        elif state == 1:
            if w in _JOINERS:
                state = 2
        elif w in _SECOND[lead]:
            return True
    return False


def compared_events(question: str) -> str | None:
    """The cue by which ``question`` compares events in time ("time between events" or "order of events"), or
    None."""
    if _time_between(_WORD.findall(question.lower())):
        return "time between events"
    if _ORDER.search(question):
        return "order of events"
    return None
