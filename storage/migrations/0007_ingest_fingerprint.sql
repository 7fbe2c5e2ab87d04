-- Content fingerprint of each ingested file: a rewrite that keeps the size and restores the mtime
-- (`cp -p`, `rsync -t`, `touch -r`) is no longer mistaken for "unchanged". NULL for files ingested
-- before this migration: they are read once more (idempotently) and get one.
ALTER TABLE ingest_files ADD COLUMN content_sha256 VARCHAR;
