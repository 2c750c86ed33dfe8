"""Retrieval's settings (llmemory §6, and memlens's own stages marked ``[memlens]``): part of
:class:`engine.config.Settings`, declared here so config.py stays readable. Every one a retrieval call may override
(``retrieval=True``) is recorded in each trace's settings and replayable.
"""

from __future__ import annotations

from dataclasses import dataclass

from .setting_values import setting as _s

# Hops per retrieval, lowest and highest: the hops setting, retrieve's argument, the CLI's --hops, the MCP tool and
# the dashboard's inputs all take this one range.
HOPS_RANGE: tuple[int, int] = (1, 5)


@dataclass(frozen=True)
class RetrievalSettings:
    # --- retrieval (llmemory §6) --------------------------------------------------------------------------------
    top_k: int = _s(
        50,
        "Candidates per source (semantic, episodic, procedural) and per search (vector, full text).",
        lo=1,
        hi=1000,
        retrieval=True,
    )
    hops: int = _s(
        1,
        "Hops for retrieve() when not given; the CLI's --hops overrides.",
        lo=HOPS_RANGE[0],
        hi=HOPS_RANGE[1],
        retrieval=True,
    )
    query_condense_chars: int = _s(
        100, "Messages longer than this are condensed into a search query.", lo=1, retrieval=True
    )
    query_condense_words: int = _s(
        40,
        "[memlens] Content words the offline condensation keeps of a long message, in order (parity: 15, "
        "the LLM's 'under 15 words'). Fewer cut the end of a long question: LongMemEval dev recall@10 "
        "0.867 with 15, 0.873 with 20 to 60; LoCoMo unchanged.",
        lo=1,
        hi=500,
        retrieval=True,
    )
    hybrid_enabled: bool = _s(True, "Blend BM25 into the score (hybrid_search_enabled).", retrieval=True)
    bm25_weight: float = _s(0.5, "w, the lexical share of the hybrid score (see fusion).", lo=0, hi=1, retrieval=True)
    bm25_source: str = _s(
        "index",
        "Where bm25_raw comes from: candidates (parity: BM25 over the candidate "
        "set with "
        "llmemory's tokenizer) or index ([memlens]: LanceDB's BM25 over the whole table, with "
        "stemming and stop words; 0 for candidates the full-text search did not return).",
        choices=("candidates", "index"),
        retrieval=True,
    )
    preceding_bm25_weight: float = _s(
        0.5,
        "[memlens] How much the query's words in an item's preceding_text count "
        "towards its BM25: bm25_norm = (bm25_raw + v*bm25_preceding) / the candidates' "
        "maximum of that sum, bm25_preceding being BM25 of the candidates' preceding "
        "texts over the candidate set (llmemory's tokenizer). Only items with a "
        "preceding text are affected. 0: their own text only.",
        lo=0,
        hi=5,
        retrieval=True,
    )
    preceding_full_words: int = _s(
        20,
        "[memlens] An item's preceding text adds to its BM25 at the full preceding_bm25_weight when the item has at "
        "most this many words, and at weight*this/words when longer: a short reply means little without the "
        "message it answers, a long text stands on its own. 0: the full weight for every item (llmemory has none).",
        lo=0,
        hi=100_000,
        retrieval=True,
    )
    fusion: str = _s(
        "zscore",
        "How the cosine and the lexical score (BM25 plus the preceding text's share) become the "
        "hybrid score: weighted (llmemory: bm25_weight*bm25_norm + (1-bm25_weight)*cosine), zscore "
        "([memlens] sigmoid(w*z_bm25 + (1-w)*z_vector), each standardised over the query's candidates, "
        "so neither score's scale decides; 0.5 is an average candidate) or rrf "
        "([memlens] reciprocal rank fusion over the candidates: (1-w)*(k+1)/(k+rank_vector) + "
        "w*(k+1)/(k+rank_bm25), 1 for a candidate first on both).",
        choices=("weighted", "zscore", "rrf"),
        retrieval=True,
    )
    adaptive_bm25: bool = _s(
        True,
        "[memlens] BM25 counts less in a hop whose cosine ranking has a clear head: the lexical weight is "
        "bm25_weight * clamp((r - adaptive_bm25_clear_ratio) / (adaptive_bm25_flat_ratio - "
        "adaptive_bm25_clear_ratio), 0, 1), r being the adaptive_bm25_rank-th best cosine over the best among the "
        "hop's candidates (engine/retrieval/lexical_weight.py; the trace records r and the weight used). When the "
        "best memory stands well above the rest by meaning, shared words mostly bring near-misses (paragraphs that "
        "name the same people); when the cosines are flat (short conversational turns), the words decide. Measured "
        "on the dev halves (1 hop, off -> on): MuSiQue all@5 0.162 -> 0.295 (plain vector 0.286), HotpotQA 0.628 "
        "-> 0.702, LoCoMo recall@10 0.751 -> 0.751, LongMemEval-S 0.873 -> 0.878 (temporal-reasoning 0.975 -> "
        "0.912, single-session-preference 0.500 -> 0.750).",
        retrieval=True,
    )
    adaptive_bm25_events: bool = _s(
        True,
        '[memlens] adaptive_bm25 keeps bm25_weight for a question that compares events in time ("How many days '
        'passed between X and Y?", "How long had I been X when Y?", "What is the order of ..."; offline '
        "English rules, engine/retrieval/event_comparison.py): each event needs its own memory, the question's "
        "embedding leans to one of them, and a clear cosine head is then no sign that the evidence is found. The cue "
        "that matched is in the hop's trace. Measured on the dev halves (1 hop, off -> on): LongMemEval-S "
        "recall@10 0.878 -> 0.895 (temporal-reasoning 0.912 -> 0.975; BM25 0.933), no other type changed; it "
        "matches 1 of LoCoMo's 997 questions and none of the paragraph sets'.",
        retrieval=True,
    )
    adaptive_bm25_rank: int = _s(
        5,
        "[memlens] adaptive_bm25: which cosine, by rank, is compared with the best (r = cosine at this rank / "
        "best cosine). A hop with this many candidates or fewer keeps bm25_weight.",
        lo=2,
        hi=100,
        retrieval=True,
    )
    adaptive_bm25_clear_ratio: float = _s(
        0.6,
        "[memlens] adaptive_bm25: at or below this r the cosine ranking has a clear head and BM25 counts 0.",
        lo=0,
        hi=1,
        retrieval=True,
    )
    adaptive_bm25_flat_ratio: float = _s(
        0.85,
        "[memlens] adaptive_bm25: at or above this r the cosines are flat and BM25 counts bm25_weight (linear "
        "between the two ratios; must be above adaptive_bm25_clear_ratio).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    rrf_k: float = _s(
        60.0,
        "[memlens] k in reciprocal rank fusion (fusion=rrf): larger flattens the rank curve.",
        lo=1,
        hi=1000,
        retrieval=True,
    )
    relevance_filter: str = _s(
        "heuristic",
        "Relevance filter: heuristic (parity), llm ([memlens] judge, needs an LLM; falls back to heuristic), or off.",
        choices=("heuristic", "llm", "off"),
        retrieval=True,
    )
    relevance_keep_all_max: int = _s(
        5, "With this many candidates or fewer, the filter keeps all.", lo=0, retrieval=True
    )
    relevance_min_score: float = _s(
        0.5, "Heuristic: keep candidates whose score is at least this.", lo=0, hi=1, retrieval=True
    )
    relevance_min_word_chars: int = _s(
        4, "Heuristic: a shared word must have at least this many characters.", lo=1, retrieval=True
    )
    text_search_words: str = _s(
        "content",
        "[memlens] What full-text search is given: all (llmemory: the query as it is) or content (its content "
        "words: question and function words such as what, does, did, how, I, my, you dropped, which LanceDB's "
        "English stop list keeps; engine/retrieval/text.py). A hop whose full-text query differs from its query "
        "records it (text_query). Measured on the dev halves (1 hop, all -> content): LoCoMo recall@10 0.750 -> "
        "0.752 (multi-hop 0.404 -> 0.412, open-domain 0.379 -> 0.386), LongMemEval-S 0.927 -> 0.935 (preference "
        "0.875 -> 1.000; with the speaker stage: without it 0.895 either way); 2 hops: LoCoMo 0.763 -> 0.764 "
        "(multi-hop 0.434 -> 0.438, open-domain 0.424 -> 0.398: two of its 44 questions lost, one gained), "
        "LongMemEval-S 0.924 -> 0.932; the paragraph sets unchanged "
        "(MuSiQue, HotpotQA, 2Wiki all@5, 1 and 2 hops).",
        choices=("all", "content"),
        retrieval=True,
    )
    relevance_words: str = _s(
        "words",
        "Heuristic filter's shared-word check: words ([memlens] runs of letters and "
        "digits, so 'guitar?' is looked for as 'guitar') or raw (llmemory: whitespace-split words, punctuation "
        "included; 'guitar?' never matches a memory without the question mark). Both match "
        "substrings.",
        choices=("words", "raw"),
        retrieval=True,
    )
    relevance_protect_top: int = _s(
        5,
        "[memlens] The heuristic filter never drops a candidate ranked this high or "
        "higher by the vector or the full-text score among the candidates (0: off, "
        "llmemory).",
        lo=0,
        hi=1000,
        retrieval=True,
    )
    relevance_judge_threshold: float = _s(0.7, "LLM judge: keep relevance >= this.", lo=0, hi=1, retrieval=True)
    half_life_days: float = _s(30.0, "Time-decay half-life in days.", lo=0.001, retrieval=True)
    decay_floor: float = _s(
        0.9,
        "[memlens] decay = floor + (1-floor)*exp(-ln2/half_life*age): above 0, recency "
        "is a bounded preference and an old memory keeps at least this share of its score "
        "(0: llmemory's decay towards zero).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    clamp_future_age: bool = _s(
        True,
        "A memory dated after `now` counts as age 0 (llmemory floors its negative age, "
        "so a future memory decays above 1). False only reproduces traces stored before this "
        "setting existed.",
        retrieval=True,
    )
    importance_weight: float = _s(1.0, "Exponent on importance (0 disables importance).", lo=0, retrieval=True)
    skill_importance: str = _s(
        "success_rate",
        "Skill importance inside retrieval: success_rate (parity) or "
        "wilson ([memlens] 95% Wilson lower bound; an untried skill keeps the neutral 0.5).",
        choices=("success_rate", "wilson"),
        retrieval=True,
    )
    feedback_weight: float = _s(
        0.5, "w_f in factor = 1 + w_f*clamp(net,-cap,cap)/cap; 0 disables.", lo=0, hi=1, retrieval=True
    )
    feedback_cap: int = _s(5, "Cap on |net| feedback.", lo=1, retrieval=True)
    mmr_enabled: bool = _s(False, "Diversify with MMR (reorders only).", retrieval=True)
    mmr_lambda: float = _s(0.7, "MMR lambda: relevance vs diversity.", lo=0, hi=1, retrieval=True)
    mmr_similarity: str = _s(
        "jaccard",
        "MMR similarity: jaccard (parity) or embedding ([memlens] cosine).",
        choices=("jaccard", "embedding"),
        retrieval=True,
    )
    budget_tokens: int = _s(2000, "Context token budget (max_retrieval_tokens).", lo=1, hi=1_000_000, retrieval=True)
    assembly_mode: str = _s(
        "skip",
        "Budget overflow: skip ([memlens] default, continue with smaller memories) or "
        "stop (parity: stop at the first memory that does not fit).",
        choices=("skip", "stop"),
        retrieval=True,
    )
    context_max_items: int = _s(0, "[memlens] Cap on memories in the context (0 = no cap).", lo=0, retrieval=True)
    reasoner: str = _s(
        "auto",
        "Multi-hop reasoner: auto (llm when configured, else offline), llm, offline.",
        choices=("auto", "llm", "offline"),
        retrieval=True,
    )
    hop_weight: float = _s(
        0.9,
        "[memlens] Factor on the final scores of hop n's candidates, hop_weight^(n-1), "
        "before the multi-hop merge: below 1 a reasoner-proposed query's results must outscore "
        "the question's own by that margin to displace them (1 = parity; 2-hop recall@10 on the dev halves, "
        "LoCoMo / LongMemEval: 0.8 0.734/0.885, 0.9 0.742/0.884, 1.0 0.746/0.856).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    hop_protect_top: int = _s(
        0,
        "[memlens] With more than one hop, the first hop's best this many memories keep the top places of the "
        "merged ranking in their own order; later hops' memories are merged below them by score (0 = the plain "
        "max-score merge; LoCoMo dev 2-hop recall@10 0.746 with 0, 3 or 5, 0.744 with 8, at hop_weight 0.9).",
        lo=0,
        hi=1000,
        retrieval=True,
    )
    reasoner_query: str = _s(
        "question+terms",
        "Offline reasoner's next query: terms (only the new names/key terms) or "
        "question+terms (the question's words plus them, [memlens] query expansion).",
        choices=("terms", "question+terms"),
        retrieval=True,
    )
    query_generator: str = _s(
        "auto",
        "Query generation for long messages: auto, llm, offline.",
        choices=("auto", "llm", "offline"),
        retrieval=True,
    )
    entity_strategy: bool = _s(
        False,
        "[memlens] The entity stage of each hop (engine/retrieval/entity_strategy.py): entities named in the "
        "hop's query or by its top results bring in the memories that name them (and, entity_depth relations "
        "away, their neighbours'), scored by how rare the entities are. Off by default, as measured with the "
        "offline extractor's graph (1 hop, recall@10, off -> on): LoCoMo 0.733 -> 0.735 (multi-hop 0.407 -> "
        "0.421), LongMemEval-S 0.873 -> 0.809; MuSiQue all@5 0.162 -> 0.171.",
        retrieval=True,
    )
    entity_weight: float = _s(
        0.2,
        "[memlens] What the entity stage adds to a linked candidate's hybrid score: entity_weight times its "
        "entity score (0..1, the share of the hop's entity weight that its paths cover).",
        lo=0,
        hi=5,
        retrieval=True,
    )
    entity_top_k: int = _s(
        20,
        "[memlens] Memories the entity stage may add per hop beyond what search found (best entity score first).",
        lo=0,
        hi=1000,
        retrieval=True,
    )
    entity_depth: int = _s(
        1,
        "[memlens] Relations the entity stage follows from a named entity (0: only memories naming it; 1: also "
        "those naming an entity one valid relation away, at half the weight).",
        lo=0,
        hi=2,
        retrieval=True,
    )
    entity_from_top: int = _s(
        5,
        "[memlens] The entity stage also follows the entities named by this many top results (at half weight): "
        "of each search at hop 1, of the previous hop's ranking at later hops (0 = only the query's entities).",
        lo=0,
        hi=50,
        retrieval=True,
    )
    entity_max_mentions: int = _s(
        100,
        "[memlens] An entity named by more memories than this (a speaker's own name) brings in none; see "
        "entity_common for what else it does.",
        lo=1,
        retrieval=True,
    )
    entity_common: str = _s(
        "ignore",
        "[memlens] An entity past entity_max_mentions: ignore (takes no part) or score (still adds to the "
        "candidates search found; LoCoMo adversarial questions, which name the wrong speaker, lose by it).",
        choices=("ignore", "score"),
        retrieval=True,
    )
    time_window: str = _s(
        "boost",
        "[memlens] The time stage (engine/retrieval/time_stage.py): a question that names a time ('last June', 'on "
        "8 May 2023', 'the week before ...') becomes a date window (time_parser), and memories dated inside it "
        "score higher (boost: times 1 + time_weight * 0.5^(days outside / time_half_life_days)) or those more than a "
        "half-life outside are dropped (filter); off: no window is read. Boost by default, as measured (recall@10, "
        "off -> boost): LoCoMo 1 hop 0.733 -> 0.751 (temporal 0.816 -> 0.847, single-hop 0.809 -> 0.831, no "
        "category lower), 2 hops 0.746 -> 0.763; LongMemEval-S and MuSiQue unchanged. Filter gained less on the 130 "
        "LoCoMo questions that name a time (+13.5 question-recalls against boost's +17.7).",
        choices=("off", "boost", "filter"),
        retrieval=True,
    )
    time_parser: str = _s(
        "offline",
        "[memlens] Who reads a question's date window: offline (the rules of engine/retrieval/time_window.py), llm, "
        "or auto (llm when configured and the question has a word of time, else offline; offline when the LLM "
        "fails). Offline by default: the benchmarks measured the rules, and the LLM costs a call per question.",
        choices=("auto", "offline", "llm"),
        retrieval=True,
    )
    time_weight: float = _s(
        1.0,
        "[memlens] time_window=boost: a memory inside the window scores 1 + time_weight times what it would.",
        lo=0,
        hi=10,
        retrieval=True,
    )
    time_half_life_days: float = _s(
        7.0,
        "[memlens] Days outside the question's window after which a memory's time score halves (filter: drops "
        "those more than this outside).",
        lo=0.01,
        hi=3650,
        retrieval=True,
    )
    memory_keys: str = _s(
        "off",
        "[memlens] The extra keys retrieval also searches (engine/memory/memory_keys.py): facts (what the graph "
        "extraction drew from a memory and its keyphrases), next (the text of the memory that answered it: the "
        "next turn), sentences (each sentence of a memory of two or more), all, or off. A memory a key found is a "
        "candidate with its own text; its cosine moves towards "
        "its key's (key_cosine_weight), and key_bm25_weight times its key's BM25 adds to its lexical score. Needs "
        "the keys written (memory_keys_write, or `memlens keys`). Off by default, as measured (1 hop, recall@10, "
        "off -> on): LoCoMo dev 0.733 -> facts 0.724 (multi-hop 0.407 -> 0.421), next 0.727 (adversarial 0.808 -> "
        "0.835, multi-hop 0.372), all 0.725; LongMemEval-S 0.873 -> all 0.851 (multi-session 0.672 -> all 0.604, "
        "facts 0.656, next 0.562); MuSiQue all@5 0.162 -> facts 0.171 (2 hops 0.333 -> 0.324). sentences with "
        "key_cosine_weight=0.6 and key_bm25_weight=0 on the defaults of 2026-12-06 evening (docs/benchmarks.md, "
        "Sentence keys at 100k items): LoCoMo dev 0.768 -> 0.773 (multi-hop 0.432 -> 0.463, open-domain 0.398 -> "
        "0.455, adversarial 0.842 -> 0.823; 2 hops 0.773 -> 0.778, multi-hop 0.489), LongMemEval-S 0.935 -> 0.941 "
        "(multi-session 0.781 -> 0.835, preference 1.000 -> 0.875), MuSiQue all@5 0.295 -> 0.295 (2 hops 0.400); "
        "not the default: adversarial is lower, every write embeds each sentence (memory_keys_write_kinds "
        "says which key kinds are written), and at 100k items 1 hop takes 5.7-6.2x the floor against 3.3-3.6x "
        "(bench/latency.py).",
        choices=("off", "facts", "next", "sentences", "all"),
        retrieval=True,
    )
    memory_keys_search: str = _s(
        "index",
        "[memlens] How a hop finds the memories' extra keys (memory_keys): index (search the keys table by vector "
        "and full text: a key can bring in a memory no other search found) or candidates (score only the keys of "
        "the candidates the hop's other searches found, by cosine: no keys search, no key BM25). Measured on the dev "
        "halves with sentence keys, key_bm25_weight 0 (docs/benchmarks.md, Keys that rescore): LoCoMo recall@10 at "
        "key_cosine_weight 0.6 index 0.774 (multi-hop 0.465) -> candidates 0.779 (0.482); at 0.9 with session_weight "
        "0.1 0.783 (0.498), 2 hops 0.790 (0.510); at 100k items (200k sentence keys) 1 hop 63-66 ms against "
        "the key search's 82-91 ms and no keys 54-57 ms. The deep preset uses candidates.",
        choices=("index", "candidates"),
        retrieval=True,
    )
    adaptive_key_weight: bool = _s(
        False,
        "[memlens] Scale key_cosine_weight by how flat the hop's own cosines are (the ratio adaptive_bm25 reads: 0 "
        "at adaptive_bm25_clear_ratio, 1 at adaptive_bm25_flat_ratio): a memory's best sentence counts where the "
        "turns all look alike to the model, not where one paragraph stands clear of near-misses. HotpotQA-MIGRES "
        "all@5 (candidates, 0.9, 1 / 2 hops): 0.649 / 0.713 -> 0.681 / 0.723 (default 0.702 / 0.755); LoCoMo "
        "unchanged (0.783); MuSiQue 0.286 / 0.410 -> 0.305 / 0.410 (first hop only, adaptive_key_weight_hops); "
        "but 2WikiMultihopQA 0.722 / 0.759 -> 0.633 / 0.734 and LongMemEval-S recall@5 0.894 -> 0.877, so the deep "
        "preset leaves it off.",
        retrieval=True,
    )
    adaptive_key_weight_hops: str = _s(
        "first",
        "[memlens] Which hops adaptive_key_weight scales: first (the question's own hop; a later hop's query is the "
        "reasoner's names and terms, whose cosine head says little about how alike the turns look, and takes the "
        "full key_cosine_weight) or every. With the deep preset's keys, at 2 hops (dev halves, every -> first): "
        "MuSiQue all@5 0.381 -> 0.410, 2WikiMultihopQA 0.722 -> 0.734, HotpotQA-MIGRES 0.723 under both, "
        "LongMemEval-S recall@10 0.943 under both (recall@5 0.850 -> 0.858); 1 hop is the same under both. "
        "Traces stored before this setting scaled every hop and replay so.",
        choices=("first", "every"),
        retrieval=True,
    )
    key_bm25_weight: float = _s(
        0.5,
        "[memlens] How much a memory's best key's BM25 (memory_keys) adds to its own: bm25_raw + w*key BM25.",
        lo=0,
        hi=5,
        retrieval=True,
    )
    key_cosine_weight: float = _s(
        1.0,
        "[memlens] How far a memory's cosine moves towards its best key's when that is nearer (memory_keys): "
        "cosine + w*(key cosine - cosine); 1: the better of the two, 0: its own (keys then only bring memories in "
        "and add BM25).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    session_weight: float = _s(
        0.0,
        "[memlens] The session stage (engine/retrieval/session_stage.py): adds session_weight times the score of "
        "a candidate's session (0..1: the sum of its session_top_n best hybrid scores over the best session's) "
        "to its hybrid score (0 = off). Off by default, as measured (1 hop, recall@10, 0 -> 0.1 / 0.3): LoCoMo dev "
        "0.733 -> 0.742 / 0.752 but multi-hop 0.407 -> 0.400 / 0.395; LongMemEval-S dev multi-session (16 q) "
        "0.672 -> 0.672 / 0.656, temporal (16 q) 0.975 -> 0.975 / 0.944; MuSiQue unchanged (one session).",
        lo=0,
        hi=5,
        retrieval=True,
    )
    assistant_turn_penalty: float = _s(
        0.4,
        "[memlens] The speaker stage (engine/retrieval/speaker_stage.py): when the question asks about the user's "
        'own life (first person, and not about what the assistant said: "you recommended", "our previous '
        'conversation"), each stored assistant turn (text starting "assistant:") has this subtracted from its '
        "hybrid score (0 = off). The user's turns hold the evidence for such questions; the assistant's answers "
        "reuse their words and crowd them out. Measured on the LongMemEval-S dev half (recall@10, 1 hop, 0 -> "
        "0.15 / 0.25 / 0.4 / 1.0): 0.895 -> 0.911 / 0.924 / 0.927 / 0.927 (multi-session 0.693 -> 0.781, "
        "single-session-preference 0.750 -> 0.875, no type lower); 2 hops 0.889 -> 0.924. It matches no LoCoMo "
        "question (they ask in the third person) and no paragraph set holds assistant turns.",
        lo=0,
        hi=1,
        retrieval=True,
    )
    question_turn_penalty: float = _s(
        0.1,
        "[memlens] The speaker stage (engine/retrieval/speaker_stage.py): each stored turn that asks rather than "
        'tells (its own words end with a question mark and number at most question_turn_max_words: "What '
        'instrument are you playing?") has this subtracted from its hybrid score, whatever the question (0 = off). '
        "A question echoes the words and topic of a later question about the same thing, while the answer is in the "
        "turn that tells; on the LoCoMo dev half 11 % of the evidence turns end with a question mark against 31 % "
        "of the other turns in the top 10. Measured (recall@10, 1 hop, 0 -> 0.1 / 0.15): LoCoMo dev 0.752 -> "
        "0.768 / 0.766 (at 0.1 every category higher: adversarial 0.819 -> 0.842, multi-hop 0.412 -> 0.432, "
        "open-domain 0.386 -> 0.398, single-hop 0.832 -> 0.842, temporal 0.850 -> 0.869), LongMemEval-S dev 0.935 "
        "-> 0.935 / 0.935 (every type unchanged), MuSiQue dev all@5 0.295 -> 0.295 (2 hops 0.390 -> 0.390).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    question_turn_max_words: int = _s(
        25,
        "[memlens] A turn that ends with a question mark counts as asking (question_turn_penalty) only when its own "
        "words number at most this many: a longer one tells before it asks (a user's request to an assistant "
        "carries the facts a later question needs). Measured with question_turn_penalty 0.1 (recall@10, 1 hop; no "
        "limit / 15 / 25 / 40): LoCoMo dev 0.765 / 0.764 / 0.768 / 0.768, LongMemEval-S dev 0.924 / 0.935 / 0.935 / "
        "0.910 (without the penalty 0.935; with no limit temporal-reasoning 0.975 -> 0.944 and preference 1.000 -> "
        "0.875).",
        lo=1,
        hi=10_000,
        retrieval=True,
    )
    brevity_weight: float = _s(
        0.3,
        "[memlens] The brevity stage (engine/retrieval/brevity.py): for a question about others (no first- or "
        "second-person word), a turn of a conversation (a memory stored with a preceding text) of fewer than "
        "brevity_full_words words keeps (words / brevity_full_words) ** brevity_weight of its temporal score (0 = "
        "off). Many short turns are reactions (\"Wow, that's awesome, Gina!\") that echo the question's topic; a "
        "reply to a question (its preceding text asks) is left alone, as is a memory that stands alone (a fact, a "
        "note, a paragraph) and every turn for a question in the first or second person, where a short turn can be "
        "the whole answer. Measured (dev halves, recall@10, off -> on, 1 hop / 2 hops): LoCoMo 0.768 -> 0.785 / "
        "0.775 -> 0.787 (multi-hop 0.434 -> 0.481 / 0.457 -> 0.501, temporal 0.869 -> 0.895, open-domain 0.398 -> "
        "0.472, adversarial 0.842 -> 0.848, single-hop 0.842 -> 0.845 / 0.840 -> 0.839); LongMemEval-S unchanged "
        "(its questions speak in the first person; lowering every question's turns cost 0.935 -> 0.896); MuSiQue "
        "and HotpotQA unchanged (paragraphs have no preceding text). 0.2 until the participant stage came; with it "
        "(LoCoMo dev, 1 hop, brevity_weight 0.15 / 0.2 / 0.25 / 0.3 / 0.35 / 0.4): overall 0.796 / 0.798 / 0.798 / "
        "0.801 / 0.802 / 0.798, multi-hop 0.490 / 0.492 / 0.500 / 0.508 / 0.506 / 0.502; 0.3 is the middle of "
        "the plateau.",
        lo=0,
        hi=5,
        retrieval=True,
    )
    brevity_full_words: int = _s(
        60,
        "[memlens] The length (whitespace-separated words of the stored text, a speaker's prefix included) from "
        "which a turn keeps its whole score under the brevity stage.",
        lo=1,
        hi=10_000,
        retrieval=True,
    )
    participant_weight: float = _s(
        0.4,
        "[memlens] The participant stage (engine/retrieval/participants.py): when the first hop's query names a "
        "speaker of the conversation turns its search found ('Melanie said, ...'), its vector search runs again "
        "with (1 - w) * the query's vector + w * the vector of the query without those names (0 = off; full-text "
        "search keeps the names; a later hop searches with its own vector). A speaker's name pulls the query "
        "towards everything that speaker says and every greeting of the other side. A search-time setting: replay "
        "keeps the recorded cosines. Measured (LoCoMo dev, recall@10, 1 hop, brevity_weight 0.2, off -> 0.35 / 0.4 "
        "/ 0.5 / 0.65): overall 0.785 -> 0.796 / 0.798 / 0.799 / 0.800, multi-hop 0.481 -> 0.489 / 0.492 / 0.495 / "
        "0.502, adversarial 0.848 -> 0.865 / 0.869 / 0.882 / 0.882, temporal 0.895 -> 0.892 / 0.892 / 0.885 / "
        "0.879; with brevity_weight 0.3 (the default) 0.801, 2 hops 0.806 (multi-hop 0.508 / 0.514). "
        "LongMemEval-S, MuSiQue and HotpotQA have no named speakers and are unchanged.",
        lo=0,
        hi=1,
        retrieval=True,
    )
    session_top_n: int = _s(
        2,
        "[memlens] A session's score sums the hybrid scores of this many of its best candidates.",
        lo=1,
        hi=50,
        retrieval=True,
    )
    session_window_minutes: float = _s(
        0.0,
        "[memlens] Memories of one kind stamped with the same instant are one session; above 0, so are those "
        "stamped within this many minutes of the previous one (a conversation window).",
        lo=0,
        hi=10080,
        retrieval=True,
    )
