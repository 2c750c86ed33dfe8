"""Hold a DuckDB store file open (and so locked) from another OS process, as a second memlens process would.

Usage: python hold_lock.py DB_FILE SECONDS [PATIENCE]. Prints "locked" once the lock is held, releases it after SECONDS
(or when killed). Like any foreign process it does not ask memlens to let go; it retries until memlens
has been idle for db_linger_s, for up to PATIENCE seconds (default 30; 0: a single attempt).
"""

from __future__ import annotations

import sys
import time

import duckdb


def main() -> None:
    path, seconds = sys.argv[1], float(sys.argv[2])
    patience = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    deadline = time.monotonic() + patience
    while True:  # the test's own engine may still be lingering on the file for up to db_linger_s
        try:
            conn = duckdb.connect(path)
            break
        except duckdb.IOException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
    conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    print("locked", flush=True)
    time.sleep(seconds)
    conn.close()
    print("released", flush=True)


if __name__ == "__main__":
    main()
