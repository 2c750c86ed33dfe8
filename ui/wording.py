"""Internal names and rules said in words for people (no st import: pure functions, tested on their own).

The engine records what it did in compact, exact forms (``score 0.210 < 0.3 and no shared word``, ``fusion=zscore``,
``{'bm25_weight': '0.3'}``, ``reflection_offline``); the pages show those records, so these turn them into sentences
with the same numbers. The stored records stay as they are: exports and the API keep the exact forms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine import Settings

from .text import counted

# Numbers, or "N" where a loss bucket blanked them (engine.rule_family: "score N < N and no shared word").
_NUM = r"[-\d.]+|N"
_SCORE_KEPT = re.compile(rf"^score (?P<score>{_NUM}) >= (?P<threshold>{_NUM})$")
_SCORE_DROPPED = re.compile(rf"^score (?P<score>{_NUM}) < (?P<threshold>{_NUM}) and no shared word$")
_PROTECTED = re.compile(rf"^top_(?P<n>{_NUM}) of (?P<search>[\w-]+) search \(rank (?P<rank>{_NUM})\)$")
_JUDGE = re.compile(rf"^llm_judge (?P<score>{_NUM}) (?P<op>>=|<) (?P<threshold>{_NUM})$")
_WORD = re.compile(r"^word_overlap (?P<word>.+?)(?P<where> \(in its preceding text\))?$")


def rule_words(rule: str | None) -> str:
    """A relevance-filter rule as a sentence with its numbers, e.g. ``score 0.210 < 0.3 and no shared word`` ->
    ``dropped: hybrid score 0.210 is below the relevance threshold 0.3 and it shares no word with the question``.
    A rule of another form (the LLM judge's, an older trace's) is returned unchanged."""
    if not rule:
        return ""
    if m := _SCORE_KEPT.match(rule):
        return f"kept: hybrid score{_n(m['score'])} is at or above the relevance threshold{_n(m['threshold'])}"
    if m := _SCORE_DROPPED.match(rule):
        return (
            f"dropped: hybrid score{_n(m['score'])} is below the relevance threshold{_n(m['threshold'])}, with no "
            "shared word with the question"
        )
    if m := _PROTECTED.match(rule):
        return (
            f"kept: rank{_n(m['rank'])} of the {m['search']} search, whose top{_n(m['n'])} are always kept "
            "(relevance_protect_top)"
        )
    if m := _JUDGE.match(rule):
        verdict, side = ("kept", "at or above") if m["op"] == ">=" else ("dropped", "below")
        return f"{verdict}: the LLM judge's score{_n(m['score'])} is {side} the threshold{_n(m['threshold'])}"
    if m := _WORD.match(rule):
        where = " in its preceding text" if m["where"] else ""
        return f"kept: shares the word {m['word']} with the question{where}"
    return rule


def _n(number: str) -> str:
    """`` 0.210`` for a number, nothing for a blanked one (a loss bucket speaks of the rule, not of one score)."""
    return "" if number == "N" else f" {number}"


def fusion_caption(settings: Settings) -> str:
    """How the score breakdown's vector and bm25 bars were made, for the fusion the trace actually ran with (its
    retrieval settings, ``trace.settings.retrieval``; an old trace read back ran the weighted fusion, the only one
    there was: OLDER_TRACE_SETTINGS)."""
    w = settings.bm25_weight
    w_text = f"w = bm25_weight = {float(w):g}" if isinstance(w, (int, float)) else "w = bm25_weight"
    tail = "Decay, importance and feedback multiply it: each bar is the change that factor made."
    if settings.hybrid_enabled is False:
        return f"Hybrid search was off: the hybrid score is the cosine similarity alone (the vector bar). {tail}"
    fusion = settings.fusion or "weighted"
    if fusion == "weighted":
        head = (
            f"Fusion weighted: vector = (1−w)·similarity, bm25 = w·bm25_norm ({w_text}); their sum is the hybrid score."
        )
    elif fusion == "zscore":
        head = (
            "Fusion zscore: hybrid = sigmoid(w·z_bm25 + (1−w)·z_vector), each score standardised over this query's "
            f"candidates ({w_text}); vector = sigmoid((1−w)·z_vector), the hybrid an average BM25 would give, and "
            "bm25 = hybrid − vector."
        )
    elif fusion == "rrf":
        k = settings.rrf_k
        k_text = f"k = rrf_k = {float(k):g}" if isinstance(k, (int, float)) else "k = rrf_k"
        head = (
            "Fusion rrf (reciprocal rank fusion): vector = (1−w)·(k+1)/(k+vector rank), bm25 = "
            f"w·(k+1)/(k+BM25 rank) ({w_text}, {k_text}); their sum is the hybrid score."
        )
    else:
        head = f"Fusion {fusion}: the vector and bm25 bars add up to the hybrid score ({w_text})."
    return f"{head} {tail}"


def setting_name(name: str) -> str:
    """``bm25_weight`` -> ``bm25 weight``: a setting's name as words (the exact name is in the settings table)."""
    return name.replace("_", " ")


def setting_changes(overrides: Mapping[str, Any] | None) -> str:
    """Settings overrides as ``bm25 weight 0.3, top k 30`` (``default settings`` when there are none); numbers kept
    as strings by a form (``'0.3'``) read as the numbers they are."""
    if not overrides:
        return "default settings"
    return ", ".join(f"{setting_name(str(k))} {_value(v)}" for k, v in overrides.items())


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


STORE_KINDS = {"semantic": "semantic item", "episodic": "episode", "procedural": "skill", "users": "user"}


def store_counts_text(counts: Mapping[str, Any] | None) -> str:
    """A run's store snapshot as ``175 semantic items, 36 episodes, 32 skills, 3 users``."""
    if not counts:
        return "—"
    return ", ".join(
        counted(int(n), STORE_KINDS.get(str(k), setting_name(str(k)))) if isinstance(n, int) else f"{k} {n}"
        for k, n in counts.items()
    )


def reflection_strategy(strategy: str) -> str:
    """What made a reflection's insights, in words (``reflection_offline`` is the engine's name for the non-LLM
    strategy; a failed LLM call is appended to it in parentheses)."""
    if strategy == "reflection":
        return "the LLM"
    if strategy.startswith("reflection_offline"):
        why = strategy[len("reflection_offline") :].strip()
        base = "outcome statistics and recurring actions (offline, no LLM)"
        return f"{base} {why}" if why else base
    return strategy


STOP_REASONS = {
    "max_hops": "hop limit",
    "blank_query": "no next query",
    "done": "reasoner done",
    "repeated_query": "query repeated",
}


def stop_reason_words(reason: str | None) -> str:
    """A trace's stop reason in words where the engine's name is an identifier (others are shown as they are)."""
    if not reason:
        return "—"
    return STOP_REASONS.get(reason, reason.replace("_", " "))


def compaction_note(before: int, after: int, retention_s: float, size: Any) -> str:
    """What "Compact now" did to the store's size, and why it can grow: compaction writes merged copies of the
    small files, and the files of the versions it replaced stay until no reader in another process can still be
    on them (``vector_version_retention_s`` after they were replaced; engine/store/vectors/versions.py), so they go at
    a later compaction."""
    change = after - before
    line = f"Compacted: {size(before)} before, {size(after)} now"
    if change > 0:
        return (
            f"{line} ({size(change)} more). Compaction writes merged copies of the small files; the files they "
            f"replace stay on disk for `vector_version_retention_s` ({retention_s:g} s) after being replaced, in case "
            "another process is still reading them, and a compaction after that deletes them."
        )
    if change < 0:
        return f"{line} ({size(-change)} freed)."
    return f"{line}: nothing to compact."
