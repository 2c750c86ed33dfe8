"""Multi-hop reasoners: given the question and what has been found so far, propose the next query or ``DONE``.

``OfflineBridgeReasoner`` needs no LLM: it looks in the best results so far for names and identifiers that the
question does not mention (the "bridge" from fact A to fact B) and searches for them next. ``LLMReasoner`` asks the
configured chat model (llmemory's prompt shape: the question plus the top-10 texts, one short query or DONE; an LLM
error means DONE). Any callable ``(question, accumulated, hop) -> str`` can be plugged in as well.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from .text import STOPWORDS

DONE = "DONE"
# Capitalised words (optionally joined: "Jonas Weber", "Hotel Almirante"), identifiers with digits or inner
# punctuation ("PR-482", "payments-service", "v2.3"), and quoted phrases.
_PROPER = re.compile(r"\b[A-Z][\w'’&.-]*[\w](?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'’&.-]*[\w])*")
_IDENT = re.compile(r"\b(?=[\w.-]*[\d_-])[A-Za-z][\w.-]*[A-Za-z0-9]\b|#\d+")
_QUOTED = re.compile(r"[\"“]([^\"”]{3,60})[\"”]")


@dataclass(frozen=True)
class Proposal:
    query: str  # the next query, or DONE
    proposed_by: str
    details: dict = field(default_factory=dict)


class Reasoner(Protocol):
    name: str

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal: ...


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[\w'’-]+", text)}


class OfflineBridgeReasoner:
    """Bridge entities: terms in the top results that are absent from the question and from earlier queries."""

    name = "offline:bridge_entities"

    def __init__(self, top_n: int = 3, max_terms: int = 2, common_share: float = 0.5) -> None:
        self.top_n = top_n
        self.max_terms = max_terms
        self.common_share = common_share

    def terms(self, text: str) -> list[str]:
        found = []
        for m in _PROPER.finditer(text):
            phrase = m.group(0).strip(" .-")
            words = phrase.split()
            # A lone capitalised stopword at a sentence start ("The", "When") is not a name.
            if len(words) == 1 and words[0].lower() in STOPWORDS:
                continue
            if words and words[0].lower() in STOPWORDS:
                phrase = " ".join(words[1:])
            if phrase:
                found.append(phrase)
        found += [m.group(0) for m in _IDENT.finditer(text)]
        found += [m.group(1).strip() for m in _QUOTED.finditer(text)]
        return found

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal:
        known = _words(question)
        for q in previous:
            known |= _words(q)
        top = list(accumulated[: self.top_n])
        if not top:
            return Proposal(DONE, self.name, {"why": "no results to bridge from"})
        # Terms present in many results (a speaker name on every line, a project name everywhere) do not bridge.
        pool = list(accumulated[: max(10, self.top_n)])
        spread = Counter()
        for text in pool:
            spread.update({t.lower() for t in self.terms(text)})
        scored: dict[str, tuple[float, str]] = {}
        for rank, text in enumerate(top):
            for term in self.terms(text):
                words = _words(term)
                if not words or words <= known or all(w in STOPWORDS for w in words):
                    continue
                if len(pool) >= 4 and spread[term.lower()] / len(pool) > self.common_share:
                    continue
                score = 1.0 / (rank + 1) + 0.1 * len(words)
                key = term.lower()
                if key not in scored or score > scored[key][0]:
                    scored[key] = (score, term)
        if not scored:
            return Proposal(DONE, self.name, {"why": "no new names or identifiers in the top results"})
        best = sorted(scored.values(), key=lambda t: -t[0])[: self.max_terms]
        terms = [t for _, t in best]
        return Proposal(" ".join(terms), self.name, {"terms": terms,
                                                     "candidates": [t for _, t in sorted(scored.values(),
                                                                                          key=lambda t: -t[0])][:8]})


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

    name = "llm:reasoner"

    def __init__(self, llm) -> None:
        self.llm = llm

    def propose(self, question: str, accumulated: Sequence[str], hop: int, previous: Sequence[str]) -> Proposal:
        memories = "\n".join(f"- {t[:500]}" for t in accumulated[:10]) or "(none)"
        result = self.llm.complete(REASONER_PROMPT.format(question=question, memories=memories),
                                   operation="reasoner")
        if not result.ok:
            return Proposal(DONE, self.name, {"fallback": f"LLM error: {result.error}; treated as DONE"})
        text = result.text.strip().strip('"').splitlines()[0].strip() if result.text.strip() else ""
        return Proposal(text, self.name, {"raw": result.text[:500]})
