"""[memlens] The speaker stage of a hop: when the question asks about the user's own life, the assistant's turns of
a stored conversation count less.

An agent's memory of its conversations holds both sides: what the user said ("I got my bike serviced for $80") and
what the assistant answered. Asked "How much have I spent on my bike this year?", the evidence is in the user's
turns; the assistant's answers are long, reuse the question's words and topic, and crowd them out of the top of the
ranking (on the LongMemEval-S dev half, 46 % of the top-10 slots of the multi-session questions were assistant
turns, while 45 of their 45 evidence turns are the user's). The stage lowers the hybrid score of each assistant
turn by ``assistant_turn_penalty`` when the question asks about the user, so the filter, decay and feedback that
follow see it like the other parts of the hybrid (as they see the session stage's part).

**The question asks about the user** when it speaks in the first person (I, me, my, mine, myself, I'm, I've, I'd,
I'll) and does not ask about the assistant's own words: "you" with a past verb of saying or making ("what you
recommended", "you mentioned", "the move you made", "the place you helped me find"), "did you say" (tell,
mention, recommend, ...), "can you remind me", "our previous conversation" (or a, the, that; last, earlier, past,
other; chat, discussion, exchange, game, session, talk) or "we discussed" (outlined, talked, listed, made, wrote,
came up, played). A request in the present ("Can you suggest something for my commute?") still asks about the
user: the answer rests on what the user told. The rules are offline and English, read in one pass over the
question; the cue that matched (the first-person word) is recorded on the trace as ``speaker``.

**An assistant turn** is a memory whose text starts with ``assistant:`` (any case, after spaces): the form a
transcript's turn takes in memlens (the LongMemEval importer, a session's consolidation, engine/memory/
maintenance_steps.py). A memory with no speaker (an extracted fact, a note, an episode, a skill) and a user's turn
are left as they are. Each lowered candidate records what the stage took off (``hybrid_speaker_part``, negative);
the others record nothing.

**A turn that asks** (``question_turn_penalty``, for every question): a stored memory whose own words end with a
question mark and number at most ``question_turn_max_words`` ("John said, \"What instrument are you playing?\"",
"user: any tips for my commute?") loses that much too. It echoes the words and topic of a later question about the
same thing, while the answer is in a turn that tells; on the LoCoMo dev half 11 % of the evidence turns end with a
question mark against 31 % of the other memories in the top 10. A longer turn tells before it asks: a user's
request to an assistant ("I moved to Lisbon in May and bike to work now ... any podcast tips?") carries the facts a
later question needs (LongMemEval-S), and penalising every turn that ends with a question mark lowered its
temporal-reasoning questions. The memory's own words are what follows a ``<speaker> said, "`` prefix, without the
closing quote and what follows it (an image caption), or the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..trace.records import CandidateInput

_FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
_SAID = (
    "recommended mentioned said suggested told gave made provided listed wrote shared explained described named "
    "proposed showed included called offered found created generated compiled helped"
).split()
_CONVERSATION_NOUNS = "conversation conversations chat chats discussion discussions exchange game session talk".split()
_WE_DID = "discussed outlined talked listed made wrote came played".split()
_DID_YOU = "say tell mention recommend suggest give make name call write list show".split()
# Each alternative is a fixed run of at most three words: the scan is linear in the question's length.
_ABOUT_ASSISTANT = re.compile(
    rf"\byou (?:\w+ )?(?:{'|'.join(_SAID)})\b"
    rf"|\b(?:our|the|that|a|an) (?:previous|last|earlier|past|other) (?:{'|'.join(_CONVERSATION_NOUNS)})\b"
    r"|\b(?:can|could|would|will) you remind me\b"
    rf"|\bwe (?:{'|'.join(_WE_DID)})\b"
    rf"|\bdid you (?:{'|'.join(_DID_YOU)})\b"
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# "<speaker> said, \"<words>\"<after>": the words are the turn's own (the importers' form; engine/memory/memory_keys.py)
_QUOTED_TURN = re.compile(r'^\s*[^\n"]{1,80}? said, "(.*)"', re.S)
_CLOSING = "\"')] \t\n"
QUESTION_TURN_MAX_WORDS = 25  # the question_turn_max_words setting's default
ASSISTANT_PREFIX = "assistant:"


def asks_about_user(question: str) -> str | None:
    """The cue that the question asks about the user's own life (``first person "my"``), or None: no first-person
    word, or it asks about what the assistant said or did."""
    text = question.lower().replace("\u2019", "'")
    first = next((w for w in _WORD.findall(text) if w in _FIRST_PERSON), None)
    if first is None or _ABOUT_ASSISTANT.search(text):
        return None
    return f'first person "{first}"'


def spoken_by_assistant(text: str) -> bool:
    """A stored conversation turn of the assistant's (its text starts with ``assistant:``)."""
    return text.lstrip()[: len(ASSISTANT_PREFIX)].lower() == ASSISTANT_PREFIX


def own_words(text: str) -> str:
    """A stored turn's own words: what follows a ``<speaker> said, "`` prefix, without the closing quote and what
    follows it (an image caption), or the whole text."""
    turn = _QUOTED_TURN.match(text)
    return (turn.group(1) if turn else text).rstrip(_CLOSING)


def asks_rather_than_tells(text: str, max_words: int = QUESTION_TURN_MAX_WORDS) -> bool:
    """A stored turn that asks rather than tells: its own words end with a question mark, and they are at most
    ``max_words`` (a longer turn tells before it asks)."""
    own = own_words(text)
    return own.endswith("?") and len(own.split()) <= max_words


def speaker_parts(
    inputs: Sequence[CandidateInput],
    cue: str | None,
    penalty: float,
    question_penalty: float = 0.0,
    question_max_words: int = QUESTION_TURN_MAX_WORDS,
) -> tuple[float | None, ...]:
    """What the stage adds to each candidate's hybrid score: ``-penalty`` for an assistant turn when the question
    asks about the user (``cue``), ``-question_penalty`` for a turn that asks (both for an assistant's question),
    None (nothing) for every other candidate or when the stage is off."""
    assistant = cue is not None and penalty > 0
    if not assistant and question_penalty <= 0:
        return (None,) * len(inputs)
    parts: list[float | None] = []
    for inp in inputs:
        part = None
        if inp.kind == "semantic":
            if assistant and spoken_by_assistant(inp.text):
                part = -penalty
            if question_penalty > 0 and asks_rather_than_tells(inp.text, question_max_words):
                part = (part or 0.0) - question_penalty
        parts.append(part)
    return tuple(parts)
