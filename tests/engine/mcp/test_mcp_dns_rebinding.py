"""DNS-rebinding protection of the MCP HTTP server on every loopback spelling memlens accepts without a token.

A web page whose name an attacker re-points at 127.0.0.1 can make a browser post to a loopback server; it gives itself
away in ``Host`` (its own name) and ``Origin``. The MCP library checks those only when the bind address is spelt
exactly ``127.0.0.1``, ``localhost`` or ``::1``; memlens also accepts ``LOCALHOST``, any 127/8 address and ``[::1]``,
and must check them all. Each case starts a real ``python -m engine mcp --http --host H`` and sends real HTTP
requests with chosen headers: a foreign Host gets 421, a foreign Origin 403, a loopback name 200.
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest

from engine.mcp.http import is_loopback, transport_security
from tests.support.mcp_client import start_http_server, stop, wait_for_port

pytestmark = pytest.mark.subprocess

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rebind", "version": "0"}},
}
TOKEN = "a-loopback-token-for-the-tests"


def free_port_on(address: str) -> int:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def reachable_address(spelling: str) -> str:
    """The literal address a client reaches a server bound to ``spelling`` at (``localhost`` may be either)."""
    bare = spelling.strip("[]")
    return "127.0.0.1" if bare.lower() == "localhost" else bare


def post(address: str, port: int, headers: dict[str, str], body: dict | None = None) -> int:
    """POST ``body`` (an initialize request by default) to ``address:port`` with exactly these extra headers
    (``Host`` included)."""
    conn = http.client.HTTPConnection(address, port, timeout=60)
    try:
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(body or INIT).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


# (bind spelling, token or ""): the exact spellings the library already guards, and those it did not.
SPELLINGS = [
    ("127.0.0.1", ""),
    ("127.0.0.2", ""),
    ("127.1.2.3", TOKEN),  # a token does not switch the check off
    ("localhost", ""),
    ("LOCALHOST", ""),
    ("::1", ""),
    ("[::1]", ""),
]


@pytest.mark.parametrize(("spelling", "token"), SPELLINGS, ids=[s for s, _ in SPELLINGS])
def test_every_loopback_bind_refuses_a_foreign_host_or_origin_and_serves_loopback_names(
    tmp_path: Path, spelling: str, token: str
):
    address = reachable_address(spelling)
    port = free_port_on(address)
    env = {"MEMLENS_MCP_TOKEN": token} if token else {}
    proc = start_http_server(tmp_path / "store", port, "--host", spelling, **env)
    try:
        wait_for_port(proc, port, host=address)
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        bound = f"[{spelling.strip('[]')}]" if ":" in spelling else spelling
        for host in (f"{bound}:{port}", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            assert post(address, port, {"Host": host, **auth}) == 200, host
        for origin in (f"http://localhost:{port}", f"http://{bound}:{port}"):
            assert post(address, port, {"Host": f"{bound}:{port}", "Origin": origin, **auth}) == 200, origin
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", f"localhost.:{port}"):
            assert post(address, port, {"Host": host, **auth}) == 421, host
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", f"https://localhost.evil:{port}"):
            assert post(address, port, {"Host": f"{bound}:{port}", "Origin": origin, **auth}) == 403, origin
        bad_id = {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}  # refused 400, but only after the header checks
        assert post(address, port, {"Host": "evil.example", **auth}, bad_id) == 421
        assert post(address, port, {"Host": f"{bound}:{port}", "Origin": "http://evil.example", **auth}, bad_id) == 403
        assert post(address, port, {"Host": f"{bound}:{port}", **auth}, bad_id) == 400
        if token:  # the token is still required, before any header check
            assert post(address, port, {"Host": f"{bound}:{port}"}) == 401
    finally:
        stop(proc)


def test_the_settings_cover_every_loopback_spelling_and_leave_network_binds_to_the_token():
    for spelling in ("127.0.0.1", "127.255.0.9", "localhost", "LocalHost", "::1", "[::1]", "0:0:0:0:0:0:0:1"):
        assert is_loopback(spelling)
        settings = transport_security(spelling)
        assert settings.enable_dns_rebinding_protection, spelling
        assert "localhost:*" in settings.allowed_hosts and "http://127.0.0.1:*" in settings.allowed_origins
        assert not any("evil" in h for h in settings.allowed_hosts)
    assert "[0:0:0:0:0:0:0:1]:*" in transport_security("0:0:0:0:0:0:0:1").allowed_hosts
    assert "127.255.0.9:*" in transport_security("127.255.0.9").allowed_hosts
    for spelling in ("0.0.0.0", "192.0.2.10", "example.org", "::"):
        assert not is_loopback(spelling)
        assert not transport_security(spelling).enable_dns_rebinding_protection  # guarded by the required token
