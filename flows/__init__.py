"""Flows: one Prefect flow per file (ingest, backfill, weekly, one week, distill); flows never import each other."""
