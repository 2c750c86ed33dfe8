"""Multi-hop reasoners: given the question and what has been found so far, propose the next query or ``DONE``.

``OfflineBridgeReasoner`` needs no LLM: it looks in the best results so far for names and identifiers that the
question does not mention (the "bridge" from fact A to fact B) and searches for them next. ``LLMReasoner`` asks the
configured chat model (llmemory's prompt shape: the question plus the top-10 texts, one short query or DONE; an LLM
error means DONE). Any callable ``(question, accumulated, hop) -> str`` can be plugged in as well.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..trace.hop_records import ProposalDetails
from ..vocab import Strategy
from .participants import SPEAKER_PREFIX
from .text import CONTENT_STOP_WORDS, content_words

if TYPE_CHECKING:
    from ..providers.llm import LLM

DONE = "DONE"
# Capitalised words (optionally joined: "Jonas Weber", "Hotel Almirante"), identifiers with digits or inner
# punctuation ("PR-482", "payments-service", "v2.3"), and quoted phrases.
_PROPER = re.compile(r"\b[A-Z][\w'’&.-]*[\w](?:[ \t]+(?:of[ \t]+|de[ \t]+|the[ \t]+)?[A-Z][\w'’&.-]*[\w])*")
_IDENT = re.compile(r"\b(?=[\w.-]*[\d_-])[A-Za-z][\w.-]*[A-Za-z0-9]\b|#\d+")
_QUOTED = re.compile(r"[\"“]([^\"”]{3,60})[\"”]")
_SPEECH = re.compile(r"[.!?,;]")
# "go-to", "well-being", "self-discovery": in a conversation a lowercase hyphenated word is an ordinary word, while
# in an agent's notes ("payments-service", "blue-green") it names a thing.
_HYPHENATED_WORD = re.compile(r"[a-z]+(?:-[a-z]+)+")
_PRONOUN = re.compile(r"^I(?:['’]\w+)?$")
_ROLE_PREFIX = re.compile(r"^(?:user|assistant|system|tool)[ \t]*:[ \t]*", re.IGNORECASE)
# Chat filler that fills the top results of any conversation: never a key term.
_CHAT_FILLER = frozenset(
    "yeah yep yes awesome thanks thank great really sounds cool nice glad wow haha lol totally definitely "
    "amazing super pretty love okay sure hey".split()
)
# Words that open a chat reply before a name ("Hey Melanie", "Thanks Caroline"): capitalised as a sentence start.
_OPENERS = frozenset(
    "hey hi hello thanks thank wow oh yes yeah yep no congrats congratulations dear ok okay sure well so aww "
    "awesome great nice haha omg good bye morning evening".split()
)


@dataclass(frozen=True)
class Proposal:
    """The next query (or DONE), who proposed it, and how (the hop's trace keeps ``details`` as its proposal). A
    custom reasoner may hand its details over as a plain mapping: they are read into the record."""

    query: str  # the next query, or DONE
    proposed_by: str
    details: ProposalDetails = field(default_factory=ProposalDetails)

    def __post_init__(self) -> None:
        if not isinstance(self.details, ProposalDetails):
            object.__setattr__(self, "details", ProposalDetails.from_dict(self.details))


class Reasoner(Protocol):
    name: str

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal: ...


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[\w'’-]+", text)}


class OfflineBridgeReasoner:
    """Bridge entities: names and identifiers in the results that best match the question, which the question
    (and earlier queries) do not mention.

    The results are re-read by their word overlap with the question (the bridging fact A shares the question's
    words; a recent but unrelated memory does not), then the new names of the ``bridge_texts`` best results (a
    question about two people or two places has a fact for each) become the next query, ``max_terms`` at most.
    A capitalised word at the start of a sentence only counts when it is also capitalised mid-sentence somewhere,
    so "Staging" or "Need" opening a note is not taken for a name.
    """

    name: str = Strategy.OFFLINE_BRIDGE

    def __init__(
        self,
        pool: int = 10,
        max_terms: int = 3,
        common_share: float = 0.5,
        mode: str = "terms",
        key_terms: int = 3,
        bridge_texts: int = 2,
    ) -> None:
        self.pool = pool
        self.max_terms = max_terms
        self.bridge_texts = bridge_texts
        self.common_share = common_share
        self.mode = mode  # "terms" or "question+terms"
        self.key_terms = key_terms

    def expansion_terms(self, pool: Sequence[str], known: set[str]) -> list[str]:
        """Content words of the top results that the question lacks (pseudo-relevance feedback)."""
        counts: Counter[str] = Counter()
        first: dict[str, int] = {}
        for rank, text in enumerate(pool[:3]):
            for w in content_words(text):
                key = w.lower()
                if len(key) < 4 or key in known or not key.isalpha() or key in _CHAT_FILLER:
                    continue
                counts[key] += 1
                first.setdefault(key, rank)
        spread = Counter(w for text in pool for w in {x.lower() for x in content_words(text)})
        keep = [w for w in counts if not (len(pool) >= 4 and spread[w] / len(pool) > self.common_share)]
        keep.sort(key=lambda w: (-counts[w], first[w]))
        return keep[: self.key_terms]

    def terms(
        self,
        text: str,
        names_mid: set[str] | None = None,
        lowercase: frozenset[str] = frozenset(),
        conversation: bool = False,
    ) -> list[str]:
        """Names, identifiers and quoted titles in ``text``. ``names_mid``: capitalised phrases seen mid-sentence
        (a lone capitalised word opening a sentence is a name only if it is one of them); ``lowercase``: words seen
        in lower case nearby (then a capital opening a sentence is the sentence's: "Remember Jon" names Jon);
        ``conversation``: the text is a chat turn (then "well-being" is a word, not an identifier)."""
        found = []
        for m in _PROPER.finditer(text):
            phrase = m.group(0).strip(" .-")
            words = phrase.split()
            if words and words[0].lower() in CONTENT_STOP_WORDS:
                words = words[1:]
            if not words:
                continue
            # "I'm", "Since I'll": the capital is the pronoun's, not a name's.
            words = [w for w in words if not _PRONOUN.match(w)]
            at_start = _sentence_start(text, m.start())
            # "Hey Melanie" opening a reply: the greeting's capital is the sentence's, the name after it is mid-line.
            if len(words) > 1 and at_start and (words[0].lower() in _OPENERS or words[0].lower() in lowercase):
                words, at_start = words[1:], False
            if not words:
                continue
            phrase = " ".join(words)
            if len(words) == 1 and at_start and (names_mid is None or phrase not in _mid_words(names_mid)):
                continue
            found.append(phrase)
        found += [
            m.group(0) for m in _IDENT.finditer(text) if not (conversation and _HYPHENATED_WORD.fullmatch(m.group(0)))
        ]
        # A quoted title ("The Night Circus"), not quoted speech (a chat turn is a quote too, and so is the text
        # between a turn's opening quote and a title's: "I just finished reading ").
        found += [q for q in (m.group(1).strip() for m in _QUOTED.finditer(text)) if _looks_like_title(q)]
        return found

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal:
        known = _words(question)
        for q in previous:
            known |= _words(q)
        # A chat turn stored as "user: ..." names its role, not a topic: the role word is never a bridge or key term.
        roles = sum(1 for text in accumulated[: self.pool] if _ROLE_PREFIX.match(text))
        pool = [_ROLE_PREFIX.sub("", text, count=1) for text in accumulated[: self.pool]]
        # A conversation turn ('Melanie said, "..."'): the speaker is a participant, on every other line of the
        # conversation, never the bridge to another fact.
        speakers = [m.group(1) for m in map(SPEAKER_PREFIX.match, pool) if m]
        # Chat turns ("user: ...", 'Melanie said, "..."') make up most of the results: a conversation.
        conversation = max(roles, len(speakers)) * 2 >= len(pool) > 0
        for name in speakers:
            known |= _words(name)
        pool = [SPEAKER_PREFIX.sub("", text, count=1) for text in pool]
        if not pool:
            return Proposal(DONE, self.name, ProposalDetails(why="no results to bridge from"))
        names_mid = {
            m.group(0) for text in pool for m in _PROPER.finditer(text) if not _sentence_start(text, m.start())
        }
        lowercase = frozenset(w for text in (question, *pool) for w in re.findall(r"\b[a-z][a-z'’]+\b", text))
        q_words = {w for w in _words(question) if w not in CONTENT_STOP_WORDS and len(w) > 2}
        # Terms present in many results (a speaker on every line, the project name everywhere) do not bridge.
        # Counted as words anywhere in a result (a speaker's name opening every line is never a "term" there).
        pool_words = [_words(text) for text in pool]
        spread: Counter[str] = Counter()
        for text in pool:
            for t in {t.lower() for t in self.terms(text, names_mid, lowercase, conversation)}:
                spread[t] = sum(1 for w in pool_words if _words(t) <= w)
        candidates: list[tuple[float, int, str, list[str]]] = []
        for rank, text in enumerate(pool):
            terms = []
            for term in dict.fromkeys(self.terms(text, names_mid, lowercase, conversation)):
                words = _words(term)
                if not words or words <= known or all(w in CONTENT_STOP_WORDS for w in words):
                    continue
                if len(pool) >= 4 and spread[term.lower()] / len(pool) > self.common_share:
                    continue
                terms.append(term)
            if not terms:
                continue
            overlap = len(q_words & _words(text)) + 0.5 / (rank + 1)
            candidates.append((overlap, rank, text, terms))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        bridges = candidates[: self.bridge_texts]
        chosen: list[str] = []
        details = ProposalDetails()
        if bridges:
            source: dict[str, int] = {}
            for n, c in enumerate(bridges):
                for t in c[3]:
                    source.setdefault(t, n)
            best_terms = list(source)
            # "Build QX7781" and "QX7781" name one thing: keep the longer form only.
            best_terms = [
                t for t in best_terms if not any(t != o and set(_words(t)) < set(_words(o)) for o in best_terms)
            ]
            # The best result's names first; within one result, multi-word names (a person, a place) before lone
            # words. The query keeps the results' order.
            picked = sorted(best_terms, key=lambda t: (source[t], -len(t.split())))[: self.max_terms]
            chosen = [t for t in best_terms if t in picked]
            details = ProposalDetails(
                names=tuple(chosen),
                from_text=bridges[0][2][:200],
                question_overlap=round(bridges[0][0], 2),
                also_from=tuple(c[2][:200] for c in bridges[1:]) if len(bridges) > 1 else None,
            )
        if self.mode == "question+terms" and not chosen:
            # The question again with a few frequent words of its own results finds what it found: on the dev
            # halves such a hop changed recall@10 for 1 of 140 LoCoMo questions (for the worse), so stop instead.
            return Proposal(
                DONE, self.name, ProposalDetails(why="no new names or identifiers in the results to bridge to")
            )
        if self.mode == "question+terms" or not chosen:
            keys = [k for k in self.expansion_terms(pool, known | {w.lower() for t in chosen for w in t.split()})]
            details = dataclasses.replace(details, key_terms=tuple(keys))
            chosen += keys
        if not chosen:
            why = "no new names, identifiers or key terms in the results"
            return Proposal(DONE, self.name, ProposalDetails(why=why))
        details = dataclasses.replace(details, terms=tuple(chosen))
        if self.mode == "question+terms":
            query = " ".join(content_words(question) + chosen)
        else:
            query = " ".join(chosen)
        return Proposal(query, self.name, details)


def _looks_like_title(quoted: str) -> bool:
    words = quoted.split()
    if not words or len(words) > 6 or _SPEECH.search(quoted) or _PRONOUN.match(words[0]):
        return False
    return sum(w[:1].isupper() for w in words) * 2 >= len(words)


def _mid_words(names_mid: set[str]) -> set[str]:
    return {w for name in names_mid for w in name.split()}


def _sentence_start(text: str, pos: int) -> bool:
    """Whether ``pos`` opens a sentence, a line or quoted speech (``Melanie said, "That's great``)."""
    head = text[:pos]
    before = head.rstrip(" \t\"'“(")
    if any(q in head[len(before) :] for q in '"“'):
        return True
    return not before or before[-1] in ".!?:\n"


class CallableReasoner:
    """Wraps any ``(question, accumulated_texts, hop) -> str``."""

    def __init__(self, fn: Callable[[str, Sequence[str], int], str], name: str = "custom") -> None:
        self.fn = fn
        self.name = name

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal:
        return Proposal(str(self.fn(question, list(accumulated), hop) or "").strip(), self.name)


REASONER_PROMPT = (
    "You help an agent retrieve memories in several hops.\n"
    "Question: {question}\n\nMemories retrieved so far:\n{memories}\n\n"
    "If these memories are enough to answer the question, reply with exactly DONE. Otherwise reply with one short "
    "search query (at most 12 words) for the missing piece of information, and nothing else."
)


class LLMReasoner:
    """The configured chat model proposes the next query; any LLM failure means DONE (llmemory §6.8)."""

    name: str = Strategy.LLM_REASONER

    def __init__(self, llm: LLM, user_id: str | None = None) -> None:
        self.llm = llm
        self.user_id = user_id  # for the usage ledger

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal:
        memories = "\n".join(f"- {t[:500]}" for t in accumulated[:10]) or "(none)"
        result = self.llm.complete(
            REASONER_PROMPT.format(question=question, memories=memories), operation="reasoner", user_id=self.user_id
        )
        if not result.ok:
            return Proposal(DONE, self.name, ProposalDetails(fallback=f"LLM error: {result.error}; treated as DONE"))
        text = result.text.strip().strip('"').splitlines()[0].strip() if result.text.strip() else ""
        return Proposal(text, self.name, ProposalDetails(raw=result.text[:500]))
