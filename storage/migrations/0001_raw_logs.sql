-- Raw logs, what was read, what was refused, and the run/LLM ledgers later stages fill.
CREATE TABLE raw_logs (
    -- No PRIMARY KEY: its index made bulk inserts several times slower. Uniqueness is kept by the
    -- writer (anti-join per source file) and checked by the tests.
    entry_id     VARCHAR NOT NULL,      -- derived from file + position + text: re-reads give the same id
    project_id   VARCHAR NOT NULL,
    source       VARCHAR NOT NULL,      -- jsonl | csv | note | locomo
    source_file  VARCHAR NOT NULL,
    line_no      INTEGER,               -- 1-based line (jsonl/csv/note) or turn index (locomo)
    byte_offset  BIGINT,
    ts           TIMESTAMP NOT NULL,    -- UTC
    local_date   DATE NOT NULL,         -- in the project's timezone
    iso_year     INTEGER NOT NULL,
    iso_week     INTEGER NOT NULL,
    week_number  INTEGER NOT NULL,      -- iso_year * 100 + iso_week, e.g. 202605
    actor        VARCHAR,
    type         VARCHAR NOT NULL,
    content      VARCHAR NOT NULL,
    metadata     JSON,
    ingested_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE ingest_files (
    path          VARCHAR PRIMARY KEY,
    project_id    VARCHAR,
    format        VARCHAR NOT NULL,
    size          BIGINT NOT NULL,
    mtime_ns      BIGINT NOT NULL,
    parsed_bytes  BIGINT NOT NULL,      -- prefix already ingested; an append resumes here
    parsed_lines  BIGINT NOT NULL,      -- lines in that prefix, so appended lines keep true numbers
    prefix_sha256 VARCHAR NOT NULL,     -- of that prefix: a rewritten file is re-read whole
    entries       INTEGER NOT NULL,
    rejects       INTEGER NOT NULL,
    ingested_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE rejects (
    reject_id    VARCHAR PRIMARY KEY,   -- file + position + reason: re-reading does not duplicate
    source_file  VARCHAR NOT NULL,
    line_no      INTEGER,
    byte_offset  BIGINT,
    reason       VARCHAR NOT NULL,      -- short machine-readable kind, e.g. invalid_json
    detail       VARCHAR,
    raw          VARCHAR,               -- the refused text, undecodable bytes backslash-escaped
    rejected_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE INDEX rejects_file ON rejects (source_file);

CREATE TABLE llm_calls (
    call_id      VARCHAR PRIMARY KEY,
    started_at   TIMESTAMP NOT NULL,
    model        VARCHAR NOT NULL,
    endpoint     VARCHAR,
    purpose      VARCHAR NOT NULL,      -- weekly_report | shorten | map | reduce | distill | repair | ask
    project_id   VARCHAR,
    week_number  INTEGER,
    prompt_hash  VARCHAR NOT NULL,
    prompt       VARCHAR NOT NULL,
    response     VARCHAR,
    tokens_in    INTEGER,
    tokens_out   INTEGER,
    latency_ms   DOUBLE,
    status       VARCHAR NOT NULL,      -- ok | error
    error        VARCHAR,
    http_status  INTEGER,
    attempt      INTEGER NOT NULL DEFAULT 1,
    flow_run_id  VARCHAR
);

CREATE TABLE pipeline_runs (
    flow_run_id  VARCHAR PRIMARY KEY,
    flow_name    VARCHAR NOT NULL,
    parameters   JSON,
    started_at   TIMESTAMP NOT NULL,
    ended_at     TIMESTAMP,
    state        VARCHAR NOT NULL,      -- RUNNING | COMPLETED | FAILED
    counts       JSON,
    message      VARCHAR
);
