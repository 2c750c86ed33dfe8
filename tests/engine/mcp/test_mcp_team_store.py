"""The MCP server on a team store (issue 19): ``python -m engine mcp`` started as a real subprocess over stdio with
MEMLENS_STORE=postgresql://... and MEMLENS_VECTORS=s3://... (plus the AWS variables) on the session's real
PostgreSQL and S3-compatible servers. An agent saves, searches, retrieves, keeps working memory and forgets through
it; a second engine in this process (a dashboard on another host) sees every change, and its own edit reaches the
agent."""

from __future__ import annotations

import re
import sys

import pytest
from mcp.client.stdio import StdioServerParameters

from engine import MemoryEngine, NotFound, Settings
from tests.support.mcp_client import ROOT, SyncMcp, clean_env

pytestmark = [pytest.mark.subprocess, pytest.mark.team_store]

USER = "mcp-team-user"
PASSWORD = "mcp-pw-3k8v-never-shown"


@pytest.fixture(scope="module")
def team(team_servers):
    dsn, vectors = team_servers.fresh("mcp")
    # the embedded server trusts local logins: the password is accepted and ignored, and must never be shown
    yield dsn.replace("postgresql://postgres:@", f"postgresql://postgres:{PASSWORD}@", 1), vectors
    team_servers.drop(dsn)


@pytest.fixture(scope="module")
def client(team, team_servers):
    dsn, vectors = team
    env = clean_env(MEMLENS_STORE=dsn, MEMLENS_VECTORS=vectors, **team_servers.aws_environ())
    c = SyncMcp(StdioServerParameters(command=sys.executable, args=["-m", "engine", "mcp"], env=env, cwd=str(ROOT)))
    yield c
    c.close()


@pytest.fixture(scope="module")
def reader(team, client, embedder) -> MemoryEngine:
    """The same team store opened by this process too, while the server runs."""
    dsn, vectors = team
    return MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=30), embedder=embedder, vectors=vectors)


def ok(client: SyncMcp, tool: str, **args) -> str:
    result = client.call(tool, args)
    assert not result.is_error, result.text
    assert PASSWORD not in result.text
    return result.text


def test_save_search_retrieve_working_memory_and_forget_on_a_team_store(client, reader):
    saved = ok(client, "memory_save", user_id=USER, content="The deploy key lives in the team vault.", category="ops")
    item_id = re.search(r"Memory saved: (\S+)", saved).group(1)
    assert reader.items.get(USER, item_id).content == "The deploy key lives in the team vault."  # in PostgreSQL

    found = ok(client, "memory_search", user_id=USER, query="deploy key vault", kind="semantic")
    assert found.startswith("Found ") and item_id in found  # the vector and full-text index on S3
    assert [h.id for h in reader.retrieval.search(USER, "deploy key vault", kind="semantic", limit=1)] == [item_id]

    result = client.call("memory_retrieve", {"user_id": USER, "query": "Where is the deploy key?"})
    assert not result.is_error, result.text
    trace = result.structured
    assert item_id in trace["memory_ids"] and "team vault" in trace["context"]
    assert reader.traces.get(trace["trace_id"]).question == "Where is the deploy key?"

    ok(client, "memory_working_set", user_id=USER, session_id="ops-1", slots={"task": "rotate keys", "step": 1})
    slots = reader.working.get(USER, "ops-1")
    assert (slots["task"], slots["step"]) == ("rotate keys", 1)
    reader.working.update(USER, "ops-1", {"step": 2}, source="ui")  # the dashboard's edit reaches the agent
    assert '"step": 2' in ok(client, "memory_working_get", user_id=USER, session_id="ops-1")

    forgot = ok(client, "memory_forget", user_id=USER, kind="semantic", ids=[item_id], reason="rotated", mode="hard")
    assert forgot.startswith(f"Forgot 1 entries from semantic memory for user {USER} (hard).")
    with pytest.raises(NotFound):
        reader.items.get(USER, item_id)
    assert reader.forgetting.log(USER)[0].reason == "rotated"
    assert item_id not in [h.id for h in reader.retrieval.search(USER, "deploy key vault", kind="semantic")]
    again = client.call("memory_retrieve", {"user_id": USER, "query": "Where is the deploy key?"}).structured
    assert item_id not in again["memory_ids"]
    assert all(not any(v.values()) for v in reader.admin.orphans().values())  # no vector left without its row


def test_the_stats_tool_shows_the_team_store_with_its_password_masked(client):
    stats = ok(client, "memory_stats")
    assert "postgresql://postgres:***@" in stats
