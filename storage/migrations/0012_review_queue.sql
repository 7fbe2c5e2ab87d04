-- The review queue of the weekly chronicle (issue 23): who accepted a flagged report, when, which version.
-- Accepting clears needs_review but keeps review_reasons, so what was accepted stays readable; a new version
-- (regenerated or edited) is judged afresh.
ALTER TABLE weekly_reports ADD COLUMN reviewed_by VARCHAR;
ALTER TABLE weekly_reports ADD COLUMN reviewed_at TIMESTAMP;
ALTER TABLE weekly_reports ADD COLUMN reviewed_version INTEGER;  -- the version that was accepted
ALTER TABLE weekly_reports ADD COLUMN review_note VARCHAR;

-- Weeks awaiting review per project (analysts, `chronicle review`): flagged generated or edited reports.
CREATE VIEW review_backlog AS
SELECT project_id,
       count(*) FILTER (WHERE needs_review) AS weeks_awaiting_review,
       min(week_number) FILTER (WHERE needs_review) AS oldest_week,
       max(week_number) FILTER (WHERE needs_review) AS newest_week,
       count(*) FILTER (WHERE reviewed_at IS NOT NULL AND NOT needs_review) AS weeks_accepted,
       count(*) AS weeks_with_report
FROM weekly_reports
GROUP BY project_id;
