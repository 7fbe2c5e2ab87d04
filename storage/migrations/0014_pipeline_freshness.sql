-- Freshness at a glance (issue 26): is everything up to date, and if not, what is missing.
-- Views, so they are always current; `chronicle status` prints them with each age judged against its schedule.

-- One row per project: the last week with a current report, ended weeks with entries but no report, stale
-- reports (entries changed since) and reports flagged for review. A week counts as ended once its project-local
-- Sunday is before today (current_date of the reading session).
CREATE VIEW pipeline_freshness AS
WITH w AS (
    SELECT project_id, week_number, end_date, entries, report_status, report_stale, report_needs_review,
           end_date < current_date AS ended
    FROM weekly_stats
),
latest AS (
    SELECT project_id, max(ts) AS last_entry_at, max(ingested_at) AS last_ingested_at
    FROM raw_logs GROUP BY project_id
)
SELECT w.project_id,
       max(w.week_number) FILTER (WHERE w.ended) AS last_ended_week,
       max(w.week_number) FILTER (WHERE w.report_status IS NOT NULL AND NOT w.report_stale) AS last_current_week,
       count(*) FILTER (WHERE w.ended AND w.entries > 0 AND w.report_status IS NULL) AS weeks_without_report,
       coalesce(list(w.week_number ORDER BY w.week_number)
                FILTER (WHERE w.ended AND w.entries > 0 AND w.report_status IS NULL), []) AS missing_weeks,
       count(*) FILTER (WHERE w.report_stale) AS stale_weeks,
       coalesce(list(w.week_number ORDER BY w.week_number) FILTER (WHERE w.report_stale), []) AS stale_week_list,
       count(*) FILTER (WHERE w.report_needs_review) AS review_weeks,
       coalesce(list(w.week_number ORDER BY w.week_number) FILTER (WHERE w.report_needs_review), []) AS review_week_list,
       any_value(l.last_entry_at) AS last_entry_at,
       any_value(l.last_ingested_at) AS last_ingested_at
FROM w LEFT JOIN latest l ON l.project_id = w.project_id
GROUP BY w.project_id;

-- One row per flow: its last successful run and its most recent run of any outcome (pipeline_runs, UTC).
CREATE VIEW pipeline_run_freshness AS
SELECT flow_name,
       max(ended_at) FILTER (WHERE state = 'COMPLETED') AS last_completed_at,
       max(started_at) AS last_started_at,
       arg_max(state, started_at) AS last_state,
       arg_max(message, started_at) AS last_message,
       count(*) FILTER (WHERE state IN ('FAILED', 'CRASHED')
                        AND started_at > coalesce((SELECT max(p.ended_at) FROM pipeline_runs p
                                                   WHERE p.flow_name = r.flow_name AND p.state = 'COMPLETED'),
                                                  TIMESTAMP '1970-01-01')) AS failures_since_success
FROM pipeline_runs r
GROUP BY flow_name;
