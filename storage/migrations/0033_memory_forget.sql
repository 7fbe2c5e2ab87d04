-- Forgetting and correcting memories (`chronicle memory forget|edit`): who changed what and why, and the
-- tombstones that keep a re-distillation of the same notes from bringing a forgotten (or corrected-away) text back.
CREATE TABLE memory_changes (
    change_id   VARCHAR PRIMARY KEY,
    kind        VARCHAR NOT NULL,       -- forget | correct
    "at"        TIMESTAMP NOT NULL,     -- UTC
    actor       VARCHAR NOT NULL,       -- who asked (login name, or --by)
    reason      VARCHAR NOT NULL,       -- why (redacted)
    selector    VARCHAR NOT NULL,       -- id=..., about=..., match=... as given (redacted)
    memory_ids  VARCHAR[] NOT NULL,
    files       VARCHAR[] NOT NULL,     -- knowledge files changed
    backups     VARCHAR[] NOT NULL      -- their backups (workspace/.backups)
);

-- One row per forgotten text and subject: a distilled memory with this content hash, about this subject ('' =
-- unknown, which matches any), is dropped before it reaches the store or a knowledge file.
CREATE TABLE memory_tombstones (
    content_hash  VARCHAR NOT NULL,
    subject       VARCHAR NOT NULL,
    memory_id     VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,     -- forget | correct
    change_id     VARCHAR NOT NULL,
    "at"          TIMESTAMP NOT NULL,
    PRIMARY KEY (content_hash, subject)
);
