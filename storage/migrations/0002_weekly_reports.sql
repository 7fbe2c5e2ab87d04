-- Weekly chronicle: one report per project and ISO week, every version ever written, and rollups.
CREATE TABLE weekly_reports (
    id             VARCHAR PRIMARY KEY,   -- uuid, stable across regenerations and edits of the week
    project_id     VARCHAR NOT NULL,
    week_number    INTEGER NOT NULL,      -- iso_year * 100 + iso_week, e.g. 202605 (seed 000)
    iso_year       INTEGER NOT NULL,
    iso_week       INTEGER NOT NULL,
    start_date     DATE NOT NULL,         -- Monday, project-local
    end_date       DATE NOT NULL,         -- Sunday, project-local
    summary        VARCHAR NOT NULL,      -- Markdown, with [E#] citations (stripped for the chronicle)
    stats          JSON NOT NULL,         -- deterministic counts from raw_logs (never from the LLM)
    llm_stats      JSON,                  -- optional LLM-extracted extras, schema-validated, kept apart
    citations      JSON,                  -- short id -> entry_id for the ids the summary cites (lineage)
    model          VARCHAR NOT NULL,      -- offline-extractive | none (empty week) | the LLM model name
    prompt_version VARCHAR NOT NULL,
    input_hash     VARCHAR NOT NULL,      -- sha256 of the week's ordered entry ids + content: the cache key
    entry_count    INTEGER NOT NULL,
    status         VARCHAR NOT NULL,      -- generated | edited
    stale          BOOLEAN NOT NULL DEFAULT false,  -- inputs changed since this text was written
    needs_review   BOOLEAN NOT NULL DEFAULT false,
    review_reasons JSON,                  -- [{"kind": ..., ...}] from the faithfulness and length checks
    version        INTEGER NOT NULL,      -- the weekly_report_versions row this text is
    flow_run_id    VARCHAR,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    updated_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (project_id, week_number)
);

CREATE TABLE weekly_report_versions (
    report_id      VARCHAR NOT NULL,
    project_id     VARCHAR NOT NULL,
    week_number    INTEGER NOT NULL,
    version        INTEGER NOT NULL,      -- 1, 2, ... per week; never rewritten
    status         VARCHAR NOT NULL,      -- generated | edited
    summary        VARCHAR NOT NULL,
    stats          JSON,
    citations      JSON,
    needs_review   BOOLEAN NOT NULL DEFAULT false,
    review_reasons JSON,
    model          VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL,
    input_hash     VARCHAR NOT NULL,
    author         VARCHAR NOT NULL,      -- $USER / --author for edits, the engine for generated text
    reason         VARCHAR,               -- --reason of an edit, or why a generation happened
    flow_run_id    VARCHAR,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (project_id, week_number, version)
);

CREATE TABLE chronicle_rollups (
    project_id     VARCHAR NOT NULL,
    level          VARCHAR NOT NULL,      -- month | quarter | year
    period         VARCHAR NOT NULL,      -- 2026-01 | 2026-Q1 | 2026
    first_week     INTEGER NOT NULL,
    last_week      INTEGER NOT NULL,
    covered_weeks  JSON NOT NULL,         -- week numbers folded into this rollup
    covered_hash   VARCHAR NOT NULL,      -- of the covered reports' text + stats: rebuilt only when it changes
    summary        VARCHAR NOT NULL,
    model          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (project_id, level, period)
);
