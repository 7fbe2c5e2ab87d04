"""Analyst-facing outputs: charts and exports over the weekly stats."""
