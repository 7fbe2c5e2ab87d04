-- The Prefect server's database, beside the DuckLake catalog (POSTGRES_DB=chronicle); tests/lake does the same
-- with createdb (tests/lake/servers.py: prefect_server).
CREATE DATABASE prefect;
