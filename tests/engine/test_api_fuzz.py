"""A stateful property-based fuzz of the public API (issue 29, deliver 6): hypothesis drives random sequences of valid
and hostile calls through ``MemoryEngine`` (messages, working memory, items, episodes, skills and outcomes, labels,
forgetting, retrieval, traces, ingest) against a plain-Python model of what the store must hold, and checks after
every call that

- it returned, or raised a *named* memlens error (engine/errors.py), never a raw ValueError, KeyError, duckdb or
  LanceDB error;
- a refused call changed nothing: every row and column of every DuckDB and LanceDB table, hashed
  (tests/support/store_snapshot.py), equal before and after;
- an accepted call changed exactly what it says: only the tables its kind of write may touch, and the user's
  listings (messages, slots and their history, items, episodes, skills, outcomes, labels, forget log, traces) equal
  to the model's;

and at the end of each run that nothing of a hard-forgotten memory is left in the user's traces (its text blank where
a trace showed it, an item's words quoted nowhere: question, hop queries, context), and that the user's export
ingests into an empty store and exports the same records again.

Hostile values: ids with quotes, SQL, path separators, NUL, newlines, too long, not text; empty, blank, NUL, lone
surrogate and oversized texts; NaN, infinities and out-of-range numbers; unknown, hard-forgotten and another user's
ids; slot names and JSON values and texts the validation refuses; ingest files with one bad line. Each run starts
with one memory of every kind (``start``), so even short runs restore, label, count outcomes and forget.

One real store (DuckDB + LanceDB in a temporary folder, the real embedding model) serves the whole module; each run
of the machine writes as a fresh user, so runs do not see each other, and a bystander user's export must stay the same
throughout (a write for one user never touches another's rows).

Budget: ``EXAMPLES`` runs of at most ``STEPS`` calls (about 600 calls, each between two snapshots: ~45 s of CPU here),
``derandomize=True`` so CI tries the same sequences every time (ids are random, so the model keeps them in the order
they were written and draws from that), ``deadline=None``. Shrinking is off by default (each step costs real writes
and two snapshots, so a shrink could take many minutes); set ``MEMLENS_FUZZ_SHRINK=1`` to get a minimal failing
sequence, and ``MEMLENS_FUZZ_EXAMPLES`` to try more runs.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from engine import MemlensError, MemoryEngine, NotFound, Settings
from engine.records import ROLES, TYPED_SLOTS
from engine.store.schema import KIND_TABLES, TABLES
from tests.support.api_fuzz_inputs import (
    HOSTILE_IDS,
    KINDS,
    MAX_TEXT,
    OTHER_ROWS,
    OTHERS,
    Long,
    bad_edit_id,
    bad_event_id,
    bad_json_text,
    bad_kind,
    bad_mode,
    bad_number,
    bool_no,
    good_slot,
    good_text,
    hostile_id,
    hostile_slot,
    hostile_slot_value,
    hostile_text,
    one_of_ok,
    slot_value,
    unknown_id,
)
from tests.support.store_snapshot import StoreSnapshot, local_lance_dataset, snapshot

# Bugs the fuzz found that are not fixed yet, each named here with the input it leaves out until it is (remove the
# entry to try it again). Empty now; the two it found last ("outcome-episode-exists": an outcome naming an episode
# the user does not have was stored; "quote-unretrieved": a question quoting an item no trace showed kept its text
# after a hard forget) are fixed and their inputs back in the draw.
OPEN_BUGS: set[str] = set()
EXAMPLES = int(os.environ.get("MEMLENS_FUZZ_EXAMPLES", "15"))
STEPS = 30
BYSTANDER = "fz-bystander"
SESSIONS = ("s1", "s2")
TALLY: Counter = Counter()  # (call, outcome)
RUNS = itertools.count(1)


# -- the store -------------------------------------------------------------------------------------------------------
def fuzz_settings(path: Path) -> Settings:
    # Purges without a grace (safe: one process uses the store), so that a test process never waits for one at exit.
    return Settings.from_env({}, store=str(path), lock_timeout_s=60, forget_purge_grace_s=0)


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    path: Path = tmp_path_factory.mktemp("api-fuzz") / "store"
    e = MemoryEngine.open(settings=fuzz_settings(path), embedder=embedder)
    # A bystander with something of every kind: no call for another user may change a row of it.
    e.sessions.add_message(BYSTANDER, "s1", "user", "Which tea do I like?")
    e.working.update(BYSTANDER, "s1", {"goals": ["find the tea"]})
    item = e.items.remember(BYSTANDER, "The bystander drinks smoked lapsang tea.")
    e.episodes.record(BYSTANDER, [{"action": "brew tea", "result": "ok"}], outcome="success")
    skill = e.skills.register(BYSTANDER, "brew", "Boil water, then steep.")
    e.skills.report_outcome(BYSTANDER, skill.id, True)
    trace = e.retrieval.retrieve(BYSTANDER, "Which tea?")
    event = e.feedback.label(BYSTANDER, item.id, "useful", trace_id=trace.trace_id, hop=1)
    OTHER_ROWS.update(edit=e.working.history(BYSTANDER, "s1")[0].id, event=event.id)
    episode = e.episodes.list_episodes(BYSTANDER).rows[0]
    OTHERS.update(item=item.id, episode=episode.id, skill=skill.id, trace=trace.trace_id)
    return e


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, embedder) -> MemoryEngine:
    path: Path = tmp_path_factory.mktemp("api-fuzz-mirror") / "store"
    return MemoryEngine.open(settings=fuzz_settings(path), embedder=embedder)


def bystander_view(e: MemoryEngine) -> list:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in e.admin.export(BYSTANDER))


@pytest.fixture(scope="module", autouse=True)
def report_tally():
    yield
    print("\ncall                  accepted  refused")
    for name in sorted({k[0] for k in TALLY}):
        print(f"{name:<21} {TALLY[(name, 'accepted')]:>8}  {TALLY[(name, 'refused')]:>7}")


# Which tables (DuckDB by name, LanceDB as "lance:<memory kind>") each kind of accepted write may change.
MAY_CHANGE: dict[str, set[str]] = {
    "add_message": {"messages", "sessions"},
    "working": {"working_slots", "working_history"},
    # and the graph drawn from the item (the extraction hook: engine/memory/graph_extraction.py)
    "remember": {"items", "categories", "lance:semantic", "entities", "relations", "entity_mentions"},
    "record_episode": {"episodes", "lance:episodic"},
    "register_skill": {"skills", "lance:procedural"},
    "report_outcome": {"skills", "skill_outcomes"},
    "label": {"feedback"},
    "unlabel": {"feedback"},
    # and the memory kind's own table and vectors (see ApiMachine.forget); the graph drawn from the memories goes
    # with them (engine/memory/graph_forget.py: mentions, relations and entities nothing else supports)
    "forget": {"forget_log", "traces", "vector_purges", "entity_mentions", "relations", "entities"},
    # an entity takes its relations and mentions; a hard forget redacts the names from traces
    "forget_graph": {"entities", "relations", "entity_mentions", "forget_log", "traces"},
    "retrieve": {"traces"},
    "delete_trace": {"traces"},
    "ingest": {"items", "categories", "lance:semantic", "entities", "relations", "entity_mentions"},
    "read": set(),
    # every per-user table and every vector table (the user's rows are checked gone, the others' unchanged)
    "delete_user": {t.name for t in TABLES if t.user_column is not None}
    | {"vector_purges", "lance:semantic", "lance:episodic", "lance:procedural"},
}


def changed_tables(before: StoreSnapshot, after: StoreSnapshot) -> set[str]:
    out = {n for n in set(before.duckdb) | set(after.duckdb) if before.duckdb.get(n) != after.duckdb.get(n)}
    for n in set(before.lancedb) | set(after.lancedb):
        if before.lancedb.get(n) != after.lancedb.get(n):
            out.add("lance:" + n.split("__", 1)[0])
    return out


# -- the machine -----------------------------------------------------------------------------------------------------
class ApiMachine(RuleBasedStateMachine):
    e: MemoryEngine  # set by the test before the machine runs
    mirror: MemoryEngine  # an empty store of its own, where each run's export is ingested

    def __init__(self) -> None:
        super().__init__()
        self.u = f"fz-{next(RUNS)}"
        self.msgs: dict[str, list[tuple[str, str]]] = {s: [] for s in SESSIONS}
        self.slots: dict[str, dict[str, Any]] = {s: {} for s in SESSIONS}
        self.hist: dict[str, list[tuple[str, Any, Any]]] = {s: [] for s in SESSIONS}  # (slot, old, new), oldest first
        self.items: dict[str, dict[str, Any]] = {}  # id -> {content, archived}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.skills: dict[str, dict[str, Any]] = {}  # id -> {name, version, s, f, archived}
        self.outcomes: list[tuple[str, bool]] = []
        self.events: dict[int, tuple[str, int]] = {}  # feedback event id -> (memory id, delta)
        self.forgotten: dict[str, None] = {}  # hard-forgotten ids
        self.forget_entries = 0
        self.traces: dict[str, None] = {}
        self.texts: list[str] = []  # every episode action and skill body written (their texts may repeat)
        self.forgotten_items: list[tuple[str, str]] = []  # (id, content) of hard-forgotten items
        self.shown: set[str] = set()  # the memories some trace showed as candidates

    # -- the wall every call goes through ------------------------------------------------------------------------
    def call(self, name: str, write: str, ok: bool, fn: Callable[[], Any], also: frozenset[str] = frozenset()) -> Any:
        """Run ``fn``: with ``ok`` it must be accepted and change only ``MAY_CHANGE[write]``; without, it must raise a
        named error and change nothing. Returns the call's result (None when refused).

        A hard forget finishes in the background (its owed purge: storage/purges.py); it is waited for before and
        after each call, so that an earlier forget's purge is never taken for this call's write."""
        self.e.admin.purges.wait()
        before = snapshot(self.e)
        try:
            result = fn()
        except MemlensError as exc:
            self.e.admin.purges.wait()
            after = snapshot(self.e)
            assert after == before, f"{name}: refused ({exc}) but the store changed: {before.diff(after)}"
            assert ok is False, f"{name}: a valid call was refused: {type(exc).__name__}: {exc}"
            TALLY[(name, "refused")] += 1
            return None
        except Exception as exc:
            raise AssertionError(f"{name}: raw {type(exc).__name__}: {str(exc)[:300]}") from exc
        self.e.admin.purges.wait()
        after = snapshot(self.e)
        assert ok is True, f"{name}: a hostile call was accepted, returning {str(result)[:200]}"
        stray = changed_tables(before, after) - MAY_CHANGE[write] - also
        assert not stray, f"{name}: an accepted call changed tables it has no business with: {sorted(stray)}"
        TALLY[(name, "accepted")] += 1
        return result

    @initialize(said=good_text, content=good_text, body=good_text)
    def start(self, said: str, content: str, body: str) -> None:
        """One of every kind to begin with, so that the first steps can already restore, label, count outcomes and
        forget (a budget of a few hundred calls reaches deep sequences only this way)."""
        self.bystander = bystander_view(self.e)
        self.add_message(("s1", True), ("user", True), (said, True))
        self.working_set_json("s1", ("goals", True), (json.dumps(["seed"]), True))
        self.remember((content, True), ("general", True), (None, True))
        self.record_episode((body, True), ("success", True), True)
        self.register_skill(("brew", True), (body, True), ("prompt", True))
        skill = next(iter(self.skills))
        got = self.call(
            "report_outcome", "report_outcome", True, lambda: self.e.skills.report_outcome(self.u, skill, True)
        )
        self.skills[skill]["s"] += 1
        self.outcomes.append((skill, True))
        assert got.success_count == 1

    def teardown(self) -> None:
        if not hasattr(self, "bystander"):
            return  # the run failed before its first step
        assert bystander_view(self.e) == self.bystander, "a call for one user changed another user's memories"
        self.forgotten_text_is_gone()
        self.export_round_trips()
        self.delete_user_leaves_nothing()

    def forgotten_text_is_gone(self) -> None:
        """A hard-forgotten memory's text is blank in every trace that showed it, and a forgotten item's content is
        quoted nowhere in the user's traces (question, hop queries, context...), unless a memory that is still
        there or a message says the same words."""
        live = (
            [m["content"] for m in self.items.values()] + self.texts + [c for ms in self.msgs.values() for _, c in ms]
        )
        gone = [c for i, c in self.forgotten_items if not any(c in t for t in live)]
        if "quote-unretrieved" in OPEN_BUGS:
            gone = [c for i, c in self.forgotten_items if i in self.shown and c in gone]
        for row in self.e.traces.list_traces(self.u, limit=10_000).rows:
            trace = self.e.traces.get(row["trace_id"], self.u)
            for hop in trace.hops:
                for c in hop.candidates:
                    if c.id in self.forgotten:
                        assert (c.text, c.preceding_text) == ("", ""), f"trace {trace.trace_id} shows {c.id}'s text"
            body = json.dumps(trace.to_dict(), ensure_ascii=False)
            quoted = [c for c in gone if c in body]
            assert not quoted, f"trace {trace.trace_id} still quotes hard-forgotten text {quoted[0]!r}"

    def export_round_trips(self) -> None:
        """The user's export, ingested into an empty store, exports the same records: after any sequence of
        writes and forgets (hard-forgotten skills with outcomes, labels of forgotten memories...)."""
        records = list(self.e.admin.export(self.u))
        lines = [json.dumps(r, default=str) for r in records]
        try:
            self.mirror.admin.ingest_lines(lines)
        except MemlensError as exc:
            raise AssertionError(f"the export of {self.u} does not ingest: {exc}") from exc
        again = list(self.mirror.admin.export(self.u))
        assert canonical(again) == canonical(records)

    def delete_user_leaves_nothing(self) -> None:
        """``delete_user`` removes the user's rows from every per-user table the registry declares
        (engine/store/schema.py) and every vector of the user, and changes nothing of anyone else's."""
        self.call("delete_user", "delete_user", True, lambda: self.e.admin.delete_user(self.u))
        left = {}
        with self.e._b.db.read() as conn:
            for spec in TABLES:
                if spec.user_column is not None:  # names from the registry, the user id a parameter
                    sql = f"SELECT count(*) FROM {spec.name} WHERE {spec.user_column}=?"
                    left[spec.name] = conn.execute(sql, [self.u]).fetchone()[0]
        assert not any(left.values()), f"delete_user left rows of {self.u}: {left}"
        index = self.e._b.index
        for name in index.table_names():
            ds = local_lance_dataset(index, name)
            users = ds.to_table(columns=["user_id"]).column("user_id").to_pylist() if ds is not None else []
            assert self.u not in users, f"delete_user left vectors of {self.u} in {name}"
        assert bystander_view(self.e) == self.bystander, "delete_user changed another user's memories"

    # -- short-term memory ---------------------------------------------------------------------------------------
    @rule(
        session=one_of_ok(st.sampled_from(SESSIONS), hostile_id),
        role=one_of_ok(st.sampled_from(ROLES), st.sampled_from(["admin", "USER", "", None])),
        content=one_of_ok(good_text, hostile_text),
    )
    def add_message(self, session, role, content) -> None:
        ok = session[1] and role[1] and content[1]
        msg = self.call(
            "add_message",
            "add_message",
            ok,
            lambda: self.e.sessions.add_message(self.u, session[0], role[0], content[0]),
        )
        if msg is not None:
            self.msgs[session[0]].append((role[0], content[0]))
            assert (msg.seq, msg.content) == (len(self.msgs[session[0]]), content[0])

    # -- working memory ------------------------------------------------------------------------------------------
    def _apply_slots(self, session: str, slots: dict[str, Any]) -> None:
        """What ``working_update`` must do: per slot, a set or a removal and one history entry, or nothing when the
        value is already there."""
        current = self.slots[session]
        for slot, value in slots.items():
            old = current.get(slot)
            if value is None:
                if old is None:
                    continue
                del current[slot]
            else:
                if old is not None and old == value:
                    continue
                current[slot] = value
            self.hist[session].append((slot, old, value))

    @rule(
        session=one_of_ok(st.sampled_from(SESSIONS), hostile_id),
        names=st.lists(one_of_ok(good_slot, hostile_slot), min_size=0, max_size=2, unique_by=lambda p: repr(p[0])),
        data=st.data(),
    )
    def working_update(self, session, names, data) -> None:
        slots: dict[Any, Any] = {}
        ok = session[1] and bool(names)
        for name, name_ok in names:
            value, value_ok = data.draw(one_of_ok(st.one_of(slot_value, st.none()), hostile_slot_value))
            slots[name] = value
            ok = ok and name_ok and value_ok
        got = self.call("working_update", "working", ok, lambda: self.e.working.update(self.u, session[0], slots))
        if got is not None:
            self._apply_slots(session[0], slots)
            assert {k: v for k, v in got.items() if v is not None} == self.slots[session[0]]

    @rule(
        session=st.sampled_from(SESSIONS),
        slot=one_of_ok(good_slot, hostile_slot),
        text=one_of_ok(st.one_of(slot_value, st.none()).map(json.dumps), bad_json_text),
    )
    def working_set_json(self, session, slot, text) -> None:
        ok = slot[1] and text[1]
        got = self.call(
            "working_set_json", "working", ok, lambda: self.e.working.set_json(self.u, session, slot[0], text[0])
        )
        if got is not None:
            self._apply_slots(session, {slot[0]: json.loads(text[0])})

    @precondition(lambda self: any(self.hist.values()))
    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def working_restore(self, session, data) -> None:
        history = self.hist[session]
        which, which_ok = data.draw(one_of_ok(st.sampled_from(["old", "new"]), st.sampled_from(["both", "", None])))
        if history and data.draw(st.booleans()):
            n = data.draw(st.integers(0, len(history) - 1))
            edits = self.e.working.history(self.u, session, limit=1000)  # newest first
            edit_id, ok = edits[len(history) - 1 - n].id, which_ok
        else:
            edit_id, ok = data.draw(bad_edit_id), False
        value = self.call(
            "working_restore",
            "working",
            ok,
            lambda: self.e.working.restore(self.u, session, edit_id, which),
        )
        if ok:
            slot, old, new = history[n]
            expected = old if which == "old" else new
            assert value == expected
            self._apply_slots(session, {slot: expected})

    @rule(session=one_of_ok(st.sampled_from(SESSIONS), hostile_id))
    def working_clear(self, session) -> None:
        count = self.call("working_clear", "working", session[1], lambda: self.e.working.clear(self.u, session[0]))
        if count is not None:
            current = self.slots[session[0]]
            assert count == len(current)
            order = [s for s in TYPED_SLOTS if s in current] + sorted(s for s in current if s not in TYPED_SLOTS)
            self._apply_slots(session[0], dict.fromkeys(order))

    # -- long-term memory ----------------------------------------------------------------------------------------
    @rule(
        content=one_of_ok(good_text, hostile_text),
        category=one_of_ok(st.sampled_from(["general", "prefs_2"]), st.sampled_from(["Bad Cat", "a'b", "", 5])),
        importance=one_of_ok(st.one_of(st.none(), st.floats(0, 1)), bad_number),
    )
    def remember(self, content, category, importance) -> None:
        ok = content[1] and category[1] and importance[1]
        item = self.call(
            "remember",
            "remember",
            ok,
            lambda: self.e.items.remember(self.u, content[0], category=category[0], importance=importance[0]),
        )
        if item is not None:
            self.items[item.id] = {"content": content[0], "archived": False}

    @rule(contents=st.lists(one_of_ok(good_text, hostile_text), min_size=1, max_size=3))
    def remember_many(self, contents) -> None:
        """One batch, one embedding pass, one transaction: a single bad record refuses them all."""
        ok = all(c[1] for c in contents)
        records = [{"user_id": self.u, "content": c[0]} for c in contents]
        items = self.call("remember_many", "remember", ok, lambda: self.e.items.remember_many(records))
        if items is not None:
            for item, (content, _) in zip(items, contents, strict=True):
                self.items[item.id] = {"content": content, "archived": False}

    @rule(
        # A blank or absent action is fine where the step has a result.
        action=one_of_ok(
            good_text, hostile_text.filter(lambda t: t is not None and not (isinstance(t, str) and not t.strip()))
        ),
        outcome=one_of_ok(st.sampled_from([None, "success", "failure"]), st.sampled_from([5, "o" * 65, "a\x00"])),
        steps_ok=st.integers(0, 4).map(bool),
    )
    def record_episode(self, action, outcome, steps_ok) -> None:
        steps: Any = [{"action": action[0], "result": "ok"}] if steps_ok else []
        ok = action[1] and outcome[1] and steps_ok
        ep = self.call(
            "record_episode", "record_episode", ok, lambda: self.e.episodes.record(self.u, steps, outcome=outcome[0])
        )
        if ep is not None:
            self.episodes[ep.id] = {"archived": False}
            self.texts.append(ep.summary)

    @rule(
        name=one_of_ok(st.sampled_from(["brew", "sort the 'mail'", "a/b"]), hostile_text),
        body=one_of_ok(good_text, hostile_text),
        kind=one_of_ok(st.sampled_from(["prompt", "code"]), st.sampled_from(["macro", "", None])),
    )
    def register_skill(self, name, body, kind) -> None:
        ok = name[1] and body[1] and kind[1]
        skill = self.call(
            "register_skill",
            "register_skill",
            ok,
            lambda: self.e.skills.register(self.u, name[0], body[0], kind=kind[0]),
        )
        if skill is not None:
            versions = [s["version"] for s in self.skills.values() if s["name"] == name[0]]
            expected = {"name": name[0], "version": max(versions, default=0) + 1, "s": 0, "f": 0, "archived": False}
            self.skills[skill.id] = expected
            self.texts += [name[0], body[0]]
            assert skill.version == expected["version"]

    @precondition(lambda self: self.skills)
    @rule(success=one_of_ok(st.booleans(), st.sampled_from([1, 0, "yes", None, float("nan")])), data=st.data())
    def report_outcome(self, success, data) -> None:
        skill_id, skill_ok = data.draw(
            one_of_ok(st.sampled_from(list(self.skills)), st.one_of(hostile_id, unknown_id))
            if self.skills
            else st.one_of(hostile_id, unknown_id).map(lambda v: (v, False))
        )
        bad = ["e'p", 7, "../ep"] + ([] if "outcome-episode-exists" in OPEN_BUGS else ["ep_nothere", OTHERS["episode"]])
        episode, ep_ok = data.draw(
            st.integers(0, 2).flatmap(  # one time in three a bad episode id
                lambda n: st.sampled_from(bad).map(bool_no)
                if n == 0
                else st.sampled_from([None, *self.episodes]).map(lambda v: (v, True))
            )
        )
        ok = success[1] and skill_ok and ep_ok
        got = self.call(
            "report_outcome",
            "report_outcome",
            ok,
            lambda: self.e.skills.report_outcome(self.u, skill_id, success[0], episode_id=episode),
        )
        if got is not None:
            self.skills[skill_id]["s" if success[0] else "f"] += 1
            self.outcomes.append((skill_id, success[0]))
            assert (got.success_count, got.failure_count) == (self.skills[skill_id]["s"], self.skills[skill_id]["f"])

    # -- feedback ------------------------------------------------------------------------------------------------
    def memory_ids(self) -> list[str]:
        return [*self.items, *self.episodes, *self.skills]

    @precondition(lambda self: self.memory_ids())
    @rule(
        label=one_of_ok(st.sampled_from(["useful", "harmful"]), st.sampled_from(["meh", "", None])),
        note=one_of_ok(st.sampled_from(["", "a note with 'quotes'"]), st.sampled_from(["n\x00", Long("m" * 5000), 5])),
        data=st.data(),
    )
    def label(self, label, note, data) -> None:
        ids = self.memory_ids()
        bad_memory = st.one_of(hostile_id, unknown_id, st.sampled_from(list(self.forgotten) or ["ep_gone"]))
        memory, memory_ok = data.draw(one_of_ok(st.sampled_from(ids), bad_memory) if ids else bad_memory.map(bool_no))
        traces = list(self.traces)
        trace, trace_ok = data.draw(
            one_of_ok(st.sampled_from([None, *traces]), st.one_of(hostile_id.filter(bool), unknown_id))
        )
        ok = label[1] and note[1] and memory_ok and trace_ok
        event = self.call(
            "label", "label", ok, lambda: self.e.feedback.label(self.u, memory, label[0], trace_id=trace, note=note[0])
        )
        if event is not None:
            self.events[event.id] = (memory, 1 if label[0] == "useful" else -1)

    @rule(data=st.data())
    def report_feedback(self, data) -> None:
        """Several labels in one call: one unknown or hostile id refuses them all."""
        ids = self.memory_ids()
        good = st.sampled_from(ids) if ids else st.nothing()
        pool = st.one_of(good.map(lambda v: (v, True)), st.one_of(hostile_id, unknown_id).map(bool_no))
        useful = data.draw(st.lists(pool, max_size=2))
        harmful = data.draw(st.lists(pool, max_size=2))
        ok = bool(useful or harmful) and all(p[1] for p in useful + harmful)
        events = self.call(
            "report_feedback",
            "label",
            ok,
            lambda: self.e.feedback.report(self.u, [p[0] for p in useful], [p[0] for p in harmful]),
        )
        for event in events or ():
            self.events[event.id] = (event.item_id, event.delta)

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def unlabel(self, data) -> None:
        events = sorted(self.events)
        event_id, ok = data.draw(
            one_of_ok(st.sampled_from(events), bad_event_id) if events else bad_event_id.map(bool_no)
        )
        # The bad ids are no integer, below 1, beyond any id, or too big for a column: refused either way.
        got = self.call("unlabel", "unlabel", ok, lambda: self.e.feedback.retract(self.u, event_id))
        if got is not None:
            assert got.id == event_id
            del self.events[event_id]

    # -- forgetting ----------------------------------------------------------------------------------------------
    # Forgetting is what this store must prove, so it gets four rules (hypothesis picks rules evenly): one per kind,
    # and one whose kind may be hostile too.
    @rule(
        mode=one_of_ok(st.sampled_from(["soft", "hard"]), bad_mode),
        reason=one_of_ok(st.sampled_from(["asked to", "GDPR 'erase'"]), hostile_text),
        data=st.data(),
    )
    def forget_item(self, mode, reason, data) -> None:
        self.forget(("semantic", True), mode, reason, data)

    @rule(
        mode=one_of_ok(st.sampled_from(["soft", "hard"]), bad_mode),
        reason=one_of_ok(st.sampled_from(["asked to", "GDPR 'erase'"]), hostile_text),
        data=st.data(),
    )
    def forget_episode(self, mode, reason, data) -> None:
        self.forget(("episodic", True), mode, reason, data)

    @rule(
        mode=one_of_ok(st.sampled_from(["soft", "hard"]), bad_mode),
        reason=one_of_ok(st.sampled_from(["asked to", "GDPR 'erase'"]), hostile_text),
        data=st.data(),
    )
    def forget_skill(self, mode, reason, data) -> None:
        self.forget(("procedural", True), mode, reason, data)

    @rule(
        kind=one_of_ok(st.sampled_from(KINDS), bad_kind),
        mode=one_of_ok(st.sampled_from(["soft", "hard"]), bad_mode),
        reason=one_of_ok(st.sampled_from(["asked to", "GDPR 'erase'"]), hostile_text),
        data=st.data(),
    )
    def forget(self, kind, mode, reason, data) -> None:
        # Mostly the kind's own memories (active or archived), and now and then any other id: one of another kind,
        # hard-forgotten, never used, or the bystander's (all "unknown" to this forget).
        # (in the order they were written: ids are random, so a sorted list would pick other memories each run)
        own_ids = list({"semantic": self.items, "episodic": self.episodes, "procedural": self.skills}.get(kind[0], {}))
        others = [*self.memory_ids(), *self.forgotten] + ["item_0000000000000000", *OTHERS.values()]
        one = st.sampled_from(own_ids) | st.sampled_from(others) if own_ids else st.sampled_from(others)
        ids = data.draw(st.lists(one, min_size=1, max_size=3))
        extra = data.draw(st.sampled_from([None] * 8 + ["hostile", "empty"]))
        if extra == "hostile":
            ids = [*ids, data.draw(hostile_id)]
        elif extra == "empty":
            ids = []
        ok = kind[1] and mode[1] and reason[1] and extra is None
        own = frozenset({KIND_TABLES.get(kind[0], ""), f"lance:{kind[0]}"}) if ok else frozenset()
        result = self.call(
            "forget", "forget", ok, lambda: self.e.forgetting.forget(self.u, kind[0], ids, reason[0], mode=mode[0]), own
        )
        if result is None:
            return
        table = {"semantic": self.items, "episodic": self.episodes, "procedural": self.skills}[kind[0]]
        ids = list(dict.fromkeys(ids))
        if mode[0] == "soft":
            affected = [i for i in ids if i in table and not table[i]["archived"]]
            for i in affected:
                table[i]["archived"] = True
        else:
            affected = [i for i in ids if i in table]
            for i in affected:
                if kind[0] == "semantic":
                    self.forgotten_items.append((i, table[i]["content"]))
                del table[i]
                self.forgotten[i] = None
        self.forget_entries += 1
        assert list(result.forgotten) == affected
        assert list(result.unknown) == [i for i in ids if i not in table and i not in affected]

    @rule(
        mode=one_of_ok(st.sampled_from(["soft", "hard"]), bad_mode),
        reason=one_of_ok(st.sampled_from(["asked to", "GDPR 'erase'"]), hostile_text),
        data=st.data(),
    )
    def forget_graph(self, mode, reason, data) -> None:
        """Entities and relations of the graph the user's memories were extracted into, with now and then an id
        that is not the user's (unknown) or a hostile one (refused). The export round trip covers what is left."""
        graph = self.e.graph
        own = [x.id for x in graph.list_entities(self.u, include_archived=True, limit=50).rows]
        own += [r.id for r in graph.relations(self.u, include_history=True, include_archived=True, limit=50).rows]
        pool = [*own, "ent_0000000000000000", *OTHERS.values()]
        ids = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        extra = data.draw(st.sampled_from([None] * 8 + ["hostile"]))
        if extra == "hostile":
            ids = [*ids, data.draw(hostile_id)]
        ok = mode[1] and reason[1] and extra is None
        result = self.call(
            "forget_graph", "forget_graph", ok, lambda: graph.forget(self.u, ids, reason[0], mode=mode[0])
        )
        if result is None:
            return
        self.forget_entries += 1
        assert set(result.forgotten) <= set(own) and set(ids) <= set(result.forgotten) | set(result.unknown)
        if mode[0] == "hard":
            for gone in result.forgotten:
                with pytest.raises(NotFound):
                    graph.relation(self.u, gone) if gone.startswith("rel_") else graph.entity(self.u, gone)

    # -- retrieval and traces ------------------------------------------------------------------------------------
    @rule(
        question=one_of_ok(good_text, hostile_text),
        session=one_of_ok(st.sampled_from([None, *SESSIONS]), hostile_id.filter(lambda v: v is not None)),
        quote=st.integers(0, 2),
        data=st.data(),
    )
    def retrieve(self, question, session, quote, data) -> None:
        if quote == 0 and question[1] and self.items:  # a question that quotes a memory word for word
            content = self.items[data.draw(st.sampled_from(list(self.items)))]["content"]
            question = (f"Is it still true that {content}?", True)
        ok = question[1] and session[1]
        trace = self.call(
            "retrieve", "retrieve", ok, lambda: self.e.retrieval.retrieve(self.u, question[0], session_id=session[0])
        )
        if trace is not None:
            self.traces[trace.trace_id] = None
            shown = {c.id for h in trace.hops for c in h.candidates}
            self.shown |= shown
            gone = shown & (set(self.forgotten) | {i for i, m in self.items.items() if m["archived"]})
            assert not gone, f"retrieval found forgotten memories: {sorted(gone)}"

    @rule(fact=good_text)
    def ask_then_remember(self, fact: str) -> None:
        """An agent asks about something, then learns it: the trace quotes a memory it could not have retrieved."""
        trace = self.call(
            "retrieve", "retrieve", True, lambda: self.e.retrieval.retrieve(self.u, f"Is it true that {fact}?")
        )
        self.traces[trace.trace_id] = None
        self.shown |= {c.id for h in trace.hops for c in h.candidates}
        self.remember((fact, True), ("general", True), (None, True))

    @precondition(lambda self: self.traces)
    @rule(data=st.data())
    def delete_trace(self, data) -> None:
        traces = list(self.traces)
        bad = st.one_of(hostile_id, unknown_id)
        trace_id, ok = data.draw(one_of_ok(st.sampled_from(traces), bad) if traces else bad.map(bool_no))
        self.call("delete_trace", "delete_trace", ok, lambda: self.e.traces.delete(trace_id, self.u))
        if ok:
            self.traces.pop(trace_id, None)

    # -- reads: any id or text, never a raw error, never a write -------------------------------------------------
    @rule(data=st.data())
    def read(self, data) -> None:
        ids = self.memory_ids()
        some_id = data.draw(st.one_of(hostile_id, unknown_id, st.sampled_from(ids or ["x"])))
        text = data.draw(st.one_of(hostile_text, good_text))
        calls = {
            "get_item": lambda: self.e.items.get(self.u, some_id),
            "get_episode": lambda: self.e.episodes.get(self.u, some_id),
            "get_skill": lambda: self.e.skills.get(self.u, some_id),
            "get_trace": lambda: self.e.traces.get(some_id, self.u),
            "messages": lambda: self.e.sessions.messages(self.u, some_id),
            "working_get": lambda: self.e.working.get(self.u, some_id),
            "search": lambda: self.e.retrieval.search(self.u, text),
            "list_items": lambda: self.e.items.list_items(self.u, query=text),
            "memory_states": lambda: self.e.traces.memory_states(self.u, [some_id]),
            "feedback_net": lambda: self.e.feedback.net(self.u, [some_id]),
        }
        name = data.draw(st.sampled_from(sorted(calls)))
        valid_id = isinstance(some_id, str) and some_id not in HOSTILE_IDS
        found = {
            "get_item": some_id in self.items,
            "get_episode": some_id in self.episodes,
            "get_skill": some_id in self.skills,
            "get_trace": some_id in self.traces,
            "messages": bool(self.msgs.get(some_id)),  # type: ignore[call-overload]
        }
        if name in found:
            expected: bool | None = found[name]
        elif name in ("search", "list_items"):
            # A filter may be blank or absent (no filter); a search needs words. Neither takes NUL, a lone
            # surrogate, more than the longest text, or what is not text.
            clean = isinstance(text, str) and "\x00" not in text and "\ud800" not in text and len(text) <= MAX_TEXT
            expected = (clean and bool(text.strip())) if name == "search" else (text is None or clean)
        else:
            expected = valid_id
        got = self.call(name, "read", bool(expected), calls[name])
        if name == "get_item" and got is not None:
            assert got.content == self.items[some_id]["content"]

    # -- ingest --------------------------------------------------------------------------------------------------
    @rule(content=good_text, data=st.data())
    def ingest(self, content, data) -> None:
        new_id = f"item_fz{next(RUNS):014d}"
        good = {"kind": "item", "user_id": self.u, "id": new_id, "content": content}
        hostile = data.draw(
            st.none()
            | st.sampled_from(
                [
                    "not json",
                    '{"kind": "item"}',
                    json.dumps({**good, "content": "nul\x00"}),
                    json.dumps({**good, "id": "a'b"}),
                    json.dumps({**good, "surprise": 1}),
                    json.dumps({"kind": "outcome", "user_id": self.u, "skill_id": "skill_nothere", "success": True}),
                    json.dumps({**good, "importance": float("nan")}),
                    # an id already taken (this user's, or the bystander's: ids are unique store-wide)
                    json.dumps({**good, "id": next(iter(self.items)) if self.items else OTHERS["item"]}),
                    # the user's own export again: its ids are taken, so the whole file is refused, messages and
                    # slot values included (they carry no id and would otherwise be written a second time)
                    "OWN_EXPORT",
                ]
            )
        )
        lines = [json.dumps(good)]
        if hostile == "OWN_EXPORT":
            lines += [json.dumps(r, default=str) for r in self.e.admin.export(self.u)]
        elif hostile is not None:
            lines.append(hostile)
        got = self.call("ingest", "ingest", hostile is None, lambda: self.e.admin.ingest_lines(lines))
        if got is not None:
            assert got.get("item") == 1
            self.items[new_id] = {"content": content, "archived": False}

    # -- what the store holds for this user equals the model -----------------------------------------------------
    @invariant()
    def store_matches_model(self) -> None:
        e, u = self.e, self.u
        with e.batch():
            for s in SESSIONS:
                if self.msgs[s]:
                    rows = e.sessions.messages(u, s, limit=10_000).rows
                    assert [(m.role, m.content) for m in rows] == self.msgs[s]
                else:  # a session is created by its first message
                    with pytest.raises(NotFound):
                        e.sessions.messages(u, s)
                assert {k: v for k, v in e.working.get(u, s).items() if v is not None} == self.slots[s]
                edits = e.working.history(u, s, limit=10_000)[::-1]
                assert [(h.slot, h.old_value, h.new_value) for h in edits] == self.hist[s]
            items = e.items.list_items(u, include_archived=True, limit=10_000).rows
            assert {i.id: {"content": i.content, "archived": i.archived_at is not None} for i in items} == self.items
            episodes = e.episodes.list_episodes(u, include_archived=True, limit=10_000).rows
            assert {x.id: {"archived": x.archived_at is not None} for x in episodes} == self.episodes
            skills = e.skills.list_skills(u, include_archived=True, limit=10_000).rows
            assert {
                s.id: {
                    "name": s.name,
                    "version": s.version,
                    "s": s.success_count,
                    "f": s.failure_count,
                    "archived": s.archived_at is not None,
                }
                for s in skills
            } == self.skills
            # Outcomes and labels of hard-forgotten memories are the forget's business (kept as evidence or
            # removed with them); those of the others must be exactly the model's.
            outcomes = [(o.skill_id, o.success) for o in e.skills.outcomes(u) if o.skill_id not in self.forgotten]
            assert sorted(outcomes) == sorted(o for o in self.outcomes if o[0] not in self.forgotten)
            events = {f.id: (f.item_id, f.delta) for f in e.feedback.events(u, limit=10_000)}
            live = {k: v for k, v in events.items() if v[0] not in self.forgotten}
            assert live == {k: v for k, v in self.events.items() if v[0] not in self.forgotten}
            assert len(e.forgetting.log(u)) == self.forget_entries
            assert {t["trace_id"] for t in e.traces.list_traces(u, limit=10_000).rows} == set(self.traces)


def canonical(records: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in records)


def test_random_call_sequences_keep_every_promise(engine, mirror):
    """Random sequences of valid and hostile calls: named errors only, refusals change nothing, acceptances change
    exactly what the model says (see the module's docstring)."""
    ApiMachine.e = engine
    ApiMachine.mirror = mirror
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("MEMLENS_FUZZ_SHRINK"):
        phases.append(Phase.shrink)
    run_state_machine_as_test(
        ApiMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            phases=phases,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
                HealthCheck.function_scoped_fixture,
            ],
        ),
    )


def test_the_machine_sees_a_refused_call_that_writes(engine):
    """The yardstick itself: a "refused" call that wrote first is caught (so the property above can fail)."""
    machine = ApiMachine()
    machine.e = engine

    def writes_then_refuses() -> None:
        engine.sessions.add_message(machine.u, "s1", "user", "written before the refusal")
        raise MemlensError("refused after writing")

    with pytest.raises(AssertionError, match="the store changed"):
        machine.call("half_done", "add_message", False, writes_then_refuses)
    with pytest.raises(AssertionError, match="raw ValueError"):
        machine.call("raw", "read", False, lambda: int("abc"))
    with pytest.raises(AssertionError, match="business with"):
        machine.call("stray", "read", True, lambda: engine.items.remember(machine.u, "a stray write"))
