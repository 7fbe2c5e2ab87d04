-- Memory distillation ledgers: what each run did to the vector store, which note chunks are done,
-- and the replies that could not be used. Memory texts themselves live in LanceDB and the knowledge files.
CREATE TABLE memory_events (
    event_id      VARCHAR PRIMARY KEY,
    flow_run_id   VARCHAR NOT NULL,
    "at"          TIMESTAMP NOT NULL,     -- UTC (quoted: AT is a keyword)
    event         VARCHAR NOT NULL,       -- ADD | UPDATE | NOOP | REJECT
    memory_id     VARCHAR,                -- row added / merged into / already holding it; NULL for REJECT
    content_hash  VARCHAR,
    target_file   VARCHAR,                -- for REJECT: the (redacted, truncated) value the model offered
    importance    DOUBLE,
    tags          VARCHAR[],
    similarity    DOUBLE,
    reason        VARCHAR,
    source        VARCHAR                 -- daily-note file name(s), e.g. 2026-02-14.md
);
CREATE INDEX memory_events_run ON memory_events (flow_run_id);
CREATE INDEX memory_events_memory ON memory_events (memory_id);

-- A chunk distilled successfully with this prompt version and model is never sent again.
CREATE TABLE distill_chunks (
    input_hash      VARCHAR NOT NULL,     -- sha256 of the redacted chunk text as sent
    prompt_version  VARCHAR NOT NULL,     -- DISTILL_PROMPT_VERSION, or the offline engine's version
    model           VARCHAR NOT NULL,     -- LLM model name, or offline-rules
    chunk_key       VARCHAR NOT NULL,     -- YYYY-MM-DD#n
    note_date       DATE NOT NULL,
    source          VARCHAR NOT NULL,
    entries         INTEGER NOT NULL,
    memories        INTEGER NOT NULL,
    rejected        INTEGER NOT NULL,
    repaired        BOOLEAN NOT NULL,
    memory_ids      VARCHAR[],
    flow_run_id     VARCHAR,
    distilled_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (input_hash, prompt_version, model)
);

-- Replies that stayed unusable after one repair attempt, kept (redacted) for a human to look at.
CREATE TABLE distill_quarantine (
    quarantine_id   VARCHAR PRIMARY KEY,
    chunk_key       VARCHAR NOT NULL,
    input_hash      VARCHAR NOT NULL,
    prompt_version  VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    reason          VARCHAR NOT NULL,
    raw_reply       VARCHAR,
    repair_reply    VARCHAR,
    flow_run_id     VARCHAR,
    quarantined_at  TIMESTAMP NOT NULL
);
