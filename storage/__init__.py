"""Storage: the only code that touches DuckDB and LanceDB — connections, append-only migrations, SQL, vectors."""
