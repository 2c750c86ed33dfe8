"""Where memory lives: the schema registry, migrations, store locations, copying and administration; ``sql/`` holds
the table backends (DuckDB embedded, PostgreSQL for a team), ``vectors/`` the LanceDB tables."""
