"""The inputs of tests/engine/test_api_fuzz.py: valid and hostile values for every argument its calls take."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from engine.records import TYPED_SLOTS

MAX_TEXT = 32_000  # Settings.max_text_chars' default


def bool_no(value: Any) -> tuple[Any, bool]:
    return value, False


class Long(str):
    """A long text that shows itself short in a failing sequence's printout."""

    def __repr__(self) -> str:
        return f"Long({self[:1]!r} * {len(self)})"


HOSTILE_IDS = [
    "a'b",
    "' OR '1'='1",
    "x'; DROP TABLE items; --",
    "../x",
    "a/b",
    "..",
    "a\x00b",
    "a b",
    "ada\n",
    "",
    Long("x" * 129),
    42,
    None,
]
hostile_id = st.sampled_from(HOSTILE_IDS)
OTHERS: dict[str, str] = {}  # the bystander's memory and trace ids (set by the engine fixture)
OTHER_ROWS: dict[str, int] = {}  # the bystander's working-memory edit and label ids
# Ids no memory of the user has: never used, or another user's.
unknown_id = st.deferred(
    lambda: st.sampled_from(["item_0000000000000000", "ep_nothere", "skill_nothere", "zz-unknown", *OTHERS.values()])
)
hostile_text = st.sampled_from(
    ["", "   ", "\n\t", "before\x00after", "lone \ud800 surrogate", Long("m" * (MAX_TEXT + 1)), 12, None, ["a list"]]
)
# Ordinary text with what SQL and filter strings choke on: quotes, a statement, a path, a percent, an underscore.
# The number is fenced so that no text is a part of another ("tea #1#" is not in "tea #12#").
good_text = st.builds(
    lambda words, tail: f"{words} #{tail}#",
    st.sampled_from(
        [
            "Ada drinks smoked lapsang tea",
            "Bob's bicycle is red",
            "x'; DROP TABLE items; --",
            "../../etc/passwd",
            '100% "quoted" under_score',
            "naïve café ☕",
        ]
    ),
    st.integers(0, 10**6),
)
# Any text but NUL and lone surrogates (refused everywhere: test_validation_fuzz.py tries those).
clean_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")


def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(clean_chars, max_size=6), inner, max_size=3)


slot_value = st.recursive(
    st.one_of(
        st.integers(-1000, 1000), st.booleans(), st.text(clean_chars, max_size=12), st.sampled_from([0.5, -2.25])
    ),
    _nested,
    max_leaves=6,
)


def _deep(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


hostile_slot_value = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        [1, -float("inf")],
        {"n": float("nan")},
        {1: "an int key"},
        {"k": b"bytes"},
        {"a": {1, 2}},
        "lone \ud800",
        {"k": "nul\x00"},
        _deep(200),
        2**70,
        Long("v" * 260_000),
    ]
)
good_slot = st.sampled_from([*TYPED_SLOTS[:3], "notes", "x_1"])
hostile_slot = st.sampled_from(["Goals", "1abc", "a-b", "a'b", "", "s" * 65, "a\x00", 5, None])
bad_json_text = st.sampled_from(["{", "[1, 2", "NaN", "[Infinity]", "", "   ", "{'a': 1}", "[" * 200 + "]" * 200])
bad_number = st.sampled_from([float("nan"), float("inf"), -0.5, 1.5, 2, True, "0.5", [0.5]])
# Not an integer, out of range, never used, or the bystander's (another user's: NotFound too).
bad_edit_id = st.deferred(
    lambda: st.sampled_from(
        ["abc", "1", None, float("nan"), 1.5, True, -1, 0, 2**70, 10**30, 999_999_999, OTHER_ROWS["edit"]]
    )
)
bad_event_id = st.deferred(
    lambda: st.sampled_from(["1", None, float("nan"), 1.5, True, -1, 0, 2**70, 10**30, OTHER_ROWS["event"]])
)
bad_kind = st.sampled_from(["semantics", "SEMANTIC", "", "items", "graphs", "entities", None, 3])
bad_mode = st.sampled_from(["Hard", "purge", "", None, 1])
KINDS = ("semantic", "episodic", "procedural")


def one_of_ok(ok: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """(value, True) for a value the call must accept, (value, False) for one it must refuse."""
    # One argument in five is hostile: a call of three arguments is then still accepted about half the time, so
    # sequences build up state (memories to forget, traces to label) for later calls to work on.
    return st.integers(0, 4).flatmap(lambda n: bad.map(bool_no) if n == 0 else ok.map(lambda v: (v, True)))
