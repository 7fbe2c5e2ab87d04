-- Memories a distillation may not write by itself: aimed at a protected knowledge file (SOUL.md, IDENTITY.md)
-- or reading as an instruction to the model (suspected_injection). A human approves (`chronicle memory approve`)
-- or rejects them. proposal_id is derived from target file and content, so reruns find the same row.
CREATE TABLE memory_proposals (
    proposal_id          VARCHAR PRIMARY KEY,   -- p-<16 hex>: sha256(target_file, content_hash)
    target_file          VARCHAR NOT NULL,
    action               VARCHAR NOT NULL,      -- append | overwrite, as the memory asked
    content              VARCHAR NOT NULL,      -- redacted, as it would be written
    content_hash         VARCHAR NOT NULL,
    importance           DOUBLE,
    tags                 VARCHAR[],
    note_date            DATE NOT NULL,         -- the managed section an approval writes into
    source               VARCHAR NOT NULL,      -- daily-note file name(s)
    source_entry_ids     VARCHAR[],
    memory_id            VARCHAR,               -- the LanceDB row; NULL for suspected injections (never stored)
    reason               VARCHAR NOT NULL,
    suspected_injection  BOOLEAN NOT NULL,
    status               VARCHAR NOT NULL,      -- pending | approved | rejected
    flow_run_id          VARCHAR,               -- the run that proposed it first
    created_at           TIMESTAMP NOT NULL,    -- UTC
    decided_at           TIMESTAMP,             -- UTC, when approved or rejected
    decided_by           VARCHAR
);
