"""The vocabulary and the patterns of the offline extractor (graph_offline.py, whose docstring states the rules):
word lists that decide names and types, and the regular expressions of the relation rules."""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    """
    i i'm i've i'll i'd me my mine myself we we're we've we'll our ours us you you're you've you'll your yours he he's
    she she's it it's its they they're their them his her hers him this that that's these those there there's here
    here's what what's when where where's why how how's who who's which whose a an the and but or nor so yet if then
    also just well oh ohh wow whoa hey hi hello bye thanks thank thx sure ok okay yes yeah yep yup no nope nah great
    nice cool awesome amazing sounds good glad congrats congratulations definitely totally absolutely really haha
    lol omg aw aww ah ahh hmm um uh let's let don't can't won't didn't isn't wasn't couldn't wouldn't shouldn't
    i'd've as at by for from in into of on onto to with without about after before during since until while over
    under again all any both each every some such only own same than too very can will would should could may might
    must do does did done have has had be is am are was were been being not never please sorry maybe perhaps anyway
    btw fyi lol tv pm am ok dm diy asap etc ps re vs mr mrs ms dr prof st phd
    one two three four five six seven eight nine ten
    today tomorrow yesterday tonight morning evening night week weekend month year
    love like hope wish guess think know see look looking looks take make made keep let's gonna gotta wanna
    totally exactly absolutely anyway anyhow anyways though although because cause 'cause cuz
    user assistant
    """.split()
)
MONTHS_DAYS = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu "
    "thur thurs fri sat sun".split()
)
TITLES = frozenset("mr mrs ms miss dr prof professor sir madam mx".split())
GREETINGS = frozenset("hey hi hello thanks thank congrats congratulations bye dear wow sorry yo".split())
CONNECTORS = frozenset("of de van von der la da del du di".split())
ORG_WORDS = frozenset(
    "inc inc. ltd llc corp corporation company co university college school academy institute bank group labs lab "
    "foundation association club team squad airlines airline airways hospital clinic church agency society center "
    "centre studio studios records press council ministry department committee union federation league network "
    "partners gmbh ag sa plc".split()
)
PLACE_WORDS = frozenset(
    "city street st avenue ave road rd park lake mount mountain mountains river beach island islands bay valley "
    "county province state canyon falls square station airport coast forest desert village town harbour harbor "
    "alps dolomites peninsula".split()
)
PLACES = frozenset(
    """
    paris london rome berlin munich vienna lisbon porto madrid barcelona amsterdam brussels zurich geneva milan
    venice florence naples prague budapest warsaw stockholm oslo copenhagen helsinki dublin edinburgh athens
    istanbul moscow kyoto tokyo osaka seoul beijing shanghai singapore bangkok bangalore mumbai delhi dubai sydney
    melbourne toronto vancouver montreal chicago boston seattle denver austin miami atlanta dallas houston
    phoenix detroit portland nashville orlando hawaii alaska california texas florida york
    europe asia africa america australia canada mexico brazil argentina chile peru colombia usa uk england
    scotland wales ireland france germany italy spain portugal switzerland austria netherlands belgium sweden
    norway denmark finland poland greece turkey russia japan china korea india thailand vietnam indonesia
    philippines egypt morocco kenya nigeria israel iceland
    """.split()
)
KIN = {
    "son": "has_son",
    "daughter": "has_daughter",
    "brother": "has_brother",
    "sister": "has_sister",
    "mother": "has_mother",
    "mom": "has_mother",
    "mum": "has_mother",
    "father": "has_father",
    "dad": "has_father",
    "child": "has_child",
    "kid": "has_child",
    "partner": "has_partner",
    "boyfriend": "has_partner",
    "girlfriend": "has_partner",
    "fiance": "has_partner",
    "fiancee": "has_partner",
    "fiancé": "has_partner",
    "fiancée": "has_partner",
    "wife": "spouse",
    "husband": "spouse",
    "spouse": "spouse",
    "friend": "has_friend",
    "cousin": "has_cousin",
    "aunt": "has_aunt",
    "uncle": "has_uncle",
    "grandmother": "has_grandmother",
    "grandma": "has_grandmother",
    "grandfather": "has_grandfather",
    "grandpa": "has_grandfather",
    "niece": "has_niece",
    "nephew": "has_nephew",
    "boss": "has_boss",
    "colleague": "has_colleague",
    "coworker": "has_colleague",
    "roommate": "has_roommate",
    "supervisor": "has_supervisor",
    "advisor": "has_advisor",
    "mentor": "has_mentor",
    "manager": "has_manager",
    "teacher": "has_teacher",
    "coach": "has_coach",
}
PETS = "dog|cat|puppy|kitten|pet|horse|bird|parrot|rabbit|bunny|hamster|turtle|snake"
PERSON_SUBJECTS = frozenset(
    "works_at current_job lives_in moved_to grew_up_in visited is_from spouse has_pet likes prefers dislikes "
    "studies plays".split()
    + list(KIN.values())
)
OBJECT_TYPES = {
    "works_at": "organisation",
    "member_of": "organisation",
    "lives_in": "place",
    "moved_to": "place",
    "visited": "place",
    "is_from": "place",
    "grew_up_in": "place",
    **{p: "person" for p in KIN.values()},
    "has_pet": "concept",
}
NOT_A_HEAD = frozenset("bit little lot lots few couple kind sort part fan huge big mess while way".split())
NP_STOP = frozenset(
    "for to with in on at by from of about after before during since until while as and or but so because than "
    "that which who when where if instead into onto over under like since rather too very this these those is are "
    "was were be been being am has have had do does did will would can could should it its they them we you he she "
    "i me".split()
)
# verbs that are prepositions without a copula before them ("I'm into jazz", not "Fitting into the team")
NEEDS_COPULA = re.compile(r"\s(?:into|a fan of|a big fan of|based|member of|a member of|fluent in)\s")
COPULA = re.compile(r"'m|'s|'re|\b(?:am|is|are|was|were|been|be)\b")
PREPOSITIONS = frozenset("in at to from of with for on by about into onto near than".split())
LIST_SEP = re.compile(r"\s*,\s*(?:and\s+|or\s+|plus\s+(?:some\s+)?)?|\s+(?:and|or)\s+|\s+plus\s+(?:some\s+)?")
NP_WORD = re.compile(r"\s*([\w'&/+#-]+(?:\.[\w'&/+#-]+)*)([.,!?;:\"]?)")
BASE_FORMS = frozenset(
    "like love enjoy adore prefer hate dislike play work live use own study move speak visit come reside".split()
)
ARTICLES = frozenset("a an the my his her their our your some all any".split())
IS_FROM_VERB = re.compile(r"'m|\b(?:am|is|are|was|were|come|comes|came)\b")
NEGATIONS = re.compile(r"\b(?:not|never|no longer|n't)\b|n't", re.I)

# Auxiliaries and adverbs that may stand between a subject and its verb ("I've also been working at").
AUX = (
    r"(?:\s*(?:'m|'ve|'s|'re|'d|'ll)|\s+(?:am|is|are|was|were|have|has|had|been|also|now|still|currently|just|"
    r"recently|really|actually|already|finally|usually|often|always|both|all|will|would|did|do|does|not|never|"
    r"n't|no longer|started|start|begun|began|happily|newly|even|totally|absolutely|truly|so|kind of|sort of))*"
)
WORD_NAME = r"[A-Z][\w'&-]*(?:\.[\w'&-]+)*"  # inner dots only: "Raman. She" is two sentences
NAME = WORD_NAME + r"(?:\s+(?:(?:of|de|van|von|der|la|da|del|du|di)\s+)?" + WORD_NAME + r"){0,4}"
SUBJ = r"(?P<s>\b(?:I|[Hh]e|[Ss]he|who|and|[Tt]he user|User|" + NAME + r"))"
OPENING = re.compile(r"\s*(?P<s>I|[Hh]e|[Ss]he|[Tt]he user|User|" + NAME + r")\b")
NP = r"(?P<o>[\w'&/+#-]+)"  # only where the phrase starts: _np_at reads it (a longer match would hide the next fact)
ONAME = r"(?:the\s+)?(?P<o>" + NAME + r")"
NAME_AT = re.compile(r"(?:the\s+)?(" + NAME + r")")


# A rule runs only when one of its verbs occurs in the text: a literal search is far cheaper than the rule itself,
# and most texts hold one or two of the verbs at most (the extractor runs on every memory written).
TRIGGERS: dict[re.Pattern[str], re.Pattern[str]] = {}


def _verb_rule(verbs: str, obj: str) -> re.Pattern[str]:
    rule = re.compile(SUBJ + r"(?P<aux>" + AUX + r")\s+(?:" + verbs + r")\s+" + obj)
    TRIGGERS[rule] = re.compile(r"\b(?:" + verbs + r")\s")
    return rule


# (predicate, pattern, object is a NAME) in the order they are tried; every rule may match several times.
VERB_RULES: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    (
        "works_at",
        _verb_rule(
            r"work|works|worked|working|employed|got a job|have a job|has a job|had a job|took a job|"
            r"started a job|intern|interning|interned",
            r"(?:at|for|with)\s+" + ONAME,
        ),
        True,
    ),
    ("current_job", _verb_rule(r"work|works|worked|working", r"as\s+(?:an?\s+)?" + NP), False),
    ("lives_in", _verb_rule(r"live|lives|lived|living|based|reside|resides|resided|residing", r"in\s+" + ONAME), True),
    ("moved_to", _verb_rule(r"move|moved|moving|relocated|relocating", r"(?:back\s+)?to\s+" + ONAME), True),
    ("grew_up_in", _verb_rule(r"grew up|grow up|raised", r"in\s+" + ONAME), True),
    (
        "visited",
        _verb_rule(
            r"visited|visiting|went to|been to|traveled to|travelled to|flew to|toured|went on a trip to|"
            r"took a trip to",
            ONAME,
        ),
        True,
    ),
    ("is_from", _verb_rule(r"from|come from|comes from|came from|originally from", ONAME), True),
    ("studied_in", _verb_rule(r"studied in|studies in|study in|studying in", ONAME), True),
    ("speaks", _verb_rule(r"speak|speaks|spoke|fluent in", ONAME), True),
    ("plays_for", _verb_rule(r"play for|plays for|played for|playing for|signed with", ONAME), True),
    ("member_of", _verb_rule(r"joined|member of|a member of", ONAME), True),
    ("spouse", _verb_rule(r"married to|married", ONAME), True),
    (
        "likes",
        _verb_rule(r"like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|into|a fan of|a big fan of|adore", NP),
        False,
    ),
    ("prefers", _verb_rule(r"prefer|prefers|preferred", NP), False),
    ("dislikes", _verb_rule(r"hate|hates|dislike|dislikes|can't stand", NP), False),
    ("studies", _verb_rule(r"study|studies|studied|studying|major in|majored in|majoring in", NP), False),
    ("plays", _verb_rule(r"play|plays|played|playing", r"(?:the\s+)?" + NP), False),
    ("owns", _verb_rule(r"own|owns|owned", NP), False),
    ("uses", _verb_rule(r"use|uses|used|using", NP), False),
    # present tense only: "when I was a kid" is no type of the speaker
    ("is_a", re.compile(SUBJ + r"(?P<aux>)(?:\s+is|'m|\s+am|'s)\s+an?\s+" + NP), False),
)
POSS = r"(?P<s>\b(?:my|[Mm]y|[Hh]is|[Hh]er|" + NAME + r"'s))"
KIN_RULE = re.compile(
    POSS
    + r"\s+(?:(?:little|big|older|younger|elder|eldest|youngest|oldest|baby|best|new|late|dear|twin)\s+)?"
    + r"(?P<k>"
    + "|".join(sorted(KIN, key=len, reverse=True))
    + r")s?\s*,?\s+(?:named\s+|called\s+)?(?P<o>"
    + NAME
    + r")"
)
KIN_WORDS = "|".join(sorted(KIN, key=len, reverse=True))
KIN_AFTER = re.compile(
    r"(?P<o>" + NAME + r")\s+is\s+" + POSS.replace("?P<s>", "?P<s2>") + r"\s+(?:[\w-]+\s+)?"
    r"(?P<k>" + KIN_WORDS + r")\b"
)
PET_RULE = re.compile(
    r"(?:" + POSS + r"\s+|\b(?:an?)\s+)(?:\w+\s+)?(?:" + PETS + r")\s*,?\s+(?:(?:named|called)\s+)?(?P<o>" + NAME + r")"
)
PASSIVE_RULE = re.compile(
    r"(?:(?P<sn>" + NAME + r")|(?:[Tt]he\s+)?(?P<sp>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}))\s+(?:is|are|was|were)\s+"
    r"(?P<v>owned|led|maintained|managed|run|founded)\s+by\s+(?:the\s+)?(?P<o>" + NAME + r")"
)
PASSIVE_PREDICATES = {
    "owned": "owns",
    "led": "leads",
    "maintained": "maintains",
    "managed": "manages",
    "run": "runs",
    "founded": "founded",
}
SPEAKER = re.compile(
    r'^\s*(?P<speaker>[A-Z][\w\'.-]*(?:\s+[A-Z][\w\'.-]*){0,3})\s+said,\s*"(?P<body>.*)"'
    r"(?:\s+and shared\s+(?P<caption>.*))?\s*$",
    re.S,
)
WORD = re.compile(r"[A-Za-z0-9À-ÿ][\w'&.-]*[\wÀ-ÿ]|[A-Za-z0-9À-ÿ]")
# What vouches for a sentence-initial single word as a name (rule 4): "Anthony and I", "Burgos et al.", "Tomas has".
VOUCHING = re.compile(
    r"(?:'s)?(?:\s+and\s+(?:I|me)\b|\s+et\s+al\b|\s+(?:has|had|holds|uses|used|says|said|told|asked|wants|"
    r"wanted|needs|lives|lived|works|worked|likes|loves|prefers|enjoys|speaks|plays|owns|joined|moved|visited|"
    r"studied|studies|leads|led|runs|approves|reviews|insists|can|will|would|could|should)\b)"
)
SENTENCE_END = re.compile(r"[.!?\n]|(?:^|\s)-\s")
PHRASE_BREAK = re.compile(r"[,;:\"()\[\]{}/|—–→←↔>]|\s[-&+]\s")
