"""The offline entity and relation extractor [memlens]: deterministic rules, no model, pure ``re``/``str`` work (it
runs on every memory written, 100k-item imports included). ``OfflineExtractor().extract(text) -> Extraction`` with
``method="offline"``. Its precision and recall on hand-labelled text are measured by ``bench/graph_extraction.py``
(tests/engine/memory/test_graph_offline.py holds one test per rule below).

**Who "I" is.** A conversation turn ``Caroline said, "I went ..."`` (the LoCoMo item form, optionally followed by
``and shared <caption>``) makes the speaker the referent of I/me/my/myself: the speaker is a person entity and the
subject of first-person facts; the caption is scanned for names but gives no relations. Without a speaker, first
person (and "the user"/"User") is the entity **User**, which appears only as the subject of a relation (a bare "I" is
not a mention: it would link every memory to one entity). He/she/his/her refer to the nearest person named before
them in the same text, or to nothing; "who" to the name just before it; "and <verb>" to the subject the sentence
opened with ("Alice works at Acme and lives in Paris").

**Entities (mentions)** are proper-name phrases:
1. A phrase is a run of capitalised words, joined across ``of``/``de``/``van``/``von``/``der``/``la``/``da``/``del``/
   ``du``/``di`` when a capitalised word follows; punctuation (``, . ! ? ; : " ( ) / →`` and dashes), a possessive
   ``'s`` and a lower-case word end it. Numbers are not part of a name ("Python 3.12" names Python); codes stand
   alone ("LH714 MUC", "Finnair KIX": a word with digits, or an acronym after a plain word, starts a new name).
2. Function words, pronouns, interjections and greetings (``STOP_WORDS``: The, I, My, Hey, Thanks, Wow, Yes, ...) are
   never names; one at the start of a phrase is dropped ("Hey Mel" names Mel, "The Louvre" names Louvre). Only a
   sentence's first word is sentence-initial: in "Cool, John." John is mid-sentence.
3. Months and weekdays (and their plurals, "on Tuesdays") are skipped, not typed as dates: they would link every
   memory of a month to one entity.
4. A single capitalised word at the start of a sentence is a name only when there is more evidence: it is the
   speaker, it also appears capitalised mid-sentence in the same text, it is a place in ``PLACES``, it has inner
   capitals or digits ("FastAPI", "Ch2"), it is followed by "and I", "et al." or one of a few verbs (has, holds,
   uses, said, likes, ...: ``VOUCHING``), it is a possessive before a noun ("Mira's supervisor"; not "Painting's a
   ..."), or it is the subject of a relation rule whose verb agrees with it ("Ada prefers", not "Themes like"; never
   a gerund: "Fitting into ..."). A sentence-initial phrase of two or more capitalised words is a name.
5. Acronyms (2-6 capitals, e.g. LGBTQ, EU) are concept entities, except the few in ``STOP_WORDS`` (OK, TV, ...).

**Types**, by the first cue that applies: ``person`` for the speaker, User, a name after a title (Dr, Mrs, ...), a
name addressed after a greeting ("Thanks, Melanie"), a relation's person side (a kin or spouse object, the subject
of works_at/lives_in/likes/...), or two or three plain title-case words with no other cue ("Priya Raman");
``organisation`` when a word of the name is in ``ORG_WORDS`` (University, Inc, Bank, Squad, ...) or it is the object
of works_at/member_of; ``place`` when the name or its last word is in ``PLACES`` or it has a word of ``PLACE_WORDS``
(Lake, Street, City, ...) or it is the object of lives_in/moved_to/visited/is_from/grew_up_in (a rule's type beats
a guess from the words); else ``concept``.

**Relations** (subject predicate object, llmemory's snake_case predicates). The subject is I (the speaker or User),
he/she/who/and (above), "the user", or a name, never a name right after a preposition ("the tasting in Gaia was
..."); between subject and verb only auxiliaries and adverbs may stand ("I have also been working at"), and a
negation there (not, never, n't) drops the fact. "into", "a fan of", "based", "member of", "fluent in" are verbs
only after a copula ("I'm into jazz"). Objects marked NAME must be a proper-name phrase; NP is a short noun phrase
(up to four words, cut at a preposition, conjunction, verb, pronoun, dash or punctuation; a leading article or
possessive dropped), never an adverb ("personally") nor a gerund cut from its preposition ("going" of "going on road
trips"). An object may be a list: "speaks Czech, German and English" gives three facts (up to five; a comma
followed by "the"/"my"/... starts a new clause, not an item).
- ``works_at`` NAME: work(s/ed/ing) at/for, am employed at, got a job at;  ``current_job`` NP: work(s) as a ...
- ``lives_in`` NAME: live(s/d) in, am based in, reside in;  ``moved_to`` NAME: moved/relocated to
- ``visited`` NAME: visited, went to, been to, travel(l)ed/flew to, toured;  ``is_from`` NAME: am/is/come(s) from
- ``grew_up_in`` NAME;  ``studied_in`` NAME;  ``speaks`` NAME: speak(s), am fluent in
- ``plays_for`` NAME: play(s) for, signed with;  ``member_of`` NAME: joined, am a member of
- ``spouse`` NAME: married (to)
- ``has_<kin>`` NAME: "my son Jake", "her sister, Ana", "Jake is my son", "Katrin is Mira's PhD supervisor" (son,
  daughter, brother, sister, mother (mom, mum), father (dad), child (kid), partner (boyfriend, girlfriend, fiance),
  friend, cousin, aunt, uncle, grandmother, grandfather, niece, nephew, boss, colleague, roommate, supervisor,
  advisor, mentor, manager, teacher, coach); wife/husband give ``spouse``
- ``has_pet`` NAME: "my dog Max", "a cat named Luna" (after "I have/got/adopted")
- ``likes`` NP: like(s), love(s), enjoy(s), am into, am a fan of;  ``prefers`` NP;  ``dislikes`` NP: hate, dislike
- ``is_a`` NP: "<subject> is/am a(n) ..." in the present tense only ("when I was a kid" is no type), not "a bit",
  "a lot", ...;  ``studies`` NP: study, major in;  ``plays`` NP: play(s) the ...;  ``owns`` NP: own(s);
  ``uses`` NP: use(s)
- passives "X is owned/led/maintained/managed/run/founded by Y" give (Y, owns/leads/maintains/manages/runs/
  founded, X), X a name or a noun phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..records import Extraction, Triple
from .graph_offline_rules import (
    ARTICLES,
    BASE_FORMS,
    CONNECTORS,
    COPULA,
    GREETINGS,
    IS_FROM_VERB,
    KIN,
    KIN_AFTER,
    KIN_RULE,
    LIST_SEP,
    MONTHS_DAYS,
    NAME_AT,
    NEEDS_COPULA,
    NEGATIONS,
    NOT_A_HEAD,
    NP_STOP,
    NP_WORD,
    OBJECT_TYPES,
    OPENING,
    ORG_WORDS,
    PASSIVE_PREDICATES,
    PASSIVE_RULE,
    PERSON_SUBJECTS,
    PET_RULE,
    PHRASE_BREAK,
    PLACE_WORDS,
    PLACES,
    PREPOSITIONS,
    SENTENCE_END,
    SPEAKER,
    STOP_WORDS,
    TITLES,
    TRIGGERS,
    VERB_RULES,
    VOUCHING,
    WORD,
)

METHOD = "offline"
USER = "User"


@dataclass
class _Names:
    """Proper-name phrases found in one text: name -> type, in order of first appearance, with the words that
    started a sentence (kept only with more evidence, rule 4)."""

    types: dict[str, str] = field(default_factory=dict)
    initial_only: dict[str, str] = field(default_factory=dict)
    mid: set[str] = field(default_factory=set)
    order: list[tuple[int, str]] = field(default_factory=list)  # (position, name) for pronoun resolution

    def add(self, name: str, kind: str, pos: int, initial: bool) -> None:
        if initial:
            self.initial_only.setdefault(name, kind)
        else:
            self.mid.add(name.casefold())
            _type(self.types, name, kind)
        self.order.append((pos, name))

    def settle(self, speaker: str | None) -> None:
        for name, kind in self.initial_only.items():
            if name in self.types:
                continue
            if (
                " " in name
                or name.casefold() in self.mid
                or name.casefold() in PLACES
                or name == speaker
                or any(c.isupper() or c.isdigit() for c in name[1:])
            ):
                _type(self.types, name, kind)

    def accept(self, name: str, kind: str, force: bool = False) -> None:
        if force:
            self.types[name] = kind
        else:
            _type(self.types, name, kind)


def _type(types: dict[str, str], name: str, kind: str) -> None:
    if types.get(name, "concept") == "concept":
        types[name] = kind


def _guess_type(words: list[str], after_title: bool, after_greeting: bool) -> str:
    low = [w.casefold() for w in words]
    if after_title:
        return "person"
    if any(w in ORG_WORDS for w in low):
        return "organisation"
    if " ".join(low) in PLACES or low[-1] in PLACES or any(w in PLACE_WORDS for w in low):
        return "place"
    if after_greeting:
        return "person"
    if len(words) == 1 and words[0].isupper() and len(words[0]) > 1:
        return "concept"
    plain = all(w[:1].isupper() and w[1:].islower() and w.isalpha() for w in words)
    if 2 <= len(words) <= 3 and plain:
        return "person"
    return "concept"


def _possessive_name(text: str, end: int, possessive: bool) -> bool:
    """A sentence-initial "X's" followed by a noun ("Mira's supervisor") names X; "Painting's a fun way" (X is) does
    not, nor does a gerund."""
    if not possessive:
        return False
    nxt = NP_WORD.match(text, end)
    word = text[:end].split()[-1] if text[:end].split() else ""
    return nxt is not None and nxt.group(1).casefold() not in STOP_WORDS and not word.endswith(("ing", "ing's"))


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _strip_possessive(word: str) -> tuple[str, bool]:
    if word.endswith("'s") and len(word) > 2:
        return word[:-2], True
    if word.endswith("s'") and len(word) > 2:
        return word[:-1], True
    return word, False


def _scan_names(text: str, names: _Names) -> None:
    """Rules 1-5: every proper-name phrase of ``text`` into ``names``."""
    phrase: list[str] = []
    start = 0
    initial = False
    after_title = False
    after_greeting = False
    pending: list[str] = []  # connectors waiting for a capitalised word
    prev_end = 0
    sentence_start = True
    prev_word = ""

    end = 0
    possessive = False

    def close() -> None:
        nonlocal phrase, pending
        if phrase:
            kind = _guess_type(phrase, after_title, after_greeting)
            vouched = initial and (_possessive_name(text, end, possessive) or VOUCHING.match(text, end) is not None)
            names.add(" ".join(phrase), kind, start, initial and not vouched)
        phrase, pending = [], []

    for m in WORD.finditer(text):
        gap = text[prev_end : m.start()]
        prev_end = m.end()
        title_dot = gap.startswith(".") and prev_word.casefold() in TITLES  # "Dr. Smith" goes on
        if (SENTENCE_END.search(gap) and not title_dot) or (
            prev_word.endswith(".") and prev_word[:-1].casefold() not in TITLES
        ):
            close()
            sentence_start = True
        elif PHRASE_BREAK.search(gap):
            close()
        word, possessive = _strip_possessive(m.group())
        word = word.rstrip(".") if not word.isupper() else word
        prev_word = m.group()
        low = word.casefold()
        is_cap = word[:1].isupper()
        base = low.split("'")[0]
        date_word = low in MONTHS_DAYS or (low.endswith("s") and low[:-1] in MONTHS_DAYS)  # "on Tuesdays"
        if is_cap and (low in STOP_WORDS or base in STOP_WORDS or date_word or len(word) == 1):
            close()
            after_title = low.rstrip(".") in TITLES
            after_greeting = base in GREETINGS
            sentence_start = False  # only a sentence's first word is sentence-initial ("Cool, John." names John)
            continue
        if is_cap and not word[0].isdigit():
            if phrase and (_has_digit(word) or _has_digit(phrase[-1]) or (word.isupper() and not phrase[-1].isupper())):
                close()  # "LH714 MUC", "Finnair KIX": codes stand alone
            if phrase and pending:
                phrase += pending
            pending = []
            if not phrase:
                start = m.start()
                initial = sentence_start
            phrase.append(word)
            end = m.end()
            sentence_start = False
            if possessive:
                close()
                after_title = after_greeting = False
            continue
        if phrase and low in CONNECTORS and not pending:
            pending = [word]
            continue
        close()
        after_title = after_greeting = False
        sentence_start = False
    close()


@dataclass
class _Context:
    """What one text's rules resolve against: who "I" is and the names found."""

    me: str
    names: _Names
    speaker: str | None
    body: str


def _np_at(body: str, pos: int) -> tuple[str, int]:
    """The short noun phrase starting at ``pos`` and where it ends: cut at a stop word, at punctuation or past four
    words; a leading article or possessive dropped, trailing fillers too."""
    out: list[str] = []
    end = pos
    while len(out) < 4:
        m = NP_WORD.match(body, end)
        if m is None:
            break
        word = m.group(1).strip("'")
        low = word.casefold()
        if not out and low in ARTICLES:
            end = m.end(1)
            continue
        if low in NP_STOP or not word.strip("-–"):  # a dash alone ends the phrase too
            break
        out.append(word)
        end = m.end(1)
        if m.group(2):
            break
    while out and out[-1].casefold() in {"a", "an", "the", "my", "and", "or", "some", "really", "so", "too"}:
        out.pop()
    return " ".join(out), end


def _cut_short(phrase: str, body: str, end: int) -> bool:
    """A noun phrase that is no object: an adverb ("personally"), or a lone gerund its preposition cut off ("going"
    of "going on road trips", "talking" of "talking to people")."""
    if phrase.endswith("ly") and " " not in phrase:
        return True
    nxt = NP_WORD.match(body, end)
    return phrase.endswith("ing") and " " not in phrase and nxt is not None and nxt.group(1).casefold() in NP_STOP


def _np(raw: str) -> str:
    return _np_at(raw, 0)[0]


def _name_in(candidate: str, ctx: _Context) -> str | None:
    """The name a matched NAME group stands for: itself when found as a name (or a found name that ends it: "Thanks
    Melanie" -> Melanie), a sentence-initial word when a rule vouches for it."""
    candidate = _strip_possessive(candidate.strip().rstrip("."))[0]
    words = candidate.split()
    while words and (words[0].casefold() in STOP_WORDS or words[0].casefold() in GREETINGS):
        words = words[1:]
    if not words or words[0].casefold() in MONTHS_DAYS:
        return None
    name = " ".join(words)
    if name in ctx.names.types:
        return name
    if name in ctx.names.initial_only and not (len(words) == 1 and name.endswith("ing")):
        return name  # a rule vouches for it; never a sentence-initial gerund ("Fitting into ...")
    for i in range(1, len(words)):
        tail = " ".join(words[i:])
        if tail in ctx.names.types:
            return tail
    return None


def _subject(raw: str, pos: int, ctx: _Context) -> str | None:
    low = raw.casefold()
    if low in {"i", "my", "the user", "user"}:
        return ctx.me if low in {"i", "my"} else USER
    if low == "and":  # "Alice works at Acme and lives in Paris": the subject the sentence opened with
        opening = re.split(r"[.!?]\s", ctx.body[:pos])[-1]
        first = OPENING.match(opening)
        return _subject(first.group("s"), pos - len(opening), ctx) if first else None
    if low == "who":  # "Caroline, who moved to ...": the name just before, in the same sentence
        before = [n for p, n in ctx.names.order if p < pos and n in ctx.names.types]
        return before[-1] if before else None
    if low in {"he", "she", "his", "her"}:
        before = [n for p, n in ctx.names.order if p < pos and ctx.names.types.get(n) == "person" and n != ctx.me]
        return before[-1] if before else None
    return _name_in(raw, ctx)


def _objects(body: str, pos: int, wants_name: bool, ctx: _Context) -> list[str]:
    """The object at ``pos`` and the list that may follow it ("speaks Czech, German and English", "enjoy reading,
    watching movies, and exploring nature"): up to five, each a name (NAME rules) or a noun phrase."""
    out: list[str] = []
    while len(out) < 5:
        if wants_name:
            m = NAME_AT.match(body, pos)
            obj = _name_in(m.group(1), ctx) if m else None
            end = m.end() if m else pos
        else:
            obj, end = _np_at(body, pos)
            head = obj.split()[0].casefold() if obj else ""
            if head in NOT_A_HEAD or head in STOP_WORDS or (out and len(obj.split()) > 3) or _cut_short(obj, body, end):
                obj = None
        if not obj:
            break
        out.append(obj)
        sep = LIST_SEP.match(body, end)
        if sep is None:
            break
        pos = sep.end()
        after = NP_WORD.match(body, pos)
        if "," in sep.group() and after is not None and after.group(1).casefold() in ARTICLES - {"a", "an", "some"}:
            break  # ", the effects are ...": a new clause, not the next item of the list
    return out


class OfflineExtractor:
    """Rules in the module docstring; ``extract`` is a pure function of the text."""

    method = METHOD

    def extract(self, text: str) -> Extraction:
        text = str(text or "").replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
        if not text.strip():
            return Extraction((), (), METHOD)
        speaker = None
        body, caption = text, ""
        m = SPEAKER.match(text)
        if m:
            speaker = " ".join(m.group("speaker").split())
            body, caption = m.group("body"), m.group("caption") or ""
        names = _Names()
        _scan_names(body, names)
        if caption:
            _scan_names(caption, names)
        if speaker:
            names.accept(speaker, "person")
        ctx = _Context(speaker or USER, names, speaker, body)
        triples = self._relations(body, ctx)
        names.settle(speaker)
        entities = [(n, t) for n, t in names.types.items()]
        seen = {n.casefold() for n, _ in entities}
        for t in triples:  # a name only a rule vouched for (rule 4) is still a mention
            for n, kind in ((t.subject, t.subject_type), (t.object, t.object_type)):
                if n.casefold() not in seen and n != USER and n[:1].isupper():
                    entities.append((n, kind))
                    seen.add(n.casefold())
        types = dict(entities)
        triples = [
            Triple(
                t.subject,
                t.predicate,
                t.object,
                "person" if t.subject in (USER, speaker) else types.get(t.subject, t.subject_type),
                types.get(t.object, t.object_type),
            )
            for t in triples
        ]
        return Extraction(tuple(entities), tuple(dict.fromkeys(triples)), METHOD)

    def _relations(self, body: str, ctx: _Context) -> list[Triple]:
        out: list[Triple] = []

        def add(subject: str | None, predicate: str, obj: str | None, subject_type: str = "concept") -> None:
            if not subject or not obj or subject.casefold() == obj.casefold():
                return
            obj_type = OBJECT_TYPES.get(predicate, "concept")
            if subject_type == "concept" and predicate in PERSON_SUBJECTS:
                subject_type = "person"
            out.append(Triple(subject, predicate, obj, subject_type, obj_type))
            if subject in ctx.names.types or subject in ctx.names.initial_only:
                ctx.names.accept(subject, subject_type)
            if obj in ctx.names.types or obj in ctx.names.initial_only:
                # what a rule says the object is beats a guess from the words ("moved to New York": a place)
                ctx.names.accept(obj, obj_type, force=obj_type != "concept")

        for predicate, rule, wants_name in VERB_RULES:
            trigger = TRIGGERS.get(rule)
            if trigger is not None and trigger.search(body) is None:
                continue
            for m in rule.finditer(body):
                between = body[m.end("s") : m.start("o")]
                if NEGATIONS.search(between):
                    continue
                if predicate == "is_from" and not IS_FROM_VERB.search(between):
                    continue  # "moved to New York from Sweden" says nothing of where New York is from
                if NEEDS_COPULA.search(between + " ") and not COPULA.search(between):
                    continue
                before = body[: m.start("s")].split()
                if before and before[-1].casefold() in PREPOSITIONS:
                    continue  # "the tasting in Gaia was ...": a name after a preposition is not the subject
                subject = _subject(m.group("s"), m.start(), ctx)
                if subject in ctx.names.initial_only and subject not in ctx.names.types:
                    verb = between.split()[0] if between.split() else ""
                    if verb in BASE_FORMS:
                        continue  # "Themes like ...", "Seems like ...": a vouched subject agrees with its verb
                for obj in _objects(body, m.start("o"), wants_name, ctx):
                    add(subject, predicate, obj)
        for m in KIN_RULE.finditer(body):
            add(_subject(m.group("s"), m.start(), ctx), KIN[m.group("k").casefold()], _name_in(m.group("o"), ctx))
        for m in KIN_AFTER.finditer(body):
            add(_subject(m.group("s2"), m.start("s2"), ctx), KIN[m.group("k").casefold()], _name_in(m.group("o"), ctx))
        for m in PET_RULE.finditer(body):
            owner = _subject(m.group("s"), m.start(), ctx) if m.group("s") else self._owner(body, m.start(), ctx)
            add(owner, "has_pet", _name_in(m.group("o"), ctx))
        for m in PASSIVE_RULE.finditer(body):
            target = _name_in(m.group("sn"), ctx) if m.group("sn") else _np(m.group("sp"))
            add(_name_in(m.group("o"), ctx), PASSIVE_PREDICATES[m.group("v")], target)
        return out

    @staticmethod
    def _owner(body: str, pos: int, ctx: _Context) -> str | None:
        """Who "a dog named Max" belongs to: first person when the clause before says I have/got/adopted."""
        clause = re.split(r"[.!?]", body[:pos])[-1].casefold()
        return ctx.me if re.search(r"\bi(?:'ve| have| had| got| adopted| bought| own)\b", clause) else None
