"""The relational tables: DuckDB for the embedded store, PostgreSQL for a team store, one dialect between them."""
