-- Whether a refused line names a safety event (SAE, AE, SUSAR): decided once, in the transaction that stores the
-- line (storage/raw_logs.py `flag_safety`), so the desk's home page and `chronicle status` read a flag instead of
-- running the rule over every refused line on every load. NULL: not decided (rows stored before this column, until
-- their file's rejects are stored again): the readers run the rule on those.
ALTER TABLE rejects ADD COLUMN safety BOOLEAN;
