-- Every attempt of a call is its own row: all attempts of one call share `call_id`, so the key is
-- (call_id, attempt). 0001 keyed on call_id alone and retried attempts were dropped.
DROP VIEW llm_usage;
CREATE TABLE llm_calls_v2 (
    call_id      VARCHAR NOT NULL,
    started_at   TIMESTAMP NOT NULL,
    model        VARCHAR NOT NULL,
    endpoint     VARCHAR,
    purpose      VARCHAR NOT NULL,
    project_id   VARCHAR,
    week_number  INTEGER,
    prompt_hash  VARCHAR NOT NULL,
    prompt       VARCHAR NOT NULL,
    response     VARCHAR,
    tokens_in    INTEGER,
    tokens_out   INTEGER,
    latency_ms   DOUBLE,
    status       VARCHAR NOT NULL,
    error        VARCHAR,
    http_status  INTEGER,
    attempt      INTEGER NOT NULL DEFAULT 1,
    flow_run_id  VARCHAR,
    PRIMARY KEY (call_id, attempt)
);
INSERT INTO llm_calls_v2 SELECT call_id, started_at, model, endpoint, purpose, project_id, week_number, prompt_hash,
    prompt, response, tokens_in, tokens_out, latency_ms, status, error, http_status, attempt, flow_run_id
FROM llm_calls;
DROP TABLE llm_calls;
ALTER TABLE llm_calls_v2 RENAME TO llm_calls;
CREATE VIEW llm_usage AS
SELECT CAST(date_trunc('month', started_at) AS DATE) AS month,
       flow_run_id, project_id, week_number, model, purpose,
       count(*) AS calls,
       count(*) FILTER (WHERE status = 'ok') AS ok_calls,
       count(*) FILTER (WHERE status <> 'ok') AS failed_calls,
       round(count(*) FILTER (WHERE status <> 'ok') / count(*), 4) AS error_rate,
       coalesce(sum(tokens_in), 0) AS tokens_in,
       coalesce(sum(tokens_out), 0) AS tokens_out,
       round(avg(latency_ms), 1) AS avg_latency_ms,
       round(quantile_cont(latency_ms, 0.95), 1) AS p95_latency_ms
FROM llm_calls
GROUP BY ALL;
