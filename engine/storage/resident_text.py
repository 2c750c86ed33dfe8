"""Full-text (BM25) search of a table held in memory, scoring exactly as LanceDB's FTS index does.

A LanceDB full-text query costs ~4 ms however small the table (measured on 2 cores, bench/latency.py); scoring a
user's 10k held rows in numpy takes ~0.3 ms. The copy is only searched here when it can reproduce LanceDB's answer:

- the table's FTS index has the configuration memlens creates (simple tokenizer, English stemming and stop words,
  lower case, ASCII folding, tokens under 40 bytes) in one segment; rows added since it was built are fine;
- every word is ASCII or Latin with diacritics: another letter, mark or digit (``straße``, ``日本語``, ``²``) makes
  the table (or, in a query, the query) go to LanceDB, whose Unicode folding and segmentation we do not model.
  Punctuation, symbols and emoji split words the same way in both and are fine.

Checked against LanceDB 0.40 on 10,964 distinct words (LoCoMo turns and questions, synthetic text, the demo data):
the same tokens, stems and stop words (NLTK's English list, applied after stemming: ``canned`` -> ``can`` is
dropped), and BM25 scores within 2e-6: k1 = 1.2, b = 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5)), N and the
average length over the index's rows that have a token (for rows added since, over those plus the added rows the
search's user filter lets through), document length in kept tokens, a repeated query word counted each time. Rows
tied at the k-th score may be picked differently: LanceDB's choice among equal scores is arbitrary.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import Stemmer

K1 = 1.2
B = 0.75
MAX_TOKEN_BYTES = 40  # LanceDB drops tokens of this many bytes or more
# The FTS index settings this module reproduces (LanceDB's FTS() defaults, which memlens uses).
MODELLED_INDEX = {"base_tokenizer": "simple", "language": "English", "max_token_length": 40, "lower_case": True,
                  "stem": True, "remove_stop_words": True, "custom_stop_words": None, "ascii_folding": True}
# NLTK's English stop words (contractions split at the apostrophe, as the tokenizer splits them). LanceDB compares
# them with stemmed tokens, so e.g. "does" (stem "doe") is kept and "having" (stem "have") is dropped.
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
mightn mustn needn shan shouldn wasn weren won wouldn""".split())
_WORD = re.compile(r"[^\W_]+")
# ASCII letters and digits lowercased, every other byte a space: words are then what str.split() returns.
_ASCII_WORDS = bytes(ord(chr(c).lower()) if chr(c).isalnum() and c < 128 else 32 for c in range(256))
_ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
# Marks that only shape emoji (variation selectors, the keycap): not alphabetic, so separators in both tokenizers.
_EMOJI_MARKS = frozenset([*map(chr, range(0xFE00, 0xFE10)), "\u20e3"])
_stemmer = Stemmer.Stemmer("english")
# Word -> token (None: dropped), kept across builds: re-reading a table after a write meets the same words again, and
# stemming 30k distinct words is a sixth of building 10k episodes' postings.
_TOKEN_OF: dict[str, str | None] = {}
_TOKEN_CACHE_MAX = 1_000_000


def _folded(ch: str) -> str | None:
    """The ASCII letter a precomposed Latin letter with diacritics folds to (é -> e); None for anything else."""
    parts = unicodedata.normalize("NFKD", ch)
    if len(parts) > 1 and parts[0].isascii() and parts[0].isalpha() and all(
            unicodedata.category(c) == "Mn" for c in parts[1:]):
        return parts[0]
    return None


def _modelled(text: str) -> bool:
    """Whether every non-ASCII character either separates words in both tokenizers (punctuation, symbols, emoji)
    or is a Latin letter with diacritics, which both fold to its base letter."""
    for ch in text:
        if ch.isascii():
            continue
        cp = ord(ch)
        if any(lo <= cp <= hi for lo, hi in _ALPHABETIC_SYMBOLS):
            return False
        if unicodedata.category(ch)[0] in "LMN" and ch not in _EMOJI_MARKS and _folded(ch) is None:
            return False
    return True


def _token(word: str, stem: str) -> str | None:
    """The index token of a lowercased word and its stem, or None when LanceDB drops it."""
    if len(word.encode()) >= MAX_TOKEN_BYTES or stem in STOP_WORDS:  # stop words before folding: "thé" stays
        return None
    return stem if stem.isascii() else "".join(ch if ch.isascii() else _folded(ch) for ch in stem)  # type: ignore[misc]


def _words(text: str) -> list[str] | None:
    """The lowercased words of a text (runs of letters and digits), or None for text this module does not model."""
    if text.isascii():  # the common case, ~2x faster than the regular expression
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    if not _modelled(text):
        return None
    return _WORD.findall(text.lower())


def tokens(text: str) -> list[str] | None:
    """LanceDB's index tokens of a text, in order; None for text this module does not model. LanceDB lowercases,
    drops long tokens, stems, drops stop words and then folds diacritics: "école" stems as "école" (é is not an
    English vowel) and folds to "ecole", while "ecole" stems to "ecol"; "thé" is kept and becomes "the"."""
    words = _words(text)
    if words is None:
        return None
    return [t for t in map(_token, words, _stemmer.stemWords(words)) if t is not None]


def probe_word(texts: list[str]) -> str | None:
    """A word of the texts that is a token (for checking held scores against LanceDB), or None if none is."""
    for text in texts:
        for word in _WORD.findall(text.lower()):
            if tokens(word):
                return word
    return None


def probe_words(texts: list[str]) -> str:
    """All the token-bearing words of the texts, as one query."""
    return " ".join(w for text in texts for w in _WORD.findall(text.lower()) if tokens(w))


@dataclass(frozen=True)
class TextHits:
    rows: np.ndarray  # row positions in the held copy, best first
    scores: np.ndarray  # BM25, higher is better


class HeldFullText:
    """BM25 postings over a held copy's rows (in the copy's order, so a user's rows are one slice)."""

    def __init__(self, texts: list[str], unindexed: np.ndarray | None = None) -> None:
        """``unindexed`` marks the rows added since LanceDB's index was built. LanceDB scores the index's rows with
        the index's statistics, and newer rows with statistics over the index's rows plus the newer rows that pass
        the search's user filter (measured), so both are kept."""
        # Stem each distinct word once and count with numpy: ~10x faster than tokenizing row by row, which took
        # over a second for 10k episodes.
        n = len(texts)
        per_row = [_words(text) for text in texts]
        if any(words is None for words in per_row):
            raise ValueError("unmodelled text")
        distinct = list(set(chain.from_iterable(per_row)))  # type: ignore[arg-type]
        new = [w for w in distinct if w not in _TOKEN_OF]
        if len(_TOKEN_OF) + len(new) > _TOKEN_CACHE_MAX:
            _TOKEN_OF.clear()
            new = distinct
        _TOKEN_OF.update(zip(new, map(_token, new, _stemmer.stemWords(new))))
        self._vocab: dict[str, int] = {}
        word_id = {}
        for word in distinct:
            tok = _TOKEN_OF[word]
            word_id[word] = -1 if tok is None else self._vocab.setdefault(tok, len(self._vocab))
        sizes = [len(words) for words in per_row]  # type: ignore[arg-type]
        flat = np.array(list(map(word_id.__getitem__, chain.from_iterable(per_row))), dtype=np.int64)  # type: ignore[arg-type]
        rows = np.repeat(np.arange(n, dtype=np.int64), sizes)
        kept = flat >= 0
        flat, rows = flat[kept], rows[kept]
        lengths = np.bincount(rows, minlength=n).astype(np.float64)
        pairs, tf = np.unique(flat * max(n, 1) + rows, return_counts=True)  # sorted by token, then row
        self._rows = pairs % max(n, 1)
        self._tf = tf.astype(np.float64)
        token_of_pair = pairs // max(n, 1)
        self._bounds = np.searchsorted(token_of_pair, np.arange(len(self._vocab) + 1))
        self._unindexed = np.zeros(n, dtype=bool) if unindexed is None else np.asarray(unindexed, dtype=bool)
        indexed = ~self._unindexed
        # LanceDB leaves rows without a token (blank, punctuation or stop words only) out of N and of the average.
        has = lengths > 0
        self._count_indexed = int((has & indexed).sum())
        self._len_indexed = float(lengths[indexed].sum())
        avg_indexed = self._len_indexed / self._count_indexed if self._count_indexed else 1.0
        self._lengths = lengths
        # The length part of BM25's denominator for indexed rows: k1 * (1 - b + b * dl / avgdl).
        self._norm_indexed = K1 * (1 - B + B * lengths / avg_indexed)
        self._df_indexed = np.bincount(token_of_pair[indexed[self._rows]], minlength=len(self._vocab))
        # Newer rows are scored over the index's rows plus the newer rows the search's user filter lets through
        # (measured: LanceDB filters them before counting), so per slice: prefix sums of their counts and lengths.
        new_has = has & self._unindexed
        self._cum_new_count = np.concatenate(([0], np.cumsum(new_has)))
        self._cum_new_length = np.concatenate(([0.0], np.cumsum(np.where(new_has, lengths, 0.0))))

    @classmethod
    def build(cls, texts: list[str], unindexed: np.ndarray | None = None) -> HeldFullText | None:
        """The postings, or None when some text is outside what this module models."""
        try:
            return cls(texts, unindexed)
        except ValueError:
            return None

    def search(self, query: str, start: int, end: int, k: int) -> TextHits | None:
        """The k best rows in [start, end) for the query; None when the query is outside what is modelled."""
        toks = tokens(query)
        if toks is None:
            return None
        scores = np.zeros(end - start, dtype=np.float64)
        new_count = int(self._cum_new_count[end] - self._cum_new_count[start])
        new_n = self._count_indexed + new_count
        new_avg = (self._len_indexed + float(self._cum_new_length[end] - self._cum_new_length[start])) / new_n \
            if new_n else 1.0
        for tok in toks:  # a repeated query word counts each time, as in LanceDB
            at = self._vocab.get(tok)
            if at is None:
                continue
            first, last = self._bounds[at], self._bounds[at + 1]
            rows, tfs = self._rows[first:last], self._tf[first:last]
            lo, hi = np.searchsorted(rows, (start, end))
            r = rows[lo:hi]
            tf = tfs[lo:hi]
            n_indexed = int(self._df_indexed[at])
            idf: Any = math.log(1 + (self._count_indexed - n_indexed + 0.5) / (n_indexed + 0.5))
            norm = self._norm_indexed[r]
            new = self._unindexed[r]
            if new.any():
                n_new = n_indexed + int(new.sum())
                idf = np.where(new, math.log(1 + (new_n - n_new + 0.5) / (n_new + 0.5)), idf)
                norm = np.where(new, K1 * (1 - B + B * self._lengths[r] / new_avg), norm)
            scores[r - start] += idf * tf * (K1 + 1) / (tf + norm)
        matched = np.flatnonzero(scores > 0)
        if k <= 0 or not len(matched):
            return TextHits(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if len(matched) > k:
            matched = matched[np.argpartition(-scores[matched], k - 1)[:k]]
        matched = matched[np.lexsort((matched, -scores[matched]))]
        return TextHits(matched + start, scores[matched])
