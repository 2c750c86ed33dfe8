"""The smaller refusals of issue 17: a short token cannot open the MCP server to the network, a forget-log count of
-7 and a reflect window of -1 are refused with nothing written, and a store on a read-only file system can be
browsed (DuckDB read_only, no migration written) while every write is refused with StoreReadOnly."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings
from engine.errors import InvalidInput, StoreReadOnly
from engine.mcp.http import check_http_binding
from tests.support.mcp_client import ROOT, clean_env, free_port
from tests.support.store_snapshot import snapshot

# Some tests here run the CLI in a real process (the MCP bind, a read-only mount).
pytestmark = pytest.mark.subprocess

USER = "small"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("small") / "store"
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    e.items.add([e.items.prepare(USER, "Ada drinks smoked lapsang tea.", id="tea")])
    for n in range(3):
        e.episodes.record(USER, [{"action": f"brew tea {n}", "result": "ok"}], outcome="success")
    e.working.update(USER, "s1", {"goals": ["tea"]})
    e.close()
    return path


def copy(seeded: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "store"
    shutil.copytree(seeded, dest)
    return dest


# -- the MCP token ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", ["x", "short-token", "fifteen-chars!!", " " * 20 + "abc"])
def test_a_token_shorter_than_16_characters_cannot_bind_a_non_loopback_host(token):
    with pytest.raises(InvalidInput, match="at least 16"):
        check_http_binding("0.0.0.0", 8765, token)


def test_a_long_token_binds_anywhere_and_loopback_takes_any_token():
    check_http_binding("0.0.0.0", 8765, "a" * 16)
    check_http_binding("127.0.0.1", 8765, "x")
    check_http_binding("::1", 8765, "")


def test_the_cli_refuses_a_one_character_token_on_0_0_0_0_before_opening_the_store(tmp_path):
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
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        cwd=ROOT,
        env=clean_env(MEMLENS_MCP_TOKEN="x"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "token of 1 characters" in proc.stderr and "at least 16" in proc.stderr
    assert not (tmp_path / "s").exists()


# -- numbers out of range that used to be clamped or accepted --------------------------------------------------------
def test_ingest_refuses_a_forget_log_count_of_minus_7_and_writes_nothing(seeded, tmp_path, embedder):
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(copy(seeded, tmp_path))), embedder=embedder)
    before = snapshot(e)
    line = json.dumps(
        {
            "kind": "forget_log",
            "user_id": USER,
            "memory_type": "semantic",
            "ids": ["gone"],
            "count": -7,
            "mode": "hard",
            "reason": "r",
        }
    )
    item = json.dumps({"kind": "item", "user_id": USER, "content": "written only if the file is good"})
    with pytest.raises(InvalidInput, match=r"line 2: count must be an integer from 0 to 1,000,000, got -7"):
        e.admin.ingest_lines([item, line])
    assert snapshot(e) == before


def test_reflect_with_window_minus_one_is_refused_not_clamped_and_writes_nothing(seeded, tmp_path, embedder):
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(copy(seeded, tmp_path))), embedder=embedder)
    before = snapshot(e)
    for window in (-1, 0, 1001, True, 2.0, 10**20):
        with pytest.raises(InvalidInput, match="window must be an integer from 1 to 1,000"):
            e.items.reflect(USER, window)
    assert snapshot(e) == before
    assert e.items.reflect(USER, 2)[0], "a valid window still reflects"


# -- read-only stores ------------------------------------------------------------------------------------------------
def test_a_store_opened_read_only_can_be_browsed_and_refuses_every_write(seeded, tmp_path, embedder):
    path = copy(seeded, tmp_path)
    rw = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    before = snapshot(rw)
    rw.close()
    files = {p: p.stat().st_mtime_ns for p in path.rglob("*") if p.is_file()}
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(path), read_only=True), embedder=embedder)
    assert e.read_only
    assert "tea" in [h.id for h in e.retrieval.search(USER, "smoked lapsang tea", kind="semantic")]
    assert e.working.get(USER, "s1")["goals"] == ["tea"]
    assert e.episodes.list_episodes(USER).total == 3 and e.admin.stats().items == 1
    for write in (
        lambda: e.items.remember(USER, "new fact"),
        lambda: e.working.update(USER, "s1", {"goals": None}),
        lambda: e.forgetting.forget(USER, "semantic", ["tea"], "r", mode="hard"),
        lambda: e.sessions.add_message(USER, "s1", "user", "hi"),
        lambda: e.retrieval.retrieve(USER, "tea?"),
        lambda: e.episodes.record(USER, [{"action": "a"}]),
        lambda: e.admin.optimize(),
    ):
        with pytest.raises(StoreReadOnly, match="read-only"):
            write()
    e.close()
    assert {p: p.stat().st_mtime_ns for p in path.rglob("*") if p.is_file()} == files, "no file was touched"
    rw = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    assert snapshot(rw) == before
    rw.close()


def test_read_only_refuses_a_store_that_does_not_exist_without_creating_it(tmp_path, embedder):
    with pytest.raises(StoreReadOnly, match="no store database"):
        MemoryEngine.open(
            settings=Settings.from_env({}, store=str(tmp_path / "none"), read_only=True), embedder=embedder
        )
    assert not (tmp_path / "none").exists()


def _unshare_works() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    return probe.returncode == 0


# The three commands run in one process (as tests/engine/test_lazy_imports.py does): a process per command paid
# Python's start, the engine's import and LanceDB's (~6 s of CPU) once per command, ~26 s for the test on 2 cores.
# Each command still opens the store on its own, through the CLI's own entry point, and prints its exit status.
READ_ONLY_COMMANDS = """
import json, sys
from engine.cli.main import main
from engine.process_env import prepare_process_environment

prepare_process_environment()
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"rc={code}", flush=True)
"""


@pytest.mark.skipif(not _unshare_works(), reason="needs a mount namespace (unshare -m) to make a read-only mount")
def test_a_store_on_a_read_only_file_system_is_browsed_from_the_cli(seeded, tmp_path):
    """A real read-only bind mount (a private mount namespace): stats and search work, a write exits 2 naming
    read-only, and nothing could have been written anyway."""
    path = copy(seeded, tmp_path)
    mount = tmp_path / "ro"
    mount.mkdir()
    commands = [
        ["--store", str(mount), "--json", "stats"],
        ["--store", str(mount), "working", "--user", USER, "--session", "s1", "--set", "goals=1"],
        ["--store", str(mount), "search", "--user", USER, "which", "tea"],
    ]
    script = (
        f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(mount))} && "
        f"mount -o remount,bind,ro {shlex.quote(str(mount))} && "
        f"{shlex.quote(sys.executable)} -c {shlex.quote(READ_ONLY_COMMANDS)} {shlex.quote(json.dumps(commands))}"
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout
    assert [line for line in out.splitlines() if line.startswith("rc=")] == ["rc=0", "rc=2", "rc=0"], (
        out[-2000:],
        proc.stderr[-2000:],
    )
    assert '"items": 1' in out and "lapsang" in out
    assert "is open read-only" in proc.stderr and "Traceback" not in proc.stderr
