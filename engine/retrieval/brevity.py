"""[memlens] The brevity factor of a hop: a short turn of a conversation counts for less.

A conversation's turns are its memories, and many of the short ones carry no fact: "Wow, that's awesome, Gina!",
"Thanks, Mel! Talk soon.", "Haha, same here." They echo a question's topic and names, and their vectors, made of a few
words, reach cosines that longer turns only reach by saying something to the point. On the LoCoMo dev half they
crowd the top 10. Among the first hop's candidates of the multi-hop questions, 54-59 % of the evidence turns are
longer than 150 characters, against 32-33 % of the other turns. The stage gives each turn its share of the length
at which a turn stands on its own:

    factor = (min(words, brevity_full_words) / brevity_full_words) ** brevity_weight

and the temporal score (hybrid x decay x importance x time factor) is multiplied by it. ``words`` are the stored
text's whitespace-separated words, the speaker's prefix included (``Gina said, "..."``, ``user: ...``). With the
defaults (0.3, 60 words), a turn of 10 words keeps 0.584 of its score, one of 30 words 0.812, and one of 60 or more
all of it. The weight was 0.2 until the participant stage (participants.py) took the names' pull off the first
hop's vector; with it the best weights moved up (LoCoMo dev, 1 hop: 0.25-0.4 all reach multi-hop 0.50-0.51), and 0.3
is the middle of that plateau.

**A turn** is a memory stored with a preceding text: what came right before it in its conversation (a session's
first turn has none, and is left alone). **A reply to a question is left alone too**, however short: when the
preceding text's own words end with a question mark, the turn answers it ("Katrin: Who collects the pan traps?" /
"Samuel: Me, on Saturday with the department van."), which is what a preceding text is stored for. Only a short
turn after a statement, a reaction, is lowered. On the LoCoMo dev half 27 % of the turns reply to a question;
leaving them alone raised recall@10 further (simulated on the first hop's rankings at 0.2 and 60 words: 0.782 ->
0.785, multi-hop 0.471 -> 0.482, adversarial 0.850 -> 0.848).

A memory that stands on its own is never lowered, whatever its length: an extracted fact ("User's dog is called
Max."), a note, a paragraph, an episode or a skill. Such a short memory is often the crispest answer there is, and
in the paragraph sets a gold paragraph is as often short as any other (on MuSiQue's dev half 15 % of the gold
paragraphs have fewer than 40 words, against 17 % of the rest).

**Only for a question about others.** A question in the first or second person ("What did I say about my
bike?", "What was the move you made after 27. Kg2?") is asked by a participant about their own conversation, and
there a short turn is often the whole answer: "assistant: 28. Kg3 would be my move." (7 words) or "user: My dog is
called Max." On the LongMemEval-S dev half the stage for every question lowered such evidence and cost 0.935 ->
0.896 recall@10 (single-session-assistant 1.000 -> 0.714, below BM25's 0.857). So the stage stays off for a
question with a first- or second-person word (I, me, my, you, your, we, our, ...; "US" in capitals is the country),
and runs for one about other people ("What did Caroline research?"), as asked of a conversation between them.
:func:`personal_word` reads the cue; the pipeline and replay read it from the question (never a later hop's query).

Each turn the stage looked at records its word count (``brevity_words``) and its factor (``brevity_factor``, 1.0
for a turn of ``brevity_full_words`` words or more); the other candidates record neither, and with the stage off
(``brevity_weight`` 0) no candidate records them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..trace.records import CandidateInput
from .speaker_stage import own_words

_PERSONAL = frozenset(
    "i me my mine myself i'm i've i'd i'll you your yours yourself yourselves you're you've you'd you'll "
    "we us our ours ourselves we're we've we'd we'll".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?")


def personal_word(question: str) -> str | None:
    """The question's first first- or second-person word (lower case), or None: a question about others."""
    for m in _WORD.finditer(question):
        word = m.group(0)
        if word == "US":  # the country, not the pronoun
            continue
        lowered = word.lower().replace("\u2019", "'")
        if lowered in _PERSONAL:
            return lowered
    return None


@dataclass(frozen=True)
class BrevityScores:
    """Per candidate, in the candidates' order: the turn's word count and its factor (None: not a turn, or the
    stage is off)."""

    words: tuple[int | None, ...]
    factor: tuple[float | None, ...]

    def apply(self, temporal: Sequence[float]) -> tuple[float, ...]:
        """The temporal scores with each turn's factor applied."""
        return tuple(t if f is None else t * f for t, f in zip(temporal, self.factor))


def brevity_stage(
    inputs: Sequence[CandidateInput], weight: float, full_words: int, personal: str | None = None
) -> BrevityScores:
    """Each turn's word count and factor ``(min(words, full_words) / full_words) ** weight`` (module docstring);
    nothing when ``personal`` (the question's first- or second-person word, :func:`personal_word`) is set."""
    if weight <= 0 or full_words <= 0 or personal is not None:
        nothing = (None,) * len(inputs)
        return BrevityScores(nothing, nothing)
    words: list[int | None] = []
    factors: list[float | None] = []
    for inp in inputs:
        if not inp.preceding_text or own_words(inp.preceding_text).endswith("?"):  # not a turn, or an answer
            words.append(None)
            factors.append(None)
            continue
        n = len(inp.text.split())
        words.append(n)
        factors.append(1.0 if n >= full_words else (max(n, 1) / full_words) ** weight)
    return BrevityScores(tuple(words), tuple(factors))
