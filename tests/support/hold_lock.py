"""Hold a DuckDB store file open (and so locked) from another OS process, as a second memlens process would.

Usage: python hold_lock.py DB_FILE SECONDS. Prints "locked" once the lock is held, releases it after SECONDS
(or when killed).
"""

from __future__ import annotations

import sys
import time

import duckdb


def main() -> None:
    path, seconds = sys.argv[1], float(sys.argv[2])
    conn = duckdb.connect(path)
    conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    print("locked", flush=True)
    time.sleep(seconds)
    conn.close()
    print("released", flush=True)


if __name__ == "__main__":
    main()
