-- A file is known by what it holds, not by its name (rotation, copies, compressed rotations).
-- `file_id`: the identity the rows were read under. The first content ever read at a path has the path
-- itself as its identity (so the entry ids of files ingested before this migration stay what they were);
-- other content later found at the same path gets `path#<head hash>`.
-- `content_key`: what one entry is, whichever file it came from (project, time, actor, type, content and
-- the source's own id): the same entries arriving from two files are stored once.
ALTER TABLE raw_logs ADD COLUMN file_id VARCHAR;
ALTER TABLE raw_logs ADD COLUMN content_key HUGEINT;  -- md5 as a number: half the bytes of its hex
UPDATE raw_logs SET file_id = source_file,
    content_key = (md5_number(concat_ws(chr(31), project_id, epoch_us(ts)::VARCHAR, coalesce(actor, ''), type, content,
                                        coalesce(json_extract_string(metadata, '$.id'),
                                                 json_extract_string(metadata, '$.event_id'), ''))) >> 1)::HUGEINT;

-- Per path: the identity it held when last read, and that identity's head (the bytes that recognise it).
ALTER TABLE ingest_files ADD COLUMN file_id VARCHAR;
ALTER TABLE ingest_files ADD COLUMN head_len BIGINT;
ALTER TABLE ingest_files ADD COLUMN head_sha256 VARCHAR;
ALTER TABLE ingest_files ADD COLUMN duplicates INTEGER;     -- entries this file repeats from others, last read
ALTER TABLE ingest_files ADD COLUMN note VARCHAR;           -- e.g. "still being written: read up to byte N"
UPDATE ingest_files SET file_id = path;

-- Rows a rewrite or `ingest --replace` took out of raw_logs: kept, with when and by which run.
CREATE TABLE raw_logs_superseded (
    entry_id      VARCHAR NOT NULL,
    project_id    VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    source_file   VARCHAR NOT NULL,
    line_no       INTEGER,
    byte_offset   BIGINT,
    ts            TIMESTAMP NOT NULL,
    local_date    DATE NOT NULL,
    iso_year      INTEGER NOT NULL,
    iso_week      INTEGER NOT NULL,
    week_number   INTEGER NOT NULL,
    actor         VARCHAR,
    type          VARCHAR NOT NULL,
    content       VARCHAR NOT NULL,
    metadata      JSON,
    ingested_at   TIMESTAMP NOT NULL,
    file_id       VARCHAR,
    content_key   HUGEINT,
    superseded_at TIMESTAMP NOT NULL,
    superseded_by VARCHAR,              -- the flow run that took the row out
    reason        VARCHAR NOT NULL      -- rewritten | replaced
);
