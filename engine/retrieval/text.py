"""Text helpers shared by the scoring stages: llmemory's BM25 tokenizer, BM25 over the candidate set, Jaccard,
and the offline query condensation."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

BM25_TOKEN = re.compile(r"\b[a-z0-9]{2,}\b")
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_-]*")
K1 = 1.5
B = 0.75

# Words that carry no content of their own: never taken as a keyword of a condensed query (content_words) nor as a
# bridge term by the offline reasoner. (LanceDB's full-text index has its own list, applied by LanceDB.)
CONTENT_STOP_WORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other
our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves did does done said say says tell told know knows get got also ever
cual que como cuando donde
""".split()
)


def bm25_tokens(text: str) -> list[str]:
    """Lowercased ASCII runs of 2+ letters/digits (llmemory's Bm25Scorer tokenizer, kept for parity)."""
    return BM25_TOKEN.findall(text.lower())


def bm25_scores(query: str, docs: Sequence[str]) -> list[float]:
    """BM25 (k1=1.5, b=0.75) with the candidate set as the corpus, exactly as llmemory §6.3 computes it."""
    q_terms = list(dict.fromkeys(bm25_tokens(query)))
    if not q_terms or not docs:
        return [0.0] * len(docs)
    tokenised = [bm25_tokens(d) for d in docs]
    n = len(docs)
    avgdl = max(sum(len(t) for t in tokenised) / n, 1.0)
    df: Counter[str] = Counter()
    for toks in tokenised:
        df.update(set(toks))
    idf = {t: math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1) for t in q_terms}
    scores = []
    for toks in tokenised:
        tf = Counter(toks)
        length = len(toks)
        s = 0.0
        for t in q_terms:
            f = tf.get(t, 0)
            if f:
                s += idf[t] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avgdl))
        scores.append(s)
    return scores


def jaccard(a: str, b: str) -> float:
    """Jaccard index of unique BM25 token sets (llmemory's MMR similarity); 0 when either set is empty."""
    sa, sb = set(bm25_tokens(a)), set(bm25_tokens(b))
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def content_words(text: str) -> list[str]:
    """Words that carry meaning: not stopwords, at least 2 characters, in order, without duplicates."""
    seen: dict[str, str] = {}
    for w in WORD.findall(text):
        key = w.lower().strip("'’-_")
        if len(key) >= 2 and key not in CONTENT_STOP_WORDS and key not in seen:
            seen[key] = w
    return list(seen.values())


def text_search_query(query: str) -> str:
    """What full-text search is given under ``text_search_words=content``: the query's content words (question
    and function words dropped: "what", "does", "did", "I", "my", "you" are not on LanceDB's own English stop list,
    and in a conversation they match every turn that asks or answers anything), or the query itself when it has
    none."""
    words = content_words(query)
    return " ".join(words) if words else query


def condense_offline(message: str, max_words: int = 15) -> str:
    """The non-LLM query for a long message: its first ``max_words`` content words."""
    return " ".join(content_words(message)[:max_words])
