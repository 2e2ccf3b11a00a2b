"""Metrics, charts and reports computed from results folders (read by schema, never by import)."""
