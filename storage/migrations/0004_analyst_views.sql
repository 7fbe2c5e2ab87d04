-- Analyst views: stable names and columns (documented in docs/analysts.md). Views, not tables,
-- so they are always current and cost nothing to keep.

-- One row per project and ISO week from the first to the last week with logs, including weeks with
-- no entries or no report yet. Counts come from raw_logs directly (the same rule as the reports' stats).
CREATE VIEW weekly_stats AS
WITH bounds AS (
    SELECT project_id, min(local_date) AS first_day, max(local_date) AS last_day
    FROM raw_logs GROUP BY project_id
),
spine AS (
    SELECT project_id,
           CAST(unnest(generate_series(date_trunc('week', first_day), date_trunc('week', last_day),
                                       INTERVAL 7 DAY)) AS DATE) AS start_date
    FROM bounds
),
counts AS (
    SELECT project_id, week_number,
           count(*) AS entries,
           count(*) FILTER (WHERE type = 'message') AS messages,
           count(*) FILTER (WHERE type = 'enrollment') AS enrolled,
           count(*) FILTER (WHERE type = 'ae') AS ae,
           count(*) FILTER (WHERE type = 'sae') AS sae,
           count(*) FILTER (WHERE type = 'deviation') AS deviations,
           count(*) FILTER (WHERE type = 'query') AS queries,
           count(*) FILTER (WHERE type = 'decision') AS decisions
    FROM raw_logs GROUP BY project_id, week_number
)
SELECT s.project_id,
       isoyear(s.start_date) * 100 + week(s.start_date) AS week_number,
       isoyear(s.start_date) AS iso_year,
       week(s.start_date) AS iso_week,
       s.start_date,
       CAST(s.start_date + INTERVAL 6 DAY AS DATE) AS end_date,
       coalesce(c.entries, 0) AS entries,
       coalesce(c.messages, 0) AS messages,
       coalesce(c.enrolled, 0) AS enrolled,
       sum(coalesce(c.enrolled, 0)) OVER (PARTITION BY s.project_id ORDER BY s.start_date) AS enrolled_total,
       coalesce(c.ae, 0) AS ae,
       coalesce(c.sae, 0) AS sae,
       coalesce(c.deviations, 0) AS deviations,
       coalesce(c.queries, 0) AS queries,
       coalesce(c.decisions, 0) AS decisions,
       r.status AS report_status,
       r.model AS report_engine,
       coalesce(r.stale, false) AS report_stale,
       coalesce(r.needs_review, false) AS report_needs_review
FROM spine s
LEFT JOIN counts c ON c.project_id = s.project_id AND c.week_number = isoyear(s.start_date) * 100 + week(s.start_date)
LEFT JOIN weekly_reports r ON r.project_id = s.project_id
                          AND r.week_number = isoyear(s.start_date) * 100 + week(s.start_date);

-- The chronicle as people read it: the current text of every week (an edit is the truth).
CREATE VIEW chronicle AS
SELECT project_id, week_number, start_date, end_date,
       trim(regexp_replace(summary, '\s*\[E\d+(\s*[,，、]\s*E?\d+)*\]', '', 'g')) AS summary,  -- citations are lineage, not prose
       status, model AS engine, stale, needs_review, updated_at
FROM weekly_reports;

-- LLM usage and reliability per month, flow run, project-week, model and purpose.
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

-- Distilled memories by knowledge file, tag and importance band (from the memory_events ledger).
CREATE VIEW memory_stats AS
WITH mem AS (
    SELECT memory_id,
           arg_min(target_file, "at") FILTER (WHERE event = 'ADD') AS target_file,
           max(importance) AS importance,
           list_distinct(flatten(list(coalesce(tags, [])))) AS tags
    FROM memory_events
    WHERE event IN ('ADD', 'UPDATE') AND memory_id IS NOT NULL
    GROUP BY memory_id
),
tagged AS (
    SELECT target_file, importance, unnest(CASE WHEN len(tags) = 0 THEN [NULL] ELSE tags END) AS tag FROM mem
)
SELECT target_file,
       tag,
       CASE WHEN importance >= 0.7 THEN 'high (>=0.7)'
            WHEN importance >= 0.4 THEN 'medium (0.4-0.7)'
            ELSE 'low (<0.4)' END AS importance_band,
       count(*) AS memories
FROM tagged
GROUP BY ALL;
