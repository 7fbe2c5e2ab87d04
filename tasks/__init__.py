"""Tasks: thin Prefect tasks over the use cases, plus the artifacts they publish and the weekly fan-out."""
