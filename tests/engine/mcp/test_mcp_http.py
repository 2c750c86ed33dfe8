"""The MCP server over streamable HTTP (``python -m engine mcp --http``), a real subprocess on a free loopback port.
With ``MEMLENS_MCP_TOKEN`` set, only requests carrying ``Authorization: Bearer <token>`` get through (401
otherwise); binding to a non-loopback address without a token is refused before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.support.mcp_client import (
    ROOT,
    SyncMcp,
    clean_env,
    free_port,
    http_transport,
    start_http_server,
    stop,
    wait_for_port,
)

pytestmark = pytest.mark.subprocess

TOKEN = "s3cret-token-for-tests"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-http-test", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = tmp_path_factory.mktemp("mcp-http") / "store"
    port = free_port()
    proc = start_http_server(store, port, MEMLENS_MCP_TOKEN=TOKEN)
    try:
        wait_for_port(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def post(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(INIT).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_request_without_the_bearer_token_gets_401(server):
    assert post(server, {}) == 401


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", "Bearer ", TOKEN, f"Basic {TOKEN}", f"bearer  {TOKEN}"])
def test_a_request_with_a_wrong_authorization_header_gets_401(server, header):
    assert post(server, {"Authorization": header}) == 401


def test_a_request_with_the_bearer_token_is_served(server):
    assert post(server, {"Authorization": f"Bearer {TOKEN}"}) == 200


def test_an_mcp_client_with_the_token_drives_the_tools(server):
    client = SyncMcp(http_transport(server, TOKEN))
    try:
        assert "memory_retrieve" in {t.name for t in client.tools()}
        added = client.call("memory_add_message", {"user_id": "http-user", "role": "user", "content": "hello"})
        assert not added.is_error and added.text.startswith("Message added to session 'default'")
        stats = client.call("memory_stats", {"user_id": "http-user"})
        assert "messages: 1" in stats.text
        refused = client.call("memory_add_message", {"user_id": "../x", "role": "user", "content": "hello"})
        assert refused.is_error and "invalid user id" in refused.text
        extra = client.call("memory_stats", {"user_id": "http-user", "verbose": True})
        assert extra.is_error and "verbose" in extra.text and "Extra inputs are not permitted" in extra.text
    finally:
        client.close()


def leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def test_an_mcp_client_without_the_token_cannot_connect(server):
    with pytest.raises(BaseException) as info:
        SyncMcp(http_transport(server, None))
    assert any(isinstance(e, MCPError) for e in leaves(info.value)), repr(info.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.org"])
def test_serving_on_a_non_loopback_host_without_a_token_is_refused_with_one_line(tmp_path: Path, host):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "--store",
            str(tmp_path / "s"),
            "mcp",
            "--http",
            "--host",
            host,
            "--port",
            str(free_port()),
        ],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: refusing to serve MCP on non-loopback host")
    assert proc.stderr.count("\n") == 1 and "MEMLENS_MCP_TOKEN" in proc.stderr
    assert not (tmp_path / "s").exists()  # refused before the store was opened


def test_on_loopback_without_a_token_the_server_runs_open_to_local_clients(tmp_path: Path):
    port = free_port()
    proc = start_http_server(tmp_path / "store", port)
    try:
        wait_for_port(proc, port)
        client = SyncMcp(http_transport(f"http://127.0.0.1:{port}/mcp"))
        try:
            assert len(client.tools()) == 25  # test_mcp_stdio.py names them
        finally:
            client.close()
    finally:
        stop(proc)
