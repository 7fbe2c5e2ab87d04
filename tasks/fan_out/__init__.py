"""Fan-out shared by the weekly flows (no @task here; flows never import each other):
weeks as concurrent tasks in one run (`weeks`), a backfill spread over the pool's workers
(`workers`)."""
