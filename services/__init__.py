"""Use cases: ingest a file, plan/run a week, edit a report, context/ask, distill, search; the LLM gate and
run bookkeeping. May use Prefect's concurrency and runtime helpers; no tasks, flows or artifacts."""
