"""Every MCP request gets an answer, over real stdio and real HTTP, whatever its bytes: lone surrogate escapes,
invalid UTF-8, JSON nested 900 and 5,000 levels, 5,000-digit numbers, NaN, 1e400, bools and floats where integers
go, negative windows, wrong types. Each answer must come within ``ANSWER_TIMEOUT_S`` (a bound on waiting, not a
speed assertion), be a refusal naming the problem (a tool error or a JSON-RPC error, never a traceback), and leave the
store's contents exactly as they were (every row and column of every DuckDB and LanceDB table, hashed). The server
keeps answering afterwards.

A hypothesis property generates further hostile arguments for every tool field (``FUZZ_EXAMPLES`` per transport).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import MemoryEngine, Settings
from tests.support.mcp_client import free_port, start_http_server, stop, wait_for_port
from tests.support.mcp_raw import RawHttp, RawStdio, refused_text, tool_call
from tests.support.store_snapshot import snapshot

# Some tests here start real processes (the CLI, the MCP server).
pytestmark = pytest.mark.subprocess

USER = "mcp-hostile"
TOKEN = "a-token-of-at-least-16-characters"
FUZZ_EXAMPLES = 25  # per transport; ~1-2 s each on a 2-core machine (a request plus two store snapshots)
DEEP_900 = "[" * 900 + "]" * 900
DEEP_5000 = "[" * 5000 + "]" * 5000

# (label, tool, arguments as raw JSON text). Every one must be refused.
FIXED: list[tuple[str, str, str]] = [
    ("lone high surrogate in content", "memory_save", f'{{"user_id":"{USER}","content":"tea \\ud800 time"}}'),
    ("lone low surrogate in user id", "memory_save", '{"user_id":"u\\udc80","content":"fact"}'),
    ("surrogate in a slot key", "memory_working_set", f'{{"user_id":"{USER}","slots":{{"\\ud800":1}}}}'),
    ("surrogate in a slot value", "memory_working_set", f'{{"user_id":"{USER}","slots":{{"goal":"\\udfff"}}}}'),
    (
        "surrogate in a forget reason",
        "memory_forget",
        f'{{"user_id":"{USER}","kind":"semantic","ids":["seed-item"],"reason":"\\ud83d","mode":"hard"}}',
    ),
    ("slot value nested 900 levels", "memory_working_set", f'{{"user_id":"{USER}","slots":{{"goal":{DEEP_900}}}}}'),
    ("slot value nested 5000 levels", "memory_working_set", f'{{"user_id":"{USER}","slots":{{"goal":{DEEP_5000}}}}}'),
    (
        "slot value nested 100 levels",
        "memory_working_set",
        f'{{"user_id":"{USER}","slots":{{"goal":{"[" * 100 + "]" * 100}}}}}',
    ),
    ("5000-digit window", "memory_reflect", f'{{"user_id":"{USER}","window":{"9" * 5000}}}'),
    ("window -1", "memory_reflect", f'{{"user_id":"{USER}","window":-1}}'),
    ("window 10**20", "memory_reflect", f'{{"user_id":"{USER}","window":{10**20}}}'),
    ("window true", "memory_reflect", f'{{"user_id":"{USER}","window":true}}'),
    ("window 2.0", "memory_reflect", f'{{"user_id":"{USER}","window":2.0}}'),
    ("hops 2**40", "memory_retrieve", f'{{"user_id":"{USER}","query":"tea","hops":{2**40}}}'),
    ("max_tokens 10**30", "memory_retrieve", f'{{"user_id":"{USER}","query":"tea","max_tokens":{10**30}}}'),
    ("max_tokens -5", "memory_retrieve", f'{{"user_id":"{USER}","query":"tea","max_tokens":-5}}'),
    ("importance NaN", "memory_save", f'{{"user_id":"{USER}","content":"fact","importance":NaN}}'),
    ("importance 1e400", "memory_save", f'{{"user_id":"{USER}","content":"fact","importance":1e400}}'),
    ("importance 1e30", "memory_save", f'{{"user_id":"{USER}","content":"fact","importance":1e30}}'),
    ("importance -0.5", "memory_save", f'{{"user_id":"{USER}","content":"fact","importance":-0.5}}'),
    ("max_results 0", "memory_search", f'{{"user_id":"{USER}","query":"tea","max_results":0}}'),
    ("limit -3", "memory_skills", f'{{"user_id":"{USER}","limit":-3}}'),
    ("user id a number", "memory_save", '{"user_id":5,"content":"fact"}'),
    ("slots a string", "memory_working_set", f'{{"user_id":"{USER}","slots":"goal=1"}}'),
    ("steps a number", "memory_episode_record", f'{{"user_id":"{USER}","steps":7}}'),
    ("content of 40,000 characters", "memory_save", f'{{"user_id":"{USER}","content":"{"a" * 40_000}"}}'),
    ('evergreen "yes"', "memory_save", f'{{"user_id":"{USER}","content":"fact","evergreen":"yes"}}'),
    ("unknown tool", "memory_nothing", f'{{"user_id":"{USER}"}}'),
    # the timeline, mining, info and graph tools (engine/mcp/timeline_tools.py, graph_tools.py)
    ("hours NaN", "memory_timeline", f'{{"user_id":"{USER}","hours":NaN}}'),
    ("hours 1e400", "memory_timeline", f'{{"user_id":"{USER}","hours":1e400}}'),
    ("hours 0", "memory_timeline", f'{{"user_id":"{USER}","hours":0}}'),
    ("hours true", "memory_timeline", f'{{"user_id":"{USER}","hours":true}}'),
    ("before -1", "memory_timeline_context", f'{{"user_id":"{USER}","item_id":"seed-item","before":-1}}'),
    ("after 10**20", "memory_timeline_context", f'{{"user_id":"{USER}","item_id":"seed-item","after":{10**20}}}'),
    ("timestamp of 5000 digits", "memory_timeline_context", f'{{"user_id":"{USER}","timestamp":"{"9" * 5000}"}}'),
    (
        "item id and timestamp both",
        "memory_timeline_context",
        f'{{"user_id":"{USER}","item_id":"seed-item","timestamp":"2025-01-01"}}',
    ),
    ("item id a path", "memory_timeline_context", f'{{"user_id":"{USER}","item_id":"../../etc/passwd"}}'),
    ("entity with a lone surrogate", "memory_graph_relations", f'{{"user_id":"{USER}","entity":"Ada \\ud800"}}'),
    ("entity of 40,000 characters", "memory_graph_traverse", f'{{"user_id":"{USER}","entity":"{"A" * 40_000}"}}'),
    (
        "entity with quotes and SQL",
        "memory_graph_timeline",
        f'{{"user_id":"{USER}","entity":"x\'; DROP TABLE entities; --","predicate":"works_at"}}',
    ),
    ("depth 2**40", "memory_graph_traverse", f'{{"user_id":"{USER}","entity":"Ada","depth":{2**40}}}'),
    (
        "predicates nested 900 levels",
        "memory_graph_traverse",
        f'{{"user_id":"{USER}","entity":"Ada","predicates":{DEEP_900}}}',
    ),
    ("as_of a number", "memory_graph_relations", f'{{"user_id":"{USER}","entity":"Ada","as_of":5}}'),
    ("graph entities limit 0", "memory_graph_entities", f'{{"user_id":"{USER}","limit":0}}'),
    (
        "mined outcome with a lone surrogate",
        "memory_mine_skills",
        f'{{"user_id":"{USER}","outcomes":["\\udfff"],"auto_register":true}}',
    ),
    ("mining window 0", "memory_mine_skills", f'{{"user_id":"{USER}","window":0,"auto_register":true}}'),
    ("info with an argument", "memory_info", '{"verbose":true}'),
    (
        "forget a graph id that is a path",
        "memory_forget",
        f'{{"user_id":"{USER}","kind":"graph","ids":["../x"],"reason":"r"}}',
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    """A store with an item and episodes, so a wrongly accepted reflect, save or forget would change it."""
    path = tmp_path_factory.mktemp("mcp-hostile") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    item = engine.items.prepare(USER, "Ada drinks smoked lapsang tea.", id="seed-item")
    engine.items.add([item])
    for n in range(3):
        engine.episodes.record(USER, [{"action": f"brew tea {n}", "result": "ok"}], outcome="success")
    engine.working.update(USER, "default", {"goal": "tea"})
    engine.close()
    return path


@pytest.fixture(scope="module")
def reader(store: Path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=60), embedder=embedder)


@pytest.fixture(scope="module")
def stdio(store: Path, reader):
    client = RawStdio(store)
    yield client
    client.close()


@pytest.fixture(scope="module")
def http(store: Path, reader):
    port = free_port()
    proc = start_http_server(store, port, MEMLENS_MCP_TOKEN=TOKEN)
    try:
        wait_for_port(proc, port)
        yield RawHttp(f"http://127.0.0.1:{port}/mcp", TOKEN)
    finally:
        stop(proc)


TALLY: Counter = Counter()  # (transport, outcome) -> requests, for the report's table


@pytest.fixture(scope="module", autouse=True)
def report_tally():
    yield
    for transport in ("stdio", "http"):
        row = {k[1]: v for k, v in TALLY.items() if k[0] == transport}
        print(
            f"\nMCP {transport}: tried {sum(row.values())}, clean {row.get('clean', 0)}, "
            f"raw {row.get('raw', 0)}, no answer {row.get('no_answer', 0)}, partial writes {row.get('written', 0)}"
        )


def check_refused(transport: str, answer: dict | None, label: str) -> None:
    if answer is None:
        TALLY[(transport, "no_answer")] += 1
        raise AssertionError(f"{label}: no answer within the time limit")
    text = refused_text(answer)
    if text is None:
        TALLY[(transport, "accepted")] += 1
        raise AssertionError(f"{label}: accepted: {json.dumps(answer)[:300]}")
    if "Traceback" in text or not any(
        w in text
        for w in ("InvalidInput", "validation error", "Parse error", "Invalid request", "Unknown tool", "NotFound")
    ):
        TALLY[(transport, "raw")] += 1
        raise AssertionError(f"{label}: not a named refusal: {text[:300]}")
    TALLY[(transport, "clean")] += 1


def ask_stdio(stdio: RawStdio, reader, request_id: int, tool: str, args: str, label: str) -> None:
    before = snapshot(reader)
    answer = stdio.ask(tool_call(request_id, tool, args))
    if answer is not None:
        assert answer.get("id") == request_id, answer
    check_refused("stdio", answer, label)
    after = snapshot(reader)
    if after != before:
        TALLY[("stdio", "written")] += 1
    assert after == before, f"{label}: {before.diff(after)}"


def ask_http(http: RawHttp, reader, request_id: int, tool: str, args: str, label: str) -> None:
    before = snapshot(reader)
    status, answer = http.ask(tool_call(request_id, tool, args))
    assert status in (200, 400), (label, status, answer)
    check_refused("http", answer, label)
    after = snapshot(reader)
    if after != before:
        TALLY[("http", "written")] += 1
    assert after == before, f"{label}: {before.diff(after)}"


@pytest.mark.parametrize("n", range(len(FIXED)), ids=[f[0] for f in FIXED])
def test_stdio_answers_every_hostile_request_with_a_refusal_and_writes_nothing(stdio, reader, n):
    label, tool, args = FIXED[n]
    ask_stdio(stdio, reader, 1000 + n, tool, args, label)
    assert stdio.ask(b'{"jsonrpc":"2.0","id":99999,"method":"ping"}') == {"jsonrpc": "2.0", "id": 99999, "result": {}}


def test_stdio_answers_a_line_that_is_not_utf8_and_a_line_that_is_not_json(stdio, reader):
    before = snapshot(reader)
    bad_bytes = tool_call(7001, "memory_save", f'{{"user_id":"{USER}","content":"caf\\u00e9"}}').replace(
        b"caf\\u00e9", b"caf\xff\xfe"
    )
    answer = stdio.ask(bad_bytes)
    assert answer is not None and answer["id"] == 7001 and "not UTF-8" in refused_text(answer)
    answer = stdio.ask(b'{"jsonrpc":"2.0","id":7002,"method":"tools/call","params":{"name":')
    assert answer is not None and answer["id"] == 7002 and refused_text(answer)
    answer = stdio.ask(b"this is not json at all")
    assert answer is not None and answer["id"] is None and answer["error"]["code"] == -32700
    assert snapshot(reader) == before and stdio.alive()


@pytest.mark.parametrize("n", range(len(FIXED)), ids=[f[0] for f in FIXED])
def test_http_answers_every_hostile_request_with_a_refusal_and_writes_nothing(http, reader, n):
    label, tool, args = FIXED[n]
    ask_http(http, reader, 2000 + n, tool, args, label)


def test_mcp_reflect_with_window_minus_one_is_refused_and_writes_no_insight(stdio, reader):
    before = snapshot(reader)
    answer = stdio.ask(tool_call(7100, "memory_reflect", f'{{"user_id":"{USER}","window":-1}}'))
    assert "window must be an integer from 1 to 1,000" in refused_text(answer)
    assert snapshot(reader) == before
    assert reader.items.list_items(USER, category="insights").total == 0


# -- generated hostile values ----------------------------------------------------------------------------------------
surrogate = st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}")
hostile_text_not_blank = st.one_of(
    st.tuples(st.text("abc xyz", max_size=5), surrogate, st.text("abc", max_size=5)).map(
        lambda t: json.dumps(t[0])[:-1] + t[1] + t[2] + '"'
    ),
    st.integers(65, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(20, 6000).map(lambda n: "9" * n),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "true", "null", "[]", "{}", "12"]),
)
hostile_text = st.one_of(hostile_text_not_blank, st.sampled_from(['"   "', '""']))  # for required texts
hostile_int = st.one_of(
    st.integers(max_value=0),
    st.integers(min_value=10**8, max_value=10**40).map(str),
    st.integers(20, 6000).map(lambda n: "-" + "9" * n),
    st.sampled_from(
        ["NaN", "Infinity", "1e400", "1.5", "2.0", "true", "false", '"abc"', '"5"', "[]", "{}", "[" * 300 + "]" * 300]
    ),
).map(str)
hostile_unit = st.one_of(
    st.floats(min_value=1.0001, max_value=1e300).map(repr),
    st.floats(max_value=-0.0001, min_value=-1e300).map(repr),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "true", '"0.5"', "[]", "{}"]),
)
hostile_hours = st.one_of(  # memory_timeline's hours: a number from 0.01 to 876,000
    st.floats(min_value=-1e300, max_value=0.0).map(repr),
    st.floats(min_value=876_001.0, max_value=1e300).map(repr),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "true", '"24"', "[]", "{}", "9" * 5000]),
)
hostile_json = st.one_of(
    st.integers(65, 3000).map(lambda n: "[" * n + "]" * n),
    surrogate.map(lambda s: f'"x{s}"'),
    surrogate.map(lambda s: f'{{"{s}": 1}}'),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", str(2**64), "9" * 5000]),
)
# (tool, field, strategy, other arguments)
FIELDS = [
    ("memory_save", "content", hostile_text, {"user_id": USER}),
    ("memory_save", "user_id", hostile_text, {"content": "fact"}),
    ("memory_save", "importance", hostile_unit, {"user_id": USER, "content": "fact"}),
    ("memory_add_message", "content", hostile_text, {"user_id": USER, "role": "user"}),
    ("memory_search", "query", hostile_text, {"user_id": USER}),
    ("memory_search", "max_results", hostile_int, {"user_id": USER, "query": "tea"}),
    ("memory_retrieve", "hops", hostile_int, {"user_id": USER, "query": "tea"}),
    ("memory_retrieve", "max_tokens", hostile_int, {"user_id": USER, "query": "tea"}),
    ("memory_reflect", "window", hostile_int, {"user_id": USER}),
    ("memory_episodes", "limit", hostile_int, {"user_id": USER}),
    (
        "memory_forget",
        "reason",
        hostile_text,
        {"user_id": USER, "kind": "semantic", "ids": ["seed-item"], "mode": "hard"},
    ),
    ("memory_feedback", "note", hostile_text_not_blank, {"user_id": USER, "useful": ["seed-item"]}),
    ("memory_skill_register", "body", hostile_text, {"user_id": USER, "name": "brew"}),
    ("memory_timeline", "hours", hostile_hours, {"user_id": USER}),
    ("memory_timeline_context", "timestamp", hostile_text, {"user_id": USER}),
    ("memory_mine_skills", "window", hostile_int, {"user_id": USER, "auto_register": True}),
    ("memory_graph_relations", "entity", hostile_text, {"user_id": USER}),
    ("memory_graph_traverse", "depth", hostile_int, {"user_id": USER, "entity": "Ada"}),
]


def hostile_request():
    return st.sampled_from(range(len(FIELDS))).flatmap(lambda i: FIELDS[i][2].map(lambda value: (i, value)))


def arguments(i: int, value: str) -> str:
    tool, field, _, others = FIELDS[i]
    return json.dumps(others)[:-1] + (", " if others else "") + f'"{field}": {value}}}'


COUNTER = iter(range(10_000, 10**9))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(request=hostile_request())
def test_fuzz_stdio_every_generated_hostile_argument_is_answered_refused_and_writes_nothing(stdio, reader, request):
    i, value = request
    ask_stdio(stdio, reader, next(COUNTER), FIELDS[i][0], arguments(i, value), f"{FIELDS[i][:2]}={value[:60]}")


@FUZZ
@given(request=hostile_request())
def test_fuzz_http_every_generated_hostile_argument_is_answered_refused_and_writes_nothing(http, reader, request):
    i, value = request
    ask_http(http, reader, next(COUNTER), FIELDS[i][0], arguments(i, value), f"{FIELDS[i][:2]}={value[:60]}")


@FUZZ
@given(value=hostile_json)
def test_fuzz_stdio_hostile_working_memory_values(stdio, reader, value):
    ask_stdio(
        stdio,
        reader,
        next(COUNTER),
        "memory_working_set",
        f'{{"user_id":"{USER}","slots":{{"goal":{value}}}}}',
        f"slot={value[:60]}",
    )


def test_http_answers_a_body_that_is_not_utf8_and_a_body_that_is_not_json(http, reader):
    before = snapshot(reader)
    bad_bytes = tool_call(7201, "memory_save", f'{{"user_id":"{USER}","content":"cafe"}}').replace(b"cafe", b"caf\xff")
    for body in (bad_bytes, b'{"jsonrpc":"2.0","id":7202,"method":"tools/call","params":{"name":', b"not json"):
        status, answer = http.ask(body)
        assert status == 400 and answer is not None and refused_text(answer), (status, answer)
        TALLY[("http", "clean")] += 1
    assert snapshot(reader) == before


def test_stdio_answers_malformed_json_rpc_envelopes(stdio, reader):
    """A fractional id (which parses as a notification), a batch, params that are a list or nested 150 levels, a
    tools/call without params: each gets an answer, and the server goes on answering."""
    before = snapshot(reader)
    for line in (
        b'{"jsonrpc":"2.0","id":15.5,"method":"ping"}',
        b'[{"jsonrpc":"2.0","id":14,"method":"ping"}]',
        b'{"jsonrpc":"2.0","id":16,"method":"ping","params":' + b"[" * 150 + b"]" * 150 + b"}",
        b'{"jsonrpc":"2.0","id":17,"method":"tools/call"}',
        b'{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"memory_stats","arguments":[]}}',
    ):
        answer = stdio.ask(line)
        assert answer is not None and refused_text(answer), (line[:60], answer)
        TALLY[("stdio", "clean")] += 1
    assert stdio.ask(b'{"jsonrpc":"2.0","id":19,"method":"ping"}')["result"] == {}
    assert snapshot(reader) == before


# -- ids that are not integers or strings, and messages over the size limit ------------------------------------------
BAD_IDS = ["1.5", "1.0", "true", "null", '{"a":1}', "[7]", "1e3"]


def check_bad_id_answer(answer: dict | None, raw_id: str) -> None:
    assert answer is not None, f"id {raw_id}: no answer"
    assert answer["id"] is None and answer["error"]["code"] == -32600, (raw_id, answer)
    assert "the id must be an integer or a string" in answer["error"]["message"], (raw_id, answer)


@pytest.mark.parametrize("raw_id", BAD_IDS)
def test_http_answers_a_request_whose_id_is_not_an_integer_or_a_string_with_a_json_rpc_error(http, reader, raw_id):
    """The library reads such a request as a notification and answers 202 with an empty body: the client, which sent
    an id, waits for an answer that never comes. Over stdio it already got a JSON-RPC error; HTTP now gives the same."""
    before = snapshot(reader)
    for method, params in (("ping", None), ("tools/call", {"name": "memory_save", "arguments": {"user_id": USER}})):
        body = f'{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}"'
        body += (f',"params":{json.dumps(params)}' if params else "") + "}"
        status, answer = http.ask(body.encode())
        assert status == 400, (raw_id, method, status, answer)
        check_bad_id_answer(answer, raw_id)
    assert http.ask(b'{"jsonrpc":"2.0","id":7401,"method":"ping"}') == (
        200,
        {"jsonrpc": "2.0", "id": 7401, "result": {}},
    )
    assert snapshot(reader) == before


@pytest.mark.parametrize("raw_id", BAD_IDS)
def test_stdio_answers_a_request_whose_id_is_not_an_integer_or_a_string_with_the_same_error(stdio, reader, raw_id):
    check_bad_id_answer(stdio.ask(f'{{"jsonrpc":"2.0","id":{raw_id},"method":"ping"}}'.encode()), raw_id)
    assert stdio.ask(b'{"jsonrpc":"2.0","id":7402,"method":"ping"}')["result"] == {}


def test_stdio_answers_a_malformed_line_whose_id_is_a_bare_minus_and_keeps_serving(stdio):
    """The id scan used to call int("-") on such a line and the reader died: no answer to anything after it."""
    answer = stdio.ask(b'{"jsonrpc":"2.0","id":-,"method":"ping"}')
    assert answer is not None and answer["id"] is None and "error" in answer, answer
    assert stdio.ask(b'{"jsonrpc":"2.0","id":7403,"method":"ping"}')["result"] == {}


def save_line(request_id: int, total_bytes: int, closed: bool = True) -> bytes:
    """A memory_save request of exactly ``total_bytes`` bytes (its content padded with 'a'); unclosed if not
    ``closed``, i.e. malformed JSON that the old reader scanned character by character for its id."""
    head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"memory_save",'
    head += f'"arguments":{{"user_id":"{USER}","content":"'
    tail = '"}}}' if closed else ""
    return (head + "a" * (total_bytes - len(head) - len(tail)) + tail).encode()


def test_stdio_refuses_a_50_mb_line_before_parsing_it_and_answers_the_request_behind_it(stdio, reader):
    """One 50 MB malformed line took ~40 s to reject (its id was sought character by character, on the event loop)
    and the request behind it got no answer in 30 s. Now a line over the limit (the same as HTTP's 413 limit) is
    refused unread, by the id in its first part if it has one. The 30 s bound is the issue's bar for 'answered at
    all', not a speed measurement (that belongs in bench/)."""
    before = snapshot(reader)
    no_id = b'{"jsonrpc":"2.0",' + b'"k":0,' * (50 * 1024 * 1024 // 6)  # unclosed, and no id to find
    stdio.send(no_id)
    first = stdio.ask(b'{"jsonrpc":"2.0","id":7502,"method":"ping"}', timeout_s=30)
    assert first is not None, "no answer within 30 s"
    assert first["id"] is None and "over the limit of 4,194,304 bytes" in refused_text(first), first
    second = stdio._line(30)
    assert second is not None and json.loads(second) == {"jsonrpc": "2.0", "id": 7502, "result": {}}
    answer = stdio.ask(save_line(7501, 50 * 1024 * 1024, closed=False), timeout_s=30)
    assert answer is not None and answer["id"] == 7501 and "over the limit" in refused_text(answer), answer
    assert snapshot(reader) == before and stdio.alive()


def test_the_stdio_line_limit_is_the_http_body_limit(stdio, http, reader):
    from engine.mcp.http import MAX_MESSAGE_BYTES

    before = snapshot(reader)
    at_limit = stdio.ask(save_line(7601, MAX_MESSAGE_BYTES))  # read and refused by the engine (content too long)
    assert at_limit["id"] == 7601 and "InvalidInput" in refused_text(at_limit)
    assert "over the limit" not in refused_text(at_limit)
    over = stdio.ask(save_line(7602, MAX_MESSAGE_BYTES + 1))
    assert over["id"] == 7602 and "over the limit of 4,194,304 bytes" in refused_text(over)
    assert http.ask(save_line(7603, MAX_MESSAGE_BYTES + 1))[0] == 413
    status, answer = http.ask(save_line(7604, MAX_MESSAGE_BYTES))
    assert status == 200 and "InvalidInput" in refused_text(answer)
    assert snapshot(reader) == before
