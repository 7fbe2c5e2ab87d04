"""Command line (`chronicle ...`): thin typer commands over flows and use cases; output formatting only."""
