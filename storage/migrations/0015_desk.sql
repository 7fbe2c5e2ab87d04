-- The review desk: who may read, review and administer which project, what everyone did, and sign-offs.
-- desk_audit and report_signatures are append-only: no code path updates or deletes their rows (tests check
-- every SQL statement of the package); a signature names the version it was made on and the sha256 of that
-- version's exact text, so a later version never inherits it.
CREATE TABLE desk_accounts (
    username      VARCHAR PRIMARY KEY,
    printed_name  VARCHAR NOT NULL,     -- shown with every signature
    password_hash VARCHAR NOT NULL,     -- argon2 (pwdlib), never the password
    disabled      BOOLEAN NOT NULL DEFAULT false,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    updated_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE desk_roles (
    username   VARCHAR NOT NULL,
    project_id VARCHAR NOT NULL,        -- a project id, or '*' for every project
    role       VARCHAR NOT NULL,        -- reader | reviewer | admin
    granted_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (username, project_id)
);

CREATE TABLE desk_audit (
    id          VARCHAR PRIMARY KEY,    -- uuid
    happened_at TIMESTAMP NOT NULL,     -- UTC
    actor       VARCHAR NOT NULL,       -- a desk account, `cli:<name>`, or the name a failed login gave
    action      VARCHAR NOT NULL,       -- login | edit | sign | accept | user-add | grant | ...
    outcome     VARCHAR NOT NULL,       -- ok | refused:<why>
    project_id  VARCHAR,
    week_number INTEGER,
    version     INTEGER,
    detail      JSON,
    remote      VARCHAR                 -- the client address, or `cli`
);

CREATE TABLE report_signatures (
    id           VARCHAR PRIMARY KEY,   -- uuid
    project_id   VARCHAR NOT NULL,
    week_number  INTEGER NOT NULL,
    version      INTEGER NOT NULL,      -- the weekly_report_versions row signed
    content_hash VARCHAR NOT NULL,      -- sha256 of that version's exact text (UTF-8)
    signer       VARCHAR NOT NULL,      -- the account
    printed_name VARCHAR NOT NULL,      -- the account's printed name when it signed
    meaning      VARCHAR NOT NULL,      -- reviewed | approved
    signed_at    TIMESTAMP NOT NULL     -- UTC
);

CREATE TABLE desk_login_attempts (
    username VARCHAR NOT NULL,
    remote   VARCHAR NOT NULL,
    tried_at TIMESTAMP NOT NULL,        -- UTC
    ok       BOOLEAN NOT NULL
);
