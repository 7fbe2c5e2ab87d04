-- The placeholders of study subjects' personal data, per project: `[受试者姓名-1]` stands for one person in
-- every prompt, report and artifact, and this table alone knows who. Nothing reads it into an LLM prompt, a
-- vector, a knowledge file or an artifact; `chronicle/redaction/pseudonyms.py` says what is pseudonymised.
CREATE TABLE IF NOT EXISTS pseudonyms (
    project_id  VARCHAR NOT NULL,
    family      VARCHAR NOT NULL,   -- name | resident_id | phone | passport | address
    value       VARCHAR NOT NULL,   -- the real value, as written in the log
    placeholder VARCHAR NOT NULL,   -- e.g. [受试者姓名-1]
    created_at  TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (project_id, family, value)
);
