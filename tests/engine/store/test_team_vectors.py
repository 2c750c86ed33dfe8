"""Vectors of a team store on S3-compatible object storage (a real moto server on 127.0.0.1).

LanceDB commits a table version by writing its manifest; on ``s3://`` lance's commit handler is
``ConditionalPutCommitHandler`` (lance rust/lance-table/src/io/commit.rs), a PUT with ``If-None-Match: *``: of two
writers racing for version N exactly one PUT succeeds, the other gets 412 Precondition Failed, reads the new latest
version and retries its commit on top (appends rebase cleanly). So the object store must honour conditional PUTs
(AWS S3 since 2024-08, MinIO, R2, moto); a store that ignores the header needs lance's DynamoDB commit store
(``s3+ddb://``) instead. These tests prove that moto refuses a second conditional PUT and that writers in several
processes lose no commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.process_env import s3_storage_options
from engine.store.vectors.index import VectorIndex

pytestmark = pytest.mark.team_store

SUPPORT = Path(__file__).resolve().parents[2] / "support"
WRITERS = 4
BATCHES = 16


def test_the_s3_server_refuses_a_second_conditional_put(team_servers):
    import boto3
    from botocore.exceptions import ClientError

    from tests.support.team_servers import ACCESS, BUCKET, SECRET

    s3 = boto3.client(
        "s3",
        endpoint_url=team_servers.s3_endpoint,
        aws_access_key_id=ACCESS,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    key = "conditional-put-check/manifest"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"second", IfNoneMatch="*")
    assert err.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"first"


@pytest.mark.subprocess
def test_writers_in_several_processes_lose_no_commit(team_servers, tmp_path):
    _, uri = team_servers.fresh("commits")
    # The tables exist before the writers race: this test is about their appends. (The engine creates a table under
    # its store-wide writer lock, which these bare VectorIndex writers do not have; creation races are
    # test_processes_writing_the_first_rows_of_a_new_table_at_once_lose_none's.)
    creator = VectorIndex(uri, "commit-test", 8, storage_options=s3_storage_options())
    for kind in ("semantic", "episodic"):
        creator.table(kind)
    go = tmp_path / "go"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LANCEDB_LOG": "error"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(SUPPORT / "s3_vector_writer.py"),
                uri,
                str(w),
                str(BATCHES),
                str(go),
                str(tmp_path / f"w{w}.json"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    # Started together once every writer has imported LanceDB and connected (seconds apart on a loaded machine).
    while not all((tmp_path / f"w{w}.ready").exists() for w in range(WRITERS)):
        for p in procs:
            if p.poll() is not None:
                pytest.fail(f"a writer exited before the start: {p.communicate()[1][-3000:]}")
        time.sleep(0.05)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    acked = [i for w in range(WRITERS) for i in json.loads((tmp_path / f"w{w}.json").read_text())]
    assert len(acked) == WRITERS * BATCHES * 3

    index = VectorIndex(uri, "commit-test", 8, storage_options=s3_storage_options())
    present: list[str] = []
    for kind in ("semantic", "episodic"):
        tb = index.table(kind, create=False)
        present += tb.to_arrow().column("id").to_pylist()
        # Every writer's commits are in the table's history: one version per add (plus compactions), none replaced.
        assert len(tb.list_versions()) >= WRITERS * BATCHES // 2
    assert sorted(present) == sorted(acked), "every acknowledged row is there, exactly once"
    hits = index.search_vectors("semantic", "u", np.ones(8, np.float32) / np.sqrt(8), 5)[0]
    assert len(hits) == 5


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_a_table_another_process_has_not_indexed_yet_is_searched_without_error(where, tmp_path, request):
    """Found by bench/team.py: an agent's retrieval met the table another process had just created and written its
    first rows to, before that process built the full-text index (its next step): the full-text search failed and
    the retrieval reported the table unreadable (StoreCorrupt)."""
    if where == "s3":
        _, uri = request.getfixturevalue("team_servers").fresh("unindexed")
        options = s3_storage_options()
    else:
        uri, options = str(tmp_path / "vectors"), {}
    creator = VectorIndex(uri, "m", 4, storage_options=options)
    searcher = VectorIndex(uri, "m", 4, resident_max_rows=1000, storage_options=options)
    vector = [1.0, 0.0, 0.0, 0.0]
    # the creating process between its first add and its maintenance: rows, no full-text index yet
    creator.table("semantic").add([{"id": "a", "user_id": "u", "text": "deploy the service", "vector": vector}])
    assert searcher.search_text("semantic", "u", "deploy", 5) == ([], "LanceDB index")
    assert [h.id for h in searcher.vector_search("semantic", "u", np.array(vector), 5)] == ["a"]
    creator._maintain(creator.table("semantic"))  # the index is built: the same search finds the row
    assert [h.id for h in searcher.fts_search("semantic", "u", "deploy", 5)] == ["a"]


def test_processes_writing_the_first_rows_of_a_new_table_at_once_lose_none(team_servers):
    """Found by bench/team.py: several agents' first writes to a new team store each created the LanceDB table; on
    s3 a creation that lost the race committed as the table's next version (an overwrite), erasing the rows another
    writer had added, or failed as a commit conflict. Each VectorIndex here has its own connection (like a process
    on another host); they share the lock the engine gives them (its store-wide writer lock)."""
    import threading

    _, uri = team_servers.fresh("first-rows")
    writers = 6
    store_lock = threading.Lock()
    indexes = [VectorIndex(uri, "m", 4, storage_options=s3_storage_options()) for _ in range(writers)]
    for index in indexes:
        index.creation_lock = lambda: store_lock
    start, errors = threading.Barrier(writers), []

    def first_write(n: int) -> None:
        start.wait()
        try:
            indexes[n].add("semantic", [f"id{n}"], ["u"], [f"fact {n}"], np.array([[1.0, float(n), 0.0, 0.0]]))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=first_write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(VectorIndex(uri, "m", 4, storage_options=s3_storage_options()).ids("semantic")) == sorted(
        f"id{n}" for n in range(writers)
    )
