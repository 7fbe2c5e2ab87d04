-- Forget requests an assistant files over MCP (`request_forget`): nothing is forgotten until a person approves one
-- (`chronicle memory approve f-…`), which forgets what its selector names then, as `chronicle memory forget` does.
CREATE TABLE memory_forget_requests (
    request_id  VARCHAR PRIMARY KEY,    -- f-<16 hex> of the selector: the same request twice is one row
    memory_id   VARCHAR,                -- the selector, as `chronicle memory forget` takes it (redacted)
    about       VARCHAR,
    "match"     VARCHAR,
    reason      VARCHAR NOT NULL,       -- why, in the assistant's words (redacted)
    source      VARCHAR NOT NULL,       -- who filed it: assistant (MCP)
    status      VARCHAR NOT NULL,       -- pending | approved | rejected
    created_at  TIMESTAMP NOT NULL,     -- UTC
    decided_at  TIMESTAMP,
    decided_by  VARCHAR,
    change_id   VARCHAR                 -- the memory_changes row an approval made
);
