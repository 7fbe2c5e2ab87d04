"""Core: pure logic — settings, ISO weeks, parsers, the weekly and distillation engines, redaction, memory
scoring, the LLM clients. Imports no other layer and none of Prefect, DuckDB or LanceDB."""
