"""Storage: DuckDB tables (the source of truth) and LanceDB vector/full-text tables (an index over them)."""
