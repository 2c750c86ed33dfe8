"""The installed ``memlens`` console script (pyproject.toml's [project.scripts]), run as a user runs it after the
README's ``pip install -e .``: its help names every entry point, and ``memlens dashboard`` really serves the dashboard,
on 127.0.0.1 only."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

HEALTH_TIMEOUT_S = 120  # Streamlit's server answers before any page runs; a loaded 2-core machine takes ~10-40 s


def memlens() -> str:
    path = shutil.which("memlens")
    assert path, "the memlens console script is not installed: run `pip install -e .` (README, Set up)"
    return path


def clean_env() -> dict[str, str]:
    """The environment without a developer's store, token or LLM variables (they would change what is served)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMLENS_"))}


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([memlens(), *argv], env=clean_env(), capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on ``port`` (from /proc/net/tcp and tcp6, state 0A = LISTEN)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


LOOPBACK_V4 = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it (little-endian hex)


def test_help_lists_every_entry_point():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    commands = {"dashboard", "mcp", "retrieve", "replay", "ingest", "export", "eval", "demo", "stats"}
    missing = {c for c in commands if c not in result.stdout}
    assert not missing, f"`memlens --help` does not list {missing}:\n{result.stdout}"


def test_mcp_help_describes_both_transports():
    result = run("mcp", "--help")
    assert result.returncode == 0, result.stderr
    assert "--http" in result.stdout and "--port" in result.stdout and "MEMLENS_MCP_TOKEN" in result.stdout


def test_an_unknown_command_is_one_error_line():
    result = run("no-such-command")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


def test_dashboard_serves_its_health_url_on_loopback_only(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [memlens(), "dashboard", "--port", str(port), "--store", str(tmp_path / "store")],
        cwd=tmp_path,  # from any folder: the installed app.py is found, not one in the working directory
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, answer = time.monotonic() + HEALTH_TIMEOUT_S, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as response:
                    answer = (response.status, response.read().decode())
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        exited = proc.poll() is not None
        assert not exited, f"the dashboard exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
        assert answer == (200, "ok"), f"no health answer on port {port} within {HEALTH_TIMEOUT_S} s"
        assert listening_addresses(port) == {LOOPBACK_V4}, listening_addresses(port)
    finally:
        proc.send_signal(signal.SIGTERM)  # memlens exec'd Streamlit: this pid is the server itself
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    output = proc.stdout.read() if proc.stdout else ""
    assert f"memlens dashboard on http://127.0.0.1:{port}" in output, output
