"""Benchmarks: each script measures Chronicle against a named baseline in the same run."""
